package jobspec_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
)

// withTask puts lines into a task of a job that is otherwise valid.
func withTask(locals, meta string) string {
	return locals + `
job "j" {
  group "g" {
    task "t" {
      driver = "exec"
      config { command = "x" }
      meta { m = ` + meta + ` }
    }
  }
}
`
}

// zeros is an HCL tuple of n zeros, written out.
func zeros(n int) string {
	return "[" + strings.Repeat("0,", n-1) + "0]"
}

// laughs is YAML whose every level aliases the one before ten times: ten
// levels stand for 10^10 strings in a few hundred bytes.
func laughs() string {
	var b strings.Builder
	b.WriteString(`l0: &l0 [ha,ha,ha,ha,ha,ha,ha,ha,ha,ha]\n`)
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ","))
	}
	return b.String()
}

// refused parses src, changed by mod, and returns its formatted
// diagnostics; it fails the test if a job came out.
func refused(t *testing.T, src string, mod func(*jobspec.Config)) string {
	t.Helper()
	cfg := jobspec.Config{Path: "job.hcl", Body: []byte(src)}
	if mod != nil {
		mod(&cfg)
	}
	p, diags := jobspec.Parse(cfg)
	got := jobspec.FormatDiagnostics(p.Sources, diags)
	if p.Job != nil {
		t.Fatalf("a job came out, with:\n%.600s", got)
	}
	return got
}

// TestParse_EvaluationIsBounded checks that jobspecs whose evaluation
// would build without bound (each a few lines) fail with one error,
// located where the budget ran out, having allocated a bounded amount.
// Before the budget each ran the parsing process out of memory.
func TestParse_EvaluationIsBounded(t *testing.T) {
	kib := `locals { k = format("%01024d", 0) }` + "\n"
	mib := `locals { m = format("%01048576d", 0) }` + "\n"
	cases := []struct {
		name string
		src  string
		mod  func(*jobspec.Config)
		at   string // where the error is located
	}{
		{name: "nested for over range",
			src: withTask(`locals { x = [for a in range(1024) : [for b in range(1024) : [for c in range(1024) : c]]] }`, `"x"`),
			at:  "job.hcl:1:"},
		{name: "nested for over a local's literal tuple",
			src: withTask("locals {\n  t = "+zeros(1000)+"\n  x = [for a in local.t : [for b in local.t : [for c in local.t : 1]]]\n}", `"x"`),
			at:  "job.hcl:3:"},
		{name: "nested for over literal tuples, no variables",
			src: withTask("", "length([for a in "+zeros(1000)+" : [for b in "+zeros(1000)+" : [for c in "+zeros(1000)+" : 1]]])"),
			at:  "job.hcl:7:"},
		{name: "locals doubling a string",
			src: withTask(func() string {
				var b strings.Builder
				b.WriteString("locals {\n  a0 = \"" + strings.Repeat("x", 1024) + "\"\n")
				for i := 1; i <= 40; i++ {
					fmt.Fprintf(&b, "  a%d = \"${local.a%d}${local.a%d}\"\n", i, i-1, i-1)
				}
				return b.String() + "}"
			}(), "local.a40"),
			at: "job.hcl:"},
		{name: "template for directives",
			src: withTask(kib+`locals { x = "%{for i in range(1024)}%{for j in range(1024)}${local.k}%{endfor}%{endfor}" }`, `"x"`),
			at:  "job.hcl:2:"},
		{name: "join's separator",
			src: withTask(mib, `join(local.m, [for i in range(1024) : "x"])`),
			at:  "job.hcl:8:"},
		{name: "format's width",
			src: withTask("", `format("%999999999d", 1)`),
			at:  "job.hcl:7:"},
		{name: "formatlist's width",
			src: withTask("", `join(",", formatlist("%09999999d", range(1024)))`),
			at:  "job.hcl:7:"},
		{name: "indent's spaces",
			src: withTask("", `indent(1000000000, "a\nb")`),
			at:  "job.hcl:7:"},
		{name: "replace's replacement",
			src: withTask(kib+mib, `replace(local.k, "", local.m)`),
			at:  "job.hcl:9:"},
		{name: "regex_replace's replacement",
			src: withTask(kib+mib, `regex_replace(local.m, "", local.k)`),
			at:  "job.hcl:9:"},
		{name: "bcrypt's cost",
			src: withTask("", `bcrypt("x", 30)`),
			at:  "job.hcl:7:"},
		{name: "jsondecode's copies of nested values",
			src: withTask(mib, `length(jsondecode("${join("", [for i in range(1000) : "["])}\"${local.m}\"${join("", [for i in range(1000) : "]"])}"))`),
			at:  "job.hcl:8:"},
		{name: "aliases of YAML anchors",
			src: withTask(`locals { y = "`+laughs()+`" }`, `jsonencode(yamldecode(local.y))`),
			at:  "job.hcl:7:"},
		{name: "nested dynamic blocks",
			src: `
job "j" {
  dynamic "group" {
    for_each = range(1024)
    labels   = ["g${group.key}"]
    content {
      dynamic "task" {
        for_each = range(1024)
        labels   = ["t${task.key}"]
        content {
          driver = "exec"
          config { command = "x" }
        }
      }
    }
  }
}
`,
			at: "job.hcl:"},
		{name: "nested dynamic blocks in a free-form block",
			src: `
job "j" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        dynamic "a" {
          for_each = range(1024)
          content {
            dynamic "b" {
              for_each = range(1024)
              content {}
            }
          }
        }
      }
    }
  }
}
`,
			at: "job.hcl:"},
		{name: "HCL's JSON syntax",
			src: `{"locals": {"x": "${[for a in range(1024) : [for b in range(1024) : [for c in range(1024) : c]]]}"},
"job": {"j": {"group": {"g": {"task": {"t": {"driver": "exec", "config": {"command": "x"}}}}}}}}`,
			at: "job.hcl:1:"},
		{name: "a variable's default",
			src: "variable \"v\" {\n  default = [for a in " + zeros(1000) + " : [for b in " + zeros(1000) + " : [for c in " + zeros(1000) + " : 1]]]\n}\n" + withTask("", `"x"`),
			at:  "job.hcl:2:"},
		{name: "a validation condition in HCL's JSON syntax",
			src: `{"variable": {"v": {"default": 1, "validation": {"condition": "${length([for a in range(1024) : [for b in range(1024) : [for c in range(1024) : var.v]]]) > 0}", "error_message": "Bad."}}},
"job": {"j": {"group": {"g": {"task": {"t": {"driver": "exec", "config": {"command": "x"}}}}}}}}`,
			at: "job.hcl:1:"},
		{name: "a -var value",
			src: "variable \"v\" { type = list(list(list(number))) }\n" + withTask("", `"x"`),
			mod: func(c *jobspec.Config) {
				c.Vars = []string{"v=[for a in " + zeros(1000) + " : [for b in " + zeros(1000) + " : [for c in " + zeros(1000) + " : 1]]]"}
			},
			at: "<-var v>:1:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := jobspec.Config{Path: "job.hcl", Body: []byte(c.src)}
			if c.mod != nil {
				c.mod(&cfg)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			p, diags := jobspec.Parse(cfg)
			runtime.ReadMemStats(&after)
			if p.Job != nil || len(diags) != 1 {
				t.Fatalf("want one error and no job, got %d diagnostics:\n%s", len(diags), jobspec.FormatDiagnostics(p.Sources, diags))
			}
			got := jobspec.FormatDiagnostics(p.Sources, diags)
			if !strings.HasPrefix(got, c.at) || !strings.Contains(got, "error: Jobspec evaluation too large") {
				t.Errorf("want the budget's error at %s..., got:\n%s", c.at, got)
			}
			// The budget is 64 MiB as values are counted; what the parse
			// allocates meanwhile (contexts, intermediate values) is some
			// times that, far from the gigabytes asked for.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d MiB", alloc>>20)
			if alloc > 512<<20 {
				t.Errorf("the parse allocated %d MiB", alloc>>20)
			}
		})
	}
}

