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

	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// agentAnswer is what the fake agent answers to "METHOD /path?query".
type agentAnswer struct {
	status int               // 0: 200
	body   any               // marshalled to JSON, or a string sent as is
	header map[string]string // X-Nomad-NextToken, X-Nomad-Index
}

// fakeAgent is an httptest server that answers from canned answers, any
// status with any body (a 409 carries the variable as it is), and records
// the requests. A request it has no answer for is a 404 the test sees.
func fakeAgent(t *testing.T, answers map[string]agentAnswer) (*httptest.Server, func() []aclRequest) {
	var (
		mu   sync.Mutex
		reqs []aclRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, aclRequest{method: r.Method, path: r.URL.RequestURI(), token: r.Header.Get("X-Nomad-Token"), body: string(body)})
		mu.Unlock()
		a, ok := answers[r.Method+" "+r.URL.RequestURI()]
		if !ok {
			http.Error(w, "no such route in the test", http.StatusNotFound)
			return
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		if a.status != 0 {
			w.WriteHeader(a.status)
		}
		switch b := a.body.(type) {
		case nil:
		case string:
			io.WriteString(w, b)
		default:
			json.NewEncoder(w).Encode(b)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []aclRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]aclRequest(nil), reqs...)
	}
}

// cliCase is one run of a command against the fake agent.
type cliCase struct {
	name    string
	args    []string // the command's words, then its options; -address is added
	stdin   string
	answers map[string]agentAnswer
	want    []aclRequest // bodies compared as JSON (the given fields only)
	code    int
	out     string   // stdout, exactly, unless outHas is set
	outHas  []string // on stdout
	errHas  []string // on stderr; stderr must be empty when nil and code is 0
	errNot  []string // not on stderr
}

// runCLICases runs each case's command as drover would, with the fake
// agent's address, and checks its requests, exit code and output.
func runCLICases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setTokenEnv(t, nil)
			t.Setenv(envNamespace, "")
			srv, requests := fakeAgent(t, tc.answers)
			ui := cli.NewMockUi()
			m := &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(tc.stdin)}
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
			code := cmd.Run(append([]string{"-address", srv.URL}, rest...))

			stdout, stderr := ui.OutputWriter.String(), ui.ErrorWriter.String()
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			got := requests()
			if len(got) != len(tc.want) {
				t.Fatalf("requests %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.method != w.method || g.path != w.path || !sameJSON(t, g.body, w.body) {
					t.Errorf("request %d: %s %s body %s\nwant %s %s body with %s", i, g.method, g.path, g.body, w.method, w.path, w.body)
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
			for _, w := range tc.errNot {
				if strings.Contains(stderr, w) {
					t.Errorf("stderr has %q:\n%s", w, stderr)
				}
			}
			if tc.code == exitOK && tc.errHas == nil && stderr != "" {
				t.Errorf("stderr: %s", stderr)
			}
		})
	}
}

func localTime(ns int64) string { return time.Unix(0, ns).Local().Format(time.RFC3339) }

const (
	created  = int64(1_780_000_000_000_000_000)
	modified = int64(1_780_000_600_000_000_000)
)

