package httpapi

import (
	"net/http"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/nomad/api"
)

// Single sign-on and one-time tokens, Nomad's endpoints: auth methods
// (their list is open, as Nomad's: a login page lists them), binding
// rules, the JWT login, the OIDC login's two steps, and one-time tokens.
// Their JSON is Nomad's api.ACLAuthMethod, api.ACLBindingRule and the
// login requests and answers.

func (a *API) registerACLSSO() {
	write := a.write
	a.on(http.MethodGet, "/v1/acl/auth-methods", open, a.authMethodList)
	write("/v1/acl/auth-method", management, a.authMethodWrite)
	a.on(http.MethodGet, "/v1/acl/auth-method/{name}", management, a.authMethodRead)
	write("/v1/acl/auth-method/{name}", management, a.authMethodWrite)
	a.on(http.MethodDelete, "/v1/acl/auth-method/{name}", management, a.authMethodDelete)
	a.on(http.MethodGet, "/v1/acl/binding-rules", management, a.bindingRuleList)
	write("/v1/acl/binding-rule", management, a.bindingRuleWrite)
	a.on(http.MethodGet, "/v1/acl/binding-rule/{id}", management, a.bindingRuleRead)
	write("/v1/acl/binding-rule/{id}", management, a.bindingRuleWrite)
	a.on(http.MethodDelete, "/v1/acl/binding-rule/{id}", management, a.bindingRuleDelete)
	write("/v1/acl/login", open, a.aclLogin)
	write("/v1/acl/oidc/auth-url", open, a.oidcAuthURL)
	write("/v1/acl/oidc/complete-auth", open, a.oidcCompleteAuth)
	write("/v1/acl/token/onetime", anyToken, a.oneTimeTokenCreate)
	write("/v1/acl/token/onetime/exchange", open, a.oneTimeTokenExchange)
}

// authMethodOut is a stored auth method as Nomad's API gives it.
func authMethodOut(m *state.ACLAuthMethod) *api.ACLAuthMethod {
	c := m.Config
	return &api.ACLAuthMethod{Name: m.Name, Type: m.Type, TokenLocality: m.TokenLocality, TokenNameFormat: m.TokenNameFormat,
		MaxTokenTTL: time.Duration(m.MaxTokenTTL), Default: m.Default,
		Config: &api.ACLAuthMethodConfig{JWTValidationPubKeys: c.JWTValidationPubKeys, JWKSURL: c.JWKSURL,
			OIDCDiscoveryURL: c.OIDCDiscoveryURL, OIDCClientID: c.OIDCClientID, OIDCClientSecret: c.OIDCClientSecret,
			OIDCEnablePKCE: c.OIDCEnablePKCE, OIDCDisableUserInfo: c.OIDCDisableUserInfo, OIDCScopes: c.OIDCScopes,
			BoundAudiences: c.BoundAudiences, BoundIssuer: c.BoundIssuer, AllowedRedirectURIs: c.AllowedRedirectURIs,
			DiscoveryCaPem: c.DiscoveryCaPem, JWKSCACert: c.JWKSCACert, SigningAlgs: c.SigningAlgs,
			ExpirationLeeway: time.Duration(c.ExpirationLeeway), NotBeforeLeeway: time.Duration(c.NotBeforeLeeway),
			ClockSkewLeeway: time.Duration(c.ClockSkewLeeway), ClaimMappings: c.ClaimMappings,
			ListClaimMappings: c.ListClaimMappings, VerboseLogging: c.VerboseLogging},
		CreateTime: time.Unix(0, m.CreateTime).UTC(), ModifyTime: time.Unix(0, m.ModifyTime).UTC(),
		CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex}
}

