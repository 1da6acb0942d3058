package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/cli"
)

// setTokenEnv sets the token's variables for a test, clearing those env
// does not name so that the test's environment does not leak in.
func setTokenEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, e := range tokenEnv {
		t.Setenv(e, env[e])
	}
}

// The token comes from -token, else DROVER_TOKEN, else NOMAD_TOKEN, and
// the client sends it as X-Nomad-Token.
func TestMeta_TokenPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // the client's token, the header's value
	}{
		{name: "none"},
		{name: "flag", args: []string{"-token", "flag-secret"}, want: "flag-secret"},
		{name: "NOMAD_TOKEN", env: map[string]string{"NOMAD_TOKEN": "nomad-secret"}, want: "nomad-secret"},
		{name: "DROVER_TOKEN", env: map[string]string{"DROVER_TOKEN": "drover-secret"}, want: "drover-secret"},
		{name: "DROVER_TOKEN wins over NOMAD_TOKEN",
			env: map[string]string{"DROVER_TOKEN": "drover-secret", "NOMAD_TOKEN": "nomad-secret"}, want: "drover-secret"},
		{name: "the flag wins over the variables",
			env:  map[string]string{"DROVER_TOKEN": "drover-secret", "NOMAD_TOKEN": "nomad-secret"},
			args: []string{"-token=flag-secret"}, want: "flag-secret"},
		{name: `-token="" sends none`, env: map[string]string{"NOMAD_TOKEN": "nomad-secret"}, args: []string{"-token="}},
		{name: "a read file's newline is dropped", env: map[string]string{"NOMAD_TOKEN": "nomad-secret\n"}, want: "nomad-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setTokenEnv(t, tc.env)
			var got []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Values(client.TokenHeader)
				w.Write([]byte("{}"))
			}))
			defer srv.Close()
			m := &meta{}
			fs := m.flags("test", false)
			if err := fs.Parse(append([]string{"-address", srv.URL}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			cl, err := m.client()
			if err != nil {
				t.Fatal(err)
			}
			if cl.Token != tc.want {
				t.Fatalf("client token %q, want %q", cl.Token, tc.want)
			}
			if _, err := cl.Get(bg, "/v1/agent/self", nil); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(got) != 0:
				t.Fatalf("%s sent (%q) with no token set", client.TokenHeader, got)
			case tc.want != "" && (len(got) != 1 || got[0] != tc.want):
				t.Fatalf("%s %q, want %q", client.TokenHeader, got, tc.want)
			}
		})
	}
}

// A 403 prints the API's message, with a hint to give a token when none
// was given.
func TestMeta_TokenForbiddenHint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		message  string
		wantHint bool
	}{
		{name: "no token", message: "Permission denied", wantHint: true},
		{name: "a token without the permission", args: []string{"-token", "s"}, message: "Permission denied"},
		{name: "an unknown token", args: []string{"-token", "s"}, message: "ACL token not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setTokenEnv(t, nil)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, tc.message, http.StatusForbidden)
			}))
			defer srv.Close()
			ui := cli.NewMockUi()
			m := &meta{ui: ui, out: ui.OutputWriter}
			code := (&jobStatusCommand{meta: m}).Run(append([]string{"-address", srv.URL}, tc.args...))
			if code != exitError {
				t.Fatalf("exit code %d, want %d", code, exitError)
			}
			stderr := ui.ErrorWriter.String()
			if !strings.Contains(stderr, "(403): "+tc.message) {
				t.Fatalf("error does not print the API's message %q:\n%s", tc.message, stderr)
			}
			if hint := strings.Contains(stderr, "set -token, or NOMAD_TOKEN"); hint != tc.wantHint {
				t.Fatalf("hint printed: %v, want %v:\n%s", hint, tc.wantHint, stderr)
			}
		})
	}
}

