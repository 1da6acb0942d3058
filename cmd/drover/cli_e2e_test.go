package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/internal/testlog"
	"github.com/drover-sched/drover/sdk"
)

const cliWebJob = `
variable "replicas" {
  type    = number
  default = 2
}

job "web" {
  datacenters = ["*"]

  group "frontend" {
    count = var.replicas

    network {
      port "http" {
        to = 8080
      }
    }

    task "nginx" {
      driver = "docker"
      config {
        image = "nginx:1.27"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

const cliHugeJob = `
job "huge" {
  group "g" {
    task "t" {
      driver = "docker"
      resources {
        cpu    = 100
        memory = 100000000
      }
    }
  }
}
`

const cliParamJob = `
job "report" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["day"]
  }
  group "g" {
    task "t" {
      driver = "exec"
      dispatch_payload {
        file = "input.txt"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

const cliCronJob = `
job "nightly" {
  type = "batch"
  periodic {
    crons = ["0 3 * * *"]
  }
  group "g" {
    task "t" {
      driver = "exec"
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// cli runs the CLI against one dev agent and checks exit codes and output.
type cliRun struct {
	t    *testing.T
	bin  string
	addr string
}

func (c *cliRun) run(wantCode int, args ...string) string {
	c.t.Helper()
	code, out := drover(c.t, c.bin, c.addr, args...)
	if code != wantCode {
		c.t.Fatalf("drover %s exited %d, want %d:\n%s", strings.Join(args, " "), code, wantCode, out)
	}
	return out
}

func (c *cliRun) contains(out string, want ...string) {
	c.t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			c.t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestE2E_CLICommands drives every job, eval, alloc, node and operator
// command through the real binary against a dev agent.
func TestE2E_CLICommands(t *testing.T) {
	bin := droverBin(t)
	c := &cliRun{t: t, bin: bin, addr: startDevAgent(t, bin, 4)}
	dir := t.TempDir()
	web := writeFile(t, dir, "web.hcl", cliWebJob)

	t.Run("job init", func(t *testing.T) {
		c.t = t
		path := filepath.Join(dir, "example.nomad.hcl")
		c.contains(c.run(0, "job", "init", path), "Example job file written to "+path)
		c.contains(c.run(1, "job", "init", path), "already exists")
		short := filepath.Join(dir, "short.nomad.hcl")
		c.run(0, "job", "init", "-short", short)
		c.contains(c.run(0, "job", "validate", path), "Job validation successful")
		c.contains(c.run(0, "job", "validate", short), "Job validation successful")
	})

	t.Run("job validate", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "job", "validate", web), "Job validation successful")
		bad := writeFile(t, dir, "bad.hcl", strings.Replace(cliWebJob, "count = var.replicas", "count = -1", 1))
		line := strings.Count(cliWebJob[:strings.Index(cliWebJob, "count = var")], "\n") + 1
		c.contains(c.run(1, "job", "validate", bad), fmt.Sprintf("%s:%d:13: error: Invalid count", bad, line), "must not be negative")
		c.contains(c.run(1, "job", "validate", "-var", "replicas=many", web), "does not match its type")
		wrongPlugin := writeFile(t, dir, "plugin.hcl", strings.Replace(cliWebJob, `datacenters = ["*"]`, `scheduler = "nope"`, 1))
		c.contains(c.run(1, "job", "validate", wrongPlugin), "nope")
		// The server's job warnings, as Nomad's CLI prints them.
		maxMem := writeFile(t, dir, "maxmem.hcl", strings.Replace(cliWebJob, "memory = 64", "memory = 64\n        memory_max = 128", 1))
		ignored := `Task "frontend.nginx" memory_max value will be ignored`
		c.contains(c.run(0, "job", "validate", maxMem), "Job Warnings:", ignored, "Job validation successful")
		c.contains(c.run(1, "job", "plan", maxMem), "All tasks successfully allocated", "Job Warnings:", ignored)
	})

	t.Run("job plan and run", func(t *testing.T) {
		c.t = t
		out := c.run(1, "job", "plan", web)
		c.contains(out, `+ Job: "web"`, `+ Task Group: "frontend" (2 create)`, "All tasks successfully allocated",
			"drover job run -check-index 0 "+web)
		// As in Nomad's, a new job is a line for it, each group and each
		// task; -verbose shows what they hold.
		if diff, _, _ := strings.Cut(out, "\n\n"); diff != "+ Job: \"web\"\n+ Task Group: \"frontend\" (2 create)\n  + Task: \"nginx\" (forces create)" {
			t.Fatalf("the plan of a new job shows more than its groups and tasks:\n%s", out)
		}
		c.contains(c.run(1, "job", "plan", "-verbose", web), `+ Driver: "docker"`, `+ image: "nginx:1.27"`)
		vars := writeFile(t, dir, "vars.hcl", "replicas = 2\n")
		out = c.run(0, "job", "run", "-check-index", "0", "-var-file", vars, web)
		c.contains(out, `Monitoring evaluation`, `Evaluation triggered by job "web"`,
			`Evaluation status changed: "pending" -> "complete"`, `finished with status "complete": 2 placed, 0 queued`)
		if regexp.MustCompile(`Allocation "[0-9a-f]{8}" created`).FindAllString(out, -1) == nil {
			t.Fatalf("no allocation reported:\n%s", out)
		}
		c.contains(c.run(1, "job", "run", "-check-index", "0", web), "409")
		out = c.run(1, "job", "plan", "-var", "replicas=3", web)
		c.contains(out, `+/- Job: "web"`, `+/- Count: "2" => "3"`, "1 create")
		c.contains(c.run(0, "job", "plan", web), "All tasks successfully allocated")
		c.contains(c.run(0, "job", "run", "-var", "replicas=3", web), "1 placed")
		// Each version keeps the source it was run from, with its variables.
		for v, want := range []state.JobSubmission{
			{Source: cliWebJob, Format: "hcl2", VariableFlags: map[string]string{}, Variables: "replicas = 2\n\n", Version: 0},
			{Source: cliWebJob, Format: "hcl2", VariableFlags: map[string]string{"replicas": "3"}, Version: 1},
		} {
			var got state.JobSubmission
			getJSON(t, fmt.Sprintf("%s/v1/job/web/submission?version=%d", c.addr, v), &got)
			got.Namespace, got.JobID, got.JobModifyIndex = "", "", 0
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("version %d's submission:\n%+v\nwant\n%+v", v, got, want)
			}
		}
	})

	t.Run("job status, inspect and history", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "job", "status"), "web", "service")
		out := c.run(0, "job", "status", "-evals", "we")
		c.contains(out, "ID            = web", "Parameterized = false", "Summary", "frontend", "Allocations", "Evaluations", "job-register")
		var st JobStatus
		if err := json.Unmarshal([]byte(c.run(0, "job", "status", "-json", "web")), &st); err != nil || len(st.Allocations) != 3 {
			t.Fatalf("job status -json: %v, %d allocations", err, len(st.Allocations))
		}
		// As Nomad's: -verbose shows full IDs, -short the job's details alone.
		c.contains(c.run(0, "job", "status", "-verbose", "web"), st.Allocations[0].ID, st.Allocations[0].NodeID)
		if out := c.run(0, "job", "status", "-short", "web"); !strings.Contains(out, "Parameterized = false") ||
			strings.Contains(out, "Summary") || strings.Contains(out, "Allocations") {
			t.Fatalf("job status -short:\n%s", out)
		}
		inspect := c.run(0, "job", "inspect", "web")
		var wrapped struct{ Job *sdk.Job }
		if err := json.Unmarshal([]byte(inspect), &wrapped); err != nil || wrapped.Job.TaskGroups[0].Count != 3 {
			t.Fatalf("job inspect: %v\n%s", err, inspect)
		}
		old := c.run(0, "job", "inspect", "-version", "0", "web")
		if !strings.Contains(old, `"Count": 2`) {
			t.Fatalf("job inspect -version 0:\n%s", old)
		}
		c.contains(c.run(0, "job", "history", "-p", "web"), "Version     = 1", "Version     = 0", `+/- Count: "2" => "3"`)
		// What job inspect prints runs again as it is, changing nothing.
		again := writeFile(t, dir, "inspect.json", inspect)
		c.contains(c.run(0, "job", "plan", again), "All tasks successfully allocated")
		c.run(0, "job", "run", "-detach", again)
		var after struct{ Job *sdk.Job }
		if err := json.Unmarshal([]byte(c.run(0, "job", "inspect", "web")), &after); err != nil || after.Job.Version != wrapped.Job.Version {
			t.Fatalf("running the inspected job again changed its version: %v, %d -> %d", err, wrapped.Job.Version, after.Job.Version)
		}
	})

	var st JobStatus
	if err := json.Unmarshal([]byte(c.run(0, "job", "status", "-json", "web")), &st); err != nil {
		t.Fatal(err)
	}
	alloc := st.Allocations[0]

	t.Run("eval list and status", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "eval", "list"), "Triggered By", "job-register", "web")
		var evals []*sdk.Evaluation
		if err := json.Unmarshal([]byte(c.run(0, "eval", "list", "-json", "-job", "web")), &evals); err != nil || len(evals) < 3 {
			t.Fatalf("eval list -json: %v, %d evals", err, len(evals))
		}
		out := c.run(0, "eval", "list", "-per-page", "1")
		c.contains(out, "drover eval list -page-token")
		c.contains(c.run(0, "eval", "status", evals[0].ID[:8]), "Status", "complete", "TriggeredBy", "Phases")
		var e httpapi.EvalResponse
		if err := json.Unmarshal([]byte(c.run(0, "eval", "status", "-json", evals[0].ID)), &e); err != nil || e.ID != evals[0].ID {
			t.Fatalf("eval status -json: %v", err)
		}
		c.run(0, "eval", "status", "-monitor", evals[0].ID)
		c.run(1, "eval", "status", "ffffffff")
	})

	t.Run("alloc status and stop", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "alloc", "status", alloc.ID[:8]), "Job ID              = web", "Allocated Resources", "nginx",
			`Task "nginx" is "running"`, "Recent Events:", "Task started by client")
		c.contains(c.run(0, "alloc", "status", "-verbose", alloc.ID), alloc.ID, "Placement Metrics", "binpack", "job-anti-affinity", "final score")
		var a sdk.Allocation
		if err := json.Unmarshal([]byte(c.run(0, "alloc", "status", "-json", alloc.ID)), &a); err != nil || a.ID != alloc.ID {
			t.Fatalf("alloc status -json: %v", err)
		}
		c.contains(c.run(0, "alloc", "stop", alloc.ID[:8]), `Evaluation triggered by job "web"`, `finished with status "complete"`)
	})

	t.Run("node status and eligibility", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "node", "status"), "Node Pool", "Eligibility", "ready")
		var nodes []*httpapi.NodeListStub
		if err := json.Unmarshal([]byte(c.run(0, "node", "status", "-json")), &nodes); err != nil || len(nodes) != 4 {
			t.Fatalf("node status -json: %v, %d nodes", err, len(nodes))
		}
		c.contains(c.run(0, "node", "status", "-filter", `Name == "`+nodes[1].Name+`"`), nodes[1].Name)
		// As Nomad's: -quiet prints the IDs alone, -allocs counts each
		// node's running allocations.
		if got := strings.Fields(c.run(0, "node", "status", "-quiet")); len(got) != 4 || got[0] != nodes[0].ID {
			t.Fatalf("node status -quiet: %q", got)
		}
		resp, err := http.Get(c.addr + "/v1/allocations?namespace=*")
		if err != nil {
			t.Fatal(err)
		}
		var stubs []*sdk.AllocationListStub
		err = json.NewDecoder(resp.Body).Decode(&stubs)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, n := range nodes {
			want[n.ID] = "0"
		}
		running := map[string]int{}
		for _, a := range stubs {
			if a.ClientStatus == sdk.AllocClientStatusRunning {
				running[a.NodeID]++
			}
		}
		for id, n := range running {
			want[id] = fmt.Sprint(n)
		}
		got := map[string]string{}
		lines := strings.Split(strings.TrimSpace(c.run(0, "node", "status", "-allocs", "-verbose")), "\n")
		if !strings.HasSuffix(lines[0], "Running Allocs") {
			t.Fatalf("node status -allocs header: %q", lines[0])
		}
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			got[f[0]] = f[len(f)-1]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("node status -allocs: running %v, want %v", got, want)
		}
		c.contains(c.run(0, "node", "status", alloc.NodeID[:8]), "Allocated Resources", "Allocations")
		c.contains(c.run(0, "node", "eligibility", "-disable", alloc.NodeID), "ineligible for scheduling")
		var n sdk.Node
		if err := json.Unmarshal([]byte(c.run(0, "node", "status", "-json", alloc.NodeID)), &n); err != nil || n.SchedulingEligibility != sdk.NodeSchedulingIneligible {
			t.Fatalf("node after -disable: %v %q", err, n.SchedulingEligibility)
		}
		c.contains(c.run(0, "node", "eligibility", "-enable", alloc.NodeID), "eligible for scheduling")
		c.run(1, "node", "eligibility", alloc.NodeID)
	})

	t.Run("job scale and node drain", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "job", "scale", "web", "frontend", "4"), `finished with status "complete": 1 placed`)
		c.contains(c.run(1, "job", "scale", "web", "nope", "4"), "nope")
		c.contains(c.run(0, "job", "scaling-events", "web"), "Task Group", "frontend")
		c.contains(c.run(0, "job", "scaling-events", "-verbose", "web"), "submitted using the Drover CLI")
		var st JobStatus
		if err := json.Unmarshal([]byte(c.run(0, "job", "status", "-json", "web")), &st); err != nil {
			t.Fatal(err)
		}
		var target string
		for _, a := range st.Allocations {
			if a.DesiredStatus == sdk.AllocDesiredStatusRun {
				target = a.NodeID
			}
		}
		// Without -detach the command follows the drain to its end.
		out := c.run(0, "node", "drain", "-enable", "-no-deadline", "-yes", target[:8])
		c.contains(out, "drain strategy set", "marked for migration", `-> "complete"`,
			"Drain complete for node", "have stopped")
		var n sdk.Node
		if err := json.Unmarshal([]byte(c.run(0, "node", "status", "-json", target)), &n); err != nil {
			t.Fatal(err)
		}
		if n.DrainStrategy != nil || n.SchedulingEligibility != sdk.NodeSchedulingIneligible {
			t.Fatalf("drained node: drain %+v, %s", n.DrainStrategy, n.SchedulingEligibility)
		}
		for _, a := range st.Allocations {
			if a.NodeID == target && a.DesiredStatus == sdk.AllocDesiredStatusRun && !strings.Contains(out, shortID(a.ID)) {
				t.Errorf("the monitor did not mention allocation %s, which the drain moved", shortID(a.ID))
			}
		}
		c.contains(c.run(0, "node", "drain", "-monitor", target), "Drain complete for node", "have stopped")
		c.run(1, "node", "drain", "-monitor", "-detach", target)
		if err := json.Unmarshal([]byte(c.run(0, "job", "status", "-json", "web")), &st); err != nil {
			t.Fatal(err)
		}
		live := 0
		for _, a := range st.Allocations {
			if a.DesiredStatus != sdk.AllocDesiredStatusRun {
				continue
			}
			live++
			if a.NodeID == target {
				t.Errorf("allocation %s still runs on the drained node", a.Name)
			}
		}
		if live != 4 {
			t.Errorf("%d allocations run after the drain, want 4", live)
		}
		// Canceling the drain of a node that does not drain is a no-op, as
		// in Nomad.
		c.contains(c.run(0, "node", "drain", "-disable", "-keep-ineligible", target), "drain strategy unset")
		c.contains(c.run(0, "node", "eligibility", "-enable", target), "eligible for scheduling")
	})

	t.Run("scaling policy list and info", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "scaling", "policy", "list"), "No policies found")
		scaled := strings.Replace(cliWebJob, `job "web" {`, `job "scaled" {`, 1)
		scaled = strings.Replace(scaled, "count = var.replicas", "count = 1\n    scaling {\n      max = 3\n      policy { cooldown = \"2m\" }\n    }", 1)
		c.run(0, "job", "run", "-detach", writeFile(t, dir, "scaled.hcl", scaled))
		out := c.run(0, "scaling", "policy", "list", "-job", "scaled")
		c.contains(out, "ID", "Enabled", "true", "horizontal", "Namespace:default,Job:scaled,Group:frontend")
		var ps []httpapi.ScalingPolicyListStub
		if err := json.Unmarshal([]byte(c.run(0, "scaling", "policy", "list", "-json")), &ps); err != nil || len(ps) != 1 {
			t.Fatalf("policy list -json: %v %+v", err, ps)
		}
		c.contains(c.run(0, "scaling", "policy", "info", ps[0].ID[:6]), "Min     = 1", "Max     = 3", `"cooldown": "2m"`)
		c.contains(c.run(1, "scaling", "policy", "info", "zzzz"), "zzzz")
		c.run(0, "job", "stop", "-purge", "-detach", "scaled")
		c.contains(c.run(0, "scaling", "policy", "list"), "No policies found")
	})

	t.Run("operator scheduler configuration", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "operator", "scheduler", "get-config"), "Scheduler Algorithm", "binpack")
		c.contains(c.run(0, "operator", "scheduler", "set-config", "-scheduler-algorithm", "spread", "-preempt-batch-scheduler=true"),
			"Scheduler configuration updated!")
		var resp httpapi.SchedulerConfigurationResponse
		if err := json.Unmarshal([]byte(c.run(0, "operator", "scheduler", "get-config", "-json")), &resp); err != nil ||
			resp.SchedulerConfig.SchedulerAlgorithm != "spread" || !resp.SchedulerConfig.PreemptionConfig.BatchSchedulerEnabled {
			t.Fatalf("get-config after set-config: %v %+v", err, resp.SchedulerConfig)
		}
		c.contains(c.run(1, "operator", "scheduler", "set-config", "-check-index", "1", "-pause-eval-broker=false"), "not updated")
		c.run(1, "operator", "scheduler", "set-config")
		c.run(0, "operator", "scheduler", "set-config", "-scheduler-algorithm", "binpack")
	})

	t.Run("operator metrics", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "operator", "metrics"), "Gauges", "drover.broker.total_ready", "drover.heartbeat.active", "Timings (ms)")
		var sum metricsSummary
		if err := json.Unmarshal([]byte(c.run(0, "operator", "metrics", "-json")), &sum); err != nil || len(sum.Gauges) == 0 {
			t.Fatalf("operator metrics -json: %v %+v", err, sum)
		}
		c.contains(c.run(1, "operator", "metrics", "-format", "prometheus"), "prometheus_metrics = true")
		c.contains(c.run(1, "operator", "metrics", "-format", "xml"), "the only format is prometheus")
	})

	t.Run("placement failures exit 2 with the reason", func(t *testing.T) {
		c.t = t
		huge := writeFile(t, dir, "huge.hcl", cliHugeJob)
		out := c.run(1, "job", "plan", huge)
		c.contains(out, "WARNING: Failed to place all allocations", `Dimension "memory" exhausted`, "blocked evaluation")
		out = c.run(2, "job", "run", huge)
		c.contains(out, "Failed to place all allocations", `Task Group "g" (failed to place 1 allocation):`,
			`Dimension "memory" exhausted`, "waiting for additional capacity")
		c.contains(c.run(0, "job", "status", "huge"), "Placement Failure", "waits for capacity")
		c.run(0, "job", "stop", "-purge", "huge")
	})

	t.Run("job eval", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "job", "eval", "web"), `Evaluation triggered by job "web"`, `finished with status "complete"`)
		c.contains(c.run(0, "job", "eval", "-force-reschedule", "-detach", "web"), "Evaluation ID: ")
		c.contains(c.run(1, "job", "eval", "nope"), `reading job "nope"`)
	})

	t.Run("job revert", func(t *testing.T) {
		c.t = t
		var cur struct{ Job *sdk.Job }
		if err := json.Unmarshal([]byte(c.run(0, "job", "inspect", "web")), &cur); err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprint(cur.Job.Version)
		c.contains(c.run(1, "job", "revert", "web", v), "at version "+v+" already")
		c.contains(c.run(1, "job", "revert", "-check-version", "0", "web", "0"), "is at version "+v+", not 0")
		// Version 0 by its tag (Nomad 1.9's version tags).
		c.contains(c.run(1, "job", "tag", "apply", "web"), "-name is required")
		c.contains(c.run(0, "job", "tag", "apply", "-name", "golden", "-description", "two of them", "-version", "0", "web"),
			`Job version 0 tagged with name "golden"`)
		c.contains(c.run(0, "job", "history", "-version", "0", "web"), "Tag Name        = golden", "Tag Description = two of them")
		c.contains(c.run(1, "job", "revert", "web", "silver"), `job "web" has no version numbered or tagged "silver"`)
		c.contains(c.run(0, "job", "revert", "-check-version", v, "web", "golden"), `finished with status "complete"`)
		var after struct{ Job *sdk.Job }
		if err := json.Unmarshal([]byte(c.run(0, "job", "inspect", "web")), &after); err != nil {
			t.Fatal(err)
		}
		if after.Job.Version != cur.Job.Version+1 || after.Job.TaskGroups[0].Count != 2 {
			t.Fatalf("reverted to version 0: version %d count %d", after.Job.Version, after.Job.TaskGroups[0].Count)
		}
		// The reverted version is version 0's spec: no difference from it.
		out := c.run(0, "job", "history", "-p", "-diff-tag", "golden", "-version", fmt.Sprint(after.Job.Version), "web")
		if strings.Contains(out, "Diff =") {
			t.Fatalf("the revert differs from the tagged version:\n%s", out)
		}
		c.contains(c.run(1, "job", "history", "-p", "-diff-tag", "nope", "web"), `tag "nope" of job "web" not found`)
		c.contains(c.run(0, "job", "tag", "unset", "-name", "golden", "web"), `Tag "golden" removed from job "web"`)
		c.contains(c.run(1, "job", "tag", "unset", "-name", "golden", "web"), "404")
	})

	t.Run("job stop", func(t *testing.T) {
		c.t = t
		// -yes, which Nomad's scripts pass to skip its prompt, is accepted.
		c.contains(c.run(0, "job", "stop", "-yes", "web"), `finished with status "complete"`)
		// A stopped job says so, as in Nomad's CLI.
		c.contains(c.run(0, "job", "status", "web"), "Status        = dead (stopped)")
		// Its stopped allocations are still listed, by job status and job
		// allocs alike, as in Nomad's CLI.
		stopped := regexp.MustCompile(`(?m) stop +\w+ +web\.`)
		for _, cmd := range [][]string{{"job", "status", "web"}, {"job", "allocs", "web"}} {
			if out := c.run(0, cmd...); !stopped.MatchString(out) {
				t.Fatalf("%s does not list the stopped allocations:\n%s", strings.Join(cmd, " "), out)
			}
		}
		if !regexp.MustCompile(`(?m)^web +service +\d+ +dead \(stopped\) `).MatchString(c.run(0, "job", "status")) {
			t.Fatalf("job status lists web as not stopped:\n%s", c.run(0, "job", "status"))
		}
		c.run(0, "job", "stop", "-purge", "-detach", "web")
		c.run(1, "job", "status", "web")
		// Registered again, the job lists its own allocations; with -all,
		// the purged instance's too (as Nomad's -all).
		c.run(0, "job", "run", "-detach", web)
		allocs := func(args ...string) []sdk.AllocationListStub {
			var out []sdk.AllocationListStub
			if err := json.Unmarshal([]byte(c.run(0, append([]string{"job", "allocs", "-json"}, append(args, "web")...)...)), &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
		for deadline := time.Now().Add(20 * time.Second); len(allocs()) != 2; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the job registered again has %d allocations, want 2", len(allocs()))
			}
		}
		if every := allocs("-all"); len(every) <= 2 {
			t.Fatalf("job allocs -all lists %d allocations, want the purged instance's too", len(every))
		}
	})

	t.Run("job dispatch and periodic force", func(t *testing.T) {
		c.t = t
		c.contains(c.run(0, "job", "run", writeFile(t, dir, "report.hcl", cliParamJob)), `Job "report" is parameterized`)
		payload := writeFile(t, dir, "input.txt", "rows=10\n")
		c.contains(c.run(1, "job", "dispatch", "report", payload), "required metadata not given: day")
		c.contains(c.run(1, "job", "dispatch", "-meta", "day=mon", "report"), "requires a payload")
		out := c.run(0, "job", "dispatch", "-meta", "day=mon", "-idempotency-token", "once", "report", payload)
		c.contains(out, "Dispatched Job ID = report/dispatch-", `finished with status "complete": 1 placed`)
		child := regexp.MustCompile(`report/dispatch-\d+-[0-9a-f]{8}`).FindString(out)
		c.contains(c.run(0, "job", "dispatch", "-meta", "day=mon", "-idempotency-token", "once", "report", payload),
			"Dispatched Job ID = "+child, "idempotency token exists")
		var inspected struct{ Job sdk.Job }
		if err := json.Unmarshal([]byte(c.run(0, "job", "inspect", child)), &inspected); err != nil {
			t.Fatal(err)
		}
		if job := inspected.Job; job.ParentID != "report" || string(job.Payload) != "rows=10\n" || job.Meta["day"] != "mon" {
			t.Fatalf("dispatched job %+v", inspected.Job)
		}
		c.contains(c.run(0, "job", "status", "report"), "Parameterized = true", "Parameterized Job Summary", "Dispatched Jobs", child)

		c.run(0, "job", "run", writeFile(t, dir, "nightly.hcl", cliCronJob))
		c.contains(c.run(0, "job", "status", "nightly"), "Next Periodic Launch = ", "Previous Launched Jobs", "No jobs launched yet")
		out = c.run(0, "job", "periodic", "force", "nightly")
		c.contains(out, `Evaluation triggered by job "nightly/periodic-`, `finished with status "complete": 1 placed`)
		launched := regexp.MustCompile(`nightly/periodic-\d+`).FindString(out)
		c.contains(c.run(0, "job", "status", "nightly"), launched)
		c.contains(c.run(1, "job", "periodic", "force", "report"), "not an active periodic job")
	})

	t.Run("address and namespace flags", func(t *testing.T) {
		c.t = t
		cmd := exec.Command(bin, "node", "status", "-address", c.addr)
		cmd.Env = append(os.Environ(), "DROVER_ADDR=http://127.0.0.1:1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("-address does not win over DROVER_ADDR: %v\n%s", err, out)
		}
		bad := &cliRun{t: t, bin: bin, addr: "http://127.0.0.1:1"}
		bad.contains(bad.run(1, "job", "status"), "cannot reach the Drover agent")
		c.contains(c.run(0, "job", "status", "-namespace", "other"), "No running jobs")
	})
}

// TestCLI_EveryCommandHasHelp checks that every command documents itself:
// a synopsis, help that starts with its usage line and fits 80 columns
// and, where it takes -address, says where its default comes from.
func TestCLI_EveryCommandHasHelp(t *testing.T) {
	for name, factory := range commands(&meta{}) {
		cmd, err := factory()
		if err != nil {
			t.Fatal(err)
		}
		if cmd.Synopsis() == "" {
			t.Errorf("%s has no synopsis", name)
		}
		if !strings.HasPrefix(cmd.Help(), "Usage: drover "+name) {
			t.Errorf("%s: help does not start with its usage:\n%s", name, cmd.Help())
		}
		// Help fits an 80-column terminal (the usage line aside).
		for i, line := range strings.Split(cmd.Help(), "\n") {
			if i > 0 && utf8.RuneCountInString(line) > 80 {
				t.Errorf("%s: help line wider than 80 columns: %q", name, line)
			}
		}
		// -address defaults to $DROVER_ADDR wherever it is taken.
		if strings.Contains(cmd.Help(), "-address") && !strings.Contains(cmd.Help(), "$"+envAddress) {
			t.Errorf("%s: help does not say that -address defaults to $%s:\n%s", name, envAddress, cmd.Help())
		}
	}
}

// An agent whose telemetry block enables Prometheus serves its metrics in
// Prometheus's format, which operator metrics prints.
func TestE2E_OperatorMetricsPrometheus(t *testing.T) {
	bin := droverBin(t)
	conf := writeFile(t, t.TempDir(), "agent.hcl", "telemetry {\n  collection_interval = \"100ms\"\n  prometheus_metrics = true\n}\n")
	c := &cliRun{t: t, bin: bin, addr: startDevAgent(t, bin, 2, "-config", conf)}
	// The leader's gauges are sampled every collection interval.
	deadline := time.Now().Add(15 * time.Second)
	for {
		out := c.run(0, "operator", "metrics", "-format", "prometheus")
		if strings.Contains(out, "drover_heartbeat_active 2") {
			c.contains(out, "drover_broker_total_ready", "drover_plan_queue_depth", "go_goroutines", "# TYPE")
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no drover_heartbeat_active 2 in:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// operator snapshot save, inspect and restore round-trip a dev agent's
// state: a job registered after the save is gone once it is restored.
func TestE2E_OperatorSnapshot(t *testing.T) {
	bin := droverBin(t)
	c := &cliRun{t: t, bin: bin, addr: startDevAgent(t, bin, 2, "-log-level", "info")}
	dir := t.TempDir()
	// drover monitor follows the agent's log meanwhile: the restore is
	// logged at info.
	mon := exec.Command(bin, "monitor")
	mon.Env = append(os.Environ(), "DROVER_ADDR="+c.addr)
	var monOut testlog.Buffer
	mon.Stdout, mon.Stderr = &monOut, &monOut
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mon.Process.Kill(); _ = mon.Wait() })
	// Batch jobs: job run returns once they are placed (no deployment).
	batch := func(name string) string {
		return writeFile(t, dir, name+".hcl", strings.Replace(cliWebJob, `job "web" {`, "job \""+name+"\" {\n  type = \"batch\"", 1))
	}
	c.contains(c.run(0, "job", "run", batch("web")), "2 placed")
	file := filepath.Join(dir, "backup.snap")
	c.contains(c.run(0, "operator", "snapshot", "save", file), "State file written to "+file)
	c.contains(c.run(0, "operator", "snapshot", "inspect", file), "Jobs        = 1", "Allocations = 2", "Nodes       = 2")
	// Saved through a symbolic link, the file it leads to is replaced and
	// the link kept; saved to a named pipe, the snapshot is written into
	// the pipe, which stays one.
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "latest.snap")
	if err := os.Symlink(filepath.Join("real", "latest.snap"), link); err != nil {
		t.Fatal(err)
	}
	c.contains(c.run(0, "operator", "snapshot", "save", link), "State file written to "+link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	c.contains(c.run(0, "operator", "snapshot", "inspect", filepath.Join(dir, "real", "latest.snap")), "Jobs        = 1")
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	piped := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(pipe)
		piped <- b
	}()
	c.contains(c.run(0, "operator", "snapshot", "save", pipe), "State file written to "+pipe)
	if b := <-piped; len(b) == 0 {
		t.Fatal("nothing was written into the pipe")
	}
	if fi, err := os.Lstat(pipe); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe was replaced: %v %v", fi, err)
	}

	c.contains(c.run(0, "job", "run", batch("late")), "2 placed")
	c.contains(c.run(0, "operator", "snapshot", "restore", file), "Snapshot restored")
	c.contains(c.run(1, "job", "status", "late"), "404")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(monOut.String(), "state restored from a snapshot"); {
		if time.Now().After(deadline) {
			t.Fatalf("drover monitor did not show the restore:\n%s", monOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.contains(c.run(0, "job", "status", "web"), "ID            = web")

	bad := writeFile(t, dir, "bad.snap", "not a snapshot")
	c.contains(c.run(1, "operator", "snapshot", "restore", bad), "not gzip-compressed")
	c.contains(c.run(1, "operator", "snapshot", "inspect", bad), "not gzip-compressed")
	c.contains(c.run(0, "job", "status", "web"), "ID            = web")
}