// authMethodIn is an auth method as a request gives it.
func authMethodIn(in *api.ACLAuthMethod) (*state.ACLAuthMethod, error) {
	m := &state.ACLAuthMethod{Name: in.Name, Type: in.Type, TokenLocality: in.TokenLocality,
		TokenNameFormat: in.TokenNameFormat, MaxTokenTTL: int64(in.MaxTokenTTL), Default: in.Default}
	if c := in.Config; c != nil {
		if c.OIDCClientAssertion != nil {
			return nil, errorf(http.StatusBadRequest, "OIDCClientAssertion is not supported: the client authenticates with OIDCClientSecret")
		}
		m.Config = &state.ACLAuthMethodConfig{JWTValidationPubKeys: c.JWTValidationPubKeys, JWKSURL: c.JWKSURL,
			JWKSCACert: c.JWKSCACert, OIDCDiscoveryURL: c.OIDCDiscoveryURL, OIDCClientID: c.OIDCClientID,
			OIDCClientSecret: c.OIDCClientSecret, OIDCEnablePKCE: c.OIDCEnablePKCE, OIDCDisableUserInfo: c.OIDCDisableUserInfo,
			OIDCScopes: c.OIDCScopes, BoundAudiences: c.BoundAudiences, BoundIssuer: c.BoundIssuer,
			AllowedRedirectURIs: c.AllowedRedirectURIs, DiscoveryCaPem: c.DiscoveryCaPem, SigningAlgs: c.SigningAlgs,
			ExpirationLeeway: int64(c.ExpirationLeeway), NotBeforeLeeway: int64(c.NotBeforeLeeway),
			ClockSkewLeeway: int64(c.ClockSkewLeeway), ClaimMappings: c.ClaimMappings, ListClaimMappings: c.ListClaimMappings,
			VerboseLogging: c.VerboseLogging}
	}
	return m, nil
}

// authMethodList lists the auth methods' names, types and which is the
// default, to any request, as Nomad's.
func (a *API) authMethodList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*api.ACLAuthMethodListStub{}
		for _, m := range snap.ACLAuthMethods() {
			out = append(out, &api.ACLAuthMethodListStub{Name: m.Name, Type: m.Type, Default: m.Default,
				CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex})
		}
		return out, snap.TableIndex(state.TableACLAuthMethods), nil
	})
}

func (a *API) authMethodRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		m := snap.ACLAuthMethod(name)
		if m == nil {
			return nil, snap.TableIndex(state.TableACLAuthMethods), errorf(http.StatusNotFound, "ACL auth-method not found")
		}
		return authMethodOut(m), m.ModifyIndex, nil
	})
}

// authMethodWrite creates an auth method (POST/PUT /v1/acl/auth-method)
// or updates one (POST/PUT /v1/acl/auth-method/:name), answering it as
// stored.
func (a *API) authMethodWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.ACLAuthMethod
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	if name := r.PathValue("name"); name != "" && in.Name != name {
		return nil, errorf(http.StatusBadRequest, "ACL auth-method name does not match request path") // Nomad's words
	}
	m, err := authMethodIn(&in)
	if err != nil {
		return nil, err
	}
	stored, index, err := a.srv.UpsertACLAuthMethods([]*state.ACLAuthMethod{m})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return authMethodOut(stored[0]), nil
}

func (a *API) authMethodDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	index, err := a.srv.DeleteACLAuthMethods([]string{r.PathValue("name")})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return nil, nil
}

// bindingRuleOut is a stored binding rule as Nomad's API gives it.
func bindingRuleOut(b *state.ACLBindingRule) *api.ACLBindingRule {
	return &api.ACLBindingRule{ID: b.ID, Description: b.Description, AuthMethod: b.AuthMethod, Selector: b.Selector,
		BindType: b.BindType, BindName: b.BindName, CreateTime: time.Unix(0, b.CreateTime).UTC(),
		ModifyTime: time.Unix(0, b.ModifyTime).UTC(), CreateIndex: b.CreateIndex, ModifyIndex: b.ModifyIndex}
}

// bindingRuleList lists the binding rules whose ID starts with ?prefix=
// to a management token.
func (a *API) bindingRuleList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*api.ACLBindingRuleListStub{}
		for _, b := range snap.ACLBindingRules(prefix) {
			out = append(out, &api.ACLBindingRuleListStub{ID: b.ID, Description: b.Description, AuthMethod: b.AuthMethod,
				CreateIndex: b.CreateIndex, ModifyIndex: b.ModifyIndex})
		}
		return out, snap.TableIndex(state.TableACLBindingRules), nil
	})
}

