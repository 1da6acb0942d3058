package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/internal/testlog"
	"github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/cap/oidc"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// writeACLPolicy writes a policy with rules through the API.
func writeACLPolicy(t *testing.T, addr, root, name, rules string) {
	t.Helper()
	cl, err := client.New(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	cl.Token = root
	if _, err := cl.Post(bg, "/v1/acl/policy/"+name, &api.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
		t.Fatalf("policy %s: %v", name, err)
	}
}

// drover login with a JWT auth method, the default one, whose keys a JWKS
// server serves: the token it prints holds the policy the binding rule
// grants and works; a JWT for another audience, a missing JWT, an unknown
// method and a wrong -type are refused.
func TestLogin_JWT(t *testing.T) {
	addr, root := aclAgent(t)
	pub, priv := oidc.TestGenerateKeys(t)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(jwks.Close)
	sign := func(aud string) string {
		now := time.Now().Unix()
		return oidc.TestSignJWT(t, priv, "ES256", map[string]any{"sub": "ann", "aud": aud, "iat": now, "nbf": now, "exp": now + 60,
			"groups": []string{"dev"}}, []byte("k1"))
	}
	writeACLPolicy(t, addr, root, "dev-read", `node { policy = "read" }`)
	config, err := json.Marshal(&api.ACLAuthMethodConfig{JWKSURL: jwks.URL, SigningAlgs: []string{"ES256"},
		BoundAudiences: []string{"drover"}, ClaimMappings: map[string]string{"sub": "user"},
		ListClaimMappings: map[string]string{"groups": "groups"}})
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, 0, addr, root, "acl", "auth-method", "create", "-name", "ci", "-type", "JWT", "-max-token-ttl", "1h",
		"-token-locality", "local", "-default", "-token-name-format", "ci-${value.user}", "-config", string(config))
	mustRun(t, 0, addr, root, "acl", "binding-rule", "create", "-auth-method", "ci", "-selector", `"dev" in list.groups`,
		"-bind-type", "policy", "-bind-name", "dev-read")

	out, stderr := mustRun(t, 0, addr, "", "login", "-type", "JWT", "-login-token", sign("drover"))
	if !strings.HasPrefix(out, "Successfully logged in via JWT and ci\n\n") {
		t.Errorf("login output:\n%s", out)
	}
	checkKVs(t, out, "Name", "ci-ann", "Type", "client", "Policies", "[dev-read]")
	secret, accessor := kvValue(out, "Secret ID"), kvValue(out, "Accessor ID")
	if secret == "" || stderr != "" {
		t.Fatalf("login: no secret, or stderr:\n%s\n%s", out, stderr)
	}
	if hasKV(out, "Expiry Time", "<none>") {
		t.Errorf("the login's token does not expire:\n%s", out)
	}
	self, _ := mustRun(t, 0, addr, secret, "acl", "token", "self")
	checkKVs(t, self, "Accessor ID", accessor, "Policies", "[dev-read]")
	mustRun(t, 0, addr, secret, "node", "status") // what dev-read grants

	// -method names it too; -json prints the API's token.
	out, _ = mustRun(t, 0, addr, "", "login", "-method", "ci", "-login-token", sign("drover"), "-json")
	var token api.ACLToken
	if err := json.Unmarshal([]byte(out), &token); err != nil || token.SecretID == "" || token.SecretID == secret || token.Name != "ci-ann" {
		t.Errorf("login -json = %+v, %v:\n%s", token, err, out)
	}
	if out, _ = mustRun(t, 0, addr, "", "login", "-login-token", sign("drover"), "-t", "{{.Type}}"); out != "client\n" {
		t.Errorf("login -t:\n%s", out)
	}

	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"JWT for another audience", []string{"-login-token", sign("nomad")},
			`logging in with ACL auth method "ci": API error (401): unauthorized: unable to validate provided token`},
		{"no JWT", nil, "A JWT login needs the JWT: give it with -login-token"},
		{"unknown method", []string{"-method", "nope", "-login-token", "x"}, `ACL auth method "nope" not found`},
		{"bad type", []string{"-type", "SAML", "-login-token", "x"}, `-type "SAML" is neither OIDC nor JWT`},
		{"OIDC for a JWT method", []string{"-type", "oidc", "-oidc-callback-addr", freeAddr(t)},
			`auth-method "ci" is of type JWT, not OIDC`},
		{"JSON and template", []string{"-json", "-t", "{{.Name}}", "-login-token", "x"}, errJSONAndTemplate},
		{"arguments", []string{"ci"}, "This command takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr := mustRun(t, 1, addr, "", append([]string{"login"}, tc.args...)...)
			checkContains(t, "stderr", stderr, tc.errHas)
		})
	}

	mustRun(t, 0, addr, root, "acl", "auth-method", "update", "-default=false", "ci")
	_, stderr = mustRun(t, 1, addr, "", "login", "-login-token", sign("drover"))
	checkContains(t, "login without a default method", stderr, "Must specify an auth method name with -method, no default found")
}

