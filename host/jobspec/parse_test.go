package jobspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestParse_Examples(t *testing.T) {
	paths, _ := filepath.Glob("../../examples/jobs/*.hcl")
	if len(paths) == 0 {
		t.Fatal("no example jobspecs found")
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			job, diags := Parse(p, src)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			Canonicalize(job)
			if err := Validate(job); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParse_Web(t *testing.T) {
	src := `
job "web" {
  datacenters = ["dc1", "dc2"]
  type        = "service"
  priority    = 60
  scheduler   = "zones"
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    attribute = "${attr.os.version}"
    version   = ">= 12"
  }
  meta { team = "frontend" }
  group "frontend" {
    count = 3
    constraint {
      attribute = "${meta.rack}"
      operator  = "regexp"
      value     = "r[0-3]"
    }
    task "nginx" {
      driver = "docker"
      config {
        image = "nginx:1.27"
        args  = ["-c", "${NOMAD_TASK_DIR}/nginx.conf"]
      }
      env { PORT = 8080 }
      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}`
	job, diags := Parse("web.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if job.ID != "web" || job.Type != "service" || job.Priority != 60 || job.Scheduler != "zones" {
		t.Fatalf("job header: %+v", job)
	}
	if got := job.Constraints[0]; *got != (sdk.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}) {
		t.Errorf("constraint 0 = %+v", got)
	}
	if got := job.Constraints[1]; got.Operand != "version" || got.RTarget != ">= 12" {
		t.Errorf("version shorthand = %+v", got)
	}
	tg := job.TaskGroups[0]
	if tg.Count != 3 || tg.Constraints[0].Operand != "regexp" {
		t.Errorf("group = %+v", tg)
	}
	task := tg.Tasks[0]
	if task.Driver != "docker" || task.Resources.CPU != 500 || task.Resources.MemoryMB != 256 {
		t.Errorf("task = %+v", task)
	}
	if args := task.Config["args"].([]any); args[1] != "${NOMAD_TASK_DIR}/nginx.conf" {
		t.Errorf("runtime variable not kept as written: %v", args)
	}
	if task.Env["PORT"] != "8080" || job.Meta["team"] != "frontend" {
		t.Errorf("env/meta = %v %v", task.Env, job.Meta)
	}
}

func TestParse_DiagnosticsHaveLocations(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"syntax", "job \"x\" {\n  group \"g\" {\n", "x.hcl:2"},
		{"unknown attribute", "job \"x\" {\n  colour = \"red\"\n}\n", "x.hcl:2,3-9: Unsupported argument"},
		{"wrong type", "job \"x\" {\n  group \"g\" {\n    count = \"three\"\n  }\n}\n", "x.hcl:3,14-19"},
		{"no job", "# nothing\n", "Missing job block"},
		{"bad operator", "job \"x\" {\n  constraint {\n    operator = \"~=\"\n  }\n}\n", "x.hcl:2,3-13: Unknown constraint operator"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Parse("x.hcl", []byte(tc.src))
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			if !strings.Contains(diags.Error(), tc.want) {
				t.Fatalf("diagnostics %q do not contain %q", diags.Error(), tc.want)
			}
		})
	}
}

func TestValidate_Messages(t *testing.T) {
	job := &sdk.Job{ID: "x", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: -1, Tasks: []*sdk.Task{{Name: "t"}}}}}
	Canonicalize(job)
	err := Validate(job)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"count must not be negative", "missing driver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %q", want, err)
		}
	}
}
