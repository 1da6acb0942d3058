package main

import (
	"reflect"
	"testing"

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
