package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// aclRequest is a request the fake agent received.
type aclRequest struct {
	method, path, token string
	body                string // JSON, "" for none
}

// aclAnswer is what the fake agent answers to "METHOD /path".
type aclAnswer struct {
	status int // 0: 200
	body   any // marshalled to JSON, or a string sent as is
}

// fakeNomadACL is an httptest server that answers as Nomad's ACL API
// would, from canned answers, and records the requests.
func fakeNomadACL(t *testing.T, answers map[string]aclAnswer) (*httptest.Server, func() []aclRequest) {
	var (
		mu   sync.Mutex
		reqs []aclRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, aclRequest{r.Method, r.URL.RequestURI(), r.Header.Get(client.TokenHeader), string(body)})
		mu.Unlock()
		a, ok := answers[r.Method+" "+r.URL.RequestURI()]
		if !ok {
			http.Error(w, "no such route in the test", http.StatusNotFound)
			return
		}
		if a.status != 0 && a.status != http.StatusOK {
			http.Error(w, a.body.(string), a.status)
			return
		}
		if s, ok := a.body.(string); ok {
			io.WriteString(w, s)
			return
		}
		json.NewEncoder(w).Encode(a.body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []aclRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]aclRequest(nil), reqs...)
	}
}

// sameJSON reports whether got holds every field of want, with want's
// values (the other fields the api types marshal are not checked).
func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	if want == "" {
		return got == ""
	}
	var g, w map[string]any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("request body %q is not a JSON object: %v", got, err)
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the test's body %q: %v", want, err)
	}
	for k, v := range w {
		if !reflect.DeepEqual(g[k], v) {
			return false
		}
	}
	return true
}