// TestParse_LargeEvaluationsWithinTheBudget checks that evaluations a
// jobspec may reasonably make, generous ones, are not refused: a thousand
// values built by for expressions, a MiB-long string used twice, YAML
// with aliases, bcrypt, and 256 tasks made by dynamic blocks that each
// use a list of a thousand values.
func TestParse_LargeEvaluationsWithinTheBudget(t *testing.T) {
	job := parse(t, `
locals {
  ports  = [for i in range(1024) : { name = "p${i}", to = 8000 + i }]
  names  = join(",", [for p in local.ports : p.name])
  grid   = flatten([for a in range(32) : [for b in range(32) : "${a}-${b}"]])
  blob   = format("%01048576d", 0)
  twice  = "${local.blob}${local.blob}"
  config = yamldecode("a: &a [1, 2, 3]\nb: [*a, *a]\n")
  again  = jsondecode(jsonencode(local.ports))
}
job "j" {
  meta {
    blob = strlen(local.twice)
    hash = bcrypt("secret", 4)
  }
  dynamic "group" {
    for_each = range(32)
    labels   = ["g${group.key}"]
    content {
      dynamic "task" {
        for_each = range(8)
        labels   = ["t${task.key}"]
        content {
          driver = "exec"
          config { command = "x" }
          meta {
            names = local.names
            grid  = length(local.grid)
            conf  = jsonencode(local.config)
            port  = local.again[group.key * 8 + task.key].to
          }
        }
      }
    }
  }
}
`)
	if n := len(job.TaskGroups); n != 32 {
		t.Fatalf("%d groups", n)
	}
	meta := job.TaskGroups[31].Tasks[7].Meta
	if job.Meta["blob"] != "2097152" || meta["grid"] != "1024" || !strings.HasSuffix(meta["names"], ",p1023") ||
		meta["conf"] != `{"a":[1,2,3],"b":[[1,2,3],[1,2,3]]}` || meta["port"] != "8255" {
		t.Errorf("job meta %v, task meta %v", job.Meta, meta)
	}
}

// TestParse_LocalsAreEvaluatedOnce: each local is evaluated once, after
// those it refers to. Locals were evaluated again, all those pending, until
// none progressed: a chain of 3,000 written in reverse order passed the
// budget, and a few MiB of them took minutes.
func TestParse_LocalsAreEvaluatedOnce(t *testing.T) {
	var chain strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&chain, "  l%d = local.l%d + 1\n", i, i+1)
	}
	job := parse(t, withTask("locals {\n"+chain.String()+`  l3000 = 0
  by_key = local["l0"] * 2
  names  = join(",", sort([for k, v in local : k if v == 3000]))
}`, `"${local.l0}-${local.by_key}-${local.names}"`))
	if got := job.TaskGroups[0].Tasks[0].Meta["m"]; got != "3000-6000-l0" {
		t.Fatalf("meta m = %q", got)
	}

	got := parseErr(t, withTask("locals {\n  a = local.b\n  b = local.a\n}", "local.a"))
	if !strings.HasPrefix(got, "job.hcl:2:") || !strings.Contains(got, "job.hcl:3:") ||
		!strings.Contains(got, `does not have an attribute named "b"`) {
		t.Errorf("locals in a cycle: got:\n%s", got)
	}
}
