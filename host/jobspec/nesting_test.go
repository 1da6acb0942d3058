package jobspec_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
)

// TestParse_DeepNestingIsRefused checks that syntax nested deep enough to
// overflow the parser's stack (a fatal error no recover catches: before
// the check each of these took the process down) is refused with a
// located error instead, in every place a jobspec's parse reads HCL.
// Each nests 200,000 levels, or, where that would take the source past
// the 1 MiB a jobspec may be (size.go), 40,000: forty times the limit.
func TestParse_DeepNestingIsRefused(t *testing.T) {
	const n, m = 200000, 40000
	job := "\njob \"j\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n    }\n  }\n}\n"
	jsonJob := `"job": {"j": {"group": {"g": {"task": {"t": {"driver": "exec"}}}}}}`
	cases := []struct {
		name, src string
		mod       func(*jobspec.Config)
		want      string
	}{
		{name: "brackets", src: "locals { x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + " }" + job,
			want: "job.hcl:1:"},
		{name: "negations", src: "locals { x = " + strings.Repeat("!", n) + "true }" + job, want: "job.hcl:1:"},
		{name: "unary minus", src: "locals { x = " + strings.Repeat("- ", n) + "1 }" + job, want: "job.hcl:1:"},
		{name: "a sum", src: "locals { x = " + strings.Repeat("1+", n) + "1 }" + job, want: "job.hcl:1:"},
		{name: "conditionals", src: "locals { x = " + strings.Repeat("true ? 1 : ", m) + "1 }" + job, want: "job.hcl:1:"},
		{name: "templates", src: "locals { x = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n) + " }" + job,
			want: "job.hcl:1:"},
		{name: "JSON syntax arrays", src: `{"locals": {"x": ` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}, " + jsonJob + "}",
			want: "job.hcl:1:"},
		{name: "a template in a JSON string", src: `{"locals": {"x": "${` + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + `}"}, ` + jsonJob + "}",
			want: "job.hcl:1:"},
		{name: "a type in a JSON string", src: `{"variable": {"v": {"type": "` + strings.Repeat("list(", m) + "string" + strings.Repeat(")", m) + `"}}, ` + jsonJob + "}",
			want: "job.hcl:1:"},
		{name: "new lines within parentheses", src: "locals { x = (1" + strings.Repeat("\n+ 1", n) + ") }" + job,
			want: "job.hcl:1000:"},
		{name: "new lines in a for expression's braces",
			src: "locals { x = {for k in [1] : k => 1" + strings.Repeat("\n+ 1", n) + "} }" + job, want: "job.hcl:"},
		{name: "an index chain", src: "locals { x = [0]" + strings.Repeat("[x]", n) + " }" + job, want: "job.hcl:1:"},
		{name: "a splat chain", src: "locals { x = [0]" + strings.Repeat("[*]", n) + " }" + job, want: "job.hcl:1:"},
		{name: "steps after indexes", src: "locals { x = [0]" + strings.Repeat("[x].a", n) + " }" + job,
			want: "job.hcl:1:"},
		{name: "if directives", src: `locals { x = "` + strings.Repeat("%{if true}", m) + strings.Repeat("%{endif}", m) + `" }` + job,
			want: "job.hcl:1:"},
		{name: "for directives in a heredoc",
			src:  "locals {\n  x = <<EOT\n" + strings.Repeat("%{for a in [1]}", m) + strings.Repeat("%{endfor}", m) + "\nEOT\n}" + job,
			want: "job.hcl:3:"},
		{name: "a type in a JSON string, across new lines",
			src: `{"variable": {"v": {"type": "` + strings.Repeat(`!\n`, n) + `string"}}, ` + jsonJob + "}", want: "job.hcl:1:"},
		{name: "a -var value across new lines", src: "variable \"v\" {\n  type = list(number)\n  default = []\n}" + job,
			mod:  func(c *jobspec.Config) { c.Vars = []string{"v=[1" + strings.Repeat("\n+1", n) + "]"} },
			want: "<-var v>:"},
		{name: "variables sent with the job", src: "variable \"v\" {\n  default = 1\n}" + job,
			mod:  func(c *jobspec.Config) { c.VarContent = "v = " + strings.Repeat("[", n) + strings.Repeat("]", n) },
			want: "<variables>:1:"},
		{name: "a -var value", src: "variable \"v\" {\n  type = list(list(number))\n  default = []\n}" + job,
			mod:  func(c *jobspec.Config) { c.Vars = []string{"v=" + strings.Repeat("[", n) + strings.Repeat("]", n)} },
			want: "<-var v>:1:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := refused(t, c.src, c.mod); !strings.HasPrefix(got, c.want) || !strings.Contains(got, "error: Nesting too deep") {
				t.Fatalf("want the nesting error at %s..., got:\n%.600s", c.want, got)
			}
		})
	}
}

