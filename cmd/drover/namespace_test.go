package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
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
