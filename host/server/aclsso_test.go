package server_test

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/cap/oidc"
)

// pemPublicKey is a public key as a JWT auth method takes it.
func pemPublicKey(t *testing.T, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// jwtAuthMethod is a JWT auth method checking ES256 tokens of key pub for
// audience "drover" from issuer "https://ci.example", mapping the claims
// sub (user), /info/team (team) and groups (list groups).
func jwtAuthMethod(t *testing.T, name string, pub crypto.PublicKey) *state.ACLAuthMethod {
	return &state.ACLAuthMethod{Name: name, Type: state.ACLAuthMethodTypeJWT, TokenLocality: state.ACLTokenLocalityLocal,
		MaxTokenTTL: int64(time.Hour), Config: &state.ACLAuthMethodConfig{JWTValidationPubKeys: []string{pemPublicKey(t, pub)},
			SigningAlgs: []string{"ES256"}, BoundAudiences: []string{"drover"}, BoundIssuer: []string{"https://ci.example"},
			ClaimMappings: map[string]string{"sub": "user", "/info/team": "team"}, ListClaimMappings: map[string]string{"groups": "groups"}}}
}

// signedJWT is a JWT for sub signed with priv, valid now unless claims
// say otherwise.
func signedJWT(t *testing.T, priv crypto.PrivateKey, sub string, claims map[string]any) string {
	t.Helper()
	now := time.Now().Unix()
	c := map[string]any{"iss": "https://ci.example", "aud": "drover", "sub": sub, "iat": now, "nbf": now, "exp": now + 300}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return oidc.TestSignJWT(t, priv, "ES256", c, nil)
}

func mustUpsertMethods(t *testing.T, s *server.Server, ms ...*state.ACLAuthMethod) []*state.ACLAuthMethod {
	t.Helper()
	out, _, err := s.UpsertACLAuthMethods(ms)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustUpsertRules(t *testing.T, s *server.Server, rs ...*state.ACLBindingRule) []*state.ACLBindingRule {
	t.Helper()
	out, _, err := s.UpsertACLBindingRules(rs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// An auth method is checked as it is written: what its type needs of its
// configuration is there and parses, and at most one method is the
// default. A replacement keeps what it leaves empty.
func TestACLSSO_AuthMethodValidation(t *testing.T) {
	s := aclServer(t, nil)
	pub, _ := oidc.TestGenerateKeys(t)
	oidcMethod := func(modify func(*state.ACLAuthMethod)) *state.ACLAuthMethod {
		m := &state.ACLAuthMethod{Name: "okta", Type: state.ACLAuthMethodTypeOIDC, TokenLocality: state.ACLTokenLocalityGlobal,
			MaxTokenTTL: int64(time.Hour), Config: &state.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://okta.example",
				OIDCClientID: "drover", AllowedRedirectURIs: []string{"http://localhost:4649/oidc/callback"}}}
		if modify != nil {
			modify(m)
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		modify func(*state.ACLAuthMethod)
		want   string
	}{
		{"name", func(m *state.ACLAuthMethod) { m.Name = "no spaces" }, "invalid name 'no spaces'"},
		{"type", func(m *state.ACLAuthMethod) { m.Type = "LDAP" }, "invalid token type 'LDAP'"},
		{"locality", func(m *state.ACLAuthMethod) { m.TokenLocality = "regional" }, "invalid token locality 'regional'"},
		{"ttl", func(m *state.ACLAuthMethod) { m.MaxTokenTTL = int64(48 * time.Hour) }, "invalid MaxTokenTTL value '48h0m0s' (should be between 1m0s and 24h0m0s)"},
		{"no ttl", func(m *state.ACLAuthMethod) { m.MaxTokenTTL = 0 }, "invalid MaxTokenTTL value '0s'"},
		{"config", func(m *state.ACLAuthMethod) { m.Config = nil }, "missing config"},
		{"client ID", func(m *state.ACLAuthMethod) { m.Config.OIDCClientID = "" }, "needs OIDCDiscoveryURL and OIDCClientID"},
		{"redirects", func(m *state.ACLAuthMethod) { m.Config.AllowedRedirectURIs = nil }, "needs AllowedRedirectURIs"},
		{"discovery URL", func(m *state.ACLAuthMethod) { m.Config.OIDCDiscoveryURL = "okta.example" }, `OIDCDiscoveryURL "okta.example" is not an http or https URL`},
		{"pkce", func(m *state.ACLAuthMethod) { m.Config.OIDCEnablePKCE = true }, "OIDCEnablePKCE is not supported"},
		{"ca", func(m *state.ACLAuthMethod) { m.Config.DiscoveryCaPem = []string{"not a certificate"} }, "DiscoveryCaPem: CA certificate 0 holds no PEM certificate"},
		{"alg", func(m *state.ACLAuthMethod) { m.Config.SigningAlgs = []string{"HS256"} }, `unsupported signing algorithm "HS256"`},
		{"mapping", func(m *state.ACLAuthMethod) { m.Config.ClaimMappings = map[string]string{"email": "who", "sub": "who"} }, `two claims map to "who"`},
		{"name format", func(m *state.ACLAuthMethod) { m.TokenNameFormat = "${value.nope}" }, "unknown variable accessed: value.nope"},
		{"jwt keys", func(m *state.ACLAuthMethod) {
			m.Type = state.ACLAuthMethodTypeJWT
			m.Config.JWKSURL = "https://okta.example/keys"
		}, "needs exactly one of JWTValidationPubKeys, JWKSURL and OIDCDiscoveryURL"},
		{"jwt pem", func(m *state.ACLAuthMethod) {
			m.Type = state.ACLAuthMethodTypeJWT
			m.Config.OIDCDiscoveryURL, m.Config.JWTValidationPubKeys = "", []string{"not a key"}
		}, "JWTValidationPubKeys[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.UpsertACLAuthMethods([]*state.ACLAuthMethod{oidcMethod(tc.modify)})
			wantErr(t, tc.name, err, server.ErrInvalid, tc.want)
		})
	}

	okta := mustUpsertMethods(t, s, oidcMethod(func(m *state.ACLAuthMethod) { m.Default = true }))[0]
	if okta.TokenNameFormat != server.DefaultTokenNameFormat || okta.CreateTime == 0 || !okta.Default {
		t.Fatalf("stored = %+v", okta)
	}
	ci := jwtAuthMethod(t, "ci", pub)
	ci.Default = true
	_, _, err := s.UpsertACLAuthMethods([]*state.ACLAuthMethod{ci})
	wantErr(t, "second default", err, server.ErrInvalid, "default method already exists: okta")
	ci.Default = false
	mustUpsertMethods(t, s, ci)

	// A replacement naming only what changes keeps the rest, and its
	// creation.
	time.Sleep(time.Millisecond)
	again := mustUpsertMethods(t, s, &state.ACLAuthMethod{Name: "okta", MaxTokenTTL: int64(2 * time.Hour)})[0]
	if again.Type != state.ACLAuthMethodTypeOIDC || again.Config.OIDCClientID != "drover" || again.MaxTokenTTL != int64(2*time.Hour) ||
		again.CreateTime != okta.CreateTime || again.ModifyTime <= okta.ModifyTime || again.CreateIndex != okta.CreateIndex {
		t.Fatalf("replaced = %+v (was %+v)", again, okta)
	}
	if again.Default {
		t.Fatal("a replacement that does not say Default kept it") // as Nomad's: Default is not merged
	}

	// Deleting a method deletes its rules.
	rule := mustUpsertRules(t, s, &state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypeManagement})[0]
	if _, err := s.DeleteACLAuthMethods([]string{"ci", "nope"}); err == nil {
		t.Fatal("deleting an unknown method too succeeded")
	}
	if _, err := s.DeleteACLAuthMethods([]string{"ci"}); err != nil {
		t.Fatal(err)
	}
	if snap := s.Store().Snapshot(); snap.ACLAuthMethod("ci") != nil || snap.ACLBindingRule(rule.ID) != nil {
		t.Fatal("the method or its rule survived its deletion")
	}
}

// A binding rule is checked as it is written; an update keeps what it
// leaves empty.
func TestACLSSO_BindingRuleValidation(t *testing.T) {
	s := aclServer(t, nil)
	pub, _ := oidc.TestGenerateKeys(t)
	mustUpsertMethods(t, s, jwtAuthMethod(t, "ci", pub))
	for _, tc := range []struct {
		name string
		rule state.ACLBindingRule
		want string
	}{
		{"method", state.ACLBindingRule{BindType: state.ACLBindTypeManagement}, "auth method is missing"},
		{"unknown method", state.ACLBindingRule{AuthMethod: "nope", BindType: state.ACLBindTypeManagement}, `auth method "nope" not found`},
		{"bind type", state.ACLBindingRule{AuthMethod: "ci"}, "bind type is missing"},
		{"odd bind type", state.ACLBindingRule{AuthMethod: "ci", BindType: "user"}, `unsupported bind type: "user"`},
		{"bind name", state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypeRole}, "bind name is missing"},
		{"management name", state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypeManagement, BindName: "x"}, "bind name should be empty"},
		{"policy name", state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypePolicy, BindName: "no spaces"}, "computed bind name is invalid"},
		{"unmapped claim", state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypePolicy, BindName: "team-${value.email}"}, "unknown variable accessed: value.email"},
		{"selector", state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypeManagement, Selector: "value.user =="}, "selector is invalid"},
		{"description", state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypeManagement, Description: strings.Repeat("x", 257)}, "description longer than 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.UpsertACLBindingRules([]*state.ACLBindingRule{&tc.rule})
			wantErr(t, tc.name, err, server.ErrInvalid, tc.want)
		})
	}
	r := mustUpsertRules(t, s, &state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypePolicy,
		BindName: "team-${value.team}", Selector: `value.team != ""`, Description: "teams"})[0]
	if len(r.ID) != 36 || r.CreateTime == 0 {
		t.Fatalf("stored = %+v", r)
	}
	up := mustUpsertRules(t, s, &state.ACLBindingRule{ID: r.ID, Description: "per team"})[0]
	if up.AuthMethod != "ci" || up.BindType != state.ACLBindTypePolicy || up.BindName != "team-${value.team}" ||
		up.Description != "per team" || up.Selector != "" || up.CreateTime != r.CreateTime || up.CreateIndex != r.CreateIndex {
		t.Fatalf("updated = %+v (was %+v)", up, r)
	}
	if m := mustUpsertRules(t, s, &state.ACLBindingRule{ID: r.ID, BindType: state.ACLBindTypeManagement})[0]; m.BindName != "" ||
		m.BindType != state.ACLBindTypeManagement {
		t.Fatalf("made management = %+v", m)
	}
	_, _, err := s.UpsertACLBindingRules([]*state.ACLBindingRule{{ID: "9f3c1a2e-0000-4000-8000-0000000000aa", BindType: state.ACLBindTypeManagement}})
	wantErr(t, "unknown rule", err, server.ErrInvalid, "cannot find binding rule")
}