// TestParse_DeepYAMLIsRefused: yamldecode of a document nested past
// yaml's 10,000 levels fails the call (go-cty-yaml's decoder would
// overflow its stack); a string of a million "[" is built within the
// evaluation budget.
func TestParse_DeepYAMLIsRefused(t *testing.T) {
	got := parseErr(t, withTask(`locals { b = "`+strings.Repeat("[", 1024)+`" }`,
		`length(yamldecode(join("", [for i in range(1024) : local.b])))`))
	if !strings.HasPrefix(got, "job.hcl:7:") || !strings.Contains(got, "the document nests too deep") {
		t.Fatalf("got:\n%.600s", got)
	}
}

// TestParse_DeepJSONIsRefused: jsondecode of a document nested past
// encoding/json's 10,000 levels fails the call; before, 8 MiB of "[",
// built within the evaluation budget, overflowed go-cty's decoder's stack.
// One nested a thousand levels decodes.
func TestParse_DeepJSONIsRefused(t *testing.T) {
	got := parseErr(t, withTask("", `length(jsondecode(replace(format("%08388608d", 0), "0", "[")))`))
	if !strings.HasPrefix(got, "job.hcl:7:") || !strings.Contains(got, "the document nests more than 10000 levels deep") {
		t.Fatalf("got:\n%.600s", got)
	}
	job := parse(t, withTask("", `length(flatten(jsondecode("`+strings.Repeat("[", 1000)+`\"[{\"`+strings.Repeat("]", 1000)+`")))`))
	if got := job.TaskGroups[0].Tasks[0].Meta["m"]; got != "1" {
		t.Fatalf("meta m = %q", got)
	}
}

// TestParse_NestingWithinTheLimit: a jobspec nested a few hundred levels,
// in every way the check counts, parses.
func TestParse_NestingWithinTheLimit(t *testing.T) {
	job := parse(t, withTask(`locals {
  deep  = `+strings.Repeat("[", 300)+"1"+strings.Repeat("]", 300)+`
  sum   = `+strings.Repeat("1 + ", 300)+`1
  cond  = `+strings.Repeat("true ? ", 100)+"2"+strings.Repeat(" : 0", 100)+`
  zero  = 0
  index = local.deep`+strings.Repeat("[local.zero]", 299)+`[0]
  ifs   = "`+strings.Repeat("%{if true}", 100)+"y"+strings.Repeat("%{endif}", 100)+`"
}`, `"${local.sum}-${local.cond}-${length(flatten(local.deep))}-${local.index}-${local.ifs}"`))
	if got := job.TaskGroups[0].Tasks[0].Meta["m"]; got != "301-2-1-1-y" {
		t.Fatalf("meta m = %q", got)
	}
}

// TestParse_LongBodiesAreNotNested: elements of a body, each a line, do
// not add up, however many: neither lines that end in a comment (whose
// token holds the new line) nor the lines of a string in HCL's JSON
// syntax, which hcl never reads as an expression.
func TestParse_LongBodiesAreNotNested(t *testing.T) {
	const n = 3000
	var locals strings.Builder
	for i := range n {
		fmt.Fprintf(&locals, "  l%d = -%d # minus %d\n", i, i, i)
	}
	parse(t, withTask("locals {\n"+locals.String()+"}", `"${local.l2999}"`))

	script := strings.Repeat("exec /usr/local/bin/x --flag -v a+b\n", n)
	src, err := json.Marshal(map[string]any{"job": map[string]any{"j": map[string]any{"group": map[string]any{"g": map[string]any{
		"task": map[string]any{"t": map[string]any{"driver": "exec", "config": map[string]any{"command": "x"},
			"template": map[string]any{"data": script, "destination": "local/run.sh"}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	p, diags := jobspec.Parse(jobspec.Config{Path: "job.json", Body: src})
	if diags.HasErrors() {
		t.Fatalf("%.600s", jobspec.FormatDiagnostics(p.Sources, diags))
	}
}
