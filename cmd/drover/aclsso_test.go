package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// aclAgent serves the API of an in-process server with ACLs enabled,
// bootstrapped: its address and the management token's secret.
func aclAgent(t *testing.T) (addr, root string) {
	t.Helper()
	s := servertest.New(t, nil, func(c *server.Config) { c.ACLEnabled = true })
	ts := httptest.NewServer(httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)), nil).Handler())
	t.Cleanup(ts.Close)
	cl, err := client.New(ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	var token api.ACLToken
	if _, err := cl.Post(bg, "/v1/acl/bootstrap", &api.BootstrapRequest{}, &token); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return ts.URL, token.SecretID
}

// mustRun runs a drover command against addr with token and fails the
// test unless it exits with code; it returns its standard output and
// error.
func mustRun(t *testing.T, code int, addr, token string, words ...string) (string, string) {
	t.Helper()
	got, stdout, stderr := runACLCommand(t, addr, token, words...)
	if got != code {
		t.Fatalf("drover %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(words, " "), got, code, stdout, stderr)
	}
	return stdout, stderr
}

// hasKV reports whether out has the line "key = value" that kv prints
// ("key =" for an empty value).
func hasKV(out, key, value string) bool {
	if value != "" {
		value = " " + value
	}
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + ` +=` + regexp.QuoteMeta(value) + `$`).MatchString(out)
}

// kvValue is the value of the "key = value" line of out, or "".
func kvValue(out, key string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + ` += (.*)$`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

func checkKVs(t *testing.T, out string, pairs ...string) {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !hasKV(out, pairs[i], pairs[i+1]) {
			t.Errorf("no %q = %q in:\n%s", pairs[i], pairs[i+1], out)
		}
	}
}