func (a *API) bindingRuleRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		b := snap.ACLBindingRule(id)
		if b == nil {
			return nil, snap.TableIndex(state.TableACLBindingRules), errorf(http.StatusNotFound, "ACL binding rule not found")
		}
		return bindingRuleOut(b), b.ModifyIndex, nil
	})
}

// bindingRuleWrite creates a binding rule (POST/PUT /v1/acl/binding-rule)
// or updates one (POST/PUT /v1/acl/binding-rule/:id), answering it as
// stored.
func (a *API) bindingRuleWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.ACLBindingRule
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	switch {
	case id == "" && in.ID != "":
		return nil, errorf(http.StatusBadRequest, "a new binding rule cannot be given an ID; update a rule at /v1/acl/binding-rule/:id")
	case id != "" && in.ID != id:
		return nil, errorf(http.StatusBadRequest, "ACL binding rule ID does not match request path") // Nomad's words
	}
	rules, index, err := a.srv.UpsertACLBindingRules([]*state.ACLBindingRule{{ID: in.ID, Description: in.Description,
		AuthMethod: in.AuthMethod, Selector: in.Selector, BindType: in.BindType, BindName: in.BindName}})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return bindingRuleOut(rules[0]), nil
}

func (a *API) bindingRuleDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	index, err := a.srv.DeleteACLBindingRules([]string{r.PathValue("id")})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return nil, nil
}

// aclLogin exchanges a JWT for a token with a JWT auth method.
func (a *API) aclLogin(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.ACLLoginRequest
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	t, index, err := a.srv.Login(r.Context(), in.AuthMethodName, in.LoginToken)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return tokenOut(a.srv.Store().Snapshot(), t), nil
}

// oidcAuthURL starts an OIDC login: the provider's URL to send the user to.
func (a *API) oidcAuthURL(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.ACLOIDCAuthURLRequest
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	u, err := a.srv.OIDCAuthURL(r.Context(), in.AuthMethodName, in.RedirectURI, in.ClientNonce)
	if err != nil {
		return nil, err
	}
	return &api.ACLOIDCAuthURLResponse{AuthURL: u}, nil
}

// oidcCompleteAuth ends an OIDC login with what the provider sent the user
// back with, answering the new token.
func (a *API) oidcCompleteAuth(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.ACLOIDCCompleteAuthRequest
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	t, index, err := a.srv.OIDCCompleteAuth(r.Context(), in.AuthMethodName, in.ClientNonce, in.State, in.Code, in.RedirectURI)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return tokenOut(a.srv.Store().Snapshot(), t), nil
}

// oneTimeTokenCreate makes a one-time token for the request's token (not
// for the anonymous one, which has no secret to stand for).
func (a *API) oneTimeTokenCreate(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	z := authzOf(r)
	if z == nil || z.token == nil {
		return nil, errPermissionDenied
	}
	ott, index, err := a.srv.UpsertOneTimeToken(z.token.AccessorID)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &api.OneTimeTokenUpsertResponse{OneTimeToken: &api.OneTimeToken{OneTimeSecretID: ott.OneTimeSecretID,
		AccessorID: ott.AccessorID, ExpiresAt: time.Unix(0, ott.ExpiresAt).UTC(), CreateIndex: ott.CreateIndex,
		ModifyIndex: ott.ModifyIndex}}, nil
}

// oneTimeTokenExchange spends a one-time token for the token it stands for.
func (a *API) oneTimeTokenExchange(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.OneTimeTokenExchangeRequest
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	t, index, err := a.srv.ExchangeOneTimeToken(in.OneTimeSecretID)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &api.OneTimeTokenExchangeResponse{Token: tokenOut(a.srv.Store().Snapshot(), t)}, nil
}
