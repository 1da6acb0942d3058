package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
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

// checkSpecError checks that err is a located specification error whose
// rendering has each of want ("file:line:col: error: Summary", or a part
// of the detail), in order.
func checkSpecError(t *testing.T, err error, want []string) {
	t.Helper()
	var se *specError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v (%T), want a located specification error", err, err)
	}
	out := se.String()
	for _, w := range want {
		i := strings.Index(out, w)
		if i < 0 {
			t.Fatalf("error lacks %q:\n%s", w, out)
		}
		out = out[i+len(w):]
	}
}

// Namespace specifications in HCL (native, or HCL's JSON syntax for a
// *.json file) and in the API's JSON parse into the namespace they give;
// bad ones are refused with the file, line and column of each problem.
func TestParseNamespaceSpec(t *testing.T) {
	full := `name        = "prod"
description = "Production"
quota       = "q"
meta {
  owner = "sre"
  port  = 8080
}
capabilities {
  enabled_task_drivers  = ["docker", "exec"]
  disabled_task_drivers = ["raw_exec"]
}
`
	for _, tc := range []struct {
		name   string
		file   string
		src    string
		asJSON bool
		want   *apiNamespace
		errs   []string
	}{
		{name: "HCL, every field", file: "ns.hcl", src: full, want: &apiNamespace{Name: "prod", Description: "Production", Quota: "q",
			Meta:         map[string]string{"owner": "sre", "port": "8080"},
			Capabilities: &namespaceCapabilities{EnabledTaskDrivers: []string{"docker", "exec"}, DisabledTaskDrivers: []string{"raw_exec"}}}},
		{name: "HCL, a name only", file: "ns.hcl", src: `name = "dev"`, want: &apiNamespace{Name: "dev"}},
		{name: "HCL, empty capabilities", file: "ns.hcl", src: "name = \"dev\"\ncapabilities {}\n",
			want: &apiNamespace{Name: "dev", Capabilities: &namespaceCapabilities{}}},
		{name: "HCL, node pool configuration (Enterprise's, sent for the server to judge)", file: "ns.hcl",
			src:  "name = \"dev\"\nnode_pool_config {\n  default = \"dev\"\n  allowed = [\"all\"]\n}\n",
			want: &apiNamespace{Name: "dev", NodePoolConfiguration: &api.NamespaceNodePoolConfiguration{Default: "dev", Allowed: []string{"all"}}}},
		{name: "HCL's JSON syntax", file: "ns.json",
			src:  `{"name": "dev", "meta": {"a": "b"}, "capabilities": {"enabled_task_drivers": ["exec"]}}`,
			want: &apiNamespace{Name: "dev", Meta: map[string]string{"a": "b"}, Capabilities: &namespaceCapabilities{EnabledTaskDrivers: []string{"exec"}}}},
		{name: "HCL's JSON syntax, from standard input", file: stdinSpecName, src: "\n  {\"name\": \"dev\"}",
			want: &apiNamespace{Name: "dev"}},
		{name: "API JSON, as namespace inspect prints it", file: "ns.json", asJSON: true,
			src: `{"Name": "dev", "Description": "d", "Quota": "", "Capabilities": {"EnabledTaskDrivers": ["exec"], "DisabledTaskDrivers": null},
				"NodePoolConfiguration": null, "Meta": {"a": "b"}, "CreateIndex": 7, "ModifyIndex": 9}`,
			want: &apiNamespace{Name: "dev", Description: "d", Capabilities: &namespaceCapabilities{EnabledTaskDrivers: []string{"exec"}},
				Meta: map[string]string{"a": "b"}, CreateIndex: 7, ModifyIndex: 9}},
		{name: "API JSON without -json", file: "spec", src: "\n  {\"Name\": \"dev\"}",
			errs: []string{`spec:2:4: error: Extraneous JSON object property; No argument or block type is named "Name". Did you mean "name"?`}},

		{name: "an unknown argument", file: "ns.hcl", src: "name = \"dev\"\n  nmae = \"x\"\n",
			errs: []string{`ns.hcl:2:3: error: Unsupported argument; An argument named "nmae" is not expected here.`}},
		{name: "an unknown block", file: "ns.hcl", src: "name = \"dev\"\nquotas {}\n",
			errs: []string{`ns.hcl:2:1: error: Unsupported block type`}},
		{name: "meta as an argument", file: "ns.hcl", src: "name = \"dev\"\nmeta = { a = \"b\" }\n",
			errs: []string{`ns.hcl:2:1: error: Unsupported argument; An argument named "meta" is not expected here. Did you mean to define a block of type "meta"?`}},
		{name: "two capabilities blocks", file: "ns.hcl", src: "name = \"dev\"\ncapabilities {}\ncapabilities {}\n",
			errs: []string{`ns.hcl:3:1: error: Duplicate capabilities block; Only one capabilities block is allowed. Another was defined at ns.hcl:2,1-13.`}},
		{name: "problems in order, inside blocks", file: "ns.hcl", src: `name = ["a"]
capabilities {
  enabled_task_drivers = "docker"
  drivers = []
}
meta {
  list = ["x"]
}
`, errs: []string{
			`ns.hcl:1:8: error: Unsuitable value type`,
			`ns.hcl:3:27: error: Unsuitable value type; Unsuitable value: list of string required, but have string`,
			`ns.hcl:4:3: error: Unsupported argument; An argument named "drivers" is not expected here.`,
			`ns.hcl:7:10: error: Unsuitable value type`}},
		{name: "a syntax error", file: "ns.hcl", src: "name = \"dev\n",
			errs: []string{`ns.hcl:1:12: error: Invalid multi-line string`, `ns.hcl:1:12: error: Unterminated template string`}},
		{name: "a variable, which a specification cannot read", file: "ns.hcl", src: "name = var.x\n",
			errs: []string{`ns.hcl:1:8: error: Variables not allowed`}},
		{name: "API JSON of the wrong type", file: "ns.json", asJSON: true, src: "{\n  \"Name\": \"dev\",\n  \"Meta\": [\"a\"]\n}",
			errs: []string{`ns.json:3:11: error: Invalid namespace JSON; Meta: cannot use a JSON array as a map[string]string.`}},
		{name: "API JSON that is not JSON", file: "ns.json", asJSON: true, src: "{\"Name\": dev}",
			errs: []string{`ns.json:1:10: error: Invalid namespace JSON; invalid character 'd' looking for beginning of value.`}},
		{name: "API JSON cut short", file: "ns.json", asJSON: true, src: "{\"Name\": \"dev\"",
			errs: []string{`ns.json:1:15: error: Invalid namespace JSON; unexpected EOF.`}},
		{name: "API JSON, then more", file: "ns.json", asJSON: true, src: "{\"Name\": \"dev\"}\n{}",
			errs: []string{`ns.json:2:1: error: Invalid namespace JSON; unexpected data after the JSON value.`}},
		{name: "empty API JSON", file: "ns.json", asJSON: true, src: "",
			errs: []string{`ns.json:1:1: error: Invalid namespace JSON; no JSON value: the input is empty.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := parseNamespaceSpec(&specFile{name: tc.file, src: []byte(tc.src)}, tc.asJSON)
			if tc.errs != nil {
				checkSpecError(t, err, tc.errs)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ns, tc.want) {
				t.Errorf("parsed %+v, want %+v", ns, tc.want)
			}
		})
	}
}

// nsAgent serves the API of an in-process server with ACLs enabled,
// bootstrapped: the server (to register nodes into it), its address and
// the management token's secret.
func nsAgent(t *testing.T) (s *server.Server, addr, root string) {
	t.Helper()
	s = servertest.New(t, nil, func(c *server.Config) { c.ACLEnabled = true })
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
	return s, ts.URL, token.SecretID
}

// runWithStdin runs a drover command as runACLCommand does, with stdin as
// its standard input.
func runWithStdin(t *testing.T, addr, token, stdin string, words ...string) (int, string, string) {
	t.Helper()
	setTokenEnv(t, nil)
	ui := cli.NewMockUi()
	cmd, args := commandFor(t, &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(stdin), now: time.Now}, addr, token, words...)
	code := cmd.Run(args)
	return code, ui.OutputWriter.String(), ui.ErrorWriter.String()
}

// testJobspec is a job for the namespace and node pool tests: one task of
// driver in node pool pool.
func testJobspec(id, pool, driver string) string {
	config := `image = "nginx"`
	if driver != "docker" {
		config = `command = "/bin/true"`
	}
	return fmt.Sprintf(`job %q {
  datacenters = ["dc1"]
  node_pool   = %q
  group "g" {
    task "t" {
      driver = %q
      config {
        %s
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`, id, pool, driver, config)
}

// The namespace commands against an agent: apply (by name, from HCL and
// from the API's JSON that inspect prints), list, status, inspect and
// delete, with Nomad's output; the server's rules come through as errors
// and exit 1: a job only in a namespace that exists and with the drivers
// it allows, no deletion of default or of a namespace in use, management
// tokens only.
func TestNamespaceCommands(t *testing.T) {
	_, addr, root := nsAgent(t)
	dir := t.TempDir()

	out, _ := mustRun(t, 0, addr, root, "namespace", "list")
	if want := "Name     Description\ndefault  Default shared namespace\n"; out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}

	// By name: created, then changed in what the options give only.
	out, _ = mustRun(t, 0, addr, root, "namespace", "apply", "-description", "Production", "prod")
	if out != "Successfully applied namespace \"prod\"!\n" {
		t.Errorf("apply by name: %q", out)
	}
	spec := writeFile(t, dir, "dev.hcl", `name        = "dev"
description = "Development"
meta {
  owner = "dev-team"
  tier  = 3
}
capabilities {
  enabled_task_drivers  = ["exec", "raw_exec"]
  disabled_task_drivers = ["raw_exec"]
}
`)
	out, _ = mustRun(t, 0, addr, root, "namespace", "apply", spec)
	if out != "Successfully applied namespace \"dev\"!\n" {
		t.Errorf("apply from a file: %q", out)
	}
	out, _ = mustRun(t, 0, addr, root, "namespace", "list")
	if want := "Name     Description\ndefault  Default shared namespace\ndev      Development\nprod     Production\n"; out != want {
		t.Errorf("list:\n%s\nwant:\n%s", out, want)
	}
	out, _ = mustRun(t, 0, addr, root, "namespace", "status", "dev")
	if want := `Name            = dev
Description     = Development
Quota           = <none>
EnabledDrivers  = exec,raw_exec
DisabledDrivers = raw_exec

Metadata
owner = dev-team
tier  = 3
`; out != want {
		t.Errorf("status:\n%s\nwant:\n%s", out, want)
	}
	// The description changes; the metadata and capabilities stay.
	mustRun(t, 0, addr, root, "namespace", "apply", "-description", "Dev", "dev")
	out, _ = mustRun(t, 0, addr, root, "namespace", "status", "dev")
	checkKVs(t, out, "Name", "dev", "Description", "Dev", "EnabledDrivers", "exec,raw_exec", "owner", "dev-team")
	// A file given, the options are ignored, with a warning.
	_, errOut := mustRun(t, 0, addr, root, "namespace", "apply", "-description", "ignored", spec)
	checkContains(t, "apply -description with a file", errOut, "Flags are ignored when a file is specified!")
	out, _ = mustRun(t, 0, addr, root, "namespace", "status", "-t", "{{.Description}}", "dev")
	if out != "Development\n" {
		t.Errorf("status -t: %q", out)
	}

	// default can be described, and keeps what it is.
	mustRun(t, 0, addr, root, "namespace", "apply", "-description", "Everything else", "default")
	out, _ = mustRun(t, 0, addr, root, "namespace", "status", "default")
	checkKVs(t, out, "Name", "default", "Description", "Everything else", "EnabledDrivers", "*", "DisabledDrivers", "<none>")

	// inspect prints the API's JSON, which apply -json reads back.
	out, _ = mustRun(t, 0, addr, root, "namespace", "inspect", "dev")
	var inspected map[string]any
	if err := json.Unmarshal([]byte(out), &inspected); err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	for _, k := range []string{"Name", "Description", "Quota", "Capabilities", "NodePoolConfiguration", "Meta", "CreateIndex", "ModifyIndex"} {
		if _, ok := inspected[k]; !ok {
			t.Errorf("inspect has no %s:\n%s", k, out)
		}
	}
	if inspected["NodePoolConfiguration"] != nil {
		t.Errorf("inspect: a node pool configuration, Enterprise's:\n%s", out)
	}
	changed := strings.Replace(out, `"Description": "Development"`, `"Description": "From JSON"`, 1)
	code, _, errOut := runWithStdin(t, addr, root, changed, "namespace", "apply", "-json", "-")
	if code != 0 {
		t.Fatalf("apply -json -: exit %d\n%s", code, errOut)
	}
	out, _ = mustRun(t, 0, addr, root, "namespace", "status", "-json", "dev")
	var ns apiNamespace
	if err := json.Unmarshal([]byte(out), &ns); err != nil || ns.Description != "From JSON" || ns.Meta["owner"] != "dev-team" ||
		ns.Capabilities == nil || !slices.Equal(ns.Capabilities.DisabledTaskDrivers, []string{"raw_exec"}) {
		t.Errorf("status -json after apply -json = %+v, %v:\n%s", ns, err, out)
	}
	out, _ = mustRun(t, 0, addr, root, "namespace", "inspect", "-t", "{{.Name}}:{{index .Meta \"owner\"}}", "dev")
	if out != "dev:dev-team\n" {
		t.Errorf("inspect -t: %q", out)
	}
	out, _ = mustRun(t, 0, addr, root, "namespace", "list", "-t", "{{range .}}{{.Name}} {{end}}")
	if out != "dev prod default \n" {
		t.Errorf("list -t, newest first as Nomad's client orders them: %q", out)
	}
	out, _ = mustRun(t, 0, addr, root, "namespace", "list", "-json")
	var listed []apiNamespace
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 3 {
		t.Errorf("list -json = %+v, %v:\n%s", listed, err, out)
	}

	// Jobs: only into a namespace that exists, with a driver it allows.
	web := writeFile(t, dir, "web.hcl", testJobspec("web", "default", "docker"))
	batch := writeFile(t, dir, "batch.hcl", testJobspec("batch", "default", "exec"))
	rawExec := writeFile(t, dir, "raw.hcl", testJobspec("raw", "default", "raw_exec"))
	_, errOut = mustRun(t, 1, addr, root, "job", "run", "-detach", "-namespace", "nope", web)
	checkContains(t, "a job in a namespace that does not exist", errOut, `job "web" is in nonexistent namespace "nope"`)
	_, errOut = mustRun(t, 1, addr, root, "job", "run", "-detach", "-namespace", "dev", web)
	checkContains(t, "a driver the namespace does not enable", errOut, `used task driver "docker" is not allowed in namespace "dev"`)
	_, errOut = mustRun(t, 1, addr, root, "job", "run", "-detach", "-namespace", "dev", rawExec)
	checkContains(t, "a driver the namespace disables", errOut, `used task driver "raw_exec" is not allowed in namespace "dev"`)
	mustRun(t, 0, addr, root, "job", "run", "-detach", "-namespace", "dev", batch)
	mustRun(t, 0, addr, root, "var", "put", "-namespace", "prod", "app/db", "user=admin")

	// Prefixes and refusals.
	_, errOut = mustRun(t, 1, addr, root, "namespace", "status", "d")
	checkContains(t, "status of an ambiguous prefix", errOut, "Prefix matched multiple namespaces\n\nName     Description\ndefault  Everything else\ndev      From JSON")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "inspect", "nope")
	checkContains(t, "inspect of no namespace", errOut, `Namespace "nope" matched no namespaces`)
	_, errOut = mustRun(t, 1, addr, root, "namespace", "delete", "default")
	checkContains(t, "delete default", errOut, "400")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "delete", "dev")
	checkContains(t, "delete a namespace with a job", errOut, "400")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "delete", "prod")
	checkContains(t, "delete a namespace with a variable", errOut, "400")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "apply", "-quota", "q", "prod")
	checkContains(t, "a quota, Enterprise's", errOut, "400")
	npc := writeFile(t, dir, "npc.hcl", "name = \"prod\"\nnode_pool_config {\n  default = \"default\"\n}\n")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "apply", npc)
	checkContains(t, "a node pool configuration, Enterprise's", errOut, "400")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "apply", "-description", "x", "bad name!")
	checkContains(t, "an invalid name", errOut, "400")
	_, errOut = mustRun(t, 1, addr, "", "namespace", "apply", "anon")
	checkContains(t, "apply without a token", errOut, "403")
	out, _ = mustRun(t, 0, addr, root, "namespace", "status", "pr")
	checkKVs(t, out, "Name", "prod", "Description", "Production", "Quota", "<none>")

	// Emptied, they go.
	mustRun(t, 0, addr, root, "job", "stop", "-purge", "-detach", "-namespace", "dev", "batch")
	mustRun(t, 0, addr, root, "var", "purge", "-namespace", "prod", "app/db")
	for _, name := range []string{"dev", "prod"} {
		out, _ = mustRun(t, 0, addr, root, "namespace", "delete", name)
		if want := fmt.Sprintf("Successfully deleted namespace %q!\n", name); out != want {
			t.Errorf("delete: %q, want %q", out, want)
		}
	}
	out, _ = mustRun(t, 0, addr, root, "namespace", "list")
	if want := "Name     Description\ndefault  Everything else\n"; out != want {
		t.Errorf("list after the deletions:\n%s", out)
	}
	_, errOut = mustRun(t, 1, addr, root, "namespace", "status", "prod")
	checkContains(t, "status of a deleted namespace", errOut, `Namespace "prod" matched no namespaces`)

	// Bad input is refused before anything is sent.
	bad := writeFile(t, dir, "bad.hcl", "name = \"x\"\ncapabilities {\n  drivers = [\"exec\"]\n}\n")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "apply", bad)
	checkContains(t, "apply of a bad file", errOut, "Error parsing the namespace specification:\n"+bad+`:3:3: error: Unsupported argument`, "   3 |   drivers")
	_, errOut = mustRun(t, 1, addr, root, "namespace", "apply")
	checkContains(t, "apply without input", errOut, "This command takes one argument: <input>")
}