func TestACLCommands(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	now := at.Add(2 * time.Hour)
	created := at.Local().Format(time.RFC3339)
	expires := at.Add(time.Hour)
	later := now.Add(time.Hour)

	mgmt := &api.ACLToken{AccessorID: "5b1d2c4e-0000-4000-8000-000000000001", SecretID: "9f3a6b7c-0000-4000-8000-000000000002",
		Name: "Bootstrap Token", Type: "management", Global: true, CreateTime: at, CreateIndex: 7, ModifyIndex: 7}
	mgmtOut := strings.Join([]string{
		"Accessor ID  = 5b1d2c4e-0000-4000-8000-000000000001",
		"Secret ID    = 9f3a6b7c-0000-4000-8000-000000000002",
		"Name         = Bootstrap Token",
		"Type         = management",
		"Global       = true",
		"Create Time  = " + created,
		"Expiry Time  = <none>",
		"Create Index = 7",
		"Modify Index = 7",
		"Policies     = n/a",
		"Roles        = n/a",
		""}, "\n")
	ci := &api.ACLToken{AccessorID: "acc-ci", SecretID: "sec-ci", Name: "ci", Type: "client", Policies: []string{"readonly", "deploy"},
		CreateTime: at, ExpirationTime: &expires, CreateIndex: 9, ModifyIndex: 9}
	ciOut := func(name, policies string, modify string) string {
		return strings.Join([]string{
			"Accessor ID  = acc-ci",
			"Secret ID    = sec-ci",
			"Name         = " + name,
			"Type         = client",
			"Global       = false",
			"Create Time  = " + created,
			"Expiry Time  = " + expires.Local().Format(time.RFC3339),
			"Create Index = 9",
			"Modify Index = " + modify,
			"Policies     = " + policies,
			"",
			"Roles",
			"<none>",
			""}, "\n")
	}
	renamed := *ci
	renamed.Name, renamed.Policies, renamed.ModifyIndex = "deployer", []string{"deploy"}, 11
	promoted := *ci
	promoted.Type, promoted.Policies, promoted.ModifyIndex = "management", nil, 12

	readonly := &api.ACLPolicy{Name: "readonly", Description: "Read jobs", Rules: "namespace \"default\" {\n  policy = \"read\"\n}\n",
		CreateIndex: 3, ModifyIndex: 5}
	policies := []*api.ACLPolicyListStub{
		{Name: "deploy", Description: "Submit jobs", CreateIndex: 4, ModifyIndex: 4},
		{Name: "readonly", Description: "Read jobs", CreateIndex: 3, ModifyIndex: 5},
	}
	tokens := []*api.ACLTokenListStub{
		{AccessorID: "acc-boot", Name: "Bootstrap Token", Type: "management", Global: true, CreateTime: at},
		{AccessorID: "acc-ci", Name: "ci", Type: "client", Policies: []string{"readonly"}, CreateTime: at, ExpirationTime: &expires},
		{AccessorID: "acc-new", Name: "new", Type: "client", Policies: []string{"readonly"}, CreateTime: at, ExpirationTime: &later},
	}

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secretFile := write("secret", "2b7e1516-28ae-4d2a-a6ab-f7158809cf4f\n")
	rulesFile := write("readonly.hcl", readonly.Rules)
	missing := filepath.Join(dir, "missing")

	const secret = "mgmt-secret"
	for _, tc := range []struct {
		name    string
		args    []string // after the command's name; -address and -token secret are added
		noToken bool     // send no -token
		stdin   string
		answers map[string]aclAnswer
		want    []aclRequest // the token is secret unless noToken; body compared as JSON (given fields only)
		code    int
		out     string // stdout, exactly ("" for none) unless outHas
		outHas  []string
		errHas  []string // on stderr
	}{
		{name: "bootstrap", args: []string{"acl", "bootstrap"}, noToken: true,
			answers: map[string]aclAnswer{"POST /v1/acl/bootstrap": {body: mgmt}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/bootstrap", body: `{"BootstrapSecret": ""}`}},
			out:     mgmtOut},
		{name: "bootstrap with the secret a file holds", args: []string{"acl", "bootstrap", secretFile}, noToken: true,
			answers: map[string]aclAnswer{"POST /v1/acl/bootstrap": {body: mgmt}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/bootstrap", body: `{"BootstrapSecret": "2b7e1516-28ae-4d2a-a6ab-f7158809cf4f"}`}},
			out:     mgmtOut},
		{name: "bootstrap with the secret from standard input", args: []string{"acl", "bootstrap", "-"}, noToken: true,
			stdin:   "2b7e1516-28ae-4d2a-a6ab-f7158809cf4f\n",
			answers: map[string]aclAnswer{"POST /v1/acl/bootstrap": {body: mgmt}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/bootstrap", body: `{"BootstrapSecret": "2b7e1516-28ae-4d2a-a6ab-f7158809cf4f"}`}},
			out:     mgmtOut},
		{name: "bootstrap -json", args: []string{"acl", "bootstrap", "-json"}, noToken: true,
			answers: map[string]aclAnswer{"POST /v1/acl/bootstrap": {body: mgmt}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/bootstrap", body: `{"BootstrapSecret": ""}`}},
			outHas:  []string{`"AccessorID": "5b1d2c4e-0000-4000-8000-000000000001"`, `"SecretID": "9f3a6b7c-0000-4000-8000-000000000002"`, `"Type": "management"`}},
		{name: "bootstrap done already", args: []string{"acl", "bootstrap"}, noToken: true,
			answers: map[string]aclAnswer{"POST /v1/acl/bootstrap": {status: 400, body: "ACL bootstrap already done (reset index: 7)"}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/bootstrap", body: `{"BootstrapSecret": ""}`}},
			code:    exitError, errHas: []string{"Error: bootstrapping the ACL system: API error (400): ACL bootstrap already done (reset index: 7)"}},
		{name: "bootstrap with a missing file", args: []string{"acl", "bootstrap", missing}, noToken: true,
			code: exitError, errHas: []string{"reading the bootstrap secret", missing}},
		{name: "bootstrap with two files", args: []string{"acl", "bootstrap", secretFile, secretFile}, noToken: true,
			code: exitError, errHas: []string{"This command takes up to one argument"}},

		{name: "policy apply", args: []string{"acl", "policy", "apply", "-description", "Read jobs", "readonly", rulesFile},
			answers: map[string]aclAnswer{"POST /v1/acl/policy/readonly": {body: ""}},
			want: []aclRequest{{method: "POST", path: "/v1/acl/policy/readonly",
				body: `{"Name": "readonly", "Description": "Read jobs", "Rules": "namespace \"default\" {\n  policy = \"read\"\n}\n"}`}},
			out: "Successfully wrote \"readonly\" ACL policy!\n"},
		{name: "policy apply from standard input", args: []string{"acl", "policy", "apply", "readonly", "-"},
			stdin:   `node { policy = "read" }`,
			answers: map[string]aclAnswer{"POST /v1/acl/policy/readonly": {body: ""}},
			want: []aclRequest{{method: "POST", path: "/v1/acl/policy/readonly",
				body: `{"Name": "readonly", "Description": "", "Rules": "node { policy = \"read\" }"}`}},
			out: "Successfully wrote \"readonly\" ACL policy!\n"},
		{name: "policy apply refused", args: []string{"acl", "policy", "apply", "readonly", rulesFile},
			answers: map[string]aclAnswer{"POST /v1/acl/policy/readonly": {status: 400, body: `rules:1,1: unknown block "nod"`}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/policy/readonly", body: `{"Name": "readonly"}`}},
			code:    exitError, errHas: []string{`writing ACL policy "readonly": API error (400): rules:1,1: unknown block "nod"`}},
		{name: "policy apply without a path", args: []string{"acl", "policy", "apply", "readonly"},
			code: exitError, errHas: []string{"This command takes two arguments: <name> and <path>"}},
		{name: "policy apply of a missing file", args: []string{"acl", "policy", "apply", "readonly", missing},
			code: exitError, errHas: []string{"reading the policy", missing}},
		{name: "policy list", args: []string{"acl", "policy", "list"},
			answers: map[string]aclAnswer{"GET /v1/acl/policies": {body: policies}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/policies"}},
			out:     "Name      Description\ndeploy    Submit jobs\nreadonly  Read jobs\n"},
		{name: "policy list of none", args: []string{"acl", "policy", "list"},
			answers: map[string]aclAnswer{"GET /v1/acl/policies": {body: "[]"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/policies"}},
			out:     "No policies found\n"},
		{name: "policy list -json", args: []string{"acl", "policy", "list", "-json"},
			answers: map[string]aclAnswer{"GET /v1/acl/policies": {body: policies}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/policies"}},
			outHas:  []string{`"Name": "deploy"`, `"Description": "Read jobs"`, `"ModifyIndex": 5`}},
		{name: "policy info", args: []string{"acl", "policy", "info", "readonly"},
			answers: map[string]aclAnswer{"GET /v1/acl/policy/readonly": {body: readonly}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/policy/readonly"}},
			out: strings.Join([]string{
				"Name        = readonly",
				"Description = Read jobs",
				"CreateIndex = 3",
				"ModifyIndex = 5",
				"",
				"Rules",
				"",
				`namespace "default" {`,
				`  policy = "read"`,
				"}",
				""}, "\n")},
		{name: "policy info of an unknown policy", args: []string{"acl", "policy", "info", "nope"},
			answers: map[string]aclAnswer{"GET /v1/acl/policy/nope": {status: 404, body: "ACL policy not found"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/policy/nope"}},
			code:    exitError, errHas: []string{`reading ACL policy "nope": API error (404): ACL policy not found`}},
		{name: "policy delete", args: []string{"acl", "policy", "delete", "readonly"},
			answers: map[string]aclAnswer{"DELETE /v1/acl/policy/readonly": {body: ""}},
			want:    []aclRequest{{method: "DELETE", path: "/v1/acl/policy/readonly"}},
			out:     "Successfully deleted readonly policy!\n"},

		// ExpirationTTL goes as Nomad's api package marshals it (and
		// Nomad's agent reads it): a duration string.
		{name: "token create", args: []string{"acl", "token", "create", "-name", "ci", "-policy", "readonly", "-policy", "deploy", "-ttl", "1h"},
			answers: map[string]aclAnswer{"POST /v1/acl/token": {body: ci}},
			want: []aclRequest{{method: "POST", path: "/v1/acl/token",
				body: `{"Name": "ci", "Type": "client", "Policies": ["readonly", "deploy"], "Global": false, "ExpirationTTL": "1h0m0s"}`}},
			out: ciOut("ci", "[readonly deploy]", "9")},
		{name: "token create management, global", args: []string{"acl", "token", "create", "-type", "management", "-global"},
			answers: map[string]aclAnswer{"POST /v1/acl/token": {body: mgmt}},
			want: []aclRequest{{method: "POST", path: "/v1/acl/token",
				body: `{"Name": "", "Type": "management", "Policies": null, "Global": true}`}},
			out: mgmtOut},
		{name: "token create -json", args: []string{"acl", "token", "create", "-policy", "readonly", "-json"},
			answers: map[string]aclAnswer{"POST /v1/acl/token": {body: ci}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/token", body: `{"Type": "client", "Policies": ["readonly"]}`}},
			outHas:  []string{`"AccessorID": "acc-ci"`, `"SecretID": "sec-ci"`, `"Policies": [`}},
		{name: "token create of an unknown type", args: []string{"acl", "token", "create", "-type", "admin"},
			code: exitError, errHas: []string{`-type "admin" is neither "client" nor "management"`}},
		{name: "token create with a bad TTL", args: []string{"acl", "token", "create", "-policy", "readonly", "-ttl", "a day"},
			code: exitError, errHas: []string{"-ttl", `"a day"`}},
		{name: "token create refused", args: []string{"acl", "token", "create", "-policy", "nope"},
			answers: map[string]aclAnswer{"POST /v1/acl/token": {status: 400, body: `policy "nope" does not exist`}},
			want:    []aclRequest{{method: "POST", path: "/v1/acl/token", body: `{"Policies": ["nope"]}`}},
			code:    exitError, errHas: []string{`creating the token: API error (400): policy "nope" does not exist`}},
		{name: "token list", args: []string{"acl", "token", "list"},
			answers: map[string]aclAnswer{"GET /v1/acl/tokens": {body: tokens}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/tokens"}},
			out: strings.Join([]string{
				"Name             Type        Global  Accessor ID  Expired",
				"Bootstrap Token  management  true    acc-boot     false",
				"ci               client      false   acc-ci       true",
				"new              client      false   acc-new      false",
				""}, "\n")},
		{name: "token list of none", args: []string{"acl", "token", "list"},
			answers: map[string]aclAnswer{"GET /v1/acl/tokens": {body: "[]"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/tokens"}},
			out:     "No tokens found\n"},
		{name: "token list -json", args: []string{"acl", "token", "list", "-json"},
			answers: map[string]aclAnswer{"GET /v1/acl/tokens": {body: tokens}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/tokens"}},
			outHas:  []string{`"AccessorID": "acc-boot"`, `"ExpirationTime": "2026-11-26T13:00:00Z"`}},
		{name: "token list without a token", args: []string{"acl", "token", "list"}, noToken: true,
			answers: map[string]aclAnswer{"GET /v1/acl/tokens": {status: 403, body: "Permission denied"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/tokens"}},
			code:    exitError, errHas: []string{"listing ACL tokens: API error (403): Permission denied (no ACL token was given: set -token, or NOMAD_TOKEN"}},
		{name: "token info", args: []string{"acl", "token", "info", "acc-ci"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/acc-ci": {body: ci}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/token/acc-ci"}},
			out:     ciOut("ci", "[readonly deploy]", "9")},
		{name: "token info of an unknown token", args: []string{"acl", "token", "info", "nope"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/nope": {status: 404, body: "ACL token not found"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/token/nope"}},
			code:    exitError, errHas: []string{`reading token "nope": API error (404): ACL token not found`}},
		{name: "token self", args: []string{"acl", "token", "self"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/self": {body: mgmt}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/token/self"}},
			out:     mgmtOut},
		{name: "token self with an unknown token", args: []string{"acl", "token", "self"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/self": {status: 403, body: "ACL token not found"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/token/self"}},
			code:    exitError, errHas: []string{"reading the token: API error (403): ACL token not found\n"}},
		{name: "token update", args: []string{"acl", "token", "update", "-name", "deployer", "-policy", "deploy", "acc-ci"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/acc-ci": {body: ci}, "POST /v1/acl/token/acc-ci": {body: &renamed}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/token/acc-ci"}, {method: "POST", path: "/v1/acl/token/acc-ci",
				body: `{"AccessorID": "acc-ci", "SecretID": "sec-ci", "Name": "deployer", "Type": "client", "Policies": ["deploy"], "Global": false}`}},
			out: ciOut("deployer", "[deploy]", "11")},
		{name: "token update to management drops the policies", args: []string{"acl", "token", "update", "-type", "management", "acc-ci"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/acc-ci": {body: ci}, "POST /v1/acl/token/acc-ci": {body: &promoted}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/token/acc-ci"}, {method: "POST", path: "/v1/acl/token/acc-ci",
				body: `{"AccessorID": "acc-ci", "Name": "ci", "Type": "management", "Policies": null}`}},
			outHas: []string{"Type         = management", "Policies     = n/a"}},
		{name: "token update without -type keeps the type", args: []string{"acl", "token", "update", "-name", "boot", mgmt.AccessorID},
			answers: map[string]aclAnswer{"GET /v1/acl/token/" + mgmt.AccessorID: {body: mgmt}, "POST /v1/acl/token/" + mgmt.AccessorID: {body: mgmt}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/token/" + mgmt.AccessorID}, {method: "POST", path: "/v1/acl/token/" + mgmt.AccessorID,
				body: `{"Name": "boot", "Type": "management", "Global": true}`}},
			out: mgmtOut},
		{name: "token update of an unknown token", args: []string{"acl", "token", "update", "-name", "x", "nope"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/nope": {status: 404, body: "ACL token not found"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/token/nope"}},
			code:    exitError, errHas: []string{`reading token "nope": API error (404): ACL token not found`}},
		{name: "token delete", args: []string{"acl", "token", "delete", "acc-ci"},
			answers: map[string]aclAnswer{"DELETE /v1/acl/token/acc-ci": {body: ""}},
			want:    []aclRequest{{method: "DELETE", path: "/v1/acl/token/acc-ci"}},
			out:     "Token acc-ci successfully deleted\n"},
		{name: "token delete without an accessor", args: []string{"acl", "token", "delete"},
			code: exitError, errHas: []string{"This command takes one argument: <accessor-id>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setTokenEnv(t, nil)
			t.Setenv(envNamespace, "prod") // the acl commands act in no namespace
			srv, requests := fakeNomadACL(t, tc.answers)
			ui := cli.NewMockUi()
			m := &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(tc.stdin), now: func() time.Time { return now }}

			// The command's name is the words before its first option or
			// argument that is no subcommand.
			name, rest := tc.args[0], tc.args[1:]
			cmds := commands(m)
			for len(rest) > 0 {
				if _, ok := cmds[name+" "+rest[0]]; !ok {
					break
				}
				name, rest = name+" "+rest[0], rest[1:]
			}
			cmd, err := cmds[name]()
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"-address", srv.URL}
			if !tc.noToken {
				args = append(args, "-token", secret)
			}
			code := cmd.Run(append(args, rest...))

			stdout, stderr := ui.OutputWriter.String(), ui.ErrorWriter.String()
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			got := requests()
			if len(got) != len(tc.want) {
				t.Fatalf("requests %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				if !tc.noToken {
					w.token = secret
				}
				g := got[i]
				if g.method != w.method || g.path != w.path || g.token != w.token || !sameJSON(t, g.body, w.body) {
					t.Errorf("request %d: %s %s token %q body %s\nwant %s %s token %q body with %s",
						i, g.method, g.path, g.token, g.body, w.method, w.path, w.token, w.body)
				}
			}
			if tc.outHas == nil && stdout != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, tc.out)
			}
			for _, w := range tc.outHas {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.errHas {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.code == exitOK && stderr != "" {
				t.Errorf("stderr: %s", stderr)
			}
		})
	}
}
