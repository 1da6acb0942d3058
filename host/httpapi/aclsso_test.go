package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/cap/oidc"
	"github.com/hashicorp/nomad/api"
)

// TestNomadClient_JWTLogin: Nomad's client manages a JWT auth method
// whose keys are at a JWKS URL and its binding rules, logs in with a JWT
// as Nomad's `nomad login` does (no token), and trades a one-time token
// for its token as `nomad ui -authenticate` does.
func TestNomadClient_JWTLogin(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 0)
	root, anon := withToken(t, ts.URL, rootSecret), nomadClient(t, ts.URL)
	pub, priv := oidc.TestGenerateKeys(t)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(jwks.Close)
	sign := func(sub string, aud string) string {
		now := time.Now().Unix()
		return oidc.TestSignJWT(t, priv, "ES256", map[string]any{"sub": sub, "aud": aud, "iat": now, "nbf": now, "exp": now + 60,
			"groups": []string{"dev"}}, []byte("k1"))
	}

	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "dev-read", Rules: `namespace "default" { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	method, _, err := root.ACLAuthMethods().Create(&api.ACLAuthMethod{Name: "ci", Type: api.ACLAuthMethodTypeJWT,
		TokenLocality: api.ACLAuthMethodTokenLocalityLocal, MaxTokenTTL: 2 * time.Hour, Default: true,
		Config: &api.ACLAuthMethodConfig{JWKSURL: jwks.URL, SigningAlgs: []string{"ES256"}, BoundAudiences: []string{"drover"},
			ClaimMappings: map[string]string{"sub": "user"}, ListClaimMappings: map[string]string{"groups": "groups"},
			ClockSkewLeeway: time.Second}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if method.CreateIndex == 0 || method.MaxTokenTTL != 2*time.Hour || method.TokenNameFormat != "${auth_method_type}-${auth_method_name}" ||
		method.Config.ClockSkewLeeway != time.Second || method.CreateTime.IsZero() {
		t.Fatalf("created = %+v", method)
	}
	// The list is open: a login page shows it.
	stubs, _, err := anon.ACLAuthMethods().List(nil)
	if err != nil || len(stubs) != 1 || stubs[0].Name != "ci" || !stubs[0].Default || stubs[0].Type != "JWT" {
		t.Fatalf("anonymous list = %+v, %v", stubs, err)
	}
	if _, _, err := anon.ACLAuthMethods().Get("ci", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("anonymous read: err = %v, want 403", err)
	}
	if got, _, err := root.ACLAuthMethods().Get("ci", nil); err != nil || got.Config.JWKSURL != jwks.URL {
		t.Fatalf("read = %+v, %v", got, err)
	}

	rule, _, err := root.ACLBindingRules().Create(&api.ACLBindingRule{AuthMethod: "ci", Selector: `"dev" in list.groups`,
		BindType: api.ACLBindingRuleBindTypePolicy, BindName: "${value.user}-read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rule.Description = "developers read"
	if updated, _, err := root.ACLBindingRules().Update(rule, nil); err != nil || updated.Description != "developers read" ||
		updated.CreateIndex != rule.CreateIndex {
		t.Fatalf("update = %+v, %v", updated, err)
	}
	if rules, _, err := root.ACLBindingRules().List(nil); err != nil || len(rules) != 1 || rules[0].ID != rule.ID {
		t.Fatalf("rules = %+v, %v", rules, err)
	}

	tok, _, err := anon.ACLAuth().Login(&api.ACLLoginRequest{AuthMethodName: "ci", LoginToken: sign("DEV", "drover")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Type != "client" || !slices.Equal(tok.Policies, []string{"dev-read"}) || tok.Name != "JWT-ci" || tok.ExpirationTime == nil ||
		tok.ExpirationTime.Sub(tok.CreateTime) != 2*time.Hour {
		t.Fatalf("login token = %+v", tok)
	}
	self, _, err := withToken(t, ts.URL, tok.SecretID).ACLTokens().Self(nil)
	if err != nil || self.AccessorID != tok.AccessorID {
		t.Fatalf("the login token does not work: %+v, %v", self, err)
	}
	_, _, err = anon.ACLAuth().Login(&api.ACLLoginRequest{AuthMethodName: "ci", LoginToken: sign("dev", "nomad")}, nil)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "unable to validate provided token") {
		t.Fatalf("login for another audience: err = %v, want 401", err)
	}

	// One-time tokens: made by the token, exchanged once with none.
	ott, _, err := withToken(t, ts.URL, tok.SecretID).ACLTokens().UpsertOneTimeToken(nil)
	if err != nil || ott.AccessorID != tok.AccessorID || time.Until(ott.ExpiresAt) < 9*time.Minute {
		t.Fatalf("one-time token = %+v, %v", ott, err)
	}
	got, _, err := anon.ACLTokens().ExchangeOneTimeToken(ott.OneTimeSecretID, nil)
	if err != nil || got.SecretID != tok.SecretID {
		t.Fatalf("exchange = %+v, %v", got, err)
	}
	if _, _, err := anon.ACLTokens().ExchangeOneTimeToken(ott.OneTimeSecretID, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("second exchange: err = %v, want 403", err)
	}
	if _, _, err := anon.ACLTokens().UpsertOneTimeToken(nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("one-time token without a token: err = %v, want 403", err)
	}

	// Deleting the method deletes its rule.
	if _, err := root.ACLAuthMethods().Delete("ci", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := root.ACLBindingRules().Get(rule.ID, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the rule of a deleted method: err = %v, want 404", err)
	}
}

// TestNomadClient_OIDCLogin: Nomad's client logs in through an OIDC
// provider as `nomad login` does: it asks for the provider's URL, the
// browser signs in there and comes back with a code, which completes the
// login; the ID token's claims select what the token holds.
func TestNomadClient_OIDCLogin(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 0)
	root, anon := withToken(t, ts.URL, rootSecret), nomadClient(t, ts.URL)
	const redirect = "http://localhost:4649/oidc/callback"
	tp := oidc.StartTestProvider(t)
	t.Cleanup(tp.Stop)
	tp.SetClientCreds("drover", "s3cret")
	tp.SetAllowedRedirectURIs([]string{redirect})
	tp.SetExpectedAuthCode("code-1")
	tp.SetCustomClaims(map[string]any{"groups": []string{"ops"}, "email": "Ann@Example.com"})
	_, _, alg, _ := tp.SigningKeys()

	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "ops", Rules: `node { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := root.ACLRoles().Create(&api.ACLRole{Name: "operators", Policies: []*api.ACLRolePolicyLink{{Name: "ops"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := root.ACLAuthMethods().Create(&api.ACLAuthMethod{Name: "okta", Type: api.ACLAuthMethodTypeOIDC,
		TokenLocality: api.ACLAuthMethodTokenLocalityGlobal, MaxTokenTTL: time.Hour, TokenNameFormat: "okta-${value.email}",
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: tp.Addr(), OIDCClientID: "drover", OIDCClientSecret: "s3cret",
			AllowedRedirectURIs: []string{redirect}, DiscoveryCaPem: []string{tp.CACert()}, BoundAudiences: []string{"drover"},
			SigningAlgs: []string{string(alg)}, ClaimMappings: map[string]string{"email": "email"},
			ListClaimMappings: map[string]string{"groups": "groups"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := root.ACLBindingRules().Create(&api.ACLBindingRule{AuthMethod: "okta", Selector: `"ops" in list.groups`,
		BindType: api.ACLBindingRuleBindTypeRole, BindName: "operators"}, nil); err != nil {
		t.Fatal(err)
	}

	const nonce = "n-5f0d2c"
	tp.SetExpectedAuthNonce(nonce)
	start, _, err := anon.ACLAuth().GetAuthURL(&api.ACLOIDCAuthURLRequest{AuthMethodName: "okta", RedirectURI: redirect, ClientNonce: nonce}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(start.AuthURL, tp.Addr()+"/authorize?") || !strings.Contains(start.AuthURL, "client_id=drover") {
		t.Fatalf("auth URL = %s", start.AuthURL)
	}
	// The browser signs in and is sent back with a state and a code.
	browser := tp.HTTPClient()
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := browser.Get(start.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(back.String(), redirect) || back.Query().Get("code") != "code-1" {
		t.Fatalf("sent back to %q (%v)", resp.Header.Get("Location"), err)
	}
	complete := &api.ACLOIDCCompleteAuthRequest{AuthMethodName: "okta", ClientNonce: nonce, State: back.Query().Get("state"),
		Code: back.Query().Get("code"), RedirectURI: redirect}

	// Another client's nonce does not complete it.
	wrong := *complete
	wrong.ClientNonce = "n-other"
	if _, _, err := anon.ACLAuth().CompleteAuth(&wrong, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("completion with another nonce: err = %v, want 401", err)
	}
	tok, _, err := anon.ACLAuth().CompleteAuth(complete, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Type != "client" || len(tok.Roles) != 1 || tok.Roles[0].Name != "operators" || !tok.Global || tok.Name != "okta-Ann@Example.com" ||
		tok.ExpirationTime == nil {
		t.Fatalf("OIDC token = %+v", tok)
	}
	if _, _, err := withToken(t, ts.URL, tok.SecretID).Nodes().List(nil); err != nil {
		t.Fatalf("the OIDC token cannot read nodes, which its role's policy allows: %v", err)
	}

	// A redirect the method does not allow is refused before any sign-in.
	if _, _, err := anon.ACLAuth().GetAuthURL(&api.ACLOIDCAuthURLRequest{AuthMethodName: "okta", RedirectURI: "https://evil.example/cb",
		ClientNonce: nonce}, nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("auth URL for another redirect: err = %v, want 400", err)
	}
}
