package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// Node pool specifications in HCL (native, or HCL's JSON syntax for a
// JSON file) and in the API's JSON parse into the pool they give, the
// examples node pool init writes included; bad ones are refused with the
// file, line and column of each problem.
func TestParseNodePoolSpec(t *testing.T) {
	yes := true
	example := &apiNodePool{Name: "example", Description: "Example node pool",
		Meta: map[string]string{"environment": "prod", "owner": "sre"}}
	for _, tc := range []struct {
		name   string
		file   string
		src    string
		asJSON bool
		want   *apiNodePool
		errs   []string
	}{
		{name: "init's HCL example", file: defaultHCLNodePoolSpecFile, src: exampleHCLNodePoolSpec, want: example},
		{name: "init's JSON example", file: defaultJSONNodePoolSpecFile, src: exampleJSONNodePoolSpec, asJSON: true, want: example},
		{name: "HCL, a name only", file: "p.hcl", src: `node_pool "dev" {}`, want: &apiNodePool{Name: "dev"}},
		{name: "HCL, meta values converted", file: "p.hcl", src: "node_pool \"dev\" {\n  meta {\n    port = 8080\n    on = true\n  }\n}\n",
			want: &apiNodePool{Name: "dev", Meta: map[string]string{"port": "8080", "on": "true"}}},
		{name: "HCL, scheduler configuration (Enterprise's, sent for the server to judge)", file: "p.hcl",
			src: "node_pool \"dev\" {\n  scheduler_config {\n    scheduler_algorithm = \"spread\"\n    memory_oversubscription_enabled = true\n  }\n}\n",
			want: &apiNodePool{Name: "dev", SchedulerConfiguration: &api.NodePoolSchedulerConfiguration{
				SchedulerAlgorithm: api.SchedulerAlgorithmSpread, MemoryOversubscriptionEnabled: &yes}}},
		{name: "HCL's JSON syntax", file: "p.json", src: `{"node_pool": {"dev": {"description": "d", "meta": {"a": "b"}}}}`,
			want: &apiNodePool{Name: "dev", Description: "d", Meta: map[string]string{"a": "b"}}},
		{name: "HCL's JSON syntax, from standard input", file: stdinSpecName, src: ` {"node_pool": {"dev": {}}}`,
			want: &apiNodePool{Name: "dev"}},
		{name: "API JSON, as node pool info -json prints it", file: "p.json", asJSON: true,
			src:  `{"Name": "dev", "Description": "d", "Meta": null, "SchedulerConfiguration": null, "CreateIndex": 1, "ModifyIndex": 2}`,
			want: &apiNodePool{Name: "dev", Description: "d", CreateIndex: 1, ModifyIndex: 2}},

		{name: "no node_pool block", file: "p.hcl", src: "# nothing\n",
			errs: []string{`p.hcl:1:1: error: Missing node_pool block`}},
		{name: "two node_pool blocks", file: "p.hcl", src: "node_pool \"a\" {}\nnode_pool \"b\" {}\n",
			errs: []string{`p.hcl:2:1: error: Duplicate node_pool block; Only one node_pool block is allowed. Another was defined at p.hcl:1,1-14.`}},
		{name: "a node_pool block without a name", file: "p.hcl", src: "node_pool {\n}\n",
			errs: []string{`p.hcl:1:11: error: Missing name for node_pool; All node_pool blocks must have 1 labels (name).`}},
		{name: "an argument outside the block", file: "p.hcl", src: "name = \"dev\"\nnode_pool \"dev\" {}\n",
			errs: []string{`p.hcl:1:1: error: Unsupported argument; An argument named "name" is not expected here.`}},
		{name: "a misspelt argument", file: "p.hcl", src: "node_pool \"dev\" {\n  descripton = \"d\"\n}\n",
			errs: []string{`p.hcl:2:3: error: Unsupported argument; An argument named "descripton" is not expected here. Did you mean "description"?`}},
		{name: "problems in order, inside blocks", file: "p.hcl", src: `node_pool "dev" {
  description = ["d"]
  meta {
    a = {}
  }
  scheduler_config {
    memory_oversubscription_enabled = "maybe"
    algorithm = "spread"
  }
}
`, errs: []string{
			`p.hcl:2:17: error: Unsuitable value type; Unsuitable value: string required, but have tuple`,
			`p.hcl:4:9: error: Unsuitable value type`,
			`p.hcl:7:40: error: Unsuitable value type; Unsuitable value: a bool is required`,
			`p.hcl:8:5: error: Unsupported argument; An argument named "algorithm" is not expected here.`}},
		{name: "two meta blocks", file: "p.hcl", src: "node_pool \"dev\" {\n  meta {}\n  meta {}\n}\n",
			errs: []string{`p.hcl:3:3: error: Duplicate meta block`}},
		{name: "a syntax error", file: "p.hcl", src: "node_pool \"dev\" {\n  description = \n}\n",
			errs: []string{`p.hcl:2:17: error: Invalid expression; Expected the start of an expression, but found an invalid expression token.`}},
		{name: "an unclosed block", file: "p.hcl", src: "node_pool \"dev\" {\n",
			errs: []string{`p.hcl:1:17: error: Unclosed configuration block`}},
		{name: "API JSON without -json", file: "p.json", src: "{\n  \"Name\": \"dev\"\n}\n",
			errs: []string{`p.json:2:3: error: Extraneous JSON object property; No argument or block type is named "Name".`}},
		{name: "API JSON of the wrong type", file: "p.json", asJSON: true, src: "{\"Name\": \"dev\",\n \"Meta\": {\"a\": 1}}",
			errs: []string{`p.json:2:16: error: Invalid node pool JSON; Meta: cannot use a JSON number as a string.`}},
		{name: "API JSON with a bad boolean", file: "p.json", asJSON: true,
			src:  "{\"Name\": \"dev\",\n \"SchedulerConfiguration\": {\"MemoryOversubscriptionEnabled\": \"yes\"}}",
			errs: []string{`p.json:2:66: error: Invalid node pool JSON; SchedulerConfiguration.MemoryOversubscriptionEnabled: cannot use a JSON string as a bool.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := parseNodePoolSpec(&specFile{name: tc.file, src: []byte(tc.src)}, tc.asJSON)
			if tc.errs != nil {
				checkSpecError(t, err, tc.errs)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pool, tc.want) {
				t.Errorf("parsed %+v, want %+v", pool, tc.want)
			}
		})
	}
}

// The node pool commands against an agent: init and apply (HCL, and the
// API's JSON that info -json prints), list (filtered, paged), info,
// nodes, jobs and delete, with Nomad's output; the server's rules come
// through as errors and exit 1: the built-in pools cannot change, a pool
// with nodes or jobs cannot go, a job only in a pool that exists, and a
// token needs the node_pool capability for what it does.
func TestNodePoolCommands(t *testing.T) {
	s, addr, root := nsAgent(t)
	dir := t.TempDir()

	out, _ := mustRun(t, 0, addr, root, "node", "pool", "list")
	if want := "Name     Description\nall      Node pool with all nodes in the cluster.\ndefault  Default node pool.\n"; out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}

	// init writes the examples, which apply reads.
	hclSpec, jsonSpec := filepath.Join(dir, defaultHCLNodePoolSpecFile), filepath.Join(dir, "example.json")
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "init", hclSpec)
	if out != "Example node pool specification written to "+hclSpec+"\n" {
		t.Errorf("init: %q", out)
	}
	_, errOut := mustRun(t, 1, addr, root, "node", "pool", "init", hclSpec)
	checkContains(t, "init over a file", errOut, fmt.Sprintf("File %q already exists", hclSpec))
	if out, _ = mustRun(t, 0, addr, root, "node", "pool", "init", "-json", "-quiet", jsonSpec); out != "" {
		t.Errorf("init -quiet: %q", out)
	}
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "init", "-out", "yaml", filepath.Join(dir, "x"))
	checkContains(t, "init -out=yaml", errOut, `Invalid value for "-out"; valid values are [hcl, json]`)
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "apply", hclSpec)
	if out != "Successfully applied node pool \"example\"!\n" {
		t.Errorf("apply: %q", out)
	}
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "info", "ex")
	if want := `Name        = example
Description = Example node pool

Metadata
environment = prod
owner       = sre

Scheduler Configuration
No scheduler configuration
`; out != want {
		t.Errorf("info:\n%s\nwant:\n%s", out, want)
	}
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "apply", jsonSpec)
	checkContains(t, "apply of API JSON without -json", errOut, jsonSpec+`:2:3: error: Extraneous JSON object property`,
		"is read with -json")
	jsonBody, err := os.ReadFile(jsonSpec)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runWithStdin(t, addr, root, strings.Replace(string(jsonBody), `"example"`, `"dev-1"`, 1),
		"node", "pool", "apply", "-json", "-")
	if code != 0 || out != "Successfully applied node pool \"dev-1\"!\n" {
		t.Fatalf("apply -json -: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runWithStdin(t, addr, root, `node_pool "dev-2" { description = "Second" }`, "node", "pool", "apply", "-")
	if code != 0 {
		t.Fatalf("apply -: exit %d\n%s", code, errOut)
	}
	// info -json is the API's JSON, which apply -json reads back.
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "info", "-json", "dev-1")
	var info map[string]any
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("info -json: %v\n%s", err, out)
	}
	for _, k := range []string{"Name", "Description", "Meta", "SchedulerConfiguration", "CreateIndex", "ModifyIndex"} {
		if _, ok := info[k]; !ok {
			t.Errorf("info -json has no %s:\n%s", k, out)
		}
	}
	changed := writeFile(t, dir, "dev-1.json", strings.Replace(out, `"Example node pool"`, `"First"`, 1))
	mustRun(t, 0, addr, root, "node", "pool", "apply", "-json", changed)
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "info", "-t", "{{.Description}} {{.Meta.owner}}", "dev-1")
	if out != "First sre\n" {
		t.Errorf("info -t after apply -json: %q", out)
	}

	// list: filtered, paged, as JSON.
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "list", "-filter", `Name matches "^dev"`)
	if want := "Name   Description\ndev-1  First\ndev-2  Second\n"; out != want {
		t.Errorf("list -filter:\n%s\nwant:\n%s", out, want)
	}
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "list", "-per-page", "2")
	checkContains(t, "list -per-page", out, "Name     Description\nall      Node pool with all nodes in the cluster.\ndefault  Default node pool.\n",
		"\nResults have been paginated. To get the next page run:\n\ndrover node pool list -address=", " -per-page=2 -token=", " -page-token=dev-1\n")
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "list", "-per-page", "2", "-page-token", "dev-1")
	checkContains(t, "list's next page", out, "Name   Description\ndev-1  First\ndev-2  Second\n", "-page-token=example")
	out, errOut = mustRun(t, 0, addr, root, "node", "pool", "list", "-json", "-per-page", "4")
	var pools []apiNodePool
	if err := json.Unmarshal([]byte(out), &pools); err != nil || len(pools) != 4 || pools[3].Name != "dev-2" {
		t.Errorf("list -json = %+v, %v:\n%s", pools, err, out)
	}
	checkContains(t, "list -json's next page", errOut, "Next page token: example")

	// A node that registers in a pool that does not exist creates it.
	for i, pool := range []string{"gpu", "dev-1", ""} {
		n := servertest.Node(i, 4000, 8192)
		n.NodePool = pool
		if _, _, err := s.RegisterNode(n); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "list", "-t", "{{range .}}{{.Name}} {{end}}")
	if out != "all default dev-1 dev-2 example gpu \n" {
		t.Errorf("list after the nodes registered: %q", out)
	}
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "nodes", "gp")
	if want := "ID        DC   Name       Class   Drain  Eligibility  Status\nnode-000  dc1  node-0000  <none>  false  eligible     ready\n"; out != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", out, want)
	}
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "nodes", "-verbose", "-filter", `Name != "node-0001"`, "all")
	checkContains(t, "nodes of all", out, "node-0000  dc1", "node-0002  dc1")
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "nodes", "-t", "{{range .}}{{.ID}}{{end}}", "dev-1")
	if out != "node-0001\n" {
		t.Errorf("nodes -t: %q", out)
	}
	if out, _ = mustRun(t, 0, addr, root, "node", "pool", "nodes", "dev-2"); out != "No nodes\n" {
		t.Errorf("nodes of an empty pool: %q", out)
	}

	// Jobs: only in a pool that exists.
	mustRun(t, 0, addr, root, "namespace", "apply", "prod")
	_, errOut = mustRun(t, 1, addr, root, "job", "run", "-detach", writeFile(t, dir, "nope.hcl", testJobspec("nope", "nope", "docker")))
	checkContains(t, "a job in a pool that does not exist", errOut, "400", "nope")
	mustRun(t, 0, addr, root, "job", "run", "-detach", writeFile(t, dir, "web.hcl", testJobspec("web", "dev-2", "docker")))
	mustRun(t, 0, addr, root, "job", "run", "-detach", "-namespace", "prod", writeFile(t, dir, "api.hcl", testJobspec("api", "dev-2", "docker")))
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "jobs", "dev-2")
	if !regexp.MustCompile(`^ID   Type     Priority  Status   Submit Date\nweb  service  50        pending  \S+\n$`).MatchString(out) {
		t.Errorf("jobs:\n%s", out)
	}
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "jobs", "-namespace", "*", "dev-2")
	if !regexp.MustCompile(`^ID   Namespace  Type     Priority  Status   Submit Date\nweb  default    service  50        pending  \S+\napi  prod       service  50        pending  \S+\n$`).MatchString(out) {
		t.Errorf("jobs -namespace=*:\n%s", out)
	}
	out, _ = mustRun(t, 0, addr, root, "node", "pool", "jobs", "-json", "dev-2")
	var jobs []httpapi.JobListStub
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 1 || jobs[0].ID != "web" {
		t.Errorf("jobs -json = %+v, %v:\n%s", jobs, err, out)
	}
	if out, _ = mustRun(t, 0, addr, root, "node", "pool", "jobs", "gpu"); out != "No jobs\n" {
		t.Errorf("jobs of a pool without any: %q", out)
	}

	// Prefixes and refusals.
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "info", "dev")
	checkContains(t, "info of an ambiguous prefix", errOut, "Prefix matched multiple node pools\n\nName   Description\ndev-1  First\ndev-2  Second")
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "jobs", "nope")
	checkContains(t, "jobs of no pool", errOut, `No node pool with prefix "nope" found`)
	for _, name := range []string{"all", "default"} {
		_, errOut = mustRun(t, 1, addr, root, "node", "pool", "delete", name)
		checkContains(t, "delete "+name, errOut, "400")
		code, _, errOut = runWithStdin(t, addr, root, fmt.Sprintf(`node_pool %q { description = "mine" }`, name), "node", "pool", "apply", "-")
		if code != 1 || !strings.Contains(errOut, "400") {
			t.Errorf("apply %s: exit %d\n%s", name, code, errOut)
		}
	}
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "delete", "gpu")
	checkContains(t, "delete a pool with a node", errOut, "400")
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "delete", "dev-2")
	checkContains(t, "delete a pool with jobs", errOut, "400")
	sched := writeFile(t, dir, "sched.hcl", "node_pool \"fast\" {\n  scheduler_config {\n    scheduler_algorithm = \"spread\"\n  }\n}\n")
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "apply", sched)
	checkContains(t, "a scheduler configuration, Enterprise's", errOut, "400")

	// ACLs: node_pool write lets a token apply, delete needs delete.
	policy := writeFile(t, dir, "pools.hcl", "node_pool \"team-*\" {\n  capabilities = [\"read\", \"write\"]\n}\n")
	mustRun(t, 0, addr, root, "acl", "policy", "apply", "pools", policy)
	out, _ = mustRun(t, 0, addr, root, "acl", "token", "create", "-name", "team", "-policy", "pools", "-json")
	var tok api.ACLToken
	if err := json.Unmarshal([]byte(out), &tok); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runWithStdin(t, addr, tok.SecretID, `node_pool "team-a" {}`, "node", "pool", "apply", "-")
	if code != 0 {
		t.Errorf("apply with node_pool write: exit %d\n%s", code, errOut)
	}
	code, _, errOut = runWithStdin(t, addr, tok.SecretID, `node_pool "other" {}`, "node", "pool", "apply", "-")
	if code != 1 || !strings.Contains(errOut, "403") {
		t.Errorf("apply of a pool the policy does not name: exit %d\n%s", code, errOut)
	}
	_, errOut = mustRun(t, 1, addr, tok.SecretID, "node", "pool", "delete", "team-a")
	checkContains(t, "delete without the delete capability", errOut, "403")
	out, _ = mustRun(t, 0, addr, tok.SecretID, "node", "pool", "list")
	if want := "Name    Description\nteam-a  <none>\n"; out != want {
		t.Errorf("list with a token that reads team-*:\n%s\nwant:\n%s", out, want)
	}

	// Emptied, they go.
	mustRun(t, 0, addr, root, "job", "stop", "-purge", "-detach", "web")
	mustRun(t, 0, addr, root, "job", "stop", "-purge", "-detach", "-namespace", "prod", "api")
	for _, name := range []string{"dev-2", "example", "team-a"} {
		out, _ = mustRun(t, 0, addr, root, "node", "pool", "delete", name)
		if want := fmt.Sprintf("Successfully deleted node pool %q!\n", name); out != want {
			t.Errorf("delete: %q, want %q", out, want)
		}
	}
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "info", "example")
	checkContains(t, "info of a deleted pool", errOut, `No node pool with prefix "example" found`)
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "delete", "example")
	checkContains(t, "delete of a deleted pool", errOut, "404")

	// Bad input is refused before anything is sent.
	bad := writeFile(t, dir, "bad.hcl", "node_pool \"x\" {\n  meta {\n    a = [1]\n  }\n}\n")
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "apply", bad)
	checkContains(t, "apply of a bad file", errOut, "Error parsing the node pool specification:\n"+bad+":3:9: error: Unsuitable value type", "   3 |     a = [1]")
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "apply", filepath.Join(dir, "missing.hcl"))
	checkContains(t, "apply of a missing file", errOut, "reading the node pool specification", "no such file")
	_, errOut = mustRun(t, 1, addr, root, "node", "pool", "nodes")
	checkContains(t, "nodes without a pool", errOut, "This command takes one argument: <node-pool>")
}
