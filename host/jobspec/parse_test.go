package jobspec_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// parse parses src and converts it, failing the test on any problem.
func parse(t *testing.T, src string, mod ...func(*jobspec.Config)) *sdk.Job {
	t.Helper()
	cfg := jobspec.Config{Path: "job.hcl", Body: []byte(src)}
	for _, m := range mod {
		m(&cfg)
	}
	p, diags := jobspec.Parse(cfg)
	if diags.HasErrors() {
		t.Fatalf("parse:\n%s", jobspec.FormatDiagnostics(p.Sources, diags))
	}
	job, err := p.Job.SDK()
	if err != nil {
		t.Fatal(err)
	}
	if err := jobspec.Validate(job); err != nil {
		t.Fatalf("validate:\n%s", jobspec.FormatDiagnostics(p.Sources, p.Locate(err)))
	}
	return job
}

// parseErr parses src and returns the formatted diagnostics of the parse or
// of validation; it fails the test when there are none.
func parseErr(t *testing.T, src string, mod ...func(*jobspec.Config)) string {
	t.Helper()
	cfg := jobspec.Config{Path: "job.hcl", Body: []byte(src)}
	for _, m := range mod {
		m(&cfg)
	}
	p, diags := jobspec.Parse(cfg)
	if diags.HasErrors() {
		return jobspec.FormatDiagnostics(p.Sources, diags)
	}
	job, err := p.Job.SDK()
	if err == nil {
		err = jobspec.Validate(job)
	}
	if err == nil {
		t.Fatal("no error")
	}
	return jobspec.FormatDiagnostics(p.Sources, p.Locate(err))
}

func TestParse_ExampleJobspecs(t *testing.T) {
	paths, _ := filepath.Glob("../../examples/jobs/*.hcl")
	more, _ := filepath.Glob("../../cmd/drover/assets/*.hcl")
	paths = append(paths, more...)
	if len(paths) < 3 {
		t.Fatalf("found only %d example jobspecs", len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			parse(t, string(src))
		})
	}
}