func TestVarList(t *testing.T) {
	stubs := []*api.VariableMetadata{
		{Namespace: "prod", Path: "app/db", CreateIndex: 5, ModifyIndex: 9, CreateTime: created, ModifyTime: modified},
		{Namespace: "default", Path: "app/web", CreateIndex: 6, ModifyIndex: 6, CreateTime: created, ModifyTime: created},
		{Namespace: "default", Path: "app/api", CreateIndex: 7, ModifyIndex: 7, CreateTime: created, ModifyTime: created},
	}
	page := agentAnswer{body: stubs[:2], header: map[string]string{"X-Nomad-NextToken": "default.app/api", "X-Nomad-Index": "12"}}
	table := strings.Join([]string{
		"Namespace  Path     Last Updated",
		"default    app/api  " + localTime(created),
		"default    app/web  " + localTime(created),
		"prod       app/db   " + localTime(modified),
		""}, "\n")
	list := func(q string) []aclRequest { return []aclRequest{{method: "GET", path: "/v1/vars" + q}} }
	runCLICases(t, []cliCase{
		{name: "JSON when standard output is no terminal", args: []string{"var", "list"},
			answers: map[string]agentAnswer{"GET /v1/vars": {body: stubs}}, want: list(""),
			outHas: []string{"[\n    {\n        \"Namespace\": \"prod\",\n        \"Path\": \"app/db\",", `"ModifyTime": 1780000600000000000`}},
		{name: "empty JSON list", args: []string{"var", "list", "-json", "nope"},
			answers: map[string]agentAnswer{"GET /v1/vars?prefix=nope": {body: "[]"}}, want: list("?prefix=nope"), out: "[]\n"},
		{name: "table sorted by namespace and path", args: []string{"var", "list", "-out", "table", "app/"},
			answers: map[string]agentAnswer{"GET /v1/vars?prefix=app%2F": {body: stubs}}, want: list("?prefix=app%2F"), out: table},
		{name: "namespace", args: []string{"var", "list", "-namespace", "prod", "-out", "table"},
			answers: map[string]agentAnswer{"GET /v1/vars?namespace=prod": {body: stubs[:1]}}, want: list("?namespace=prod"),
			outHas: []string{"prod       app/db"}},
		{name: "no match", args: []string{"var", "list", "-out", "table"},
			answers: map[string]agentAnswer{"GET /v1/vars": {body: "[]"}}, want: list(""), out: "No matching variables found\n"},
		{name: "terse", args: []string{"var", "list", "-q"},
			answers: map[string]agentAnswer{"GET /v1/vars": {body: stubs}}, want: list(""), out: "app/db\napp/web\napp/api\n"},
		{name: "terse in every namespace", args: []string{"var", "list", "-namespace", "*", "-out", "terse"},
			answers: map[string]agentAnswer{"GET /v1/vars?namespace=%2A": {body: stubs[:2]}}, want: list("?namespace=%2A"),
			out: "prod     app/db\ndefault  app/web\n"},
		{name: "a page in a table, the next token on standard error", args: []string{"var", "list", "-out", "table", "-per-page", "2"},
			answers: map[string]agentAnswer{"GET /v1/vars?per_page=2": page}, want: list("?per_page=2"),
			outHas: []string{"default    app/web", "prod       app/db"}, errHas: []string{"Next page token: default.app/api"}},
		{name: "a page in JSON holds the next token", args: []string{"var", "list", "-json", "-per-page", "2", "-page-token", "default.app/a"},
			answers: map[string]agentAnswer{"GET /v1/vars?next_token=default.app%2Fa&per_page=2": page},
			want:    list("?next_token=default.app%2Fa&per_page=2"),
			outHas:  []string{"\"Data\": [", `"LastIndex": 12`, `"NextToken": "default.app/api"`}, errNot: []string{"Next page token"}},
		{name: "filter warns that it scans", args: []string{"var", "list", "-out", "terse", "-filter", `Path matches "db"`},
			answers: map[string]agentAnswer{"GET /v1/vars?filter=Path+matches+%22db%22": {body: stubs[:1]}},
			want:    list("?filter=Path+matches+%22db%22"), out: "app/db\n", errHas: []string{"Filter queries require a full scan"}},
		{name: "go template", args: []string{"var", "list", "-t", "{{range .}}{{.Path}}@{{.ModifyIndex}} {{end}}"},
			answers: map[string]agentAnswer{"GET /v1/vars": {body: stubs}}, want: list(""), out: "app/db@9 app/web@6 app/api@7 \n"},
		{name: "-out go-template with -template", args: []string{"var", "list", "-out", "go-template", "-template", "{{len .}}"},
			answers: map[string]agentAnswer{"GET /v1/vars": {body: stubs}}, want: list(""), out: "3\n"},
		{name: "a template that fails", args: []string{"var", "list", "-t", "{{.Nope}}"},
			answers: map[string]agentAnswer{"GET /v1/vars": {body: stubs}}, want: list(""),
			code: exitError, errHas: []string{"executing -template"}},
		{name: "unknown format", args: []string{"var", "list", "-out", "hcl"},
			code: exitError, errHas: []string{`Invalid value for "-out"; valid values are [go-template, json, table, terse]`}},
		{name: "template without go-template", args: []string{"var", "list", "-out", "json", "-template", "{{.}}"},
			code: exitError, errHas: []string{"The '-template' flag is only valid when using 'go-template' formatting"}},
		{name: "go-template without template", args: []string{"var", "list", "-out", "go-template"},
			code: exitError, errHas: []string{"A template must be supplied using '-template'"}},
		{name: "shorthands that disagree", args: []string{"var", "list", "-json", "-q"},
			code: exitError, errHas: []string{"name different formats: json, terse"}},
		{name: "two prefixes", args: []string{"var", "list", "a", "b"},
			code: exitError, errHas: []string{"This command takes flags and either no arguments or one: <prefix>"}},
		{name: "API error", args: []string{"var", "list"},
			answers: map[string]agentAnswer{"GET /v1/vars": {status: 403, body: "Permission denied"}}, want: list(""),
			code: exitError, errHas: []string{"Error: listing variables: API error (403): Permission denied"}},
	})
}

