package server

import (
	"cmp"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/cap/jwt"
	"github.com/hashicorp/cap/oidc"
	"github.com/hashicorp/go-bexpr"
	"github.com/mitchellh/pointerstructure"
)

// Single sign-on, as Nomad's (1.5 and later): auth methods say how an
// identity another system vouches for is checked (a JWT it signed, or an
// OIDC provider's login), binding rules what such an identity is granted
// (roles, policies or management, chosen by go-bexpr selectors over the
// identity's mapped claims), and a login makes an ACL token holding what
// the method's rules grant, expiring after the method's MaxTokenTTL. And
// one-time tokens, which stand for a token for 10 minutes and are
// exchanged for its secret once (`nomad ui -authenticate`).
//
// Each request to a provider (OIDC discovery, JWKS, code exchange, user
// info) is bounded by authRequestTimeout, as Nomad's.

const (
	maxACLBindingRuleDescriptionLength = 256
	// oneTimeTokenTTL is how long a one-time token stands for its token
	// (Nomad's 10 minutes).
	oneTimeTokenTTL = 10 * time.Minute
	// authRequestTimeout bounds a login's work with its identity provider
	// (Nomad's 60 seconds).
	authRequestTimeout = time.Minute
	// DefaultTokenNameFormat names the tokens a login makes unless the
	// method says otherwise: "JWT-ci", "OIDC-okta", as Nomad's.
	DefaultTokenNameFormat = "${auth_method_type}-${auth_method_name}"
)

// validACLAuthMethodName is what an auth method's name may be (Nomad's
// ValidACLAuthMethod).
var validACLAuthMethodName = regexp.MustCompile("^[a-zA-Z0-9-]{1,128}$")

// ErrUnauthorized refuses a login whose identity does not check out (a
// JWT with a bad signature, expired, for another audience or issuer); the
// HTTP API answers it with a 401, as Nomad.
var ErrUnauthorized = errors.New("unauthorized")

// UpsertACLAuthMethods creates or replaces auth methods by name. What a
// replacement leaves empty (Type, TokenLocality, MaxTokenTTL, Config,
// TokenNameFormat) is kept from the stored method, as Nomad merges them.
// Each must have a valid name, type (JWT or OIDC) and locality (local or
// global), a MaxTokenTTL within the server's token TTL bounds, and a
// configuration its type can use (checked here where Nomad finds out at
// the first login): a JWT method exactly one source of keys, whose public
// keys parse; an OIDC method a discovery URL, client ID and redirect
// URIs. At most one method may be the default. It returns the methods as
// stored, in the request's order.
func (s *Server) UpsertACLAuthMethods(ms []*state.ACLAuthMethod) ([]*state.ACLAuthMethod, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if len(ms) == 0 {
		return nil, 0, badRequest(errors.New("must specify at least one auth method"))
	}
	snap := s.store.Snapshot()
	now := s.now().UnixNano()
	req := &fsm.ACLAuthMethodUpsertRequest{Methods: make([]*state.ACLAuthMethod, 0, len(ms))}
	defaultName := ""
	if d := snap.DefaultACLAuthMethod(); d != nil {
		defaultName = d.Name
	}
	for i, m := range ms {
		if m == nil {
			return nil, 0, badRequest(fmt.Errorf("auth method %d is missing", i))
		}
		am := *m
		if old := snap.ACLAuthMethod(am.Name); old != nil {
			am.Type = cmp.Or(am.Type, old.Type)
			am.TokenLocality = cmp.Or(am.TokenLocality, old.TokenLocality)
			am.TokenNameFormat = cmp.Or(am.TokenNameFormat, old.TokenNameFormat)
			am.MaxTokenTTL = cmp.Or(am.MaxTokenTTL, old.MaxTokenTTL)
			if am.Config == nil {
				am.Config = old.Config
			}
		}
		am.TokenNameFormat = cmp.Or(am.TokenNameFormat, DefaultTokenNameFormat)
		if err := s.validAuthMethod(&am); err != nil {
			return nil, 0, badRequest(fmt.Errorf("auth method %d invalid: %w", i, err))
		}
		if am.Default {
			if defaultName != "" && defaultName != am.Name {
				return nil, 0, badRequest(fmt.Errorf("default method already exists: %v", defaultName))
			}
			defaultName = am.Name
		} else if defaultName == am.Name {
			defaultName = ""
		}
		am.CreateTime, am.ModifyTime = now, now // a replacement keeps its create time (state)
		req.Methods = append(req.Methods, &am)
	}
	index, err := s.Apply(fsm.ACLAuthMethodUpsertRequestType, req)
	if errors.Is(err, state.ErrDefaultAuthMethod) {
		return nil, 0, badRequest(err) // another server's write made a default meanwhile
	}
	if err != nil {
		return nil, 0, err
	}
	names := make([]string, len(req.Methods))
	for i, m := range req.Methods {
		names[i] = m.Name
	}
	out, err := storedACL(s, "auth method", names, (*state.Snapshot).ACLAuthMethod)
	return out, index, err
}