// A JWT login checks the JWT, maps its claims, and makes a token holding
// what the matching rules bind; a JWT that does not check out is
// ErrUnauthorized, an identity no rule grants anything ErrInvalid.
func TestACLSSO_JWTLogin(t *testing.T) {
	s := aclServer(t, nil)
	pub, priv := oidc.TestGenerateKeys(t)
	_, otherKey := oidc.TestGenerateKeys(t)
	if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "team-eng", Rules: nodeRead}, {Name: "readonly", Rules: nodeRead}}); err != nil {
		t.Fatal(err)
	}
	roles, _, err := s.UpsertACLRoles([]*state.ACLRole{{Name: "ops", Policies: []string{"readonly"}}})
	if err != nil {
		t.Fatal(err)
	}
	method := jwtAuthMethod(t, "ci", pub)
	mustUpsertMethods(t, s, method)
	mustUpsertRules(t, s,
		&state.ACLBindingRule{AuthMethod: "ci", Selector: `"ops" in list.groups`, BindType: state.ACLBindTypeRole, BindName: "ops"},
		&state.ACLBindingRule{AuthMethod: "ci", Selector: `value.team != ""`, BindType: state.ACLBindTypePolicy, BindName: "team-${value.team}"},
		// Binds nothing: no policy of that name.
		&state.ACLBindingRule{AuthMethod: "ci", BindType: state.ACLBindTypePolicy, BindName: "user-${value.user}"},
		&state.ACLBindingRule{AuthMethod: "ci", Selector: `value.user == "root"`, BindType: state.ACLBindTypeManagement})
	ctx := context.Background()

	before := time.Now()
	tok, index, err := s.Login(ctx, "ci", signedJWT(t, priv, "alice", map[string]any{"groups": []string{"dev", "ops"}, "info": map[string]any{"team": "ENG"}}))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Type != state.ACLClientToken || tok.Name != "JWT-ci" || !slices.Equal(tok.Roles, []string{roles[0].ID}) ||
		!slices.Equal(tok.Policies, []string{"team-eng"}) || tok.Global || tok.CreateIndex != index {
		t.Fatalf("alice's token = %+v", tok)
	}
	if exp := time.Unix(0, tok.ExpirationTime); exp.Before(before.Add(time.Hour)) || exp.After(time.Now().Add(time.Hour)) {
		t.Fatalf("alice's token expires at %v, want an hour from the login", exp)
	}
	root, _, err := s.Login(ctx, "ci", signedJWT(t, priv, "root", nil))
	if err != nil || root.Type != state.ACLManagementToken || len(root.Policies)+len(root.Roles) != 0 {
		t.Fatalf("root's token = %+v, %v", root, err)
	}
	_, _, err = s.Login(ctx, "ci", signedJWT(t, priv, "bob", map[string]any{"groups": []string{"dev"}}))
	wantErr(t, "nothing bound", err, server.ErrInvalid, "no role or policy bindings matched")

	for _, tc := range []struct {
		name, jwt, want string
	}{
		{"expired", signedJWT(t, priv, "alice", map[string]any{"exp": time.Now().Add(-time.Hour).Unix(), "iat": time.Now().Add(-2 * time.Hour).Unix(),
			"nbf": time.Now().Add(-2 * time.Hour).Unix()}), "expired"},
		{"audience", signedJWT(t, priv, "alice", map[string]any{"aud": "nomad"}), "audience"},
		{"issuer", signedJWT(t, priv, "alice", map[string]any{"iss": "https://evil.example"}), "invalid JWT issuer"},
		{"no issuer", signedJWT(t, priv, "alice", map[string]any{"iss": nil}), "names no issuer"},
		{"key", signedJWT(t, otherKey, "alice", nil), "signature"},
		{"garbage", "not.a.jwt", "unable to validate provided token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Login(ctx, "ci", tc.jwt)
			wantErr(t, tc.name, err, server.ErrUnauthorized, tc.want)
		})
	}
	_, _, err = s.Login(ctx, "nope", signedJWT(t, priv, "alice", nil))
	wantErr(t, "unknown method", err, server.ErrInvalid, `auth-method "nope" not found`)
	_, _, err = s.Login(ctx, "", "")
	wantErr(t, "empty request", err, server.ErrInvalid, "missing auth method name")

	// A claim that maps to neither string nor number is refused.
	_, _, err = s.Login(ctx, "ci", signedJWT(t, priv, "alice", map[string]any{"info": map[string]any{"team": []string{"a"}}}))
	wantErr(t, "list as value", err, server.ErrInvalid, "error converting claim '/info/team'")

	// The token name format interpolates claims.
	method.TokenNameFormat = "${auth_method_name}-${value.user}"
	mustUpsertMethods(t, s, method)
	if tok, _, err := s.Login(ctx, "ci", signedJWT(t, priv, "root", nil)); err != nil || tok.Name != "ci-root" {
		t.Fatalf("named token = %+v, %v", tok, err)
	}
}