func TestVarGet(t *testing.T) {
	v := &api.Variable{Namespace: "default", Path: "app/db", CreateIndex: 5, ModifyIndex: 9, CreateTime: created, ModifyTime: modified,
		Items: api.VariableItems{"user": "admin", "password": "s3cr3t"}}
	ok := map[string]agentAnswer{"GET /v1/var/app/db": {body: v}}
	get := []aclRequest{{method: "GET", path: "/v1/var/app/db"}}
	runCLICases(t, []cliCase{
		{name: "JSON when standard output is no terminal", args: []string{"var", "get", "app/db"}, answers: ok, want: get,
			out: `{
  "Namespace": "default",
  "Path": "app/db",
  "CreateIndex": 5,
  "ModifyIndex": 9,
  "CreateTime": 1780000000000000000,
  "ModifyTime": 1780000600000000000,
  "Items": {
    "password": "s3cr3t",
    "user": "admin"
  }
}
`},
		{name: "table", args: []string{"var", "get", "-out", "table", "/app/db/"}, answers: ok, want: get,
			out: strings.Join([]string{
				"Namespace   = default",
				"Path        = app/db",
				"Create Time = " + localTime(created),
				"Modify Time = " + localTime(modified),
				"Check Index = 9",
				"",
				"Items",
				"password = s3cr3t",
				"user     = admin",
				""}, "\n")},
		{name: "hcl", args: []string{"var", "get", "-out", "hcl", "app/db"}, answers: ok, want: get,
			out: `namespace    = "default"
path         = "app/db"
create_index = 5  # Set by server
modify_index = 9  # Set by server; consulted for check-and-set
create_time  = 1780000000000000000  # Set by server
modify_time  = 1780000600000000000  # Set by server

items = {
  password = "s3cr3t"
  user     = "admin"
}
`},
		{name: "one item, no newline", args: []string{"var", "get", "-item", "password", "app/db"}, answers: ok, want: get, out: "s3cr3t"},
		{name: "an item it lacks", args: []string{"var", "get", "-item", "port", "app/db"}, answers: ok, want: get,
			code: exitError, errHas: []string{`Variable does not contain "port" item`}},
		{name: "go template", args: []string{"var", "get", "-out", "go-template", "-template", `{{.Path}}={{index .Items "user"}}`, "app/db"},
			answers: ok, want: get, out: "app/db=admin\n"},
		{name: "none", args: []string{"var", "get", "-out", "none", "app/db"}, answers: ok, want: get, out: ""},
		{name: "namespace", args: []string{"var", "get", "-namespace", "prod", "-out", "none", "app/db"},
			answers: map[string]agentAnswer{"GET /v1/var/app/db?namespace=prod": {body: v}},
			want:    []aclRequest{{method: "GET", path: "/v1/var/app/db?namespace=prod"}}},
		{name: "not found", args: []string{"var", "get", "app/nope"},
			answers: map[string]agentAnswer{"GET /v1/var/app/nope": {status: 404, body: "variable not found"}},
			want:    []aclRequest{{method: "GET", path: "/v1/var/app/nope"}}, code: exitError, errHas: []string{"Variable not found"}},
		{name: "API error", args: []string{"var", "get", "app/db"},
			answers: map[string]agentAnswer{"GET /v1/var/app/db": {status: 500, body: "raft is down"}}, want: get,
			code: exitError, errHas: []string{`Error: retrieving variable "app/db": API error (500): raft is down`}},
		{name: "wildcard namespace", args: []string{"var", "get", "-namespace", "*", "app/db"},
			code: exitError, errHas: []string{`The wildcard namespace ("*") is not valid for this command.`}},
		{name: "unknown format", args: []string{"var", "get", "-out", "terse", "app/db"},
			code: exitError, errHas: []string{`Invalid value for "-out"; valid values are [go-template, hcl, json, none, table]`}},
		{name: "no path", args: []string{"var", "get"}, code: exitError, errHas: []string{"This command takes one argument: <path>"}},
	})
}