// validAuthMethod checks a merged auth method.
func (s *Server) validAuthMethod(am *state.ACLAuthMethod) error {
	var errs []error
	if !validACLAuthMethodName.MatchString(am.Name) {
		errs = append(errs, fmt.Errorf("invalid name '%s'", am.Name))
	}
	if am.TokenLocality != state.ACLTokenLocalityLocal && am.TokenLocality != state.ACLTokenLocalityGlobal {
		errs = append(errs, fmt.Errorf("invalid token locality '%s'", am.TokenLocality))
	}
	minTTL, maxTTL := s.cfg.ACLTokenMinExpirationTTL, s.cfg.ACLTokenMaxExpirationTTL
	if ttl := time.Duration(am.MaxTokenTTL); ttl < minTTL || ttl > maxTTL {
		errs = append(errs, fmt.Errorf("invalid MaxTokenTTL value '%s' (should be between %s and %s)", ttl, minTTL, maxTTL))
	}
	if _, err := interpolate(am.TokenNameFormat, tokenNameVars(am, nil), true); err != nil {
		errs = append(errs, fmt.Errorf("invalid TokenNameFormat: %w", err))
	}
	c := am.Config
	if c == nil {
		errs = append(errs, errors.New("missing config"))
		c = &state.ACLAuthMethodConfig{}
	}
	checkURL := func(field, v string) {
		if v == "" {
			return
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s %q is not an http or https URL", field, v))
		}
	}
	if _, err := certPool(c.DiscoveryCaPem...); err != nil {
		errs = append(errs, fmt.Errorf("DiscoveryCaPem: %w", err))
	}
	checkURL("JWKSURL", c.JWKSURL)
	checkURL("OIDCDiscoveryURL", c.OIDCDiscoveryURL)
	for _, alg := range c.SigningAlgs {
		if err := jwt.SupportedSigningAlgorithm(jwt.Alg(alg)); err != nil {
			errs = append(errs, fmt.Errorf("unsupported signing algorithm %q", alg))
		}
	}
	targets := map[string]bool{}
	for what, m := range map[string]map[string]string{"ClaimMappings": c.ClaimMappings, "ListClaimMappings": c.ListClaimMappings} {
		for claim, name := range m {
			switch {
			case claim == "" || name == "":
				errs = append(errs, fmt.Errorf("%s: empty claim or name (%q: %q)", what, claim, name))
			case targets[what[:1]+name]:
				errs = append(errs, fmt.Errorf("%s: two claims map to %q", what, name))
			}
			targets[what[:1]+name] = true
		}
	}
	switch am.Type {
	case state.ACLAuthMethodTypeJWT:
		sources := 0
		for _, set := range []bool{len(c.JWTValidationPubKeys) > 0, c.JWKSURL != "", c.OIDCDiscoveryURL != ""} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			errs = append(errs, errors.New("a JWT auth method needs exactly one of JWTValidationPubKeys, JWKSURL and OIDCDiscoveryURL"))
		}
		if _, err := publicKeys(c.JWTValidationPubKeys); err != nil {
			errs = append(errs, err)
		}
		if c.JWKSCACert != "" {
			if _, err := certPool(c.JWKSCACert); err != nil {
				errs = append(errs, fmt.Errorf("JWKSCACert: %w", err))
			}
		}
	case state.ACLAuthMethodTypeOIDC:
		if c.OIDCDiscoveryURL == "" || c.OIDCClientID == "" {
			errs = append(errs, errors.New("an OIDC auth method needs OIDCDiscoveryURL and OIDCClientID"))
		}
		if len(c.AllowedRedirectURIs) == 0 {
			errs = append(errs, errors.New("an OIDC auth method needs AllowedRedirectURIs"))
		}
		if c.OIDCEnablePKCE {
			errs = append(errs, errors.New("OIDCEnablePKCE is not supported"))
		}
	default:
		errs = append(errs, fmt.Errorf("invalid token type '%s'", am.Type))
	}
	return errors.Join(errs...)
}