func checkContains(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

// The acl auth-method commands against an agent: create (the -config
// JSON from a file, standard input or the option itself), list, info,
// update and delete, with Nomad's output, -json and -t; bad input is
// refused with a message and exit 1, before or by the agent.
func TestACLAuthMethodCommands(t *testing.T) {
	addr, root := aclAgent(t)
	dir := t.TempDir()
	jwtConfig := filepath.Join(dir, "ci.json")
	if err := os.WriteFile(jwtConfig, []byte(`{"JWKSURL": "https://ci.example/keys", "BoundAudiences": ["drover"],
		"ClaimMappings": {"sub": "user", "repo": "repo"}, "ClockSkewLeeway": "5s"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	if out, _ := mustRun(t, 0, addr, root, "acl", "auth-method", "list"); out != "No ACL auth methods found\n" {
		t.Errorf("empty list:\n%s", out)
	}
	out, _ := mustRun(t, 0, addr, root, "acl", "auth-method", "create", "-name", "ci", "-type", "jwt", "-max-token-ttl", "1h",
		"-token-locality", "local", "-default", "-token-name-format", "ci-${value.user}", "-config", "@"+jwtConfig)
	checkKVs(t, out, "Name", "ci", "Type", "JWT", "Locality", "local", "MaxTokenTTL", "1h0m0s", "Token Name Format", "ci-${value.user}",
		"Default", "true", "JWKS URL", "https://ci.example/keys", "Bound audiences", "drover", "ClockSkew Leeway", "5s",
		"Claim mappings", "{repo: repo}; {sub: user}", "List claim mappings", "")
	checkContains(t, "create", out, "\n\nAuth Method Config\n\n")

	// -config - reads standard input.
	setTokenEnv(t, nil)
	ui := cli.NewMockUi()
	oidcConfig := `{"OIDCDiscoveryURL": "https://sso.example", "OIDCClientID": "drover", "OIDCClientSecret": "s3cret",
		"AllowedRedirectURIs": ["http://localhost:4649/oidc/callback"]}`
	cmd, args := commandFor(t, &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(oidcConfig), now: time.Now}, addr, root,
		"acl", "auth-method", "create", "-name", "sso", "-type", "OIDC", "-max-token-ttl", "30m", "-token-locality", "global",
		"-config", "-", "-json")
	if code := cmd.Run(args); code != 0 {
		t.Fatalf("create from standard input: exit %d\n%s", code, ui.ErrorWriter.String())
	}
	var created api.ACLAuthMethod
	if err := json.Unmarshal([]byte(ui.OutputWriter.String()), &created); err != nil || created.Config == nil ||
		created.Config.OIDCClientSecret != "s3cret" || created.MaxTokenTTL != 30*time.Minute || created.Default {
		t.Fatalf("create -json = %+v, %v:\n%s", created, err, ui.OutputWriter.String())
	}

	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"no name", []string{"-type", "JWT", "-max-token-ttl", "1h", "-token-locality", "local", "-config", "{}"},
			"ACL auth method name must be specified using the -name flag"},
		{"bad type", []string{"-name", "x", "-type", "SAML", "-max-token-ttl", "1h", "-token-locality", "local", "-config", "{}"},
			"ACL auth method type must be set to 'OIDC' or 'JWT'"},
		{"bad locality", []string{"-name", "x", "-type", "JWT", "-max-token-ttl", "1h", "-token-locality", "region", "-config", "{}"},
			"Token locality must be set to either 'local' or 'global'"},
		{"no TTL", []string{"-name", "x", "-type", "JWT", "-token-locality", "local", "-config", "{}"},
			"Max token TTL must be set to a positive duration"},
		{"no config", []string{"-name", "x", "-type", "JWT", "-max-token-ttl", "1h", "-token-locality", "local"},
			"Must provide ACL auth method config in JSON format"},
		{"config not JSON", []string{"-name", "x", "-type", "JWT", "-max-token-ttl", "1h", "-token-locality", "local", "-config", "{nope"},
			"parsing the configuration: invalid character"},
		{"config file missing", []string{"-name", "x", "-type", "JWT", "-max-token-ttl", "1h", "-token-locality", "local",
			"-config", "@" + filepath.Join(dir, "missing.json")}, "loading the configuration: open "},
		{"JSON and template", []string{"-json", "-t", "{{.Name}}"}, errJSONAndTemplate},
		{"refused by the agent: a second default", []string{"-name", "x", "-type", "JWT", "-max-token-ttl", "1h",
			"-token-locality", "local", "-default", "-config", `{"JWKSURL": "https://x.example/keys"}`},
			"API error (400): invalid request: default method already exists: ci"},
		{"refused by the agent: TTL beyond its limits", []string{"-name", "x", "-type", "JWT", "-max-token-ttl", "48h",
			"-token-locality", "local", "-config", `{"JWKSURL": "https://x.example/keys"}`}, "invalid MaxTokenTTL value '48h0m0s'"},
	} {
		t.Run("create, "+tc.name, func(t *testing.T) {
			_, stderr := mustRun(t, 1, addr, root, append([]string{"acl", "auth-method", "create"}, tc.args...)...)
			checkContains(t, "stderr", stderr, tc.errHas)
		})
	}

	out, _ = mustRun(t, 0, addr, "", "acl", "auth-method", "list") // open, as Nomad's
	if want := "Name  Type  Default\nci    JWT   true\nsso   OIDC  false\n"; out != want {
		t.Errorf("list:\n%s\nwant:\n%s", out, want)
	}
	if out, _ = mustRun(t, 0, addr, "", "acl", "auth-method", "list", "-t", "{{range .}}{{.Name}}={{.Default}} {{end}}"); out != "ci=true sso=false \n" {
		t.Errorf("list -t:\n%s", out)
	}
	out, _ = mustRun(t, 0, addr, "", "acl", "auth-method", "list", "-json")
	var stubs []*api.ACLAuthMethodListStub
	if err := json.Unmarshal([]byte(out), &stubs); err != nil || len(stubs) != 2 || stubs[1].Type != "OIDC" {
		t.Errorf("list -json = %+v, %v:\n%s", stubs, err, out)
	}

	out, _ = mustRun(t, 0, addr, root, "acl", "auth-method", "info", "sso")
	checkKVs(t, out, "Name", "sso", "Type", "OIDC", "Locality", "global", "Default", "false", "OIDC Discovery URL", "https://sso.example",
		"OIDC Client Secret", "s3cret", "Allowed redirects URIs", "http://localhost:4649/oidc/callback",
		"Token Name Format", "${auth_method_type}-${auth_method_name}")
	if out, _ = mustRun(t, 0, addr, root, "acl", "auth-method", "info", "-t", "{{.Config.JWKSURL}}", "ci"); out != "https://ci.example/keys\n" {
		t.Errorf("info -t:\n%s", out)
	}
	_, stderr := mustRun(t, 1, addr, "", "acl", "auth-method", "info", "ci")
	checkContains(t, "info without a token", stderr, "API error (403)")
	_, stderr = mustRun(t, 1, addr, root, "acl", "auth-method", "info", "nope")
	checkContains(t, "info of an unknown method", stderr, `reading ACL auth method "nope": API error (404)`)

	// update changes what its options give, and keeps the rest.
	out, _ = mustRun(t, 0, addr, root, "acl", "auth-method", "update", "-max-token-ttl", "2h", "-default=false", "ci")
	checkKVs(t, out, "Name", "ci", "MaxTokenTTL", "2h0m0s", "Default", "false", "Locality", "local", "JWKS URL", "https://ci.example/keys",
		"Token Name Format", "ci-${value.user}")
	out, _ = mustRun(t, 0, addr, root, "acl", "auth-method", "update", "-default", "-config",
		`{"JWKSURL": "https://ci.example/v2/keys", "ClaimMappings": {"sub": "user"}}`, "-json", "ci")
	var updated api.ACLAuthMethod
	if err := json.Unmarshal([]byte(out), &updated); err != nil || !updated.Default || updated.MaxTokenTTL != 2*time.Hour ||
		updated.Config.JWKSURL != "https://ci.example/v2/keys" || len(updated.Config.ClaimMappings) != 1 || len(updated.Config.BoundAudiences) != 0 {
		t.Errorf("update -config -json = %+v, %v:\n%s", updated, err, out)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"nothing to change", []string{"ci"}, "Please provide at least one flag to update the ACL auth method"},
		{"bad locality", []string{"-token-locality", "everywhere", "ci"}, "Token locality must be set to either 'local' or 'global'"},
		{"bad type", []string{"-type", "LDAP", "ci"}, "ACL auth method type must be set to 'OIDC' or 'JWT'"},
		{"unknown method", []string{"-default", "nope"}, `reading ACL auth method "nope": API error (404)`},
		{"no name", []string{"-default"}, "This command takes one argument: <name>"},
		{"refused by the agent", []string{"-type", "OIDC", "ci"}, "an OIDC auth method needs OIDCDiscoveryURL and OIDCClientID"},
	} {
		t.Run("update, "+tc.name, func(t *testing.T) {
			_, stderr := mustRun(t, 1, addr, root, append([]string{"acl", "auth-method", "update"}, tc.args...)...)
			checkContains(t, "stderr", stderr, tc.errHas)
		})
	}

	if out, _ = mustRun(t, 0, addr, root, "acl", "auth-method", "delete", "sso"); out != "ACL auth method sso successfully deleted\n" {
		t.Errorf("delete:\n%s", out)
	}
	_, stderr = mustRun(t, 1, addr, root, "acl", "auth-method", "delete", "sso")
	checkContains(t, "second delete", stderr, `deleting ACL auth method "sso": API error (404)`)
	if out, _ = mustRun(t, 0, addr, root, "acl", "auth-method", "list"); out != "Name  Type  Default\nci    JWT   true\n" {
		t.Errorf("list after the delete:\n%s", out)
	}
}

// The acl binding-rule commands against an agent: create, list, info,
// update (merged, or replaced with -no-merge) and delete, a rule named by
// its ID or a unique prefix of it; bad input is refused with a message
// and exit 1.
func TestACLBindingRuleCommands(t *testing.T) {
	addr, root := aclAgent(t)
	mustRun(t, 0, addr, root, "acl", "auth-method", "create", "-name", "ci", "-type", "JWT", "-max-token-ttl", "1h",
		"-token-locality", "local", "-config", `{"JWKSURL": "https://ci.example/keys", "ClaimMappings": {"team": "team"},
		"ListClaimMappings": {"groups": "groups"}}`)

	if out, _ := mustRun(t, 0, addr, root, "acl", "binding-rule", "list"); out != "No ACL binding rules found\n" {
		t.Errorf("empty list:\n%s", out)
	}
	out, _ := mustRun(t, 0, addr, root, "acl", "binding-rule", "create", "-description", "devs read", "-auth-method", "ci",
		"-selector", `"dev" in list.groups`, "-bind-type", "policy", "-bind-name", "${value.team}-read")
	checkKVs(t, out, "Description", "devs read", "Auth Method", "ci", "Selector", `"\"dev\" in list.groups"`, "Bind Type", "policy",
		"Bind Name", "${value.team}-read")
	id := kvValue(out, "ID")
	if len(id) != 36 {
		t.Fatalf("created rule's ID %q:\n%s", id, out)
	}
	out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "create", "-auth-method", "ci", "-bind-type", "management", "-json")
	var mgmt api.ACLBindingRule
	if err := json.Unmarshal([]byte(out), &mgmt); err != nil || mgmt.BindType != "management" || mgmt.ID == "" || mgmt.ID == id {
		t.Fatalf("create -json = %+v, %v:\n%s", mgmt, err, out)
	}

	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"no auth method", []string{"-bind-type", "management"},
			"ACL binding rule auth method must be specified using the -auth-method flag"},
		{"no bind type", []string{"-auth-method", "ci"}, "ACL binding rule bind type must be specified using the -bind-type flag"},
		{"unknown auth method", []string{"-auth-method", "nope", "-bind-type", "management"}, `auth method "nope" not found`},
		{"bad selector", []string{"-auth-method", "ci", "-bind-type", "management", "-selector", "groups ==="}, "selector is invalid"},
		{"bad bind type", []string{"-auth-method", "ci", "-bind-type", "group", "-bind-name", "x"}, `unsupported bind type: "group"`},
		{"arguments", []string{"-auth-method", "ci", "-bind-type", "management", "extra"}, "This command takes no arguments"},
	} {
		t.Run("create, "+tc.name, func(t *testing.T) {
			_, stderr := mustRun(t, 1, addr, root, append([]string{"acl", "binding-rule", "create"}, tc.args...)...)
			checkContains(t, "stderr", stderr, tc.errHas)
		})
	}

	out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "list")
	checkContains(t, "list", out, "ID                                    Description  Auth Method\n", id+"  devs read    ci\n", mgmt.ID+"               ci\n")
	if out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "list", "-t", "{{len .}}"); out != "2\n" {
		t.Errorf("list -t:\n%s", out)
	}
	_, stderr := mustRun(t, 1, addr, "", "acl", "binding-rule", "list")
	checkContains(t, "list without a token", stderr, "API error (403)")

	// A unique prefix names a rule; a prefix of both does not.
	prefix := id[:8]
	for mgmt.ID[:len(prefix)] == prefix { // ...unless the two IDs start alike
		prefix = id[:len(prefix)+1]
	}
	out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "info", prefix)
	checkKVs(t, out, "ID", id, "Bind Name", "${value.team}-read")
	_, stderr = mustRun(t, 1, addr, root, "acl", "binding-rule", "info", "")
	checkContains(t, "info of an ambiguous prefix", stderr, "prefix matches more than one object", id, mgmt.ID)
	_, stderr = mustRun(t, 1, addr, root, "acl", "binding-rule", "info", "ffffffff-nope")
	checkContains(t, "info of an unknown rule", stderr, `no object with ID prefix "ffffffff-nope"`)

	out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "update", "-bind-name", "${value.team}-write", prefix)
	checkKVs(t, out, "ID", id, "Description", "devs read", "Selector", `"\"dev\" in list.groups"`, "Bind Name", "${value.team}-write")
	out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "update", "-no-merge", "-bind-type", "role", "-bind-name", "devs", prefix)
	checkKVs(t, out, "ID", id, "Description", "", "Selector", `""`, "Auth Method", "ci", "Bind Type", "role", "Bind Name", "devs")
	for _, tc := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"nothing to change", []string{id}, "Please provide at least one update for the ACL binding rule"},
		{"-no-merge without a bind type", []string{"-no-merge", "-bind-name", "x", id},
			"ACL binding rule bind type must be specified using the -bind-type flag"},
		{"refused by the agent", []string{"-bind-type", "management", id}, "bind name should be empty"},
		{"unknown rule", []string{"-description", "x", "0000"}, `no object with ID prefix "0000"`},
	} {
		t.Run("update, "+tc.name, func(t *testing.T) {
			_, stderr := mustRun(t, 1, addr, root, append([]string{"acl", "binding-rule", "update"}, tc.args...)...)
			checkContains(t, "stderr", stderr, tc.errHas)
		})
	}

	if out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "delete", prefix); out != "ACL binding rule "+id+" successfully deleted\n" {
		t.Errorf("delete:\n%s", out)
	}
	_, stderr = mustRun(t, 1, addr, root, "acl", "binding-rule", "info", id)
	checkContains(t, "info of a deleted rule", stderr, "API error (404)")
	// Deleting the auth method deletes its rules.
	mustRun(t, 0, addr, root, "acl", "auth-method", "delete", "ci")
	if out, _ = mustRun(t, 0, addr, root, "acl", "binding-rule", "list"); out != "No ACL binding rules found\n" {
		t.Errorf("list after the method's delete:\n%s", out)
	}
}