// drover login with an OIDC auth method through cap's test provider: the
// command serves the callback, prints the provider's URL, which the
// "browser" (the provider's HTTP client) follows to sign in and back to
// the callback; the token the command prints holds the role the binding
// rule grants and works. A request with another state does not end the
// wait; the provider's refusal ends it with its error, and nobody coming
// back ends it at -oidc-timeout.
func TestLogin_OIDC(t *testing.T) {
	addr, root := aclAgent(t)
	callback := freeAddr(t)
	redirect := "http://" + callback + "/oidc/callback"
	tp := oidc.StartTestProvider(t)
	t.Cleanup(tp.Stop)
	tp.SetClientCreds("drover", "s3cret")
	tp.SetAllowedRedirectURIs([]string{redirect})
	tp.SetExpectedAuthCode("code-1")
	tp.SetCustomClaims(map[string]any{"groups": []string{"ops"}, "email": "ann@example.com"})
	_, _, alg, _ := tp.SigningKeys()

	writeACLPolicy(t, addr, root, "ops", `node { policy = "read" }`)
	mustRun(t, 0, addr, root, "acl", "role", "create", "-name", "operators", "-policy", "ops")
	config, err := json.Marshal(&api.ACLAuthMethodConfig{OIDCDiscoveryURL: tp.Addr(), OIDCClientID: "drover", OIDCClientSecret: "s3cret",
		AllowedRedirectURIs: []string{redirect}, DiscoveryCaPem: []string{tp.CACert()}, BoundAudiences: []string{"drover"},
		SigningAlgs: []string{string(alg)}, ClaimMappings: map[string]string{"email": "email"},
		ListClaimMappings: map[string]string{"groups": "groups"}})
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, 0, addr, root, "acl", "auth-method", "create", "-name", "okta", "-type", "OIDC", "-max-token-ttl", "1h",
		"-token-locality", "global", "-config", string(config))
	mustRun(t, 0, addr, root, "acl", "binding-rule", "create", "-auth-method", "okta", "-selector", `"ops" in list.groups`,
		"-bind-type", "role", "-bind-name", "operators")

	// login starts drover login in the background; wait returns its exit
	// code and output, once it is done.
	type result struct {
		code           int
		stdout, stderr string
	}
	login := func(t *testing.T, args ...string) (stderr *testlog.Buffer, wait func() result) {
		t.Helper()
		setTokenEnv(t, nil)
		stdout, stderr := &testlog.Buffer{}, &testlog.Buffer{}
		m := &meta{ui: &cli.BasicUi{Reader: strings.NewReader(""), Writer: stdout, ErrorWriter: stderr}, out: stdout, now: time.Now}
		cmd, cmdArgs := commandFor(t, m, addr, "", append([]string{"login", "-method", "okta", "-oidc-callback-addr", callback}, args...)...)
		done := make(chan int, 1)
		go func() { done <- cmd.Run(cmdArgs) }()
		return stderr, func() result {
			select {
			case code := <-done:
				return result{code, stdout.String(), stderr.String()}
			case <-time.After(30 * time.Second):
				t.Fatalf("drover login still runs after 30s; stderr:\n%s", stderr.String())
				return result{}
			}
		}
	}
	// authURL waits for the URL login prints.
	authURL := func(t *testing.T, stderr *testlog.Buffer) *url.URL {
		t.Helper()
		re := regexp.MustCompile(`(?m)^    (https://\S+)$`)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if m := re.FindStringSubmatch(stderr.String()); m != nil {
				u, err := url.Parse(m[1])
				if err != nil {
					t.Fatal(err)
				}
				return u
			}
		}
		t.Fatalf("no auth URL printed:\n%s", stderr.String())
		return nil
	}
	// visit has the browser sign in at u, the provider sending it back to
	// the callback; it returns the callback's answer.
	visit := func(t *testing.T, u *url.URL) (int, string) {
		t.Helper()
		resp, err := tp.HTTPClient().Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.Request.URL.Host != callback || resp.Request.URL.Path != "/oidc/callback" {
			t.Fatalf("the browser ended at %s, not the callback", resp.Request.URL)
		}
		return resp.StatusCode, string(body)
	}

	t.Run("signed in", func(t *testing.T) {
		stderr, wait := login(t)
		u := authURL(t, stderr)
		if !strings.HasPrefix(u.String(), tp.Addr()+"/authorize?") || u.Query().Get("redirect_uri") != redirect {
			t.Fatalf("auth URL %s", u)
		}
		// A request that is not the provider's redirect is refused; the
		// login waits on.
		resp, err := http.Get(redirect + "?state=forged&code=code-1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a forged callback: %s, want 400", resp.Status)
		}
		// The provider puts the command's nonce in the ID token.
		tp.SetExpectedAuthNonce(u.Query().Get("nonce"))
		if code, body := visit(t, u); code != http.StatusOK || !strings.Contains(body, "Signed in") {
			t.Errorf("callback answered %d: %s", code, body)
		}
		r := wait()
		if r.code != 0 {
			t.Fatalf("login: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.HasPrefix(r.stdout, "Successfully logged in via OIDC and okta\n\n") {
			t.Errorf("login output:\n%s", r.stdout)
		}
		checkKVs(t, r.stdout, "Name", "OIDC-okta", "Type", "client", "Global", "true")
		checkContains(t, "login output", r.stdout, "\nRoles\n", " operators\n")
		self, _ := mustRun(t, 0, addr, kvValue(r.stdout, "Secret ID"), "acl", "token", "self")
		checkKVs(t, self, "Accessor ID", kvValue(r.stdout, "Accessor ID"))
		mustRun(t, 0, addr, kvValue(r.stdout, "Secret ID"), "node", "status") // what the role's policy grants
	})

	t.Run("refused by the provider", func(t *testing.T) {
		stderr, wait := login(t, "-json")
		u := authURL(t, stderr)
		tp.SetExpectedAuthNonce("another client's")
		if code, body := visit(t, u); code != http.StatusOK || !strings.Contains(body, "refused the sign-in: access_denied") {
			t.Errorf("callback answered %d: %s", code, body)
		}
		r := wait()
		if r.code != 1 || r.stdout != "" {
			t.Fatalf("login: exit %d, want 1\nstdout:\n%s", r.code, r.stdout)
		}
		checkContains(t, "stderr", r.stderr, `logging in with ACL auth method "okta": the OIDC provider refused the sign-in: access_denied`)
	})

	t.Run("nobody comes back", func(t *testing.T) {
		_, wait := login(t, "-oidc-timeout", "300ms")
		r := wait()
		if r.code != 1 {
			t.Fatalf("login: exit %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		checkContains(t, "stderr", r.stderr, "the OIDC provider did not send the browser back to "+redirect+" within 300ms")
	})

	t.Run("callback address in use", func(t *testing.T) {
		stderr, wait := login(t)
		u := authURL(t, stderr) // the first login serves the callback
		_, busy := mustRun(t, 1, addr, "", "login", "-method", "okta", "-oidc-callback-addr", callback)
		checkContains(t, "stderr", busy, "serving the OIDC callback: listen tcp "+callback)
		tp.SetExpectedAuthNonce(u.Query().Get("nonce"))
		visit(t, u)
		if r := wait(); r.code != 0 {
			t.Errorf("the first login: exit %d\nstderr:\n%s", r.code, r.stderr)
		}
	})
}

// An auth URL without a state gives the callback nothing to tell the
// provider's redirect from a forged one: login refuses it rather than
// completing the login with whatever code reaches the callback first.
func TestLogin_OIDCAuthURLWithoutState(t *testing.T) {
	srv, requests := fakeAgent(t, map[string]agentAnswer{
		"GET /v1/acl/auth-methods":  {body: []*api.ACLAuthMethodListStub{{Name: "okta", Type: "OIDC", Default: true}}},
		"PUT /v1/acl/oidc/auth-url": {body: api.ACLOIDCAuthURLResponse{AuthURL: "https://idp.example/authorize?client_id=drover"}},
	})
	callback := freeAddr(t)
	setTokenEnv(t, nil)
	var stdout, stderr testlog.Buffer
	m := &meta{ui: &cli.BasicUi{Reader: strings.NewReader(""), Writer: &stdout, ErrorWriter: &stderr}, out: &stdout, now: time.Now}
	cmd, args := commandFor(t, m, srv.URL, "", "login", "-oidc-callback-addr", callback, "-oidc-timeout", "10s")
	done := make(chan int, 1)
	go func() { done <- cmd.Run(args) }()
	// A forged redirect, sent until the command exits or the callback
	// takes it.
	for forged := false; ; {
		select {
		case code := <-done:
			if code != exitError {
				t.Errorf("exit %d, want 1", code)
			}
			for _, r := range requests() {
				if strings.Contains(r.path, "complete-auth") {
					t.Errorf("the login completed with a forged callback: %+v", r)
				}
			}
			if !strings.Contains(stderr.String(), "state") {
				t.Errorf("stderr does not say the auth URL lacks a state:\n%s", stderr.String())
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
		if !forged {
			if resp, err := http.Get("http://" + callback + "/oidc/callback?code=forged&state=forged"); err == nil {
				resp.Body.Close()
				forged = true
			}
		}
	}
}