// certPool is a pool of the PEM-encoded CA certificates pems.
func certPool(pems ...string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for i, p := range pems {
		if !pool.AppendCertsFromPEM([]byte(p)) {
			return nil, fmt.Errorf("CA certificate %d holds no PEM certificate", i)
		}
	}
	return pool, nil
}

// publicKeys parses PEM-encoded public keys.
func publicKeys(pems []string) ([]crypto.PublicKey, error) {
	keys := make([]crypto.PublicKey, 0, len(pems))
	for i, p := range pems {
		k, err := jwt.ParsePublicKeyPEM([]byte(p))
		if err != nil {
			return nil, fmt.Errorf("JWTValidationPubKeys[%d]: %w", i, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// DeleteACLAuthMethods deletes auth methods by name, with their binding
// rules; an unknown name is ErrNotFound and deletes none. The tokens their
// logins made stay until they expire or are deleted, as in Nomad.
func (s *Server) DeleteACLAuthMethods(names []string) (uint64, error) {
	return s.deleteACL("auth method", names, func(snap *state.Snapshot, name string) bool { return snap.ACLAuthMethod(name) != nil },
		fsm.ACLAuthMethodDeleteRequestType, &fsm.ACLAuthMethodDeleteRequest{Names: slices.Clone(names)})
}

// UpsertACLBindingRules creates binding rules (ID empty: each gets a new
// UUID) or updates them (by ID; ErrInvalid "cannot find binding rule" for
// an unknown one; what an update leaves empty of AuthMethod, BindType and
// BindName is kept, as Nomad merges them). Each must name an auth method
// that exists, have a description of at most 256 characters, a bind type
// (role and policy with a bind name, management without), a selector
// go-bexpr parses, and a bind name whose ${...} name only claims the
// method maps (value.NAME), a role or policy name once interpolated. It
// returns the rules as stored, in the request's order.
func (s *Server) UpsertACLBindingRules(rs []*state.ACLBindingRule) ([]*state.ACLBindingRule, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if len(rs) == 0 {
		return nil, 0, badRequest(errors.New("must specify at least one binding rule"))
	}
	snap := s.store.Snapshot()
	now := s.now().UnixNano()
	req := &fsm.ACLBindingRuleUpsertRequest{Rules: make([]*state.ACLBindingRule, 0, len(rs))}
	for i, r := range rs {
		if r == nil {
			return nil, 0, badRequest(fmt.Errorf("binding rule %d is missing", i))
		}
		rule := *r
		rule.CreateIndex = 0
		if rule.ID == "" {
			rule.ID = newID()
		} else {
			old := snap.ACLBindingRule(rule.ID)
			if old == nil {
				return nil, 0, badRequest(fmt.Errorf("cannot find binding rule %s", rule.ID))
			}
			rule.AuthMethod = cmp.Or(rule.AuthMethod, old.AuthMethod)
			rule.BindType = cmp.Or(rule.BindType, old.BindType)
			if rule.BindType != state.ACLBindTypeManagement {
				// A rule made management has no name to keep (Nomad keeps
				// it, and then refuses the rule it made).
				rule.BindName = cmp.Or(rule.BindName, old.BindName)
			}
			// The FSM applies the update only to this rule.
			rule.CreateIndex = old.CreateIndex
		}
		if err := validBindingRule(snap, &rule); err != nil {
			return nil, 0, badRequest(fmt.Errorf("binding rule %d invalid: %w", i, err))
		}
		rule.CreateTime, rule.ModifyTime = now, now // an update keeps its create time (state)
		req.Rules = append(req.Rules, &rule)
	}
	index, err := s.Apply(fsm.ACLBindingRuleUpsertRequestType, req)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(req.Rules))
	for i, r := range req.Rules {
		ids[i] = r.ID
	}
	out, err := storedACL(s, "binding rule", ids, (*state.Snapshot).ACLBindingRule)
	return out, index, err
}

// validBindingRule checks a merged binding rule against snap.
func validBindingRule(snap *state.Snapshot, r *state.ACLBindingRule) error {
	var errs []error
	method := snap.ACLAuthMethod(r.AuthMethod)
	switch {
	case r.AuthMethod == "":
		errs = append(errs, errors.New("auth method is missing"))
	case method == nil:
		errs = append(errs, fmt.Errorf("auth method %q not found", r.AuthMethod))
	}
	if len(r.Description) > maxACLBindingRuleDescriptionLength {
		errs = append(errs, fmt.Errorf("description longer than %d", maxACLBindingRuleDescriptionLength))
	}
	switch r.BindType {
	case "":
		errs = append(errs, errors.New("bind type is missing"))
	case state.ACLBindTypeRole, state.ACLBindTypePolicy:
		if r.BindName == "" {
			errs = append(errs, errors.New("bind name is missing"))
		} else if method != nil {
			// Interpolated with every claim the method maps empty, a name
			// may come out invalid where a login's claims would not
			// leave it so: that is for the login to find.
			_, err := bindName(r, mappedValues(method.Config, nil))
			if err != nil && !(errors.Is(err, errBindNameInvalid) && strings.Contains(r.BindName, "${")) {
				errs = append(errs, err)
			}
		}
	case state.ACLBindTypeManagement:
		if r.BindName != "" {
			errs = append(errs, errors.New("bind name should be empty"))
		}
	default:
		errs = append(errs, fmt.Errorf("unsupported bind type: %q", r.BindType))
	}
	if r.Selector != "" {
		if _, err := bexpr.CreateEvaluator(r.Selector); err != nil {
			errs = append(errs, fmt.Errorf("selector is invalid: %w", err))
		}
	}
	return errors.Join(errs...)
}

// DeleteACLBindingRules deletes binding rules by ID; an unknown ID is
// ErrNotFound and deletes none.
func (s *Server) DeleteACLBindingRules(ids []string) (uint64, error) {
	return s.deleteACL("binding rule", ids, func(snap *state.Snapshot, id string) bool { return snap.ACLBindingRule(id) != nil },
		fsm.ACLBindingRuleDeleteRequestType, &fsm.ACLBindingRuleDeleteRequest{IDs: slices.Clone(ids)})
}

// authMethodFor returns the auth method a login names, of type typ.
func authMethodFor(snap *state.Snapshot, name, typ string) (*state.ACLAuthMethod, error) {
	m := snap.ACLAuthMethod(name)
	if m == nil {
		return nil, badRequest(fmt.Errorf("auth-method %q not found", name))
	}
	if m.Type != typ {
		return nil, badRequest(fmt.Errorf("auth-method %q is of type %s, not %s", name, m.Type, typ))
	}
	return m, nil
}

// Login exchanges a JWT for an ACL token (Nomad's /v1/acl/login): the JWT
// is checked with the JWT auth method's keys, audiences, issuers,
// algorithms and leeways (ErrUnauthorized if it does not check out), its
// claims are mapped as the method says, and the token holds what the
// method's binding rules grant them (ErrInvalid "no role or policy
// bindings matched" if nothing).
func (s *Server) Login(ctx context.Context, methodName, loginToken string) (*state.ACLToken, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if err := required(map[string]string{"auth method name": methodName, "login token": loginToken}); err != nil {
		return nil, 0, badRequest(fmt.Errorf("invalid login request: %w", err))
	}
	snap := s.store.Snapshot()
	m, err := authMethodFor(snap, methodName, state.ACLAuthMethodTypeJWT)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, authRequestTimeout)
	defer cancel()
	claims, err := s.verifyJWT(ctx, m.Config, loginToken)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: unable to validate provided token: %w", ErrUnauthorized, err)
	}
	return s.loginToken(snap, m, claims, nil)
}

// verifyJWT checks a JWT as a JWT auth method's configuration says and
// returns its claims.
func (s *Server) verifyJWT(ctx context.Context, c *state.ACLAuthMethodConfig, token string) (map[string]any, error) {
	var keys jwt.KeySet
	var err error
	switch {
	case len(c.JWTValidationPubKeys) > 0:
		var pks []crypto.PublicKey
		if pks, err = publicKeys(c.JWTValidationPubKeys); err == nil {
			keys, err = jwt.NewStaticKeySet(pks)
		}
	case c.JWKSURL != "":
		keys, err = jwt.NewJSONWebKeySet(ctx, c.JWKSURL, c.JWKSCACert)
	default:
		keys, err = jwt.NewOIDCDiscoveryKeySet(ctx, c.OIDCDiscoveryURL, strings.Join(c.DiscoveryCaPem, "\n"))
	}
	if err != nil {
		return nil, fmt.Errorf("unable to get the keys to check the token with: %w", err)
	}
	v, err := jwt.NewValidator(keys)
	if err != nil {
		return nil, err
	}
	algs := make([]jwt.Alg, len(c.SigningAlgs))
	for i, a := range c.SigningAlgs {
		algs[i] = jwt.Alg(a)
	}
	claims, err := v.Validate(ctx, token, jwt.Expected{Audiences: c.BoundAudiences, SigningAlgorithms: algs,
		NotBeforeLeeway: time.Duration(c.NotBeforeLeeway), ExpirationLeeway: time.Duration(c.ExpirationLeeway),
		ClockSkewLeeway: time.Duration(c.ClockSkewLeeway), Now: s.now})
	if err != nil {
		return nil, err
	}
	if len(c.BoundIssuer) > 0 {
		iss, ok := claims["iss"].(string)
		if !ok {
			return nil, errors.New("the auth method has bound issuers, and the token names no issuer")
		}
		if !slices.Contains(c.BoundIssuer, iss) {
			return nil, fmt.Errorf("invalid JWT issuer: %v", iss)
		}
	}
	return claims, nil
}

// oidcProvider is the OIDC provider of an OIDC auth method; the caller
// calls its Done.
func (s *Server) oidcProvider(m *state.ACLAuthMethod) (*oidc.Provider, error) {
	c := m.Config
	algs := []oidc.Alg{oidc.RS256}
	if len(c.SigningAlgs) > 0 {
		algs = algs[:0]
		for _, a := range c.SigningAlgs {
			algs = append(algs, oidc.Alg(a))
		}
	}
	// cap's own client waits for a provider without end (its discovery
	// has no deadline): this one gives up on a provider that does not
	// answer within authRequestTimeout.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = authRequestTimeout
	if len(c.DiscoveryCaPem) > 0 {
		pool, err := certPool(c.DiscoveryCaPem...)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	cfg, err := oidc.NewConfig(c.OIDCDiscoveryURL, c.OIDCClientID, oidc.ClientSecret(c.OIDCClientSecret), algs,
		c.AllowedRedirectURIs, oidc.WithAudiences(c.BoundAudiences...), oidc.WithRoundTripper(tr), oidc.WithNow(s.now))
	if err != nil {
		return nil, fmt.Errorf("failed to generate OIDC provider: %w", err)
	}
	p, err := oidc.NewProvider(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to generate OIDC provider: %w", err)
	}
	return p, nil
}

// oidcRequest is the OIDC authorization request a login's two steps share:
// Nomad's flow keeps nothing between them, the client giving its nonce
// (and, to complete, the provider's state) both times.
func oidcRequest(m *state.ACLAuthMethod, redirectURI, clientNonce, authState string) (*oidc.Req, error) {
	opts := []oidc.Option{oidc.WithNonce(clientNonce)}
	if authState != "" {
		opts = append(opts, oidc.WithState(authState))
	}
	if len(m.Config.OIDCScopes) > 0 {
		opts = append(opts, oidc.WithScopes(m.Config.OIDCScopes...))
	}
	if len(m.Config.BoundAudiences) > 0 {
		opts = append(opts, oidc.WithAudiences(m.Config.BoundAudiences...))
	}
	return oidc.NewRequest(authRequestTimeout, redirectURI, opts...)
}

// OIDCAuthURL starts an OIDC login (Nomad's /v1/acl/oidc/auth-url): the URL
// of the provider's sign-in page for the OIDC auth method, which sends the
// browser back to redirectURI (one of the method's AllowedRedirectURIs)
// with a state and a code for OIDCCompleteAuth.
func (s *Server) OIDCAuthURL(ctx context.Context, methodName, redirectURI, clientNonce string) (string, error) {
	if !s.cfg.ACLEnabled {
		return "", ErrACLDisabled
	}
	if err := required(map[string]string{"auth method name": methodName, "client nonce": clientNonce, "redirect URI": redirectURI}); err != nil {
		return "", badRequest(fmt.Errorf("invalid OIDC auth-url request: %w", err))
	}
	m, err := authMethodFor(s.store.Snapshot(), methodName, state.ACLAuthMethodTypeOIDC)
	if err != nil {
		return "", err
	}
	req, err := oidcRequest(m, redirectURI, clientNonce, "")
	if err != nil {
		return "", badRequest(fmt.Errorf("failed to generate OIDC request: %w", err))
	}
	p, err := s.oidcProvider(m)
	if err != nil {
		return "", err
	}
	defer p.Done()
	ctx, cancel := context.WithTimeout(ctx, authRequestTimeout)
	defer cancel()
	u, err := p.AuthURL(ctx, req)
	if err != nil {
		return "", badRequest(fmt.Errorf("failed to generate auth URL: %w", err))
	}
	return u, nil
}

// OIDCCompleteAuth ends an OIDC login (Nomad's /v1/acl/oidc/complete-auth):
// it exchanges the provider's code for its tokens, checks the ID token
// (signature, audience, the client's nonce), reads the user's claims from
// the provider unless the method says not to, and makes an ACL token
// holding what the method's binding rules grant them.
func (s *Server) OIDCCompleteAuth(ctx context.Context, methodName, clientNonce, authState, code, redirectURI string) (*state.ACLToken, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if err := required(map[string]string{"auth method name": methodName, "client nonce": clientNonce, "state": authState,
		"code": code, "redirect URI": redirectURI}); err != nil {
		return nil, 0, badRequest(fmt.Errorf("invalid OIDC complete-auth request: %w", err))
	}
	snap := s.store.Snapshot()
	m, err := authMethodFor(snap, methodName, state.ACLAuthMethodTypeOIDC)
	if err != nil {
		return nil, 0, err
	}
	req, err := oidcRequest(m, redirectURI, clientNonce, authState)
	if err != nil {
		return nil, 0, badRequest(fmt.Errorf("failed to generate OIDC request: %w", err))
	}
	p, err := s.oidcProvider(m)
	if err != nil {
		return nil, 0, err
	}
	defer p.Done()
	ctx, cancel := context.WithTimeout(ctx, authRequestTimeout)
	defer cancel()
	tk, err := p.Exchange(ctx, req, authState, code)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: failed to exchange token with provider: %w", ErrUnauthorized, err)
	}
	if !tk.Valid() {
		return nil, 0, fmt.Errorf("%w: exchanged token is not valid; potentially expired or empty", ErrUnauthorized)
	}
	var idClaims map[string]any
	if err := tk.IDToken().Claims(&idClaims); err != nil {
		return nil, 0, fmt.Errorf("failed to retrieve the ID token claims: %w", err)
	}
	var userClaims map[string]any
	if ts := tk.StaticTokenSource(); ts != nil && !m.Config.OIDCDisableUserInfo {
		sub, _ := idClaims["sub"].(string)
		if err := p.UserInfo(ctx, ts, sub, &userClaims); err != nil {
			return nil, 0, fmt.Errorf("failed to retrieve the user info claims: %w", err)
		}
	}
	return s.loginToken(snap, m, idClaims, userClaims)
}

// required names the empty ones of fields.
func required(fields map[string]string) error {
	var missing []string
	for name, v := range fields {
		if v == "" {
			missing = append(missing, "missing "+name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return errors.New(strings.Join(missing, "; "))
}

// loginToken makes the token of a login whose identity has these claims
// (user info claims taking precedence over the ID token's, but for iss and
// sub, as Nomad's).
func (s *Server) loginToken(snap *state.Snapshot, m *state.ACLAuthMethod, claims, userClaims map[string]any) (*state.ACLToken, uint64, error) {
	if len(userClaims) > 0 {
		merged := make(map[string]any, len(claims)+len(userClaims))
		for k, v := range userClaims {
			merged[k] = v
		}
		for _, k := range []string{"iss", "sub"} {
			if v, ok := claims[k]; ok {
				merged[k] = v
			}
		}
		for k, v := range claims {
			if _, ok := merged[k]; !ok {
				merged[k] = v
			}
		}
		claims = merged
	}
	id, err := identityOf(m.Config, claims)
	if err != nil {
		return nil, 0, badRequest(err)
	}
	management, policies, roles, err := bind(snap, m, id)
	if err != nil {
		return nil, 0, err
	}
	if m.Config.VerboseLogging {
		s.log.Debug().Str("auth_method", m.Name).Interface("claims", id).Bool("management", management).
			Strs("policies", policies).Strs("role_ids", roles).Msg("ACL login: the identity's mapped claims and what they bind")
	}
	if !management && len(policies) == 0 && len(roles) == 0 {
		return nil, 0, badRequest(errors.New("no role or policy bindings matched"))
	}
	name, err := interpolate(m.TokenNameFormat, tokenNameVars(m, id.Value), false)
	if err != nil {
		return nil, 0, badRequest(fmt.Errorf("the auth method's TokenNameFormat: %w", err))
	}
	t := &state.ACLToken{Name: name, Type: state.ACLClientToken, Policies: policies, Roles: roles,
		Global: m.TokenLocality == state.ACLTokenLocalityGlobal}
	if management {
		t.Type, t.Policies, t.Roles = state.ACLManagementToken, nil, nil
	}
	return s.UpsertACLToken(t, time.Duration(m.MaxTokenTTL))
}

// identity is what binding rules see of a login's claims: the values and
// lists the method maps them to, as `value.NAME` and `list.NAME` in
// selectors (Nomad's ACLAuthClaims).
type identity struct {
	Value map[string]string   `bexpr:"value"`
	List  map[string][]string `bexpr:"list"`
}

// identityOf maps claims as an auth method's configuration says: each
// claim (by name, or by JSON pointer when it starts with "/") of
// ClaimMappings to a string value, of ListClaimMappings to a list of
// them. A claim that is not there is left out; one that is not a string,
// boolean or number (or a list of them) is an error.
func identityOf(c *state.ACLAuthMethodConfig, claims map[string]any) (*identity, error) {
	id := &identity{Value: map[string]string{}, List: map[string][]string{}}
	for claim, name := range c.ClaimMappings {
		raw := claimValue(claims, claim)
		if raw == nil {
			continue
		}
		v, ok := claimString(raw)
		if !ok {
			return nil, fmt.Errorf("error converting claim '%s' to string from unknown type %T", claim, raw)
		}
		id.Value[name] = v
	}
	for claim, name := range c.ListClaimMappings {
		raw := claimValue(claims, claim)
		if raw == nil {
			continue
		}
		items, ok := raw.([]any)
		if !ok {
			items = []any{raw}
		}
		list := make([]string, 0, len(items))
		for _, it := range items {
			v, ok := claimString(it)
			if !ok {
				return nil, fmt.Errorf("value %v in %q list claim could not be parsed as string", it, claim)
			}
			if v != "" {
				list = append(list, v)
			}
		}
		id.List[name] = list
	}
	return id, nil
}

// claimValue is a claim by name or JSON pointer, nil if it is not there.
func claimValue(claims map[string]any, claim string) any {
	if !strings.HasPrefix(claim, "/") {
		return claims[claim]
	}
	v, err := pointerstructure.Get(claims, claim)
	if err != nil {
		return nil
	}
	return v
}

// claimString is a claim's value as a string: strings as they are,
// booleans as true or false, numbers as integers (a JWT's numbers are
// decoded as float64; Nomad truncates them so).
func claimString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		return v.String(), true
	case float64:
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

// mappedValues are the names binding rules' bind names may interpolate:
// value.NAME for each claim the method maps, with the identity's value or
// empty.
func mappedValues(c *state.ACLAuthMethodConfig, values map[string]string) map[string]string {
	vars := map[string]string{}
	if c != nil {
		for _, name := range c.ClaimMappings {
			vars["value."+name] = ""
		}
	}
	for name, v := range values {
		vars["value."+name] = v
	}
	return vars
}

// tokenNameVars are the names a token name format may interpolate: the
// method's type and name, and the mapped values.
func tokenNameVars(m *state.ACLAuthMethod, values map[string]string) map[string]string {
	vars := mappedValues(m.Config, values)
	vars["auth_method_type"], vars["auth_method_name"] = m.Type, m.Name
	return vars
}

var errBindNameInvalid = errors.New("computed bind name is invalid")

// bindName is a role or policy binding rule's bind name with vars
// interpolated (lower-cased, as Nomad's), which must be a valid role or
// policy name.
func bindName(r *state.ACLBindingRule, vars map[string]string) (string, error) {
	name, err := interpolate(r.BindName, vars, true)
	if err != nil {
		return "", fmt.Errorf("cannot compute %q bind name for bind target: %w", r.BindType, err)
	}
	valid := validACLPolicyName
	if r.BindType == state.ACLBindTypeRole {
		valid = validACLRoleName
	}
	if !valid.MatchString(name) {
		return "", fmt.Errorf("%w: %q bind name %q", errBindNameInvalid, r.BindType, name)
	}
	return name, nil
}

// bind applies the auth method's binding rules whose selectors match id:
// a management rule makes a management token; role and policy rules bind
// the roles and policies they name, where they exist (a role or policy
// named that is not there binds nothing, as in Nomad).
func bind(snap *state.Snapshot, m *state.ACLAuthMethod, id *identity) (management bool, policies, roles []string, err error) {
	vars := mappedValues(m.Config, id.Value)
	for _, r := range snap.ACLBindingRulesOf(m.Name) {
		if !selects(r.Selector, id) {
			continue
		}
		if r.BindType == state.ACLBindTypeManagement {
			return true, nil, nil, nil
		}
		name, err := bindName(r, vars)
		if err != nil {
			return false, nil, nil, badRequest(err)
		}
		switch r.BindType {
		case state.ACLBindTypeRole:
			if role := snap.ACLRoleByName(name); role != nil && !slices.Contains(roles, role.ID) {
				roles = append(roles, role.ID)
			}
		case state.ACLBindTypePolicy:
			if snap.ACLPolicy(name) != nil && !slices.Contains(policies, name) {
				policies = append(policies, name)
			}
		}
	}
	return false, policies, roles, nil
}

// selects reports whether a binding rule's selector matches id: an empty
// one matches every identity; one that does not evaluate (a value the
// identity lacks) matches none.
func selects(selector string, id *identity) bool {
	if selector == "" {
		return true
	}
	ev, err := bexpr.CreateEvaluator(selector)
	if err != nil {
		return false
	}
	ok, err := ev.Evaluate(id)
	return err == nil && ok
}

// interpolate replaces each ${NAME} of s with vars[NAME] (lower-cased if
// lower); an unknown name or an unclosed ${ is an error.
func interpolate(s string, vars map[string]string, lower bool) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed ${ in %q", s)
		}
		name := strings.TrimSpace(s[i+2 : i+j])
		v, ok := vars[name]
		if !ok {
			return "", fmt.Errorf("unknown variable accessed: %s", name)
		}
		if lower {
			v = strings.ToLower(v)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// UpsertOneTimeToken makes a one-time token for the ACL token accessor,
// which stands for it for 10 minutes.
func (s *Server) UpsertOneTimeToken(accessor string) (*state.OneTimeToken, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	ott := &state.OneTimeToken{OneTimeSecretID: newID(), AccessorID: accessor, ExpiresAt: s.now().Add(oneTimeTokenTTL).UnixNano()}
	index, err := s.Apply(fsm.OneTimeTokenUpsertRequestType, &fsm.OneTimeTokenUpsertRequest{Token: ott})
	if errors.Is(err, state.ErrNotFound) {
		return nil, 0, forbidden(errors.New("Permission denied")) // the token was deleted meanwhile
	}
	if err != nil {
		return nil, 0, err
	}
	ott.CreateIndex, ott.ModifyIndex = index, index
	return ott, index, nil
}

// ExchangeOneTimeToken spends a one-time token and returns the ACL token it
// stood for. One spent, expired, unknown, or whose token is gone or
// expired, is ErrForbidden ("Permission denied", as Nomad's); of two
// exchanges of one token, one wins.
func (s *Server) ExchangeOneTimeToken(secret string) (*state.ACLToken, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	denied := forbidden(errors.New("Permission denied"))
	ott := s.store.Snapshot().OneTimeToken(secret)
	if ott == nil {
		return nil, 0, denied
	}
	now := s.now()
	index, err := s.Apply(fsm.OneTimeTokenExchangeRequestType, &fsm.OneTimeTokenExchangeRequest{OneTimeSecretID: secret, Now: now.UnixNano()})
	if errors.Is(err, state.ErrNotFound) {
		return nil, 0, denied
	}
	if err != nil {
		return nil, 0, err
	}
	t := s.store.Snapshot().ACLTokenByAccessor(ott.AccessorID)
	if t == nil || t.Expired(now) {
		return nil, 0, denied
	}
	return t, index, nil
}

// collectExpiredOneTimeTokens deletes the one-time tokens expired by the
// server's clock, and those whose token is gone, if there are any.
func (s *Server) collectExpiredOneTimeTokens() error {
	if !s.cfg.ACLEnabled {
		return nil
	}
	now := s.now().UnixNano()
	snap := s.store.Snapshot()
	if !slices.ContainsFunc(snap.OneTimeTokens(), func(o *state.OneTimeToken) bool {
		return o.ExpiresAt < now || snap.ACLTokenByAccessor(o.AccessorID) == nil
	}) {
		return nil
	}
	if _, err := s.Apply(fsm.OneTimeTokenExpireRequestType, &fsm.OneTimeTokenExpireRequest{Now: now}); err != nil {
		return fmt.Errorf("server: delete expired one-time tokens: %w", err)
	}
	return nil
}
