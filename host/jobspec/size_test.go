package jobspec_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
)

// TestParse_TooMuchForHCLIsRefused: a jobspec that would cost hcl's
// lexer and parser gigabytes (size.go) is refused with one located error
// saying which limit it passed and by how much, before hcl parses it.
func TestParse_TooMuchForHCLIsRefused(t *testing.T) {
	job := "\njob \"j\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n    }\n  }\n}\n"
	jsonJob := `"job": {"j": {"group": {"g": {"task": {"t": {"driver": "exec"}}}}}}`
	cases := []struct {
		name, src string
		mod       func(*jobspec.Config)
		// want: the location and the message's start; more: in the detail.
		want, more string
	}{
		{name: "a source past 1 MiB", src: "# " + strings.Repeat("x", 1<<20) + job,
			want: "job.hcl:1:1048577: error: Jobspec too large", more: "1,048,652 bytes, 76 bytes past the 1 MiB"},
		{name: "past 1 MiB on a later line", src: strings.Repeat("# comment\n", 1<<17) + job,
			want: "job.hcl:104858:7: error: Jobspec too large", more: "1,310,794 bytes, 262,218 bytes past"},
		{name: "variables sent with the job", src: "# " + strings.Repeat("x", 600<<10) + "\n" + job,
			mod:  func(c *jobspec.Config) { c.VarContent = "# " + strings.Repeat("x", 600<<10) },
			want: "<variables>:1:", more: "past the 1 MiB a jobspec may be (its variable files included)"},
		{name: "HCL's JSON syntax past 1 MiB", src: `{"locals": {"x": "` + strings.Repeat("x", 1<<20) + `"}, ` + jsonJob + "}",
			want: "job.hcl:1:", more: "bytes past the 1 MiB"},
		{name: "too many tokens", src: "locals { x = [" + strings.Repeat("1,", 200000) + "1] }" + job,
			want: "job.hcl:1:262154: error: Jobspec too long", more: "400,040 tokens, 137,896 tokens past the 262,144 tokens"},
		{name: "too many attributes", src: strings.Repeat("a=1\n", 100000) + job,
			want: "job.hcl:65537:1: error: Jobspec too long", more: "tokens past the 262,144"},
		{name: "too many errors", src: strings.Repeat("@", 300000) + job,
			want: "job.hcl:1:262145: error: Jobspec too long", more: "tokens past the 262,144"},
		{name: "too many JSON tokens", src: `{"locals": {"x": [` + strings.Repeat("1,", 300000) + "1]}, " + jsonJob + "}",
			want: "job.hcl:1:", more: "tokens past the 262,144 tokens"},
		{name: "a long heredoc", src: "locals {\n  x = <<EOT\n" + strings.Repeat("a line of a template, of forty bytes...\n", 20000) + "EOT\n}" + job,
			want: "job.hcl:", more: "MiB past the 256 MiB they may"},
		{name: "empty heredoc lines", src: "locals {\n  x = <<EOT\n" + strings.Repeat("\n", 60000) + "EOT\n}" + job,
			want: "job.hcl:", more: "past the 256 MiB they may"},
		{name: "escapes in a quoted string", src: `locals { x = "` + strings.Repeat("$${", 60000) + `" }` + job,
			want: "job.hcl:1:", more: "past the 256 MiB they may"},
		{name: "lines of a JSON string", src: `{"locals": {"x": "` + strings.Repeat(`x\n`, 60000) + `"}, ` + jsonJob + "}",
			want: "job.hcl:1:18: error: Template too long", more: "past the 256 MiB they may"},
		{name: "templates adding up", src: "locals {\n" + strings.Repeat("  x = <<EOT\n"+strings.Repeat("a line of a template, of forty bytes...\n", 1250)+"EOT\n", 20) + "}" + job,
			want: "job.hcl:", more: "past the 256 MiB they may"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := refused(t, c.src, c.mod)
			if !strings.HasPrefix(got, c.want) || !strings.Contains(got, c.more) || strings.Count(got, ": error: ") != 1 {
				t.Fatalf("want one error at %s... saying %q, got:\n%.600s", c.want, c.more, got)
			}
		})
	}
}

// TestParse_LargeJobspecsParse: jobspecs far larger than any in Nomad's
// source or the examples parse within the limits: a hundred groups of ten
// tasks (143 KB, 59,009 tokens), with a 50 KB template in each of ten
// tasks (643 KB in all), and variables sent with it.
func TestParse_LargeJobspecsParse(t *testing.T) {
	tmpl := strings.Repeat("{{ range service \"web\" }}server {{ .Address }}:{{ .Port }};{{ end }} and some text\n", 600)
	var b strings.Builder
	b.WriteString("variable \"image\" {\n  type = string\n}\njob \"j\" {\n")
	for g := range 100 {
		fmt.Fprintf(&b, "group \"g%d\" {\n network {\n port \"http\" {}\n }\n", g)
		for k := range 10 {
			fmt.Fprintf(&b, "task \"t%d\" {\n driver = \"docker\"\n config {\n image = var.image\n ports = [\"http\"]\n }\n"+
				" resources {\n cpu = 100\n memory = 64\n }\n env {\n A = \"b\"\n }\n", k)
			if g%10 == 0 && k == 0 {
				fmt.Fprintf(&b, " template {\n destination = \"local/x\"\n data = <<EOT\n%sEOT\n }\n", tmpl)
			}
			b.WriteString("}\n")
		}
		b.WriteString("}\n")
	}
	b.WriteString("}\n")
	src := b.String()
	if len(src) < 600<<10 {
		t.Fatalf("only %d bytes", len(src))
	}
	p, diags := jobspec.Parse(jobspec.Config{Path: "job.hcl", Body: []byte(src), VarContent: `image = "x:1"`})
	if diags.HasErrors() {
		t.Fatalf("%.2000s", jobspec.FormatDiagnostics(p.Sources, diags))
	}
	if n := len(p.Job.TaskGroups); n != 100 {
		t.Fatalf("%d groups", n)
	}
}