func TestParse_SchedulerBlocks(t *testing.T) {
	job := parse(t, `
job "web" {
  datacenters = ["dc1", "dc2"]
  type        = "service"
  priority    = 60
  scheduler   = "zones"
  node_pool   = "prod"
  namespace   = "team"
  region      = "eu"
  all_at_once = true

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    attribute = "${attr.os.version}"
    version   = ">= 12"
  }
  constraint {
    distinct_hosts = true
  }
  constraint {
    distinct_property = "${meta.rack}"
    value             = "2"
  }
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = -40
  }
  spread {
    attribute = "${meta.rack}"
    weight    = 80
    target "r1" { percent = 60 }
    target "r2" { percent = 40 }
  }
  update {
    max_parallel      = 2
    canary            = 1
    min_healthy_time  = "15s"
    healthy_deadline  = "2m"
    progress_deadline = "9m"
    auto_revert       = true
  }
  migrate {
    max_parallel = 3
  }
  reschedule {
    delay          = "10s"
    delay_function = "fibonacci"
    max_delay      = "5m"
    unlimited      = true
  }
  meta { team = "frontend" }

  group "frontend" {
    count = 3
    affinity {
      attribute = "${meta.zone}"
      set_contains_any = "a,b"
      weight    = 30
    }
    restart {
      attempts = 5
      interval = "10m"
      delay    = "20s"
      mode     = "delay"
    }
    ephemeral_disk {
      size   = 500
      sticky = true
    }
    network {
      mode = "bridge"
      port "http" { to = 8080 }
      port "admin" { static = 9000 }
    }
    disconnect {
      lost_after = "1h"
      replace    = false
      reconcile  = "keep_original"
    }
    scaling {
      min = 1
      max = 10
      policy {
        cooldown = "1m"
      }
    }
    task "nginx" {
      driver = "docker"
      config {
        image = "nginx:1.27"
        args  = ["-c", "${NOMAD_TASK_DIR}/nginx.conf"]
      }
      env { PORT = 8080 }
      resources {
        cpu        = 500
        memory     = 256
        memory_max = 512
        device "nvidia/gpu" {
          count = 2
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "2 GiB"
          }
        }
      }
    }
  }
}`)
	if job.ID != "web" || job.Type != "service" || job.Priority != 60 || job.Scheduler != "zones" ||
		job.NodePool != "prod" || job.Namespace != "team" || job.Region != "eu" || !job.AllAtOnce {
		t.Fatalf("job header: %+v", job)
	}
	want := []sdk.Constraint{
		{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="},
		{LTarget: "${attr.os.version}", RTarget: ">= 12", Operand: "version"},
		{RTarget: "true", Operand: "distinct_hosts"},
		{LTarget: "${meta.rack}", RTarget: "2", Operand: "distinct_property"},
	}
	for i, w := range want {
		if *job.Constraints[i] != w {
			t.Errorf("constraint %d = %+v, want %+v", i, job.Constraints[i], w)
		}
	}
	if a := job.Affinities[0]; a.Weight != -40 || a.LTarget != "${node.datacenter}" {
		t.Errorf("affinity = %+v", a)
	}
	if s := job.Spreads[0]; s.Weight != 80 || len(s.SpreadTarget) != 2 || s.SpreadTarget[0].Value != "r1" || s.SpreadTarget[0].Percent != 60 {
		t.Errorf("spread = %+v", s)
	}
	if job.Update.MaxParallel != 2 || job.Update.Stagger != 30*time.Second {
		t.Errorf("job update keeps stagger and max_parallel only: %+v", job.Update)
	}
	tg := job.TaskGroups[0]
	if u := tg.Update; u == nil || u.MaxParallel != 2 || u.Canary != 1 || u.MinHealthyTime != 15*time.Second ||
		u.HealthyDeadline != 2*time.Minute || u.ProgressDeadline != 9*time.Minute || !u.AutoRevert || u.HealthCheck != "checks" {
		t.Errorf("group update inherits the job's: %+v", tg.Update)
	}
	if m := tg.Migrate; m == nil || m.MaxParallel != 3 || m.HealthCheck != "checks" {
		t.Errorf("group migrate inherits the job's: %+v", tg.Migrate)
	}
	if r := tg.ReschedulePolicy; r == nil || r.DelayFunction != "fibonacci" || r.Delay != 10*time.Second || !r.Unlimited {
		t.Errorf("group reschedule inherits the job's: %+v", tg.ReschedulePolicy)
	}
	if r := tg.RestartPolicy; r.Attempts != 5 || r.Mode != "delay" || r.Interval != 10*time.Minute {
		t.Errorf("restart = %+v", r)
	}
	if tg.EphemeralDisk.SizeMB != 500 || !tg.EphemeralDisk.Sticky {
		t.Errorf("ephemeral disk = %+v", tg.EphemeralDisk)
	}
	n := tg.Networks[0]
	if n.Mode != "bridge" || len(n.DynamicPorts) != 1 || n.DynamicPorts[0].Label != "http" || n.DynamicPorts[0].To != 8080 ||
		len(n.ReservedPorts) != 1 || n.ReservedPorts[0].Value != 9000 || n.ReservedPorts[0].HostNetwork != "default" {
		t.Errorf("ports: a static port is reserved, the others dynamic: %+v", n)
	}
	if d := tg.Disconnect; d == nil || d.LostAfter != time.Hour || d.Replace == nil || *d.Replace || d.Reconcile != "keep_original" {
		t.Errorf("disconnect = %+v", d)
	}
	if s := tg.Scaling; s == nil || s.Min != 1 || s.Max != 10 || s.Type != "horizontal" || !s.Enabled ||
		s.Target["Group"] != "frontend" || s.Policy["cooldown"] != "1m" {
		t.Errorf("scaling = %+v", s)
	}
	task := tg.Tasks[0]
	if task.Driver != "docker" || task.Resources.CPU != 500 || task.Resources.MemoryMB != 256 || task.Resources.MemoryMaxMB != 512 {
		t.Errorf("task = %+v", task)
	}
	if args := task.Config["args"].([]any); args[1] != "${NOMAD_TASK_DIR}/nginx.conf" {
		t.Errorf("runtime variable not kept as written: %v", args)
	}
	if task.Env["PORT"] != "8080" || job.Meta["team"] != "frontend" {
		t.Errorf("env/meta = %v %v", task.Env, job.Meta)
	}
	dev := task.Resources.Devices[0]
	if dev.Name != "nvidia/gpu" || dev.Count != 2 || dev.Constraints[0].RTarget != "2 GiB" {
		t.Errorf("device = %+v", dev)
	}
	if task.KillTimeout != 5*time.Second || task.LogConfig["MaxFiles"] != int64(10) || task.RestartPolicy.Attempts != 5 {
		t.Errorf("task defaults: kill %s, logs %v, restart %+v", task.KillTimeout, task.LogConfig, task.RestartPolicy)
	}
}

// TestParse_OnePortOnTwoHostNetworks: a group may ask for one static port
// on two host networks, as in Nomad: the scheduler counts ports per
// address, so the two bind two addresses. Twice on one host network, or
// twice in tasks' networks (bound on the node's address whatever host
// network they name), it is still refused.
func TestParse_OnePortOnTwoHostNetworks(t *testing.T) {
	job := parse(t, `
job "web" {
  group "frontend" {
    network {
      port "http" {
        static = 80
      }
      port "public" {
        static       = 80
        host_network = "public"
      }
    }
    task "nginx" {
      driver = "docker"
    }
  }
}`)
	ports := job.TaskGroups[0].Networks[0].ReservedPorts
	if len(ports) != 2 || ports[0].Value != 80 || ports[0].HostNetwork != "default" || ports[1].Value != 80 || ports[1].HostNetwork != "public" {
		t.Fatalf("ports %+v, want 80 on default and on public", ports)
	}
	for name, tc := range map[string]struct{ src, want string }{
		"twice on one host network": {`
job "web" {
  group "frontend" {
    network {
      port "a" {
        static       = 80
        host_network = "public"
      }
      port "b" {
        static       = 80
        host_network = "public"
      }
    }
    task "nginx" {
      driver = "docker"
    }
  }
}`, `port "b": static: port 80 is already reserved by the group network port "a"`},
		"a task's port on another host network": {`
job "web" {
  group "frontend" {
    network {
      port "http" {
        static = 80
      }
    }
    task "nginx" {
      driver = "docker"
      resources {
        network {
          port "public" {
            static       = 80
            host_network = "public"
          }
        }
      }
    }
  }
}`, `port 80 is already reserved by the group network port "http", on host network "default": a task's network binds its ports on the node's default address`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := parseErr(t, tc.src); !strings.Contains(got, tc.want) {
				t.Fatalf("got:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParse_DefaultsPerJobType(t *testing.T) {
	cases := []struct {
		typ              string
		restartAttempts  int
		reschedule       bool
		rescheduleDelayF string
		update           bool
		migrate          bool
	}{
		{"service", 2, true, "exponential", true, true},
		{"batch", 3, true, "constant", false, false},
		{"system", 2, false, "", false, false},
		{"sysbatch", 3, false, "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			job := parse(t, `job "j" {
  type = "`+tc.typ+`"
  group "g" {
    task "t" { driver = "exec" }
  }
}`)
			if job.Datacenters[0] != "*" || job.Namespace != "default" || job.Region != "global" || job.NodePool != "default" || job.Priority != 50 {
				t.Errorf("job defaults: %+v", job)
			}
			tg := job.TaskGroups[0]
			if tg.Count != 1 || tg.EphemeralDisk.SizeMB != 300 {
				t.Errorf("group defaults: count %d, disk %+v", tg.Count, tg.EphemeralDisk)
			}
			if tg.RestartPolicy.Attempts != tc.restartAttempts {
				t.Errorf("restart attempts = %d, want %d", tg.RestartPolicy.Attempts, tc.restartAttempts)
			}
			if (tg.ReschedulePolicy != nil) != tc.reschedule || tc.reschedule && tg.ReschedulePolicy.DelayFunction != tc.rescheduleDelayF {
				t.Errorf("reschedule = %+v", tg.ReschedulePolicy)
			}
			if (tg.Update != nil) != tc.update {
				t.Errorf("update = %+v", tg.Update)
			}
			if (tg.Migrate != nil) != tc.migrate {
				t.Errorf("migrate = %+v", tg.Migrate)
			}
			r := tg.Tasks[0].Resources
			if r.CPU != 100 || r.MemoryMB != 300 {
				t.Errorf("default resources = %+v", r)
			}
		})
	}
}

func TestParse_SystemJobWithUpdateBlockRollsOut(t *testing.T) {
	job := parse(t, `job "s" {
  type = "system"
  update { stagger = "20s" }
  group "g" {
    task "t" { driver = "exec" }
  }
}`)
	if u := job.TaskGroups[0].Update; u == nil || u.Stagger != 20*time.Second || u.MaxParallel != 1 {
		t.Fatalf("a system job's update block applies: %+v", u)
	}
}

func TestParse_Variables(t *testing.T) {
	dir := t.TempDir()
	varFile := filepath.Join(dir, "prod.vars.hcl")
	if err := os.WriteFile(varFile, []byte(`count = 4`+"\n"+`dcs = ["a", "b"]`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `
variable "image" {
  type    = string
  default = "redis:6"
}
variable "count" {
  type = number
  validation {
    condition     = var.count > 0
    error_message = "The count must be positive."
  }
}
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
variables {
  team = "infra"
}
locals {
  name  = "${local.prefix}-cache"
  prefix = upper(var.team)
  tags  = [for dc in var.dcs : "dc:${dc}"]
}
job "cache" {
  datacenters = var.dcs
  meta {
    owner = local.name
    tags  = join(",", local.tags)
    sum   = sha256("x")
  }
  group "g" {
    count = var.count
    task "t" {
      driver = "docker"
      config { image = var.image }
    }
  }
}`
	job := parse(t, src, func(c *jobspec.Config) {
		c.VarFiles = []string{varFile}
		c.Vars = []string{"image=redis:7"}
		c.Env = []string{"NOMAD_VAR_team=ops", "PATH=/bin"}
	})
	if got := job.TaskGroups[0].Tasks[0].Config["image"]; got != "redis:7" {
		t.Errorf("-var wins over the default: image = %v", got)
	}
	if job.TaskGroups[0].Count != 4 || len(job.Datacenters) != 2 || job.Datacenters[1] != "b" {
		t.Errorf("var file: count %d, dcs %v", job.TaskGroups[0].Count, job.Datacenters)
	}
	if job.Meta["owner"] != "OPS-cache" {
		t.Errorf("locals referring to locals and env-set variables: owner = %q", job.Meta["owner"])
	}
	if job.Meta["tags"] != "dc:a,dc:b" || len(job.Meta["sum"]) != 64 {
		t.Errorf("functions and for expressions: %v", job.Meta)
	}
}

func TestParse_VariableErrors(t *testing.T) {
	src := `
variable "count" {
  type = number
  validation {
    condition     = var.count > 0
    error_message = "The count must be positive."
  }
}
job "j" {
  group "g" {
    count = var.count
    task "t" { driver = "exec" }
  }
}`
	cases := []struct {
		name string
		mod  func(*jobspec.Config)
		want string
	}{
		{"unset", func(*jobspec.Config) {}, `job.hcl:2:10: error: Unset variable "count"`},
		{"fails validation", func(c *jobspec.Config) { c.Vars = []string{"count=0"} }, "The count must be positive."},
		{"wrong type", func(c *jobspec.Config) { c.Vars = []string{"count=many"} }, "does not match its type"},
		{"undeclared", func(c *jobspec.Config) { c.Vars = []string{"count=1", "colour=red"} }, `Undefined -var variable; -var sets "colour"`},
		{"not name=value", func(c *jobspec.Config) { c.Vars = []string{"count"} }, "Invalid -var argument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseErr(t, src, tc.mod); !strings.Contains(got, tc.want) {
				t.Fatalf("diagnostics do not contain %q:\n%s", tc.want, got)
			}
		})
	}
}

// TestParse_IgnoreUndeclaredVars: values for variables the jobspec does not
// declare are errors, or warnings with IgnoreUndeclaredVars (the server's
// parse endpoint, as in Nomad).
func TestParse_IgnoreUndeclaredVars(t *testing.T) {
	src := `
variable "replicas" {
  default = 1
}
job "j" {
  group "g" {
    count = var.replicas
    task "t" { driver = "exec" }
  }
}`
	vars := func(c *jobspec.Config) {
		c.VarContent = "replicas = 3\nregion_name = \"eu\"\n"
		c.Vars = []string{"colour=red"}
	}
	got := parseErr(t, src, vars)
	for _, want := range []string{`<variables>:2:1: error: Undefined variable; The variable file sets "region_name"`,
		`error: Undefined -var variable; -var sets "colour"`} {
		if !strings.Contains(got, want) {
			t.Errorf("strict: diagnostics do not contain %q:\n%s", want, got)
		}
	}
	cfg := jobspec.Config{Path: "job.hcl", Body: []byte(src), IgnoreUndeclaredVars: true}
	vars(&cfg)
	p, diags := jobspec.Parse(cfg)
	if diags.HasErrors() || len(diags) != 2 {
		t.Fatalf("want two warnings:\n%s", jobspec.FormatDiagnostics(p.Sources, diags))
	}
	if got := *p.Job.TaskGroups[0].Count; got != 3 {
		t.Errorf("count = %d, want 3", got)
	}
}

// TestParse_UntypedVariablesTakeTheirDefaultsType: a variable declared
// without a type has the type of its default, as in Nomad, so a number
// given with -var or NOMAD_VAR_ is a number (var.replicas == 3 holds), and
// a list given as text is a list.
func TestParse_UntypedVariablesTakeTheirDefaultsType(t *testing.T) {
	src := `
variable "replicas" {
  default = 1
}
variable "debug" {
  default = false
}
variable "tags" {
  default = ["a"]
}
variables {
  port = 8080
}
job "j" {
  group "g" {
    count = var.replicas == 3 ? 5 : 1
    task "t" {
      driver = "docker"
      config {
        image = "x"
        port  = var.port
        debug = var.debug
        tags  = var.tags
      }
    }
  }
}`
	cases := []struct {
		name string
		mod  func(*jobspec.Config)
	}{
		{"-var", func(c *jobspec.Config) {
			c.Vars = []string{"replicas=3", "port=9090", "debug=true", `tags=["b", "c"]`}
		}},
		{"environment", func(c *jobspec.Config) {
			c.Env = []string{"NOMAD_VAR_replicas=3", "NOMAD_VAR_port=9090", "NOMAD_VAR_debug=true", `NOMAD_VAR_tags=["b", "c"]`}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := parse(t, src, tc.mod)
			if got := job.TaskGroups[0].Count; got != 5 {
				t.Errorf("count = %d, want 5 (var.replicas is the number 3)", got)
			}
			cfg := job.TaskGroups[0].Tasks[0].Config
			if cfg["port"] != int64(9090) || cfg["debug"] != true {
				t.Errorf("config port %#v, debug %#v: want the number 9090 and true", cfg["port"], cfg["debug"])
			}
			if tags, ok := cfg["tags"].([]any); !ok || len(tags) != 2 || tags[1] != "c" {
				t.Errorf("config tags = %#v, want [b c]", cfg["tags"])
			}
		})
	}
	if got := parseErr(t, src, func(c *jobspec.Config) { c.Vars = []string{"replicas=many"} }); !strings.Contains(got,
		`The value of "replicas" from -var replicas does not match the type of its default, number`) {
		t.Errorf("a value that is not a number:\n%s", got)
	}
}

func TestParse_RuntimeVariablesKeptAsWritten(t *testing.T) {
	job := parse(t, `job "j" {
  constraint {
    attribute = "${node.unique.name}"
    value     = "${meta.wanted}"
  }
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "${NOMAD_TASK_DIR}/run"
        args    = ["${attr.cpu.arch}", "${env["SOME.VAR"]}", "${HOME}"]
      }
    }
  }
}`)
	c := job.Constraints[0]
	if c.LTarget != "${node.unique.name}" || c.RTarget != "${meta.wanted}" {
		t.Errorf("constraint = %+v", c)
	}
	cfg := job.TaskGroups[0].Tasks[0].Config
	args := cfg["args"].([]any)
	if cfg["command"] != "${NOMAD_TASK_DIR}/run" || args[0] != "${attr.cpu.arch}" || args[1] != `${env["SOME.VAR"]}` || args[2] != "${HOME}" {
		t.Errorf("config = %v", cfg)
	}
}

// TestParse_RuntimeVariableAndItsPrefix: Nomad's nodes have both
// attr.driver.docker and attr.driver.docker.version; a jobspec may use
// both, in either order and in locals, each kept as written.
func TestParse_RuntimeVariableAndItsPrefix(t *testing.T) {
	const short, long = "${attr.driver.docker}", "${attr.driver.docker.version}"
	for _, tc := range []struct {
		name  string
		order []string
	}{
		{"prefix first", []string{short, long}},
		{"prefix last", []string{long, short}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := parse(t, fmt.Sprintf(`
locals {
  version = "%s"
}
job "j" {
  constraint {
    attribute = "%s"
    value     = "1"
  }
  constraint {
    attribute = "%s"
    value     = "2"
  }
  group "g" {
    task "t" {
      driver = "docker"
      env {
        V = local.version
      }
    }
  }
}`, long, tc.order[0], tc.order[1]))
			if a, b := job.Constraints[0].LTarget, job.Constraints[1].LTarget; a != tc.order[0] || b != tc.order[1] {
				t.Errorf("constraint attributes %q, %q; want %q", a, b, tc.order)
			}
			if got := job.TaskGroups[0].Tasks[0].Env["V"]; got != long {
				t.Errorf("env V = %q, want %q", got, long)
			}
		})
	}
}

// TestParse_RuntimeVariableWithItsPrefixInOneExpression: one expression may
// use a runtime variable and a longer path under it (${attr.driver.docker}
// and ${attr.driver.docker.version}), wherever it is; each is kept as
// written, as Nomad v1.6.1 keeps them (the expected texts are Nomad's), in
// HCL's native and JSON syntax. A function applied to one applies to its
// text, as in Nomad.
func TestParse_RuntimeVariableWithItsPrefixInOneExpression(t *testing.T) {
	const (
		short = "${attr.driver.docker}"
		long  = "${attr.driver.docker.version}"
	)
	task := func(j *jobspec.Job) *api.Task { return j.TaskGroups[0].Tasks[0] }
	env := func(name string) func(*jobspec.Job) any {
		return func(j *jobspec.Job) any { return task(j).Env[name] }
	}
	for _, tc := range []struct {
		name string
		src  string
		got  func(*jobspec.Job) any
		want any
	}{{
		name: "testdata list",
		src:  "testdata/runtime_variable_and_its_prefix.hcl",
		got:  func(j *jobspec.Job) any { return task(j).Config["args"] },
		want: []any{short, long},
	}, {
		name: "testdata template string",
		src:  "testdata/runtime_variable_and_its_prefix.hcl",
		got:  env("BOTH"),
		want: long + "/" + short,
	}, {
		name: "json list",
		src:  "testdata/runtime_variable_and_its_prefix.json",
		got:  func(j *jobspec.Job) any { return task(j).Config["args"] },
		want: []any{short, long},
	}, {
		name: "json strings",
		src:  "testdata/runtime_variable_and_its_prefix.json",
		got: func(j *jobspec.Job) any {
			return []string{task(j).Env["BOTH"], task(j).Env["INDEX"], task(j).Env["UPPER"]}
		},
		want: []string{long + "/${ attr.driver.docker }", "${attr.list[0]}", "${ATTR.DRIVER.DOCKER}"},
	}, {
		// Nomad reads the text in the file at the offsets of the string's
		// content, which escapes before the reference shift: it keeps
		// "\"${{attr.driver.docke}\"". Drover keeps what is written.
		name: "json string with escapes",
		src:  "testdata/runtime_variable_and_its_prefix.json",
		got:  env("ESCAPED"),
		want: `"` + short + `"`,
	}, {
		name: "json dynamic for_each of a local",
		src:  "testdata/runtime_variable_and_its_prefix.json",
		got:  func(j *jobspec.Job) any { return []string{j.Constraints[0].LTarget, j.Constraints[1].LTarget} },
		want: []string{short, long},
	}, {
		name: "heredoc",
		src: taskEnv(`H = <<EOT
${attr.driver.docker} ${attr.driver.docker.version}
EOT`),
		got:  env("H"),
		want: short + " " + long + "\n",
	}, {
		name: "with a variable",
		src:  `variable "x" { default = "vx" }` + taskEnv(`V = "${attr.driver.docker}-${var.x}-${attr.driver.docker.version}"`),
		got:  env("V"),
		want: short + "-vx-" + long,
	}, {
		name: "function of a template",
		src:  taskEnv(`U = upper("${attr.driver.docker} ${attr.driver.docker.version}")`),
		got:  env("U"),
		want: "${ATTR.DRIVER.DOCKER} ${ATTR.DRIVER.DOCKER.VERSION}",
	}, {
		name: "function of references",
		src:  taskEnv(`F = format("%s|%s", attr.driver.docker, attr.driver.docker.version)`),
		got:  env("F"),
		want: short + "|" + long,
	}, {
		name: "for expression",
		src:  taskEnv(`F = join(",", [for s in ["a", "b"] : "${s}:${attr.driver.docker}:${attr.driver.docker.version}"])`),
		got:  env("F"),
		want: "a:" + short + ":" + long + ",b:" + short + ":" + long,
	}, {
		name: "local",
		src: `locals {
  both = "${attr.driver.docker}/${attr.driver.docker.version}"
  list = ["${attr.driver.docker.version}", "${attr.driver.docker}"]
}` + taskEnv(`B = "${local.both} ${join(",", local.list)}"`),
		got:  env("B"),
		want: short + "/" + long + " " + long + "," + short,
	}, {
		name: "object keys and values",
		src: `job "j" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        labels = { "${attr.driver.docker}" = "${attr.driver.docker.version}" }
      }
    }
  }
}`,
		got:  func(j *jobspec.Job) any { return task(j).Config["labels"] },
		want: []any{map[string]any{short: long}},
	}, {
		name: "template block",
		src: `job "j" {
  group "g" {
    task "t" {
      driver = "docker"
      template {
        data        = "{{ env \"NOMAD_ALLOC_ID\" }} ${attr.driver.docker} ${attr.driver.docker.version}"
        destination = "local/${attr.driver.docker}/${attr.driver.docker.version}"
      }
    }
  }
}`,
		got: func(j *jobspec.Job) any {
			tmpl := task(j).Templates[0]
			return []string{*tmpl.EmbeddedTmpl, *tmpl.DestPath}
		},
		want: []string{`{{ env "NOMAD_ALLOC_ID" }} ` + short + " " + long, "local/" + short + "/" + long},
	}, {
		name: "job attribute",
		src: `job "j" {
  meta {
    M = "${node.class} ${node.class.rack}"
  }
  group "g" {
    task "t" { driver = "docker" }
  }
}`,
		got:  func(j *jobspec.Job) any { return j.Meta["M"] },
		want: "${node.class} ${node.class.rack}",
	}, {
		name: "dynamic for_each",
		src: `job "j" {
  dynamic "constraint" {
    for_each = ["${attr.driver.docker}", "${attr.driver.docker.version}"]
    content {
      attribute = constraint.value
      value     = "${constraint.key}"
    }
  }
  group "g" {
    task "t" { driver = "docker" }
  }
}`,
		got:  func(j *jobspec.Job) any { return []string{j.Constraints[0].LTarget, j.Constraints[1].LTarget} },
		want: []string{short, long},
	}, {
		name: "dynamic labels and content",
		src: `job "j" {
  dynamic "group" {
    for_each = ["a"]
    labels   = ["${group.value}-${node.class}-${node.class.rack}"]
    content {
      task "t" {
        driver = "docker"
        env {
          E = "${group.value} ${attr.driver.docker} ${attr.driver.docker.version}"
        }
      }
    }
  }
}`,
		got: func(j *jobspec.Job) any {
			return []string{*j.TaskGroups[0].Name, j.TaskGroups[0].Tasks[0].Env["E"]}
		},
		want: []string{"a-${node.class}-${node.class.rack}", "a " + short + " " + long},
	}, {
		name: "nested dynamic for_each",
		src: `job "j" {
  dynamic "group" {
    for_each = { a = ["x", "y"] }
    labels   = [group.key]
    content {
      dynamic "constraint" {
        for_each = [for dc in group.value : "${dc}/${node.datacenter}/${node.datacenter.zone}"]
        iterator = c
        content {
          attribute = c.value
          value     = group.key
        }
      }
      task "t" { driver = "docker" }
    }
  }
}`,
		got: func(j *jobspec.Job) any {
			cs := j.TaskGroups[0].Constraints
			return []string{cs[0].LTarget, cs[1].LTarget}
		},
		want: []string{"x/${node.datacenter}/${node.datacenter.zone}", "y/${node.datacenter}/${node.datacenter.zone}"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(tc.src)
			path := "job.hcl"
			if strings.HasPrefix(tc.src, "testdata/") {
				var err error
				if src, err = os.ReadFile(tc.src); err != nil {
					t.Fatal(err)
				}
				path = tc.src
			}
			p, diags := jobspec.Parse(jobspec.Config{Path: path, Body: src})
			if diags.HasErrors() {
				t.Fatalf("parse:\n%s", jobspec.FormatDiagnostics(p.Sources, diags))
			}
			if got := tc.got(p.Job); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// TestParse_RuntimeVariablesAsWritten: a runtime variable keeps the text of
// the interpolation it is written in, spaces and all, and its index steps,
// as in Nomad.
func TestParse_RuntimeVariablesAsWritten(t *testing.T) {
	job := parse(t, taskEnv(`A = "${ NOMAD_ALLOC_ID }"
        B = "${attr.list[0]}/${attr.list.1}"
        C = "${ attr.a }-${attr.b   }-${ upper(attr.c) }-${ attr.d == "" ? "" : attr.d }"
        D = attr.bare.reference`))
	want := map[string]string{
		"A": "${ NOMAD_ALLOC_ID }",
		"B": "${attr.list[0]}/${attr.list.1}",
		"C": "${ attr.a }-${attr.b   }-${ATTR.C}-${attr.d}",
		"D": "${attr.bare.reference}",
	}
	if got := job.TaskGroups[0].Tasks[0].Env; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %q\nwant %q", got, want)
	}
}

// taskEnv is a job whose one task has the env attributes attrs.
func taskEnv(attrs string) string {
	return `