func TestVarPut(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hclSpec := write("spec.hcl", `
path         = "app/db"
namespace    = "default"
modify_index = 4
items {
  user = "admin"
  port = 5432
}
`)
	jsonSpec := write("spec.json", `{"Namespace": "dev", "Path": "app/old", "ModifyIndex": 4, "CreateIndex": 2, "Items": {"user": "admin"}}`)
	txtSpec := write("spec.txt", `items = { user = "admin" }`)
	badSpec := write("bad.hcl", "items { a = \"b\" }\ncolour = \"red\"\n")
	certFile := write("cert.pem", "-----BEGIN CERTIFICATE-----\n")

	written := func(path string, index uint64, items api.VariableItems) *api.Variable {
		return &api.Variable{Namespace: "default", Path: path, CreateIndex: 3, ModifyIndex: index, CreateTime: created, ModifyTime: modified, Items: items}
	}
	existing := written("app/db", 7, api.VariableItems{"user": "admin"})
	put := func(uri, body string) []aclRequest { return []aclRequest{{method: "PUT", path: uri, body: body}} }
	conflict := func(cur *api.Variable) agentAnswer { return agentAnswer{status: http.StatusConflict, body: cur} }

	runCLICases(t, []cliCase{
		{name: "a new variable from key=value, a check-and-set at 0", args: []string{"var", "put", "-out", "none", "app/db", "user=admin", "pass=x"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {body: written("app/db", 8, nil)}},
			want:    put("/v1/var/app/db?cas=0", `{"Path": "app/db", "ModifyIndex": 0, "Items": {"user": "admin", "pass": "x"}}`),
			out:     "Created variable \"app/db\" with modify index 8\n"},
		{name: "JSON when standard output is no terminal", args: []string{"var", "put", "app/db", "user=admin"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {body: written("app/db", 8, api.VariableItems{"user": "admin"})}},
			want:    put("/v1/var/app/db?cas=0", `{"Items": {"user": "admin"}}`),
			outHas:  []string{"{\n  \"Namespace\": \"default\",\n  \"Path\": \"app/db\",", `"ModifyIndex": 8`, `"user": "admin"`}},
		{name: "an existing variable without -check-index is a conflict", args: []string{"var", "put", "app/db", "user=root"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": conflict(existing)},
			want:    put("/v1/var/app/db?cas=0", `{"Items": {"user": "root"}}`),
			code:    exitError, errHas: []string{"Check-and-Set conflict", "Your provided check-index (0) does not match the",
				"server-side index (7)", "last updated on " + localTime(modified), "add the -force or -check-index=7 flag"}},
		{name: "a conflict on a variable that is gone", args: []string{"var", "put", "-check-index", "5", "app/db", "user=root"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=5": conflict(&api.Variable{})},
			want:    put("/v1/var/app/db?cas=5", `{"ModifyIndex": 5, "Items": {"user": "root"}}`),
			code:    exitError, errHas: []string{"check-index (5) does not match the server-side index (0)", "-check-index=0"}, errNot: []string{"last updated"}},
		{name: "-check-index", args: []string{"var", "put", "-check-index", "7", "-out", "none", "app/db", "user=root"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=7": {body: written("app/db", 9, nil)}},
			want:    put("/v1/var/app/db?cas=7", `{"ModifyIndex": 7, "Items": {"user": "root"}}`),
			out:     "Created variable \"app/db\" with modify index 9\n"},
		{name: "-force writes without a check", args: []string{"var", "put", "-force", "-out", "none", "app/db", "user=root"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db": {body: written("app/db", 9, nil)}},
			want:    put("/v1/var/app/db", `{"Items": {"user": "root"}}`), out: "Created variable \"app/db\" with modify index 9\n"},
		{name: "an HCL specification with its path and modify index", args: []string{"var", "put", "-out", "none", "@" + hclSpec},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=4&namespace=default": {body: written("app/db", 9, nil)}},
			want:    put("/v1/var/app/db?cas=4&namespace=default", `{"Namespace": "default", "Path": "app/db", "ModifyIndex": 4, "Items": {"user": "admin", "port": "5432"}}`),
			out:     "Created variable \"app/db\" with modify index 9\n"},
		{name: "-check-index wins over the specification's", args: []string{"var", "put", "-check-index", "8", "-out", "none", "@" + hclSpec, "port="},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=8&namespace=default": {body: written("app/db", 9, nil)}},
			want:    put("/v1/var/app/db?cas=8&namespace=default", `{"ModifyIndex": 8, "Items": {"user": "admin"}}`),
			out:     "Created variable \"app/db\" with modify index 9\n"},
		{name: "a path other than the specification's makes a copy", args: []string{"var", "put", "-out", "none", "app/new", "@" + jsonSpec, "extra=1"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/new?cas=0&namespace=dev": {body: written("app/new", 9, nil)}},
			want: put("/v1/var/app/new?cas=0&namespace=dev",
				`{"Namespace": "dev", "Path": "app/new", "ModifyIndex": 0, "CreateIndex": 0, "Items": {"user": "admin", "extra": "1"}}`),
			out: "Created variable \"app/new\" with modify index 9\n"},
		{name: "-namespace wins over the specification's", args: []string{"var", "put", "-namespace", "prod", "-out", "none", "@" + jsonSpec},
			answers: map[string]agentAnswer{"PUT /v1/var/app/old?cas=0&namespace=prod": {body: written("app/old", 9, nil)}},
			want:    put("/v1/var/app/old?cas=0&namespace=prod", `{"Namespace": "prod", "Path": "app/old", "ModifyIndex": 0}`),
			out:     "Created variable \"app/old\" with modify index 9\n"},
		{name: "a specification from standard input", args: []string{"var", "put", "-in", "hcl", "-out", "none", "-"},
			stdin:   `path = "app/db"` + "\nitems = {\n  \"a.b\" = \"c\"\n}\n",
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {body: written("app/db", 9, nil)}},
			want:    put("/v1/var/app/db?cas=0", `{"Path": "app/db", "Items": {"a.b": "c"}}`),
			out:     "Created variable \"app/db\" with modify index 9\n"},
		{name: "a file without extension takes -in", args: []string{"var", "put", "-in", "hcl", "-out", "none", "app/db", "@" + txtSpec},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {body: written("app/db", 9, nil)}},
			want:    put("/v1/var/app/db?cas=0", `{"Path": "app/db", "Items": {"user": "admin"}}`),
			out:     "Created variable \"app/db\" with modify index 9\n"},
		{name: "a file without extension and no -in", args: []string{"var", "put", "app/db", "@" + txtSpec},
			code: exitError, errHas: []string{"Unable to determine format of " + txtSpec + "; Use the -in flag to specify it."}},
		{name: "values from a file, standard input, and a literal @", args: []string{"var", "put", "-out", "none", "app/tls", "cert=@" + certFile, "key=-", `handle=\@ops`},
			stdin:   "PRIVATE\n",
			answers: map[string]agentAnswer{"PUT /v1/var/app/tls?cas=0": {body: written("app/tls", 9, nil)}},
			want: put("/v1/var/app/tls?cas=0",
				`{"Items": {"cert": "-----BEGIN CERTIFICATE-----\n", "key": "PRIVATE\n", "handle": "@ops"}}`),
			out: "Created variable \"app/tls\" with modify index 9\n"},
		{name: "standard input is read once", args: []string{"var", "put", "-in", "hcl", "-", "key=-"}, stdin: `path = "a"`,
			code: exitError, errHas: []string{`Failed to parse K=V data: invalid key/value pair "key=-": stdin already consumed`}},
		{name: "keys templates cannot name directly are warned about", args: []string{"var", "put", "-out", "none", "app/db", "db.user=admin"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {body: written("app/db", 9, nil)}},
			want:    put("/v1/var/app/db?cas=0", `{"Items": {"db.user": "admin"}}`),
			out:     "Created variable \"app/db\" with modify index 9\n",
			errHas:  []string{`Variable Warnings:`, `"db.user" contains characters ["."] that require the 'index' function`}},
		{name: "-verbose says what it does on standard error", args: []string{"var", "put", "-verbose", "-out", "table", "app/db", "user=admin", "gone="},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {body: written("app/db", 8, api.VariableItems{"user": "admin"})}},
			want:    put("/v1/var/app/db?cas=0", `{"Items": {"user": "admin"}}`),
			outHas:  []string{"Path        = app/db", "Check Index = 8", "Items\nuser = admin\n"},
			errHas:  []string{`Writing to path "app/db"`, `Item "gone" does not exist, continuing...`, `Created variable "app/db" with modify index 8`}},
		{name: "hcl output reads back", args: []string{"var", "put", "-out", "hcl", "app/db", "user=admin"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {body: written("app/db", 8, api.VariableItems{"user": "admin"})}},
			want:    put("/v1/var/app/db?cas=0", `{"Items": {"user": "admin"}}`),
			outHas:  []string{"modify_index = 8", "items = {\n  user = \"admin\"\n}\n"}},
		{name: "API error", args: []string{"var", "put", "app/db", "user=admin"},
			answers: map[string]agentAnswer{"PUT /v1/var/app/db?cas=0": {status: 403, body: "Permission denied"}},
			want:    put("/v1/var/app/db?cas=0", `{"Items": {"user": "admin"}}`),
			code:    exitError, errHas: []string{`Error: creating variable "app/db": API error (403): Permission denied`}},
		{name: "an unknown key in the specification", args: []string{"var", "put", "@" + badSpec},
			code: exitError, errHas: []string{"Failed to parse variable data: error parsing hcl:", `invalid key "colour"`}},
		{name: "no path anywhere", args: []string{"var", "put", "-"}, stdin: `{"Items": {"a": "b"}}`,
			code: exitError, errHas: []string{"A variable path is required"}},
		{name: "a path and no data", args: []string{"var", "put", "app/db"}, code: exitError, errHas: []string{"Must supply data"}},
		{name: "no arguments", args: []string{"var", "put"}, code: exitError, errHas: []string{"This command takes a path or a specification"}},
		{name: "not key=value", args: []string{"var", "put", "app/db", "user"},
			code: exitError, errHas: []string{`Failed to parse K=V data: invalid key/value pair "user": format must be key=value`}},
		{name: "a missing value file", args: []string{"var", "put", "app/db", "cert=@" + filepath.Join(dir, "missing")},
			code: exitError, errHas: []string{"error reading file"}},
		{name: "unknown input format", args: []string{"var", "put", "-in", "yaml", "-", "a=b"},
			code: exitError, errHas: []string{`Invalid value for "-in"; valid values are [hcl, json]`}},
		{name: "bad check-index", args: []string{"var", "put", "-check-index", "x", "app/db", "a=b"},
			code: exitError, errHas: []string{`Invalid -check-index value "x": not parsable as uint64`}},
		{name: "wildcard namespace", args: []string{"var", "put", "-namespace", "*", "app/db", "a=b"},
			code: exitError, errHas: []string{`The wildcard namespace ("*") is not valid for this command.`}},
	})
}

func TestVarPurge(t *testing.T) {
	del := func(uri string) []aclRequest { return []aclRequest{{method: "DELETE", path: uri}} }
	cur := &api.Variable{Namespace: "default", Path: "app/db", ModifyIndex: 7, ModifyTime: modified}
	runCLICases(t, []cliCase{
		{name: "purge", args: []string{"var", "purge", "app/db"},
			answers: map[string]agentAnswer{"DELETE /v1/var/app/db": {status: http.StatusNoContent}},
			want:    del("/v1/var/app/db"), out: "Successfully purged variable \"app/db\"!\n"},
		{name: "check-and-set", args: []string{"var", "purge", "-namespace", "prod", "-check-index", "7", "app/db"},
			answers: map[string]agentAnswer{"DELETE /v1/var/app/db?cas=7&namespace=prod": {status: http.StatusNoContent}},
			want:    del("/v1/var/app/db?cas=7&namespace=prod"), out: "Successfully purged variable \"app/db\"!\n"},
		{name: "conflict", args: []string{"var", "purge", "-check-index", "6", "app/db"},
			answers: map[string]agentAnswer{"DELETE /v1/var/app/db?cas=6": {status: http.StatusConflict, body: cur}},
			want:    del("/v1/var/app/db?cas=6"), code: exitError,
			errHas: []string{"Check-and-Set conflict", "check-index (6) does not match the server-side index (7)", "give -check-index=7"}},
		{name: "API error", args: []string{"var", "purge", "app/db"},
			answers: map[string]agentAnswer{"DELETE /v1/var/app/db": {status: 403, body: "Permission denied"}},
			want:    del("/v1/var/app/db"), code: exitError, errHas: []string{`Error: purging variable "app/db": API error (403)`}},
		{name: "bad check-index", args: []string{"var", "purge", "-check-index", "-1", "app/db"},
			code: exitError, errHas: []string{`Invalid -check-index value "-1": not parsable as uint64`}},
		{name: "check-index out of range", args: []string{"var", "purge", "-check-index", "99999999999999999999", "app/db"},
			code: exitError, errHas: []string{"out of range for uint64"}},
		{name: "wildcard namespace", args: []string{"var", "purge", "-namespace", "*", "app/db"},
			code: exitError, errHas: []string{`The wildcard namespace ("*") is not valid for this command.`}},
		{name: "two paths", args: []string{"var", "purge", "a", "b"}, code: exitError, errHas: []string{"This command takes one argument: <path>"}},
	})
}

func TestVarInit(t *testing.T) {
	t.Chdir(t.TempDir())
	runCLICases(t, []cliCase{
		{name: "hcl", args: []string{"var", "init"}, out: "Example variable specification written to spec.nv.hcl\n"},
		{name: "never overwrites", args: []string{"var", "init"}, code: exitError, errHas: []string{`File "spec.nv.hcl" already exists`}},
		{name: "json", args: []string{"var", "init", "-out", "json"},
			outHas: []string{"The Items map is the only strictly required part", "Example variable specification written to spec.nv.json"},
			errHas: []string{"REMINDER: While keys in the Items map can contain dots"}},
		{name: "named, quietly", args: []string{"var", "init", "-quiet", "mine.hcl"}, out: ""},
		{name: "unknown format", args: []string{"var", "init", "-out", "yaml"}, code: exitError, errHas: []string{`Invalid value for "-out"; valid values are [hcl, json]`}},
		{name: "two files", args: []string{"var", "init", "a", "b"}, code: exitError, errHas: []string{"This command takes no arguments or one: <filename>"}},
	})
	// What init writes, put reads.
	for _, name := range []string{"spec.nv.hcl", "spec.nv.json", "mine.hcl"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		v := &api.Variable{}
		if strings.HasSuffix(name, ".json") {
			err = json.Unmarshal(src, v)
		} else {
			v, err = parseVariableSpec(src, name)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := (api.VariableItems{"key1": "value 1", "key2": "value 2"}); !reflect.DeepEqual(v.Items, want) {
			t.Errorf("%s: items %v, want %v", name, v.Items, want)
		}
	}
}

// What var get -out=hcl prints, var put reads back as the same variable,
// whatever its items hold.
func TestVariableHCL_RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items api.VariableItems
	}{
		{name: "identifiers", items: api.VariableItems{"user": "admin", "long_key-2": "x"}},
		{name: "keys to quote", items: api.VariableItems{"db.user": "a", "2fa": "b", "with space": "c", "ключ": "d"}},
		{name: "values to escape", items: api.VariableItems{"tmpl": "${var} %{if} $${x}", "quote": `say "hi" \o/`, "lines": "a\nb\tc\r", "ctl": "\x00\x1b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := &api.Variable{Namespace: "default", Path: "a/b", CreateIndex: 1, ModifyIndex: 2, CreateTime: created, ModifyTime: modified, Items: tc.items}
			got, err := parseVariableSpec([]byte(variableHCL(want)), "out.hcl")
			if err != nil {
				t.Fatalf("%v\n%s", err, variableHCL(want))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read back %+v\nwant %+v\n%s", got, want, variableHCL(want))
			}
		})
	}
}

func TestParseVariableSpec_Errors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"syntax", `items {`, "Unclosed configuration block"},
		{"unknown block", `meta { a = "b" }`, `invalid block "meta"`},
		{"items twice", "items { a = \"b\" }\nitems { c = \"d\" }", "items is given twice"},
		{"labelled items", `items "x" { a = "b" }`, "takes no labels"},
		{"index not a number", `modify_index = "seven"`, "modify_index: must be a number"},
		{"negative index", `modify_index = -1`, "modify_index"},
		{"item not a string", `items = { a = ["b"] }`, "items: must be a map of string"},
		{"a variable reference", `path = var.x`, "Variables not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseVariableSpec([]byte(tc.src), "spec.hcl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}