// A one-time token is exchanged for its token once; one whose token is
// gone is refused, and collected.
func TestACLSSO_OneTimeTokens(t *testing.T) {
	s := aclServer(t, func(c *server.Config) { c.ACLTokenGCInterval = 0 })
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken, Name: "ops"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ott, index, err := s.UpsertOneTimeToken(tok.AccessorID)
	if err != nil {
		t.Fatal(err)
	}
	if ott.AccessorID != tok.AccessorID || len(ott.OneTimeSecretID) != 36 || ott.CreateIndex != index ||
		time.Until(time.Unix(0, ott.ExpiresAt)) < 9*time.Minute {
		t.Fatalf("one-time token = %+v", ott)
	}
	got, _, err := s.ExchangeOneTimeToken(ott.OneTimeSecretID)
	if err != nil || got.SecretID != tok.SecretID {
		t.Fatalf("exchange = %+v, %v", got, err)
	}
	_, _, err = s.ExchangeOneTimeToken(ott.OneTimeSecretID)
	wantErr(t, "second exchange", err, server.ErrForbidden, "Permission denied")
	_, _, err = s.ExchangeOneTimeToken("nope")
	wantErr(t, "unknown", err, server.ErrForbidden, "Permission denied")

	orphan, _, err := s.UpsertOneTimeToken(tok.AccessorID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteACLTokens([]string{tok.AccessorID}); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.ExchangeOneTimeToken(orphan.OneTimeSecretID)
	wantErr(t, "token gone", err, server.ErrForbidden, "Permission denied")
	if _, _, err := s.UpsertOneTimeToken(tok.AccessorID); err == nil {
		t.Fatal("a one-time token was made for a deleted token")
	}
	late, _, err := s.UpsertOneTimeToken(mustToken(t, s).AccessorID)
	if err != nil {
		t.Fatal(err)
	}
	gone := mustToken(t, s)
	stale, _, err := s.UpsertOneTimeToken(gone.AccessorID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteACLTokens([]string{gone.AccessorID}); err != nil {
		t.Fatal(err)
	}
	_, _, _ = s.ForceGC() // without a core scheduler plugin it refuses the rest
	snap := s.Store().Snapshot()
	if snap.OneTimeToken(stale.OneTimeSecretID) != nil || snap.OneTimeToken(late.OneTimeSecretID) == nil {
		t.Fatalf("after a collection: %+v", snap.OneTimeTokens())
	}
}

func mustToken(t *testing.T, s *server.Server) *state.ACLToken {
	t.Helper()
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
