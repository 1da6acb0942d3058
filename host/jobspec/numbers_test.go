package jobspec_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
)

// TestParse_NumbersAreBounded checks that a number of more than 2,000
// digits written out in full, or a string read as one, is refused with a
// located error wherever it is written, computed or read. Before, writing
// out 1e10000000 took 16 seconds (1e600000000, hours) and reading a string
// of a million digits as a number two; these are just past the bound, and
// fast either way.
func TestParse_NumbersAreBounded(t *testing.T) {
	digits := strings.Repeat("9", 2001)
	cases := []struct {
		name, src string
		mod       func(*jobspec.Config)
		at, want  string
	}{
		{name: "a literal's exponent", src: withTask("", `"${1e2001}"`), at: "job.hcl:7:"},
		{name: "a literal's digits", src: withTask("", digits), at: "job.hcl:7:"},
		{name: "a negative exponent", src: withTask("", `"${1e-2001}"`), at: "job.hcl:7:"},
		{name: "a string's digits as an index", src: withTask("", `[0]["`+digits+`"]`), at: "job.hcl:7:"},
		{name: "squares of locals", src: withTask("locals {\n  a = 1e300\n  b = local.a * local.a\n  c = local.b * local.b\n  d = local.c * local.c\n}", `"${local.d}"`),
			at: "job.hcl:5:"},
		{name: "a string read by an operator", src: withTask("", `"1e2001" * 1`), at: "job.hcl:7:"},
		{name: "a string read by format", src: withTask("", `format("%d", "1e2001")`), at: "job.hcl:7:"},
		{name: "a computed key", src: withTask("", `jsonencode({(jsondecode("[1e2001]")[0]) = 1})`), at: "job.hcl:7:"},
		{name: "a computed index", src: withTask("", `{a = 1}[jsondecode("[1e2001]")[0]]`), at: "job.hcl:7:"},
		{name: "parseint", src: withTask("", `parseint(replace(format("%01300d", 0), "0", "z"), 36)`), at: "job.hcl:7:",
			want: "the number would have more than 2000 digits"},
		{name: "jsondecode", src: withTask("", `jsondecode("[1${format("%02001d", 0)}]")`), at: "job.hcl:7:",
			want: "a number has more than 2000 digits"},
		{name: "yamldecode", src: withTask("", `yamldecode("[1${format("%02001d", 0)}]")`), at: "job.hcl:7:",
			want: "a number has more than 2000 digits"},
		{name: "HCL's JSON syntax",
			src: `{"job": {"j": {"group": {"g": {"task": {"t": {"driver": "exec", "meta": {"m": 1e2001}}}}}}}}`, at: "job.hcl:1:"},
		{name: "variables sent with the job", src: "variable \"v\" {\n  type = number\n  default = 1\n}\n" + withTask("", "var.v"),
			mod: func(c *jobspec.Config) { c.VarContent = `v = "${"` + digits[:1000] + `"}${"` + digits[:1001] + `"}"` },
			at:  "<variables>:1:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := refused(t, c.src, c.mod)
			want := "error: Number too large"
			if c.want != "" {
				want = c.want
			}
			if !strings.HasPrefix(got, c.at) || !strings.Contains(got, want) {
				t.Fatalf("want %q at %s..., got:\n%.600s", want, c.at, got)
			}
		})
	}
}

// TestParse_NumbersAreRefusedBeforeTheyAreRead: a string of a million
// digits is refused before an operator reads it as a number, which
// allocated 2 GiB and took 2 seconds.
func TestParse_NumbersAreRefusedBeforeTheyAreRead(t *testing.T) {
	million := `join("", [for i in range(1000) : "` + strings.Repeat("9", 1000) + `"])`
	for _, expr := range []string{"-" + million, million + " * 1", `{a = 1}[` + million + `]`} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := parseErr(t, withTask("", expr))
		runtime.ReadMemStats(&after)
		if !strings.HasPrefix(got, "job.hcl:7:") || !strings.Contains(got, "error: Number too large") {
			t.Fatalf("%.40s: got:\n%.600s", expr, got)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Errorf("%.40s: the parse allocated %d MiB", expr, alloc>>20)
		}
	}
}

// TestParse_NumbersWithinTheBound: numbers of up to 2,000 digits, and
// strings of digits padded with zeros however long, parse and convert.
func TestParse_NumbersWithinTheBound(t *testing.T) {
	job := parse(t, withTask(`locals {
  big   = 1e1999
  tiny  = 1e-1999
  long  = "`+strings.Repeat("7", 2000)+`"
  blob  = format("%01048576d", 1)
  n     = parseint("ff", 16) + jsondecode("[1e300]")[0] / 1e300
}`, `"${strlen("${local.big}")}-${local.tiny > 0}-${local.long + 0 > 0}-${local.blob + 0}-${local.n}"`))
	if got := job.TaskGroups[0].Tasks[0].Meta["m"]; got != "2000-true-true-1-256" {
		t.Fatalf("meta m = %q", got)
	}
}