// tokenCommandArgs are, for each command that talks to an agent, the
// arguments that make it send a request. The fake agent refuses every
// request, so each command sends one and stops.
func tokenCommandArgs(t *testing.T) map[string][]string {
	dir := t.TempDir()
	job := filepath.Join(dir, "web.hcl")
	if err := os.WriteFile(job, []byte(cliWebJob), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap.tar.gz")
	if err := os.WriteFile(snap, []byte("not read before it is sent"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "rules.hcl")
	if err := os.WriteFile(rules, []byte(`namespace "default" { policy = "read" }`), 0o600); err != nil {
		t.Fatal(err)
	}
	volume := filepath.Join(dir, "volume.hcl")
	if err := os.WriteFile(volume, []byte("id = \"db\"\ntype = \"csi\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := filepath.Join(dir, "pool.hcl")
	if err := os.WriteFile(pool, []byte(`node_pool "gpu" {}`), 0o600); err != nil {
		t.Fatal(err)
	}
	authMethod := []string{"-name", "ci", "-type", "JWT", "-max-token-ttl", "1h", "-token-locality", "local", "-config", "{}"}
	return map[string][]string{
		"job run":                           {job},
		"job plan":                          {job},
		"job validate":                      {job},
		"job status":                        {},
		"job stop":                          {"web"},
		"job scale":                         {"web", "frontend", "3"},
		"job scaling-events":                {"web"},
		"job inspect":                       {"web"},
		"job history":                       {"web"},
		"job dispatch":                      {"web"},
		"job revert":                        {"web", "1"},
		"job restart":                       {"-reschedule", "-yes", "web"},
		"job tag apply":                     {"-name", "golden", "web"},
		"job tag unset":                     {"-name", "golden", "web"},
		"job eval":                          {"web"},
		"job allocs":                        {"web"},
		"job deployments":                   {"web"},
		"job promote":                       {"web"},
		"job periodic force":                {"web"},
		"scaling policy list":               {},
		"scaling policy info":               {"p1"},
		"eval list":                         {},
		"eval status":                       {"e1"},
		"eval delete":                       {"e1"},
		"status":                            {"web"},
		"operator api":                      {"/v1/jobs"},
		"agent-info":                        {},
		"system reconcile summaries":        {},
		"alloc status":                      {"a1"},
		"alloc stop":                        {"a1"},
		"deployment list":                   {},
		"deployment status":                 {"d1"},
		"deployment promote":                {"d1"},
		"deployment fail":                   {"d1"},
		"deployment pause":                  {"d1"},
		"deployment resume":                 {"d1"},
		"node status":                       {},
		"node drain":                        {"-enable", "n1"},
		"node eligibility":                  {"-disable", "n1"},
		"node pool apply":                   {pool},
		"node pool list":                    {},
		"node pool info":                    {"gpu"},
		"node pool nodes":                   {"gpu"},
		"node pool jobs":                    {"gpu"},
		"node pool delete":                  {"gpu"},
		"namespace apply":                   {"prod"},
		"namespace list":                    {},
		"namespace status":                  {"prod"},
		"namespace inspect":                 {"prod"},
		"namespace delete":                  {"prod"},
		"monitor":                           {},
		"operator autopilot get-config":     {},
		"operator autopilot set-config":     {"-min-quorum", "3"},
		"operator autopilot health":         {},
		"operator metrics":                  {},
		"operator debug":                    {},
		"operator snapshot save":            {filepath.Join(dir, "saved.tar.gz")},
		"operator snapshot restore":         {snap},
		"operator raft list-peers":          {},
		"operator raft remove-peer":         {"-peer-id", "s1"},
		"operator raft transfer-leadership": {},
		"operator scheduler get-config":     {},
		"operator scheduler set-config":     {"-scheduler-algorithm", "spread"},
		"plugin list":                       {},
		"plugin inspect":                    {"binpack"},
		"plugin status":                     {},
		"volume register":                   {volume},
		"volume status":                     {},
		"volume deregister":                 {"db"},
		"volume detach":                     {"db", "n1"},
		"server members":                    {},
		"system gc":                         {},
		"acl bootstrap":                     {},
		"acl policy apply":                  {"readonly", rules},
		"acl policy list":                   {},
		"acl policy info":                   {"readonly"},
		"acl policy delete":                 {"readonly"},
		"acl role create":                   {"-name", "r", "-policy", "readonly"},
		"acl role list":                     {},
		"acl role info":                     {"rid"},
		"acl role update":                   {"-name", "n", "rid"},
		"acl role delete":                   {"rid"},
		"acl token create":                  {"-policy", "readonly"},
		"acl token list":                    {},
		"acl token info":                    {"acc"},
		"acl token self":                    {},
		"acl token update":                  {"-name", "n", "acc"},
		"acl token delete":                  {"acc"},
		"acl auth-method create":            authMethod,
		"acl auth-method list":              {},
		"acl auth-method info":              {"ci"},
		"acl auth-method update":            {"-default", "ci"},
		"acl auth-method delete":            {"ci"},
		"acl binding-rule create":           {"-auth-method", "ci", "-bind-type", "management"},
		"acl binding-rule list":             {},
		"acl binding-rule info":             {"r1"},
		"acl binding-rule update":           {"-description", "d", "r1"},
		"acl binding-rule delete":           {"r1"},
		"login":                             {"-login-token", "jwt"},
		"var list":                          {},
		"var get":                           {"app/db"},
		"var put":                           {"app/db", "user=admin"},
		"var purge":                         {"app/db"},
		"var lock":                          {"-max-retry", "0", "app/db", "true"},
		"service list":                      {},
		"service info":                      {"web"},
		"service delete":                    {"web", "_nomad-task-1"},
		"operator root keyring list":        {},
		"operator root keyring rotate":      {},
		"operator root keyring remove":      {"5c7b1a2e-1111-4a4a-8b8b-000000000001"},
	}
}

// localCommands take the common options but talk to no agent.
var localCommands = map[string]bool{
	"job init": true, "bench scheduler": true, "operator snapshot inspect": true, "plugin validate": true,
}

// Every command that talks to an agent documents -token and sends the
// token with its requests, streaming ones (monitor, snapshots) included.
func TestMeta_TokenSentByEveryCommand(t *testing.T) {
	setTokenEnv(t, map[string]string{"NOMAD_TOKEN": "env-secret"})
	argsOf := tokenCommandArgs(t)
	var (
		mu   sync.Mutex
		sent []string // the header of each request, "-" when absent
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		v := r.Header.Values(client.TokenHeader)
		if len(v) == 0 {
			v = []string{"-"}
		}
		sent = append(sent, strings.Join(v, ","))
		mu.Unlock()
		http.Error(w, "refused by the test", http.StatusInternalServerError)
	}))
	defer srv.Close()

	var names []string
	for name := range commands(&meta{}) {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ui := cli.NewMockUi()
			cmd, err := commands(&meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader("")})[name]()
			if err != nil {
				t.Fatal(err)
			}
			args, ok := argsOf[name]
			if !ok {
				if strings.Contains(cmd.Help(), "-address") && !localCommands[name] {
					t.Fatalf("%s takes -address but the test has no arguments for it: add them to tokenCommandArgs", name)
				}
				return
			}
			if !strings.Contains(cmd.Help(), "-token=SECRET") {
				t.Errorf("%s: help does not document -token", name)
			}
			for _, tc := range []struct {
				how  string
				args []string
				want string
			}{
				{"NOMAD_TOKEN", nil, "env-secret"},
				{"-token", []string{"-token", "flag-secret"}, "flag-secret"},
			} {
				mu.Lock()
				sent = nil
				mu.Unlock()
				all := append(append([]string{"-address", srv.URL}, tc.args...), args...)
				if code := cmd.Run(all); code == exitOK {
					t.Errorf("%s: exit code 0 though the agent refused", tc.how)
				}
				mu.Lock()
				got := sent
				mu.Unlock()
				if len(got) == 0 {
					t.Fatalf("%s: no request sent (error: %s)", tc.how, ui.ErrorWriter.String())
				}
				for _, h := range got {
					if h != tc.want {
						t.Errorf("%s: %s %q, want %q", tc.how, client.TokenHeader, h, tc.want)
					}
				}
			}
		})
	}
}