job "j" {
  group "g" {
    task "t" {
      driver = "docker"
      env {
        ` + attrs + `
      }
    }
  }
}`
}

// TestParse_NullValues: null leaves an attribute unset and an entry of
// meta or env out, in either form; a null element of a list is an error.
// None of them may panic (Nomad refuses them all).
func TestParse_NullValues(t *testing.T) {
	job := parse(t, `
variable "owner" {
  default = null
}
job "j" {
  meta = { owner = var.owner, team = "ops" }
  group "g" {
    task "t" {
      driver = "exec"
      user   = null
      env = {
        A = null
        B = "b"
      }
      meta {
        C = var.owner
        D = "d"
      }
    }
  }
}`)
	task := job.TaskGroups[0].Tasks[0]
	if _, ok := job.Meta["owner"]; ok || job.Meta["team"] != "ops" {
		t.Errorf("job meta = %v, want only team", job.Meta)
	}
	if _, ok := task.Env["A"]; ok || task.Env["B"] != "b" {
		t.Errorf("env = %v, want only B", task.Env)
	}
	if _, ok := task.Meta["C"]; ok || task.Meta["D"] != "d" {
		t.Errorf("task meta = %v, want only D", task.Meta)
	}
	got := parseErr(t, `job "j" {
  datacenters = ["dc1", null]
  group "g" {
    task "t" { driver = "exec" }
  }
}`)
	if want := "job.hcl:2:17: error: Invalid value; Element 1: null is not allowed here."; !strings.Contains(got, want) {
		t.Errorf("a null list element:\n%s\nwant %q", got, want)
	}
}

func TestParse_FreeformConfigAsNomad(t *testing.T) {
	job := parse(t, `job "j" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image  = "x"
        labels = { a = "b" }
        mount {
          type = "bind"
        }
        mount {
          type = "volume"
        }
      }
    }
  }
}`)
	cfg := job.TaskGroups[0].Tasks[0].Config
	labels, ok := cfg["labels"].([]any)
	if !ok || len(labels) != 1 || labels[0].(map[string]any)["a"] != "b" {
		t.Errorf("an object attribute becomes a one-element list, as Nomad keeps it: %#v", cfg["labels"])
	}
	mounts, ok := cfg["mount"].([]any)
	if !ok || len(mounts) != 2 || mounts[1].(map[string]any)["type"] != "volume" {
		t.Errorf("nested blocks become a list of objects: %#v", cfg["mount"])
	}
}

func TestParse_ExecutionBlocksKept(t *testing.T) {
	job := parse(t, `job "j" {
  group "g" {
    volume "data" {
      type   = "host"
      source = "data"
    }
    service {
      name = "web"
      port = "http"
      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }
    network {
      port "http" {}
    }
    task "t" {
      driver = "docker"
      template {
        data        = "hello"
        destination = "local/x"
      }
      artifact {
        source = "https://example.com/x.tgz"
      }
      vault { policies = ["p"] }
      identity { env = true }
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      logs { max_files = 3 }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}`)
	tg := job.TaskGroups[0]
	if tg.Volumes["data"]["Source"] != "data" {
		t.Errorf("volume = %v", tg.Volumes)
	}
	svc := tg.Services[0]
	checks := svc["Checks"].([]any)
	if svc["Name"] != "web" || svc["PortLabel"] != "http" || checks[0].(map[string]any)["Interval"] != int64(10*time.Second) {
		t.Errorf("service (kept in Nomad's API form) = %v", svc)
	}
	task := tg.Tasks[0]
	if task.Templates[0]["EmbeddedTmpl"] != "hello" || task.Templates[0]["ChangeMode"] != "restart" {
		t.Errorf("template = %v", task.Templates[0])
	}
	if task.Artifacts[0]["GetterSource"] != "https://example.com/x.tgz" || task.Vault["Env"] != true {
		t.Errorf("artifact %v vault %v", task.Artifacts, task.Vault)
	}
	if task.Lifecycle == nil || task.Lifecycle.Hook != "prestart" || !task.Lifecycle.Sidecar {
		t.Errorf("lifecycle = %+v", task.Lifecycle)
	}
	if task.LogConfig["MaxFiles"] != int64(3) || task.Identities[0]["Env"] != true || task.VolumeMounts[0]["Destination"] != "/data" {
		t.Errorf("logs %v identities %v mounts %v", task.LogConfig, task.Identities, task.VolumeMounts)
	}
}

func TestParse_DynamicBlocks(t *testing.T) {
	job := parse(t, `
locals {
  ports = { http = 80, https = 443 }
}
job "j" {
  group "g" {
    network {
      dynamic "port" {
        for_each = local.ports
        labels   = [port.key]
        content {
          to = port.value
        }
      }
    }
    task "t" { driver = "exec" }
  }
}`)
	ports := job.TaskGroups[0].Networks[0].DynamicPorts
	if len(ports) != 2 || ports[0].Label != "http" || ports[0].To != 80 || ports[1].To != 443 {
		t.Fatalf("dynamic ports = %+v", ports)
	}
}

// TestParse_DynamicForEachWithRuntimeVariables: a dynamic block's for_each
// may name runtime variables, kept as written, as Nomad keeps them.
func TestParse_DynamicForEachWithRuntimeVariables(t *testing.T) {
	job := parse(t, `
job "j" {
  group "g" {
    dynamic "constraint" {
      for_each = { "${attr.kernel.name}" = "linux", "${attr.cpu.arch}" = "amd64" }
      content {
        attribute = constraint.key
        value     = constraint.value
      }
    }
    task "t" { driver = "exec" }
  }
}`)
	cs := job.TaskGroups[0].Constraints
	if len(cs) != 2 || cs[0].LTarget != "${attr.cpu.arch}" || cs[0].RTarget != "amd64" ||
		cs[1].LTarget != "${attr.kernel.name}" || cs[1].RTarget != "linux" {
		t.Errorf("constraints = %v", cs)
	}
}

// TestParse_DynamicForEachWithRuntimeVariablesInJSON: so may one in HCL's
// JSON syntax (it was refused: "There is no variable named attr").
func TestParse_DynamicForEachWithRuntimeVariablesInJSON(t *testing.T) {
	job := parse(t, `{
  "job": {
    "j": {
      "group": {
        "g": {
          "dynamic": {
            "constraint": {
              "for_each": { "${attr.kernel.name}": "linux", "${attr.cpu.arch}": "amd64" },
              "content": { "attribute": "${constraint.key}", "value": "${constraint.value}" }
            }
          },
          "task": { "t": { "driver": "exec" } }
        }
      }
    }
  }
}`)
	cs := job.TaskGroups[0].Constraints
	if len(cs) != 2 || cs[0].LTarget != "${attr.cpu.arch}" || cs[0].RTarget != "amd64" ||
		cs[1].LTarget != "${attr.kernel.name}" || cs[1].RTarget != "linux" {
		t.Errorf("constraints = %v", cs)
	}
}

// TestParse_DynamicGroupContentSeesItsIterator: inside a dynamic block's
// content, the blocks read without a schema (a task's config, env, meta)
// see the iterator like every other attribute, as in Nomad (#9871); a
// runtime variable beside it stays as written.
func TestParse_DynamicGroupContentSeesItsIterator(t *testing.T) {
	job := parse(t, `
variable "regions" {
  default = ["a", "b"]
}
job "j" {
  dynamic "group" {
    for_each = var.regions
    labels   = ["g-${group.value}"]
    content {
      meta {
        region = group.value
      }
      task "t" {
        driver = "exec"
        config {
          args = ["--region", group.value, "--port", "${NOMAD_PORT_http}"]
          mount {
            source = "/srv/${group.value}"
          }
        }
        env {
          REGION = group.value
          ALLOC  = "${NOMAD_ALLOC_ID}"
        }
      }
    }
  }
}`)
	if len(job.TaskGroups) != 2 {
		t.Fatalf("%d groups, want 2", len(job.TaskGroups))
	}
	for i, want := range []string{"a", "b"} {
		tg := job.TaskGroups[i]
		task := tg.Tasks[0]
		if tg.Name != "g-"+want || tg.Meta["region"] != want {
			t.Errorf("group %d: name %s, meta %v", i, tg.Name, tg.Meta)
		}
		if task.Env["REGION"] != want || task.Env["ALLOC"] != "${NOMAD_ALLOC_ID}" {
			t.Errorf("group %s: env %v", want, task.Env)
		}
		args, _ := task.Config["args"].([]any)
		if len(args) != 4 || args[1] != want || args[3] != "${NOMAD_PORT_http}" {
			t.Errorf("group %s: config args %v", want, task.Config["args"])
		}
		mounts, _ := task.Config["mount"].([]any)
		if len(mounts) != 1 || mounts[0].(map[string]any)["source"] != "/srv/"+want {
			t.Errorf("group %s: config mount %v", want, task.Config["mount"])
		}
	}
}

// TestParse_DynamicFreeformBlocks: a task's config may be generated by a
// dynamic block (the way Nomad's users make it conditional), and may hold
// dynamic blocks, which are expanded like the literal blocks beside them.
func TestParse_DynamicFreeformBlocks(t *testing.T) {
	job := parse(t, `
locals {
  mounts = ["/a", "/b"]
}
job "j" {
  group "g" {
    task "generated" {
      driver = "docker"
      dynamic "config" {
        for_each = [{ image = "redis:7" }]
        content {
          image = config.value.image
          args  = ["${NOMAD_TASK_DIR}"]
          mount {
            target = "/data"
          }
        }
      }
    }
    task "holds" {
      driver = "docker"
      config {
        image = "x"
        mount {
          target = "/first"
        }
        dynamic "mount" {
          for_each = local.mounts
          content {
            target = mount.value
          }
        }
        dynamic "logging" {
          for_each = ["syslog"]
          labels   = [logging.value]
          content {
            tag = "web"
          }
        }
      }
    }
  }
}`)
	target := func(m any) any { return m.(map[string]any)["target"] }
	gen := job.TaskGroups[0].Tasks[0].Config
	mounts, _ := gen["mount"].([]any)
	if gen["image"] != "redis:7" || gen["args"].([]any)[0] != "${NOMAD_TASK_DIR}" || len(mounts) != 1 || target(mounts[0]) != "/data" {
		t.Errorf("config generated by a dynamic block = %#v", gen)
	}
	holds := job.TaskGroups[0].Tasks[1].Config
	mounts, _ = holds["mount"].([]any)
	if len(mounts) != 3 || target(mounts[0]) != "/first" || target(mounts[1]) != "/a" || target(mounts[2]) != "/b" {
		t.Errorf("mounts with dynamic ones = %#v", holds["mount"])
	}
	logging, _ := holds["logging"].([]any)
	if len(logging) != 1 || logging[0].(map[string]any)["syslog"].([]any)[0].(map[string]any)["tag"] != "web" {
		t.Errorf("labelled dynamic block = %#v", holds["logging"])
	}
}

func TestParse_LoneTaskAndVault(t *testing.T) {
	job := parse(t, `job "j" {
  vault { policies = ["all"] }
  task "solo" { driver = "exec" }
  group "g" {
    vault { policies = ["group"] }
    task "t" { driver = "exec" }
    task "own" {
      driver = "exec"
      vault { policies = ["own"] }
    }
  }
}`)
	if len(job.TaskGroups) != 2 || job.TaskGroups[0].Name != "solo" || job.TaskGroups[0].Tasks[0].Name != "solo" {
		t.Fatalf("a task in the job is a group of its own: %+v", job.TaskGroups)
	}
	policies := func(v sdk.Opaque) any { return v["Policies"].([]any)[0] }
	g := job.TaskGroups[1]
	if policies(job.TaskGroups[0].Tasks[0].Vault) != "all" || policies(g.Tasks[0].Vault) != "group" || policies(g.Tasks[1].Vault) != "own" {
		t.Fatalf("vault defaults: %v %v %v", job.TaskGroups[0].Tasks[0].Vault, g.Tasks[0].Vault, g.Tasks[1].Vault)
	}
}

// TestParse_NomadTokens: Nomad 1.6 jobspecs may carry consul_token and
// vault_token; they are accepted and kept as the API JSON keeps them.
func TestParse_NomadTokens(t *testing.T) {
	src := `job "j" {
  consul_token = "c-123"
  vault_token  = "s.abc"
  group "g" {
    task "t" { driver = "exec" }
  }
}`
	parse(t, src)
	p, _ := jobspec.Parse(jobspec.Config{Path: "job.hcl", Body: []byte(src)})
	if c, v := p.Job.ConsulToken, p.Job.VaultToken; c == nil || *c != "c-123" || v == nil || *v != "s.abc" {
		t.Errorf("consul token %v, vault token %v", c, v)
	}
}

func TestParse_HCLJSONSyntax(t *testing.T) {
	job := parse(t, `{
  "variable": {"img": {"default": "nginx"}},
  "job": {
    "web": {
      "datacenters": ["dc1"],
      "meta": {"a": "b"},
      "group": {
        "g": {
          "count": 2,
          "task": {
            "t": {
              "driver": "docker",
              "config": {"image": "${var.img}", "ports": ["http"]},
              "resources": {"cpu": 200, "memory": 64}
            }
          }
        }
      }
    }
  }
}`)
	tg := job.TaskGroups[0]
	if job.ID != "web" || tg.Count != 2 || tg.Tasks[0].Config["image"] != "nginx" || tg.Tasks[0].Resources.CPU != 200 || job.Meta["a"] != "b" {
		t.Fatalf("job from HCL's JSON syntax: %+v", job)
	}
}

func TestParse_APIJSON(t *testing.T) {
	for name, src := range map[string]string{
		"wrapped": `{"Job": {"ID": "api", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec"}]}]}}`,
		"bare":    `{"ID": "api", "Scheduler": "custom", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec"}]}]}`,
		// What Nomad v1.6's CLI sends: tokens its later API dropped.
		"nomad 1.6": `{"ID": "api", "ConsulToken": "", "VaultToken": "", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec"}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			job := parse(t, src)
			if job.ID != "api" || job.TaskGroups[0].Count != 1 || job.TaskGroups[0].Tasks[0].Resources.MemoryMB != 300 {
				t.Fatalf("API JSON job with Nomad's defaults: %+v", job)
			}
		})
	}
	got := parseErr(t, "{\n  \"ID\": \"api\",\n  \"Colour\": \"red\"\n}")
	if !strings.Contains(got, `job.hcl:3:`) || !strings.Contains(got, `unknown field "Colour"`) {
		t.Fatalf("unknown field in API JSON: %s", got)
	}
}

func TestDecodeJSON_Strict(t *testing.T) {
	cases := map[string]string{
		"unknown field":  `{"ID": "x", "Bogus": 1}`,
		"wrong type":     `{"ID": 3}`,
		"trailing data":  `{"ID": "x"} {}`,
		"unknown nested": `{"ID": "x", "TaskGroups": [{"Name": "g", "Colour": 1}]}`,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			if _, diags := jobspec.DecodeJSON("x.json", []byte(src)); !diags.HasErrors() {
				t.Fatal("accepted")
			}
		})
	}
}

// An unknown field is located where its key starts, however its name is
// spelled in the source: escapes and invalid UTF-8 decode to a name of
// another length than the source's.
func TestDecodeJSON_UnknownFieldLocatedAtItsKey(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want hcl.Pos
	}{
		{`{"ID": "x", "Bogus": 1}`, hcl.Pos{Line: 1, Column: 13, Byte: 12}},
		{`{"ID": "x", "\u0042ogus": 1}`, hcl.Pos{Line: 1, Column: 13, Byte: 12}},
		{"{\n  \"\xbd\": \"\"\n}", hcl.Pos{Line: 2, Column: 3, Byte: 4}},
		{`{"ID":"x" , "Bogus":1}`, hcl.Pos{Line: 1, Column: 13, Byte: 12}},
		{`{"ID": "x", "TaskGroups": [{"Name": "g", "Co\u006cour": 1}]}`, hcl.Pos{Line: 1, Column: 42, Byte: 41}},
	} {
		_, diags := jobspec.DecodeJSON("x.json", []byte(tc.src))
		if len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Start != tc.want {
			t.Errorf("%q: %v, want an error at %+v", tc.src, diags, tc.want)
		}
	}
}

// A number in a free-form value (a task's config, a scaling policy) that
// no float64 holds is refused where it is written: kept as an infinity, it
// made the job unencodable, an error without a line.
func TestParse_FreeformNumberBeyondFloat64(t *testing.T) {
	task := func(config string) string {
		return "job \"x\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n      config {\n" + config +
			"\n      }\n    }\n  }\n}\n"
	}
	for _, tc := range []struct{ src, want string }{
		{task(`        x = 1e400`), "job.hcl:6:13: error: Invalid value; 1e+400 is out of range"},
		{task(`        x = [1, -1e400]`), "job.hcl:6:13: error: Invalid value; Element 1: -1e+400 is out of range"},
		{task(`        x = pow(10, 400)`), "job.hcl:6:13: error: Invalid value; +Inf is out of range"},
		{task(`        x = { y = 1e999 }`), "job.hcl:6:13: error: Invalid value; Y: 1e+999 is out of range"},
		{`{"job": {"x": {"group": {"g": {"task": {"t": {"driver": "exec", "config": {"x": 1e400}}}}}}}}`,
			"job.hcl:1:81: error: Invalid value; 1e+400 is out of range"},
	} {
		if got := parseErr(t, tc.src); !strings.Contains(got, tc.want) {
			t.Errorf("%s:\n%s\nwant %q", tc.src, got, tc.want)
		}
	}
	// The largest float64s are still numbers.
	job := parse(t, task("        x = 1.7e308"))
	if got := job.TaskGroups[0].Tasks[0].Config; got["x"] != 1.7e308 {
		t.Fatalf("config = %#v", got)
	}
}

// setproduct is bounded as range is: three range(1000)s asked for a
// billion elements, and the parse ran out of memory and crashed the process
// (the server's, for /v1/jobs/parse). Products within the bound, and empty
// ones, are as before.
func TestParse_SetProductIsBounded(t *testing.T) {
	meta := func(expr string) string {
		return "job \"x\" {\n  meta = {\n    a = " + expr + "\n  }\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n    }\n  }\n}\n"
	}
	got := parseErr(t, meta(`length(setproduct(range(1000), range(1000), range(1000)))`))
	if want := "job.hcl:3:40: error: Invalid function argument"; !strings.Contains(got, want) || !strings.Contains(got, "more than 1024 elements") {
		t.Fatalf("got:\n%s\nwant %q", got, want)
	}
	for expr, want := range map[string]string{
		`length(setproduct(range(32), range(32)))`:              "1024",
		`length(setproduct([], range(1000), range(1000)))`:      "0",
		`jsonencode(setproduct(["a", "b"], [1, 2]))`:            `[["a",1],["a",2],["b",1],["b",2]]`,
		`length(setproduct(range(2), range(2), range(2), [1]))`: "8",
	} {
		if got := parse(t, meta(expr)).Meta["a"]; got != want {
			t.Errorf("%s = %q, want %q", expr, got, want)
		}
	}
}

func TestJob_SDKDoesNotPanicOnNulls(t *testing.T) {
	for _, src := range []string{
		`{"ID": "x", "TaskGroups": [null]}`,
		`{"ID": "x", "TaskGroups": [{"Name": "g", "Tasks": [null]}]}`,
		`{"ID": "x", "Constraints": [null]}`,
		`{"ID": "x", "TaskGroups": [{"Name": "g", "Volumes": {"v": null}}]}`,
	} {
		job, diags := jobspec.DecodeJSON("x.json", []byte(src))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if _, err := job.SDK(); err == nil {
			t.Errorf("%s: accepted", src)
		}
	}
}

// TestParse_OnlyNomadsFunctions: a jobspec may call the functions of
// Nomad's job language and no others. regex, regexall and setsubtract,
// which Terraform and Packer have and Nomad does not, are unknown, so a
// jobspec that Drover accepts runs on Nomad too, and can() or try() around
// them gives what it gives in Nomad.
func TestParse_OnlyNomadsFunctions(t *testing.T) {
	for _, call := range []string{`regex("b", "abc")`, `regexall(":", "a:b")`, `setsubtract(["a"], ["b"])`} {
		name := call[:strings.Index(call, "(")]
		t.Run(name, func(t *testing.T) {
			got := parseErr(t, `job "j" {
  meta { m = `+call+` }
  group "g" {
    task "t" { driver = "exec" }
  }
}`)
			want := fmt.Sprintf("job.hcl:2:14: error: Call to unknown function; There is no function named %q.", name)
			if !strings.Contains(got, want) {
				t.Fatalf("got:\n%s\nwant %q", got, want)
			}
		})
	}
	job := parse(t, `variable "image" {
  default = "nginx"
  validation {
    condition     = !can(regex(":", var.image))
    error_message = "A can() of a function Nomad lacks is false, as in Nomad."
  }
}
job "j" {
  meta { m = try(regexall(":", var.image), "fallback") }
  group "g" {
    task "t" { driver = "exec" }
  }
}`)
	if job.Meta["m"] != "fallback" {
		t.Errorf("try() of a function Nomad lacks: meta m = %q, want the fallback", job.Meta["m"])
	}
}

// TestParse_VariableTypesAreExact: a variable's type is an exact type, as
// in Nomad; Terraform's "any" is refused, at the type, alone or inside a
// collection type.
func TestParse_VariableTypesAreExact(t *testing.T) {
	for _, typ := range []string{"any", "list(any)"} {
		t.Run(typ, func(t *testing.T) {
			got := parseErr(t, `variable "x" {
  type    = `+typ+`
  default = ["a"]
}
job "j" {
  group "g" {
    task "t" { driver = "exec" }
  }
}`)
			col := 13 + strings.Index(typ, "any")
			want := fmt.Sprintf(`job.hcl:2:%d: error: Invalid type specification; The keyword "any" cannot be used in this type specification: an exact type is required.`, col)
			if !strings.Contains(got, want) {
				t.Fatalf("got:\n%s\nwant %q", got, want)
			}
		})
	}
}

// TestParse_ValidationMessagesAreSentences: a variable validation's
// error_message is refused, at the message, unless it looks like a sentence
// as Nomad requires: not empty, not starting with a lower-case letter,
// ending with ".", "?" or "!".
func TestParse_ValidationMessagesAreSentences(t *testing.T) {
	const notSentence = "Invalid validation error message; Validation error message must be at least one full sentence starting with an uppercase letter (if the alphabet permits it) and ending with a period or question mark."
	cases := []struct {
		msg  string
		want string // "" when the message is accepted
	}{
		{"The count must be positive.", ""},
		{"Is the count positive?", ""},
		{"Positive, please!", ""},
		{"¿Positivo?", ""},
		{"42 is the least.", ""},
		{"", "Invalid validation error message; An empty string is not a valid nor useful error message."},
		{"the count must be positive.", notSentence},
		{"The count must be positive", notSentence},
		{"The count must be positive. ", notSentence},
	}
	for _, tc := range cases {
		t.Run(tc.msg, func(t *testing.T) {
			src := `variable "count" {
  default = 1
  validation {
    condition     = var.count > 0
    error_message = "` + tc.msg + `"
  }
}
job "j" {
  group "g" {
    count = var.count
    task "t" { driver = "exec" }
  }
}`
			if tc.want == "" {
				parse(t, src)
				return
			}
			if got, want := parseErr(t, src), "job.hcl:5:21: error: "+tc.want; !strings.Contains(got, want) {
				t.Fatalf("got:\n%s\nwant %q", got, want)
			}
		})
	}
}

// TestParse_ValidationConditionConvertsToBool: a validation condition's
// result is converted to a bool, as Nomad converts it ("true" and "false"
// are conditions too); a result that is no bool is refused at the
// condition.
func TestParse_ValidationConditionConvertsToBool(t *testing.T) {
	src := func(cond string) string {
		return `variable "count" {
  default = 1
  validation {
    condition     = ` + cond + `
    error_message = "The count must be positive."
  }
}
job "j" {
  group "g" {
    count = var.count
    task "t" { driver = "exec" }
  }
}`
	}
	parse(t, src(`var.count > 0 ? "true" : "false"`))
	if got, want := parseErr(t, src(`var.count < 0 ? "true" : "false"`)), "The count must be positive."; !strings.Contains(got, want) {
		t.Errorf("a condition of \"false\":\n%s\nwant %q", got, want)
	}
	got := parseErr(t, src(`var.count > 0 ? "yes" : "no"`))
	if want := `job.hcl:4:21: error: Invalid variable validation result; The condition must be true or false: a bool is required`; !strings.Contains(got, want) {
		t.Errorf("a condition of \"yes\":\n%s\nwant %q", got, want)
	}
}

// TestParse_ValidationFailureLocatedAtTheValue: a value that fails its
// variable's validation is reported where it is written, as Nomad reports
// it: at the default, or at the assignment in the variable file; values
// from -var and the environment, which no file holds, at the declaration.
func TestParse_ValidationFailureLocatedAtTheValue(t *testing.T) {
	dir := t.TempDir()
	varFile := filepath.Join(dir, "prod.vars.hcl")
	if err := os.WriteFile(varFile, []byte("\nreplicas = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `variable "replicas" {
  type    = number
  default = -1
  validation {
    condition     = var.replicas >= 1
    error_message = "At least one replica is needed."
  }
}
job "j" {
  group "g" {
    count = var.replicas
    task "t" { driver = "exec" }
  }
}`
	cases := []struct {
		name string
		mod  func(*jobspec.Config)
		want string
	}{
		{"default", func(*jobspec.Config) {}, "job.hcl:3:13: error: Invalid value for variable \"replicas\""},
		{"variable file", func(c *jobspec.Config) { c.VarFiles = []string{varFile} }, varFile + ":2:12: error: Invalid value for variable \"replicas\""},
		{"-var", func(c *jobspec.Config) { c.Vars = []string{"replicas=0"} }, "job.hcl:1:10: error: Invalid value for variable \"replicas\""},
		{"environment", func(c *jobspec.Config) { c.Env = []string{"NOMAD_VAR_replicas=0"} }, "job.hcl:1:10: error: Invalid value for variable \"replicas\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseErr(t, src, tc.mod); !strings.Contains(got, tc.want) {
				t.Fatalf("got:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

// TestParse_BadDefaultReportedOnce: a variable whose default cannot be
// evaluated or converted is reported once, at the default, not also as a
// variable without a default.
func TestParse_BadDefaultReportedOnce(t *testing.T) {
	cases := []struct{ name, decl, want string }{
		{"refers to a variable", `default = var.a`, "job.hcl:3:13: error: Variables not allowed"},
		{"wrong type", `type = number
  default = "abc"`, "job.hcl:4:13: error: Invalid default value for variable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErr(t, `variable "a" { default = "x" }
variable "b" {
  `+tc.decl+`
}
job "j" {
  meta { b = var.b }
  group "g" {
    task "t" { driver = "exec" }
  }
}`)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got:\n%s\nwant %q", got, tc.want)
			}
			if n := strings.Count(got, ": error: "); n != 1 {
				t.Fatalf("%d errors, want 1:\n%s", n, got)
			}
		})
	}
}
