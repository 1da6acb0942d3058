package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// nomadClient returns Nomad's official Go client pointed at a test API.
func nomadClient(t *testing.T, addr string) *api.Client {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.Address = addr
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const webHCL = `
variable "replicas" {
  default = 2
}
job "web" {
  datacenters = ["dc1"]
  group "frontend" {
    count = var.replicas
    network {
      port "http" { to = 8080 }
    }
    task "nginx" {
      driver = "docker"
      config {
        image = "nginx:1.27"
      }
      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}`

// waitEval waits for an eval to leave pending, with a blocking query.
func waitEval(t *testing.T, c *api.Client, id string) *api.Evaluation {
	t.Helper()
	var index uint64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		e, meta, err := c.Evaluations().Info(id, &api.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatalf("eval info: %v", err)
		}
		if e.Status != "pending" {
			return e
		}
		index = meta.LastIndex
	}
	t.Fatalf("eval %s still pending", id)
	return nil
}

// TestNomadClient_AgentHealth: Nomad's health check, which load balancers
// and service checks poll, reads a server with a leader as healthy and,
// asked about a client, says an agent without one is not.
func TestNomadClient_AgentHealth(t *testing.T) {
	ts, _ := newAPI(t, 1)
	h, err := nomadClient(t, ts.URL).Agent().Health()
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	if h.Client != nil || h.Server == nil || !h.Server.Ok {
		t.Fatalf("health: %+v", h)
	}
	cases := []struct {
		query string
		code  int
		body  string
	}{
		{"?type=server", http.StatusOK, `{"server":{"ok":true,"message":"ok"}}`},
		{"?type=client", http.StatusInternalServerError, `{"client":{"ok":false,"message":"client not enabled"}}`},
		{"?type=client&type=server", http.StatusInternalServerError,
			`{"client":{"ok":false,"message":"client not enabled"},"server":{"ok":true,"message":"ok"}}`},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			resp, out := do(t, "GET", ts.URL+"/v1/agent/health"+c.query, "")
			if resp.StatusCode != c.code || strings.TrimSpace(string(out)) != c.body {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, out, c.code, c.body)
			}
		})
	}
}

// TestNomadClient_ParseIgnoresUndeclaredVariables: as in Nomad, the
// variables sent with a jobspec to be parsed may include some the jobspec
// does not declare (one set of variables for several jobs).
func TestNomadClient_ParseIgnoresUndeclaredVariables(t *testing.T) {
	ts, _ := newAPI(t, 0)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Variables: "replicas = 3\nregion_name = \"eu\"\n"})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if *job.TaskGroups[0].Count != 3 {
		t.Fatalf("count = %d, want 3", *job.TaskGroups[0].Count)
	}
}

// TestNomadClient_ParseKeepsRuntimeVariables: the parse endpoint keeps
// runtime variables as written, as Nomad's does, also a runtime variable
// and a longer path under it in one expression, beside variables and
// functions.
func TestNomadClient_ParseKeepsRuntimeVariables(t *testing.T) {
	ts, _ := newAPI(t, 0)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: `
variable "tag" {
  default = "latest"
}
job "web" {
  group "frontend" {
    task "nginx" {
      driver = "docker"
      config {
        image = "nginx:${var.tag}"
        args  = ["${attr.driver.docker}", "${attr.driver.docker.version}"]
      }
      env {
        BOTH  = "${attr.driver.docker}/${var.tag}/${attr.driver.docker.version}"
        UPPER = upper("${ NOMAD_ALLOC_ID } ${attr.driver.docker.version}")
      }
    }
  }
}`, Variables: `tag = "1.27"`})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	task := job.TaskGroups[0].Tasks[0]
	if args := task.Config["args"]; !slices.Equal(args.([]any), []any{"${attr.driver.docker}", "${attr.driver.docker.version}"}) {
		t.Errorf("args = %#v", args)
	}
	want := map[string]string{
		"BOTH":  "${attr.driver.docker}/1.27/${attr.driver.docker.version}",
		"UPPER": "${ NOMAD_ALLOC_ID } ${ATTR.DRIVER.DOCKER.VERSION}",
	}
	if !maps.Equal(task.Env, want) {
		t.Errorf("env = %q, want %q", task.Env, want)
	}
}

// TestNomadClient_JobLifecycle drives the API with Nomad's official Go
// client: parse a jobspec on the server, register it, read it back, list
// its evaluations and allocations, list nodes, stop the job and purge it.
func TestNomadClient_JobLifecycle(t *testing.T) {
	ts, _ := newAPI(t, 3)
	c := nomadClient(t, ts.URL)

	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Variables: "replicas = 3", Canonicalize: true})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if *job.ID != "web" || *job.TaskGroups[0].Count != 3 || *job.Type != "service" {
		t.Fatalf("parsed job: id %v count %v type %v", *job.ID, *job.TaskGroups[0].Count, *job.Type)
	}

	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if reg.EvalID == "" || reg.JobModifyIndex == 0 {
		t.Fatalf("register response: %+v", reg)
	}
	if e := waitEval(t, c, reg.EvalID); e.Status != "complete" || e.TriggeredBy != "job-register" {
		t.Fatalf("eval %+v", e)
	}

	got, meta, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if *got.ID != "web" || *got.TaskGroups[0].Count != 3 || *got.TaskGroups[0].Tasks[0].Resources.CPU != 200 ||
		got.TaskGroups[0].Tasks[0].Config["image"] != "nginx:1.27" || meta.LastIndex == 0 {
		t.Fatalf("job read back: %+v", got)
	}

	evals, _, err := c.Jobs().Evaluations("web", nil)
	if err != nil || len(evals) == 0 || evals[0].JobID != "web" {
		t.Fatalf("evaluations: %v %+v", err, evals)
	}
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil {
		t.Fatalf("allocations: %v", err)
	}
	if len(allocs) != 3 {
		t.Fatalf("want 3 allocations, got %d", len(allocs))
	}
	for _, a := range allocs {
		if a.DesiredStatus != "run" || a.TaskGroup != "frontend" {
			t.Errorf("alloc %+v", a)
		}
	}
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 3 {
		t.Fatalf("nodes: %v, %d nodes", err, len(nodes))
	}

	stopEval, _, err := c.Jobs().Deregister("web", false, nil)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	waitEval(t, c, stopEval)
	stopped, _, err := c.Jobs().Info("web", nil)
	if err != nil || !*stopped.Stop {
		t.Fatalf("stopped job: %v %+v", err, stopped)
	}
	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if _, _, err := c.Jobs().Info("web", nil); err == nil {
		t.Fatal("a purged job is still readable")
	}
}

// TestNomadClient_StopOptionsNotServed: nomad job stop -global and
// -no-shutdown-delay are refused (docs/api.md), each for its own reason,
// and the job keeps running.
func TestNomadClient_StopOptionsNotServed(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Variables: "replicas = 1", Canonicalize: true})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register: %v", err)
	}
	cases := []struct {
		name          string
		opts          api.DeregisterOptions
		want, notWant string
	}{
		{"global", api.DeregisterOptions{Global: true}, "global is not supported: Drover has one region", "shutdown"},
		{"no shutdown delay", api.DeregisterOptions{NoShutdownDelay: true},
			"no_shutdown_delay is not supported: Drover has no shutdown delays to skip", "region"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.Jobs().DeregisterOpts("web", &tc.opts, nil)
			if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), tc.want) ||
				strings.Contains(err.Error(), tc.notWant) {
				t.Fatalf("stop: %v, want a 400 saying %q", err, tc.want)
			}
		})
	}
	if got, _, err := c.Jobs().Info("web", nil); err != nil || *got.Stop {
		t.Fatalf("job after the refused stops: %v, stopped %v", err, got != nil && *got.Stop)
	}
}

// TestNomadClient_Variables: Nomad's client writes, reads, lists and
// deletes variables, with check-and-set, and manages the keyring.
func TestNomadClient_Variables(t *testing.T) {
	ts, _ := newAPI(t, 0)
	c := nomadClient(t, ts.URL)
	vars := c.Variables()
	created, _, err := vars.CheckedCreate(&api.Variable{Path: "app/config", Items: api.VariableItems{"user": "admin", "pass": "x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if created.Namespace != "default" || created.CreateIndex == 0 || created.ModifyIndex != created.CreateIndex ||
		created.Items["pass"] != "x" || created.CreateTime == 0 {
		t.Fatalf("created = %+v", created)
	}
	if _, _, err := vars.Create(&api.Variable{Path: "app/other", Items: api.VariableItems{"k": "v"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := vars.Create(&api.Variable{Path: "db/main", Items: api.VariableItems{"k": "v"}}, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := vars.Read("app/config", nil)
	if err != nil || got.Items["user"] != "admin" || got.ModifyIndex != created.ModifyIndex {
		t.Fatalf("read = %+v, %v", got, err)
	}
	if _, _, err := vars.Read("app/nope", nil); !errors.Is(err, api.ErrVariablePathNotFound) {
		t.Fatalf("read of no variable: err = %v, want ErrVariablePathNotFound", err)
	}
	if v, _, err := vars.Peek("app/nope", nil); v != nil || err != nil {
		t.Fatalf("peek of no variable = %+v, %v", v, err)
	}

	// A check-and-set that lost names the variable as it is.
	_, _, err = vars.CheckedCreate(&api.Variable{Path: "app/config", Items: api.VariableItems{"k": "v"}}, nil)
	var conflict api.ErrCASConflict
	if !errors.As(err, &conflict) || conflict.Conflict.ModifyIndex != created.ModifyIndex || conflict.Conflict.Items["user"] != "admin" {
		t.Fatalf("create over a variable: err = %v", err)
	}
	got.Items["pass"] = "y"
	updated, _, err := vars.CheckedUpdate(got, nil)
	if err != nil || updated.ModifyIndex <= created.ModifyIndex || updated.CreateIndex != created.CreateIndex {
		t.Fatalf("checked update = %+v, %v", updated, err)
	}
	if _, err := vars.CheckedDelete("app/config", created.ModifyIndex, nil); !errors.As(err, &conflict) {
		t.Fatalf("delete at a stale index: err = %v", err)
	}

	list, _, err := vars.PrefixList("app/", nil)
	if err != nil || len(list) != 2 || list[0].Path != "app/config" || list[1].Path != "app/other" {
		t.Fatalf("prefix list = %+v, %v", list, err)
	}
	page, meta, err := vars.List(&api.QueryOptions{PerPage: 2})
	if err != nil || len(page) != 2 || meta.NextToken == "" {
		t.Fatalf("first page = %+v, next %q, %v", page, meta.NextToken, err)
	}
	rest, meta, err := vars.List(&api.QueryOptions{PerPage: 2, NextToken: meta.NextToken})
	if err != nil || len(rest) != 1 || rest[0].Path != "db/main" || meta.NextToken != "" {
		t.Fatalf("second page = %+v, next %q, %v", rest, meta.NextToken, err)
	}
	if _, err := vars.CheckedDelete("app/config", updated.ModifyIndex, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := vars.Delete("app/other", nil); err != nil {
		t.Fatal(err)
	}
	if list, _, _ := vars.PrefixList("app/", nil); len(list) != 0 {
		t.Fatalf("after the deletes: %+v", list)
	}

	// The keyring: the first write made a key; a rotation makes another.
	keys, _, err := c.Keyring().List(nil)
	if err != nil || len(keys) != 1 || keys[0].State != api.RootKeyStateActive || keys[0].Algorithm != "aes256-gcm" {
		t.Fatalf("keyring = %+v, %v", keys, err)
	}
	rotated, _, err := c.Keyring().Rotate(&api.KeyringRotateOptions{Full: true}, nil)
	if err != nil || rotated.KeyID == keys[0].KeyID || rotated.State != api.RootKeyStateActive {
		t.Fatalf("rotated = %+v, %v", rotated, err)
	}
	v, _, err := vars.Read("db/main", nil)
	if err != nil || v.Items["k"] != "v" {
		t.Fatalf("a variable after the rotation: %+v, %v", v, err)
	}
	if _, err := c.Keyring().Delete(&api.KeyringDeleteOptions{KeyID: rotated.KeyID}, nil); err == nil || !strings.Contains(err.Error(), "active key") {
		t.Fatalf("deleting the active key: err = %v", err)
	}
}

// TestNomadClient_JobWarnings: registering, planning and validating a
// job answer the warnings Nomad's servers give (what nomad job run, plan
// and validate print as "Job Warnings"): a memory_max ignored while memory
// oversubscription is off, and a dubious update block; none once
// oversubscription is on and the block fixed.
func TestNomadClient_JobWarnings(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Variables: "replicas = 2", Canonicalize: true})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB = ptr(256)
	job.TaskGroups[0].Update = &api.UpdateStrategy{MaxParallel: ptr(3)}
	want := `2 warnings:

* Group "frontend" has warnings: 1 error occurred:
	* Update max parallel count is greater than task group count (3 > 2). A destructive change would result in the simultaneous replacement of all allocations.
* Memory oversubscription is not enabled; Task "frontend.nginx" memory_max value will be ignored. Update the Scheduler Configuration to allow oversubscription.`
	warnings := func() map[string]string {
		got := map[string]string{}
		if v, _, err := c.Jobs().Validate(job, nil); err != nil {
			t.Fatalf("validate: %v", err)
		} else {
			got["validate"] = v.Warnings
		}
		if p, _, err := c.Jobs().Plan(job, false, nil); err != nil {
			t.Fatalf("plan: %v", err)
		} else {
			got["plan"] = p.Warnings
		}
		if r, _, err := c.Jobs().Register(job, nil); err != nil {
			t.Fatalf("register: %v", err)
		} else {
			got["register"] = r.Warnings
		}
		return got
	}
	for call, got := range warnings() {
		if got != want {
			t.Errorf("%s: warnings %q, want %q", call, got, want)
		}
	}
	// As submitted, as Nomad warns before it preserves the counts: the
	// stored count (1, which max_parallel's warning does not take) would
	// have hidden it.
	job.TaskGroups[0].Count = ptr(1)
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register with a count of 1: %v", err)
	}
	job.TaskGroups[0].Count = ptr(2)
	if r, _, err := c.Jobs().RegisterOpts(job, &api.RegisterOptions{PreserveCounts: true}, nil); err != nil || r.Warnings != want {
		t.Errorf("register preserving counts: %v, warnings %q, want %q", err, r.Warnings, want)
	}
	// Alongside validation errors, as in Nomad's answer.
	bad := *job
	bad.Type = ptr("nonsense")
	if v, _, err := c.Jobs().Validate(&bad, nil); err != nil || len(v.ValidationErrors) == 0 || v.Warnings != want {
		t.Errorf("validate of an invalid job: %v, errors %q, warnings %q, want both", err, v.ValidationErrors, v.Warnings)
	}
	if _, _, err := c.Operator().SchedulerSetConfiguration(&api.SchedulerConfiguration{MemoryOversubscriptionEnabled: true}, nil); err != nil {
		t.Fatalf("scheduler configuration: %v", err)
	}
	job.TaskGroups[0].Update.MaxParallel = ptr(1)
	for call, got := range warnings() {
		if got != "" {
			t.Errorf("%s: warnings %q, want none", call, got)
		}
	}
}

// TestNomadClient_OtherRegion: a request for another region (nomad
// -region, NOMAD_REGION, or nomad job run of a job whose region is
// another) is refused, as Nomad's servers refuse a region they have no
// path to, rather than answered from this one; its own region, "global"
// (what a job without a region is in, as Nomad's agents take it) and the
// agent's own endpoints answer.
func TestNomadClient_OtherRegion(t *testing.T) {
	s := servertest.New(t, nil, func(c *server.Config) { c.Region = "eu" })
	ts := httptest.NewServer(httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)), nil).Handler())
	t.Cleanup(ts.Close)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	job.Region = ptr("us")
	c.SetRegion("us")
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), `No path to region \"us\"`) {
			t.Errorf("%s: %v, want a 400 with no path to region us", what, err)
		}
	}
	_, _, err = c.Jobs().Register(job, nil)
	refused("register", err)
	_, _, err = c.Jobs().List(nil)
	refused("job list", err)
	_, _, err = c.Nodes().List(nil)
	refused("node list", err)
	if _, err := c.Agent().Self(); err != nil {
		t.Errorf("agent self in another region: %v", err)
	}
	if _, err := c.Regions().List(); err != nil {
		t.Errorf("regions in another region: %v", err)
	}

	for _, region := range []string{"eu", "global"} {
		c.SetRegion(region)
		if jobs, _, err := c.Jobs().List(nil); err != nil || len(jobs) != 0 {
			t.Fatalf("jobs in region %s: %v %d (the refused registration must not have registered)", region, err, len(jobs))
		}
	}
	job.Region = ptr("eu")
	c.SetRegion("eu")
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register in this region: %v", err)
	}

	// Without ?region=, a job's own region is where it goes, as Nomad's
	// agents send it (regionForJob): another is refused.
	c.SetRegion("")
	job.Region = ptr("us")
	_, _, err = c.Jobs().Register(job, nil)
	refused("register of a job in region us", err)
	_, _, err = c.Jobs().Plan(job, false, nil)
	refused("plan of a job in region us", err)
	// The request's region is the job's, as in Nomad; "global" (a job
	// without one) is this cluster's.
	for _, tc := range []struct{ query, job string }{{"eu", "us"}, {"", "global"}, {"global", ""}} {
		job.Region = ptr(tc.job)
		c.SetRegion(tc.query)
		if _, _, err := c.Jobs().Register(job, nil); err != nil {
			t.Fatalf("register of a job in region %q at ?region=%q: %v", tc.job, tc.query, err)
		}
		c.SetRegion("")
		if j, _, err := c.Jobs().Info(*job.ID, nil); err != nil || *j.Region != "eu" {
			t.Fatalf("a job in region %q registered at ?region=%q: %v, stored in %+v, want eu", tc.job, tc.query, err, j)
		}
	}
}

// TestNomadClient_MoreEndpoints covers the rest of what the CLI and
// Nomad's tooling use: plan, validate, summary, versions, eval count,
// allocation info and stop, node info and eligibility, scheduler
// configuration, paging and filters.
func TestNomadClient_MoreEndpoints(t *testing.T) {
	ts, srv := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCL(webHCL, true)
	if err != nil {
		t.Fatal(err)
	}

	plan, _, err := c.Jobs().Plan(job, true, nil)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if u := plan.Annotations.DesiredTGUpdates["frontend"]; u == nil || u.Place != 2 {
		t.Fatalf("plan annotations: %+v", plan.Annotations)
	}
	if plan.Diff == nil || plan.Diff.Type != "Added" {
		t.Fatalf("plan diff: %+v", plan.Diff)
	}
	if _, _, err := c.Jobs().Info("web", nil); err == nil {
		t.Fatal("plan registered the job")
	}

	bad := *job
	bad.TaskGroups = []*api.TaskGroup{{Name: ptr("g"), Count: ptr(-1), Tasks: []*api.Task{{Name: "t"}}}}
	vr, _, err := c.Jobs().Validate(&bad, nil)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	if len(vr.ValidationErrors) < 2 {
		t.Fatalf("validation errors: %+v", vr)
	}

	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEval(t, c, reg.EvalID)
	sum, _, err := c.Jobs().Summary("web", nil)
	if err != nil || sum.Summary["frontend"].Starting+sum.Summary["frontend"].Running != 2 {
		t.Fatalf("summary: %v %+v", err, sum)
	}
	scale, _, err := c.Jobs().ScaleStatus("web", nil)
	if err != nil || scale.JobID != "web" || scale.JobStopped || scale.TaskGroups["frontend"].Desired != 2 ||
		scale.TaskGroups["frontend"].Placed != 2 || scale.TaskGroups["frontend"].Events == nil {
		t.Fatalf("scale status: %v %+v", err, scale)
	}
	running, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(running) == 0 {
		t.Fatalf("allocations: %v %d", err, len(running))
	}
	if _, err := srv.UpdateAllocsFromClient([]server.AllocUpdate{{ID: running[0].ID, ClientStatus: "running"}}); err != nil {
		t.Fatal(err)
	}
	if scale, _, err = c.Jobs().ScaleStatus("web", nil); err != nil || scale.TaskGroups["frontend"].Running != 1 {
		t.Fatalf("scale status after one allocation runs: %v %+v", err, scale.TaskGroups["frontend"])
	}
	// What the Nomad autoscaler sends: a failed policy's report, without a
	// count, is kept as an event; a count change while the job's
	// deployment is running is refused, as Nomad refuses it.
	ev, _, err := c.Jobs().Scale("web", "frontend", nil, "policy failed", true, map[string]any{"policy": "p1"}, nil)
	if err != nil || ev.EvalID != "" {
		t.Fatalf("scaling event without a count: %v %+v", err, ev)
	}
	if _, _, err := c.Jobs().Scale("web", "frontend", ptr(3), "up", false, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "active deployment") {
		t.Fatalf("scaling during the deployment: %v", err)
	}
	if scale, _, err = c.Jobs().ScaleStatus("web", nil); err != nil {
		t.Fatal(err)
	}
	if evs := scale.TaskGroups["frontend"].Events; len(evs) != 1 || !evs[0].Error || evs[0].Message != "policy failed" ||
		evs[0].Meta["policy"] != "p1" || evs[0].Count != nil || evs[0].PreviousCount != 2 || evs[0].Time == 0 || evs[0].CreateIndex == 0 {
		t.Fatalf("scaling events: %+v", evs)
	}

	job.TaskGroups[0].Count = ptr(1)
	if _, _, err := c.Jobs().EnforceRegister(job, 1, nil); err == nil {
		t.Fatal("a stale check-and-set index registered")
	}
	reg2, _, err := c.Jobs().EnforceRegister(job, reg.JobModifyIndex, nil)
	if err != nil {
		t.Fatalf("check-and-set register: %v", err)
	}
	waitEval(t, c, reg2.EvalID)
	versions, diffs, _, err := c.Jobs().Versions("web", true, nil)
	if err != nil || len(versions) != 2 || len(diffs) != 1 || diffs[0].Type != "Edited" {
		t.Fatalf("versions: %v, %d versions, diffs %+v", err, len(versions), diffs)
	}
	// The history's diffs are contextual, as Nomad's: the group whose count
	// changed shows its unchanged tasks.
	if tgs := diffs[0].TaskGroups; len(tgs) != 1 || tgs[0].Type != "Edited" || len(tgs[0].Tasks) == 0 {
		t.Fatalf("version diff groups: %+v", tgs)
	}
	for _, td := range diffs[0].TaskGroups[0].Tasks {
		if td.Type != "None" || len(td.Annotations) != 0 {
			t.Fatalf("version diff task %s: %s, annotations %q", td.Name, td.Type, td.Annotations)
		}
	}

	count, _, err := c.Evaluations().Count(&api.QueryOptions{Filter: `TriggeredBy == "job-register"`})
	if err != nil || count.Count != 2 {
		t.Fatalf("eval count: %v %+v", err, count)
	}
	page1, meta, err := c.Evaluations().List(&api.QueryOptions{PerPage: 1})
	if err != nil || len(page1) != 1 || meta.NextToken == "" {
		t.Fatalf("eval page 1: %v %d %q", err, len(page1), meta.NextToken)
	}
	page2, _, err := c.Evaluations().List(&api.QueryOptions{PerPage: 1, NextToken: meta.NextToken})
	if err != nil || len(page2) != 1 || page2[0].ID == page1[0].ID {
		t.Fatalf("eval page 2: %v %+v", err, page2)
	}

	allocs, _, err := c.Allocations().List(&api.QueryOptions{Filter: `TaskGroup == "frontend" and DesiredStatus == "run"`})
	if err != nil || len(allocs) != 1 {
		t.Fatalf("filtered allocations: %v %d", err, len(allocs))
	}
	alloc, _, err := c.Allocations().Info(allocs[0].ID, nil)
	if err != nil || alloc.JobID != "web" || alloc.Job == nil || *alloc.Job.ID != "web" {
		t.Fatalf("alloc info: %v %+v", err, alloc)
	}
	stop, err := c.Allocations().Stop(alloc, nil)
	if err != nil || stop.EvalID == "" {
		t.Fatalf("alloc stop: %v %+v", err, stop)
	}
	waitEval(t, c, stop.EvalID)

	node, _, err := c.Nodes().Info(alloc.NodeID, nil)
	if err != nil || node.ID != alloc.NodeID || node.Status != "ready" {
		t.Fatalf("node info: %v %+v", err, node)
	}
	// A node that runs a web allocation: marked ineligible it keeps it, and
	// nothing is evaluated; marked eligible again, it is, and the answer
	// names the eval, as Nomad's does.
	live, _, err := c.Allocations().List(&api.QueryOptions{Filter: `JobID == "web" and DesiredStatus == "run"`})
	if err != nil || len(live) == 0 {
		t.Fatalf("live web allocations: %v %d", err, len(live))
	}
	node, _, err = c.Nodes().Info(live[0].NodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	elig, err := c.Nodes().ToggleEligibility(node.ID, false, nil)
	if err != nil || len(elig.EvalIDs) != 0 || elig.EvalCreateIndex != 0 {
		t.Fatalf("eligibility: %v %+v", err, elig)
	}
	if n, _, _ := c.Nodes().Info(node.ID, nil); n.SchedulingEligibility != "ineligible" {
		t.Fatalf("node eligibility = %q", n.SchedulingEligibility)
	}
	// Marking it eligible through the drain endpoint evaluates it too.
	undrain, err := c.Nodes().UpdateDrain(node.ID, nil, true, nil)
	if err != nil || len(undrain.EvalIDs) != 1 || undrain.EvalCreateIndex == 0 {
		t.Fatalf("drain cancel marking eligible: %v %+v", err, undrain)
	}
	waitEval(t, c, undrain.EvalIDs[0])
	if n, _, _ := c.Nodes().Info(node.ID, nil); n.SchedulingEligibility != "eligible" {
		t.Fatalf("node eligibility after the drain cancel = %q", n.SchedulingEligibility)
	}
	nodeAllocs, _, err := c.Nodes().Allocations(node.ID, nil)
	if err != nil || len(nodeAllocs) == 0 {
		t.Fatalf("node allocations: %v %d", err, len(nodeAllocs))
	}
	// The legacy resource fields Nomad 1.6 still serves, which its CLI
	// dereferences unchecked ('nomad node status' panicked on Drover's
	// nodes, QA found): the node's totals and reservations, each
	// allocation's totals, and each task's.
	if r, res := node.Resources, node.Reserved; r == nil || res == nil || r.CPU == nil || *r.CPU != int(node.NodeResources.Cpu.CpuShares) ||
		r.MemoryMB == nil || *r.MemoryMB != int(node.NodeResources.Memory.MemoryMB) || r.DiskMB == nil || res.CPU == nil ||
		res.MemoryMB == nil || res.DiskMB == nil {
		t.Fatalf("node's legacy resources %+v, reserved %+v", r, res)
	}
	for _, a := range nodeAllocs {
		ar := a.AllocatedResources
		if a.Resources == nil || a.Resources.CPU == nil || a.Resources.MemoryMB == nil || a.Resources.DiskMB == nil ||
			int64(*a.Resources.DiskMB) != ar.Shared.DiskMB {
			t.Fatalf("allocation %s's legacy resources %+v", a.ID, a.Resources)
		}
		cpu := 0
		for task, tr := range ar.Tasks {
			old := a.TaskResources[task]
			if old == nil || old.CPU == nil || int64(*old.CPU) != tr.Cpu.CpuShares || old.MemoryMB == nil || int64(*old.MemoryMB) != tr.Memory.MemoryMB {
				t.Fatalf("allocation %s's task %s: legacy resources %+v, allocated %+v", a.ID, task, old, tr)
			}
			cpu += *old.CPU
		}
		if *a.Resources.CPU != cpu {
			t.Fatalf("allocation %s: legacy CPU %d, its tasks' %d", a.ID, *a.Resources.CPU, cpu)
		}
	}

	conf, _, err := c.Operator().SchedulerGetConfiguration(nil)
	// The body carries Nomad's query metadata (the CLI's -json prints it).
	if err != nil || conf.SchedulerConfig.SchedulerAlgorithm != "binpack" || !conf.KnownLeader {
		t.Fatalf("scheduler config: %v %+v", err, conf)
	}
	conf.SchedulerConfig.SchedulerAlgorithm = "spread"
	set, _, err := c.Operator().SchedulerCASConfiguration(conf.SchedulerConfig, nil)
	if err != nil || !set.Updated {
		t.Fatalf("scheduler CAS: %v %+v", err, set)
	}
	set, _, err = c.Operator().SchedulerCASConfiguration(conf.SchedulerConfig, nil)
	if err != nil || set.Updated {
		t.Fatalf("a stale CAS updated: %v %+v", err, set)
	}

	reverted, _, err := c.Jobs().Revert("web", 0, ptr(uint64(1)), nil, "", "")
	if err != nil || reverted.EvalID == "" {
		t.Fatalf("revert: %v %+v", err, reverted)
	}
	waitEval(t, c, reverted.EvalID)
	if j, _, err := c.Jobs().Info("web", nil); err != nil || *j.Version != 2 || *j.TaskGroups[0].Count != 2 {
		t.Fatalf("reverted job: %v version %v count %v", err, *j.Version, *j.TaskGroups[0].Count)
	}
	if _, _, err := c.Jobs().Revert("web", 0, ptr(uint64(1)), nil, "", ""); err == nil {
		t.Fatal("a revert with a stale prior version succeeded")
	}

	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Nodes().Purge(node.ID, nil); err != nil {
		t.Fatalf("purge node: %v", err)
	}
	if _, _, err := c.Nodes().Info(node.ID, nil); err == nil {
		t.Fatal("a purged node is still readable")
	}

}

func ptr[T any](v T) *T { return &v }

// TestNomadClient_DispatchAndPeriodicForce: Nomad's client dispatches a
// parameterized job (payload, metadata, ID prefix, priority, and an
// idempotency token as its write options carry it) and forces a periodic
// launch.
func TestNomadClient_DispatchAndPeriodicForce(t *testing.T) {
	ts, _ := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCL(`
job "report" {
  type = "batch"
  parameterized {
    payload       = "optional"
    meta_required = ["day"]
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
}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.Jobs().DispatchOpts(&api.DispatchOptions{JobID: "report", Meta: map[string]string{"day": "mon"},
		Payload: []byte("x"), IdPrefixTemplate: "nightly", Priority: 70}, nil)
	if err != nil {
		t.Fatalf("dispatch: %v", err)
	}
	if !strings.HasPrefix(resp.DispatchedJobID, "report/dispatch-nightly-") || resp.EvalID == "" || resp.JobCreateIndex == 0 {
		t.Fatalf("dispatch response %+v", resp)
	}
	if e := waitEval(t, c, resp.EvalID); e.Status != "complete" || e.Priority != 70 {
		t.Fatalf("dispatched eval %+v", e)
	}
	child, _, err := c.Jobs().Info(resp.DispatchedJobID, nil)
	if err != nil || *child.ParentID != "report" || !child.Dispatched || *child.Priority != 70 || string(child.Payload) != "x" {
		t.Fatalf("dispatched job: %v %+v", err, child)
	}
	if _, _, err := c.Jobs().Dispatch("report", nil, nil, "", nil); err == nil || !strings.Contains(err.Error(), "required metadata not given: day") {
		t.Fatalf("dispatch without required meta: %v", err)
	}
	wo := &api.WriteOptions{IdempotencyToken: "once"}
	first, _, err := c.Jobs().Dispatch("report", map[string]string{"day": "tue"}, nil, "", wo)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := c.Jobs().Dispatch("report", map[string]string{"day": "tue"}, nil, "", wo)
	if err != nil || again.DispatchedJobID != first.DispatchedJobID || again.EvalID != "" {
		t.Fatalf("repeated token: %v %+v (first %+v)", err, again, first)
	}
	// In the job list only the parent is parameterized (Nomad's CLI shows
	// the child as batch, not batch/parameterized).
	stubs, _, err := c.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stubs {
		if want := st.ID == "report"; st.ParameterizedJob != want {
			t.Fatalf("job %s listed with ParameterizedJob %v, want %v", st.ID, st.ParameterizedJob, want)
		}
	}

	cron, err := c.Jobs().ParseHCL(`
job "nightly" {
  type = "batch"
  periodic {
    crons = ["0 3 * * *"]
  }
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(cron, nil); err != nil {
		t.Fatal(err)
	}
	evalID, _, err := c.Jobs().PeriodicForce("nightly", nil)
	if err != nil || evalID == "" {
		t.Fatalf("periodic force: %v %q", err, evalID)
	}
	if e := waitEval(t, c, evalID); e.Status != "complete" || !strings.HasPrefix(e.JobID, "nightly/periodic-") {
		t.Fatalf("forced launch eval %+v", e)
	}
	if _, _, err := c.Jobs().PeriodicForce("report", nil); err == nil {
		t.Fatal("forced a launch of a job that is not periodic")
	}

	// A periodic parameterized job's dispatch is a periodic job: answered
	// without an eval, as Nomad's.
	pp, err := c.Jobs().ParseHCL(`
job "pp" {
  type = "batch"
  periodic {
    crons = ["0 3 * * *"]
  }
  parameterized {}
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}`, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(pp, nil); err != nil {
		t.Fatal(err)
	}
	resp, _, err = c.Jobs().Dispatch("pp", nil, nil, "", nil)
	if err != nil || resp.EvalID != "" || resp.EvalCreateIndex != 0 || resp.JobCreateIndex == 0 {
		t.Fatalf("periodic dispatch: %v %+v", err, resp)
	}
}

// TestNomadClient_NamespacesAndNodePools: namespaces and node pools (one
// made by a node registering in it) read and written through Nomad's
// client, with a pool's nodes and jobs.
func TestNomadClient_NamespacesAndNodePools(t *testing.T) {
	ts, srv := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	gpu := servertest.Node(1, 4000, 8192)
	gpu.NodePool = "gpu"
	if _, _, err := srv.RegisterNode(gpu); err != nil {
		t.Fatal(err)
	}
	servertest.Namespaces(t, srv, "ml")
	job := servertest.Job("trainer", sdk.JobTypeBatch, 1, 100, 64)
	job.Namespace, job.NodePool = "ml", "gpu"
	evalID, _, err := srv.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, srv, evalID)

	// Nomad's client sorts both lists by create index.
	nss, _, err := c.Namespaces().List(nil)
	var names []string
	for _, ns := range nss {
		names = append(names, ns.Name)
	}
	if slices.Sort(names); err != nil || strings.Join(names, ",") != "default,ml" {
		t.Fatalf("namespaces: %v %v", err, names)
	}
	if ns, _, err := c.Namespaces().Info("ml", nil); err != nil || ns.Name != "ml" {
		t.Fatalf("namespace info: %v %+v", err, ns)
	}
	if _, _, err := c.Namespaces().Info("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown namespace: %v", err)
	}
	if _, err := c.Namespaces().Register(&api.Namespace{Name: "new"}, nil); err != nil {
		t.Fatalf("namespace register: %v", err)
	}

	pools, _, err := c.NodePools().List(nil)
	names = nil
	for _, p := range pools {
		names = append(names, p.Name)
	}
	if slices.Sort(names); err != nil || strings.Join(names, ",") != "all,default,gpu" {
		t.Fatalf("node pools: %v %v", err, names)
	}
	if p, _, err := c.NodePools().Info("gpu", nil); err != nil || p.Name != "gpu" {
		t.Fatalf("node pool info: %v %+v", err, p)
	}
	if nodes, _, err := c.NodePools().ListNodes("gpu", nil); err != nil || len(nodes) != 1 || nodes[0].ID != gpu.ID {
		t.Fatalf("gpu pool nodes: %v %+v", err, nodes)
	}
	if nodes, _, err := c.NodePools().ListNodes("all", nil); err != nil || len(nodes) != 2 {
		t.Fatalf("all pool nodes: %v %d", err, len(nodes))
	}
	if jobs, _, err := c.NodePools().ListJobs("gpu", &api.QueryOptions{Namespace: "ml"}); err != nil || len(jobs) != 1 || jobs[0].ID != "trainer" {
		t.Fatalf("gpu pool jobs: %v %+v", err, jobs)
	}
	if _, _, err := c.NodePools().Info("nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown node pool: %v", err)
	}
	if _, err := c.NodePools().Register(&api.NodePool{Name: "new"}, nil); err != nil {
		t.Fatalf("node pool register: %v", err)
	}
	// The node routes beside the pool's still answer.
	if n, _, err := c.Nodes().Info(gpu.ID, nil); err != nil || n.NodePool != "gpu" {
		t.Fatalf("node info: %v %+v", err, n)
	}
}

// taskBlocksHCL is webHCL's task with blocks: a service (in-place),
// and, with destructive, a template and an artifact.
func taskBlocksHCL(destructive bool) string {
	blocks := `
      service {
        name     = "web"
        port     = "http"
        provider = "nomad"
        tags     = ["a", "b"]
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "2s"
        }
      }`
	if destructive {
		blocks += `
      template {
        data        = "x=1"
        destination = "local/x.env"
      }
      artifact {
        source = "https://example.com/a.tgz"
      }`
	}
	return strings.Replace(webHCL, `      resources {`, blocks+"\n      resources {", 1)
}

// A plan and the versions' diffs of a job whose task gains a service, a
// template and an artifact show them, and annotate the task as the
// scheduler then updates it: in place for a service, create/destroy for a
// template or an artifact. Both answered 500 (the diff panicked on the
// free-form blocks) and every edited task was annotated create/destroy.
func TestNomadClient_PlanAndVersionDiffsOfTaskBlocks(t *testing.T) {
	ts, srv := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCL(webHCL, true)
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEval(t, c, reg.EvalID)
	allocIDs := func() map[string]bool {
		ids := map[string]bool{}
		for _, a := range srv.Store().Snapshot().AllocsByJob("default", "web") {
			if a.DesiredStatus == sdk.AllocDesiredStatusRun {
				ids[a.ID] = true
			}
		}
		return ids
	}

	taskDiff := func(d *api.JobDiff) *api.TaskDiff {
		t.Helper()
		if d == nil || len(d.TaskGroups) != 1 || len(d.TaskGroups[0].Tasks) != 1 {
			t.Fatalf("diff: %+v", d)
		}
		return d.TaskGroups[0].Tasks[0]
	}
	objects := func(td *api.TaskDiff) map[string]*api.ObjectDiff {
		out := map[string]*api.ObjectDiff{}
		for _, o := range td.Objects {
			out[o.Name] = o
		}
		return out
	}
	fieldOf := func(o *api.ObjectDiff, name string) *api.FieldDiff {
		for _, f := range o.Fields {
			if f.Name == name {
				return f
			}
		}
		return &api.FieldDiff{}
	}

	for _, destructive := range []bool{false, true} {
		next, err := c.Jobs().ParseHCL(taskBlocksHCL(destructive), true)
		if err != nil {
			t.Fatal(err)
		}
		plan, _, err := c.Jobs().Plan(next, true, nil)
		if err != nil {
			t.Fatalf("plan (destructive %v): %v", destructive, err)
		}
		td := taskDiff(plan.Diff)
		os := objects(td)
		if td.Type != "Edited" {
			t.Fatalf("plan (destructive %v): task %s, objects %v", destructive, td.Type, os)
		}
		if !destructive {
			svc := os["Service"]
			if len(os) != 1 || svc.Type != "Added" || fieldOf(svc, "Checks[0][Path]").New != "/health" || fieldOf(svc, "Tags[1]").New != "b" {
				t.Errorf("plan: service: %+v", svc)
			}
			if len(td.Annotations) != 1 || td.Annotations[0] != "forces in-place update" {
				t.Fatalf("a service added: annotations %q", td.Annotations)
			}
		} else {
			if os["Service"] != nil { // registered in the round before
				t.Errorf("plan: unchanged service: %+v", os["Service"])
			}
			if os["Template"] == nil || os["Template"].Type != "Added" || fieldOf(os["Template"], "DestPath").New != "local/x.env" ||
				os["Artifact"] == nil || os["Artifact"].Type != "Added" {
				t.Fatalf("plan: template and artifact: %v", os)
			}
			if u := plan.Annotations.DesiredTGUpdates["frontend"]; len(td.Annotations) != 1 ||
				td.Annotations[0] != "forces create/destroy update" || u.DestructiveUpdate == 0 {
				t.Fatalf("a template and an artifact added: annotations %q, updates %+v", td.Annotations, u)
			}
		}

		// The scheduler does what the annotation says: the allocations are
		// updated in place, or replaced.
		before := allocIDs()
		reg, _, err := c.Jobs().Register(next, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitEval(t, c, reg.EvalID)
		after := allocIDs()
		if replaced := !maps.Equal(before, after); replaced != destructive {
			t.Fatalf("destructive %v: allocations %v, then %v", destructive, before, after)
		}

		_, diffs, _, err := c.Jobs().Versions("web", true, nil)
		if err != nil || len(diffs) == 0 {
			t.Fatalf("versions with diffs: %v, %d diffs", err, len(diffs))
		}
		// The history's diff shows the edit, without the plan's
		// annotation of what the scheduler would do, as Nomad's.
		if td := taskDiff(diffs[0]); td.Type != "Edited" || len(td.Annotations) != 0 {
			t.Fatalf("version diff task: %s, annotations %q", td.Type, td.Annotations)
		}
		os = objects(taskDiff(diffs[0]))
		added := []string{"Service"}
		if destructive {
			added = []string{"Template", "Artifact"}
		}
		for _, name := range added {
			if os[name] == nil || os[name].Type != "Added" {
				t.Errorf("version diff: %s: %+v", name, os[name])
			}
		}
	}

	// Removing them shows them deleted.
	plan, _, err := c.Jobs().Plan(job, true, nil)
	if err != nil {
		t.Fatalf("plan removing the blocks: %v", err)
	}
	os := objects(taskDiff(plan.Diff))
	for _, name := range []string{"Service", "Template", "Artifact"} {
		if os[name] == nil || os[name].Type != "Deleted" {
			t.Errorf("plan removing the blocks: %s: %+v", name, os[name])
		}
	}
}

// TestNomadClient_ReregisteredJobLeavesOutThePurgedInstance: after a job
// is purged and registered again, what the API says of it is the new
// instance's, as Nomad's: its allocations, deployments, latest deployment
// and summary leave out those of the purged instance, which all=true lists
// too.
func TestNomadClient_ReregisteredJobLeavesOutThePurgedInstance(t *testing.T) {
	ts, srv := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCL(webHCL, true)
	if err != nil {
		t.Fatal(err)
	}
	rolling := job.TaskGroups[0].Update
	register := func() *api.Job {
		t.Helper()
		reg, _, err := c.Jobs().Register(job, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitEval(t, c, reg.EvalID)
		j, _, err := c.Jobs().Info("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	first := register()
	purged, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(purged) != 2 {
		t.Fatalf("first instance's allocations: %v %d", err, len(purged))
	}
	purgedDeployment, _, err := c.Jobs().LatestDeployment("web", nil)
	if err != nil || purgedDeployment == nil || purgedDeployment.JobCreateIndex != *first.CreateIndex {
		t.Fatalf("first instance's deployment: %v %+v", err, purgedDeployment)
	}
	stopEval, _, err := c.Jobs().Deregister("web", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEval(t, c, stopEval)
	// The purged instance's allocations finish on their nodes.
	if _, err := srv.UpdateAllocsFromClient([]server.AllocUpdate{{ID: purged[0].ID, ClientStatus: sdk.AllocClientStatusComplete},
		{ID: purged[1].ID, ClientStatus: sdk.AllocClientStatusFailed}}); err != nil {
		t.Fatal(err)
	}
	// Registered again without rolling updates, the job has no deployment
	// of its own.
	job.TaskGroups[0].Update = &api.UpdateStrategy{MaxParallel: ptr(0)}
	second := register()
	if *second.CreateIndex <= *first.CreateIndex {
		t.Fatalf("registered again at create index %d, first at %d", *second.CreateIndex, *first.CreateIndex)
	}
	isPurged := func(id string) bool { return id == purged[0].ID || id == purged[1].ID }

	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("allocations: %v %d, want the new instance's 2", err, len(allocs))
	}
	for _, a := range allocs {
		if isPurged(a.ID) || a.DesiredStatus != sdk.AllocDesiredStatusRun {
			t.Errorf("allocation %s (%s/%s) listed, not the new instance's", a.ID, a.DesiredStatus, a.ClientStatus)
		}
	}
	every, _, err := c.Jobs().Allocations("web", true, nil)
	if n := slices.IndexFunc(every, func(a *api.AllocationListStub) bool { return isPurged(a.ID) }); err != nil || len(every) != 4 || n < 0 {
		t.Fatalf("all=true allocations: %v %d, want both instances' 4", err, len(every))
	}

	want := api.TaskGroupSummary{Starting: 2}
	sum, _, err := c.Jobs().Summary("web", nil)
	if err != nil || sum.CreateIndex != *second.CreateIndex || sum.Summary["frontend"] != want {
		t.Fatalf("summary: %v %+v, want %+v", err, sum, want)
	}
	stubs, _, err := c.Jobs().List(nil)
	if err != nil || len(stubs) != 1 {
		t.Fatalf("job list: %v %d jobs", err, len(stubs))
	}
	if got := stubs[0].JobSummary.Summary["frontend"]; got != want {
		t.Fatalf("job list summary %+v, want %+v", got, want)
	}

	if ds, _, err := c.Jobs().Deployments("web", false, nil); err != nil || len(ds) != 0 {
		t.Fatalf("deployments: %v %+v, want none", err, ds)
	}
	if d, _, err := c.Jobs().LatestDeployment("web", nil); err != nil || d != nil {
		t.Fatalf("latest deployment: %v %+v, want none", err, d)
	}
	if ds, _, err := c.Jobs().Deployments("web", true, nil); err != nil || len(ds) != 1 || ds[0].ID != purgedDeployment.ID {
		t.Fatalf("all=true deployments: %v %+v, want the purged instance's", err, ds)
	}
	if scale, _, err := c.Jobs().ScaleStatus("web", nil); err != nil || scale.TaskGroups["frontend"].Placed != 0 {
		t.Fatalf("scale status: %v %+v, want nothing placed by a deployment", err, scale)
	}

	// A new version with rolling updates gets a deployment of its own.
	job.TaskGroups[0].Update = rolling
	job.TaskGroups[0].Tasks[0].Config["image"] = "nginx:1.28"
	third := register()
	ds, _, err := c.Jobs().Deployments("web", false, nil)
	if err != nil || len(ds) != 1 || ds[0].ID == purgedDeployment.ID || ds[0].JobCreateIndex != *third.CreateIndex {
		t.Fatalf("deployments: %v %+v, want only the new instance's", err, ds)
	}
	current := ds[0]
	ds, _, err = c.Jobs().Deployments("web", true, nil)
	if err != nil || len(ds) != 2 || ds[0].ID != current.ID || ds[1].ID != purgedDeployment.ID {
		t.Fatalf("all=true deployments: %v %+v, want both instances', newest first", err, ds)
	}
	if d, _, err := c.Jobs().LatestDeployment("web", nil); err != nil || d == nil || d.ID != current.ID {
		t.Fatalf("latest deployment: %v %+v, want %s", err, d, current.ID)
	}
	if resp, out := do(t, "GET", ts.URL+"/v1/job/web/deployments?all=maybe", ""); resp.StatusCode != 400 {
		t.Fatalf("all=maybe: %d %s", resp.StatusCode, out)
	}
}

// What Nomad's client and CLI expect of a few answers: stopping a job that
// is not there succeeds without an eval, validation says the server
// checked the job, node stubs give the node's host and last drain, a
// version is marked stable or not, and a job sub-path Drover does not
// serve is not read as a job ID with a slash.
func TestNomadClient_NomadShapedAnswers(t *testing.T) {
	ts, srv := newAPI(t, 2)
	c := nomadClient(t, ts.URL)

	resp, _, err := c.Jobs().Deregister("nope", true, nil)
	if err != nil || resp != "" {
		t.Fatalf("deregistering a missing job: %q %v, want no eval and no error", resp, err)
	}

	job, err := c.Jobs().ParseHCL(webHCL, true)
	if err != nil {
		t.Fatal(err)
	}
	vr, _, err := c.Jobs().Validate(job, nil)
	if err != nil || !vr.DriverConfigValidated || len(vr.ValidationErrors) != 0 {
		t.Fatalf("validate: %v %+v", err, vr)
	}

	n := servertest.Node(2, 4000, 8192)
	n.HTTPAddr = "10.1.2.3:4646"
	if _, _, err := srv.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	byID := &api.QueryOptions{Filter: `ID == "` + n.ID + `"`}
	nodes, _, err := c.Nodes().List(byID)
	if err != nil || len(nodes) != 1 || nodes[0].Address != "10.1.2.3" {
		t.Fatalf("node stubs %v %+v, want the address 10.1.2.3, as Nomad's", err, nodes)
	}
	// LastDrain is set as the drain starts, with the request's Meta, and
	// kept, Meta and all, when it completes, as Nomad's.
	meta := map[string]string{"message": "kernel upgrade"}
	if _, err := c.Nodes().UpdateDrainOpts(n.ID, &api.DrainOptions{DrainSpec: &api.DrainSpec{Deadline: time.Minute}, Meta: meta}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		nodes, _, err = c.Nodes().List(byID)
		if err != nil || len(nodes) != 1 {
			t.Fatalf("nodes: %v %d", err, len(nodes))
		}
		if nodes[0].LastDrain == nil || nodes[0].LastDrain.StartedAt.IsZero() || !maps.Equal(nodes[0].LastDrain.Meta, meta) {
			t.Fatalf("the drained node's stub has LastDrain %+v, want one started with meta %v", nodes[0].LastDrain, meta)
		}
		if nodes[0].LastDrain.Status == api.DrainStatusComplete {
			break
		}
		if nodes[0].LastDrain.Status != api.DrainStatusDraining || time.Now().After(deadline) {
			t.Fatalf("last drain %+v, want it draining, then complete", nodes[0].LastDrain)
		}
		time.Sleep(50 * time.Millisecond)
	}

	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEval(t, c, reg.EvalID)
	job.TaskGroups[0].Tasks[0].Resources.CPU = ptr(300)
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Stable("web", 0, true, nil); err != nil {
		t.Fatalf("stable: %v", err)
	}
	versions, _, _, err := c.Jobs().Versions("web", false, nil)
	if err != nil || len(versions) != 2 || *versions[1].Version != 0 || !*versions[1].Stable || *versions[0].Stable {
		t.Fatalf("versions after marking 0 stable: %v %+v", err, versions)
	}
	if _, _, err := c.Jobs().Stable("web", 0, false, nil); err != nil {
		t.Fatal(err)
	}
	if v := srv.Store().Snapshot().JobVersion("default", "web", 0); v.Stable {
		t.Fatal("version 0 still stable")
	}
	if _, _, err := c.Jobs().Stable("web", 7, true, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a version that is not kept: %v", err)
	}
}

// A job's source, sent with its registration as Nomad's CLI sends it, is
// kept with the version it registered and read back through Nomad's
// client; a version registered without one has none, and a source over
// job_max_source_size is dropped with Nomad's warning while the job still
// registers.
func TestNomadClient_JobSubmission(t *testing.T) {
	s := servertest.New(t, nil, func(c *server.Config) { c.JobMaxSourceSize = 2000 })
	ts := httptest.NewServer(httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)), nil).Handler())
	t.Cleanup(ts.Close)
	c := nomadClient(t, ts.URL)

	job, err := c.Jobs().ParseHCL(webHCL, true)
	if err != nil {
		t.Fatal(err)
	}
	sent := &api.JobSubmission{Source: webHCL, Format: "hcl2", VariableFlags: map[string]string{"replicas": "2"},
		Variables: "replicas = 2\n"}
	reg, _, err := c.Jobs().RegisterOpts(job, &api.RegisterOptions{Submission: sent}, nil)
	if err != nil || reg.Warnings != "" {
		t.Fatalf("register: %v %q", err, reg.Warnings)
	}
	got, meta, err := c.Jobs().Submission("web", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != sent.Source || got.Format != "hcl2" || !maps.Equal(got.VariableFlags, sent.VariableFlags) ||
		got.Variables != sent.Variables || meta.LastIndex != reg.JobModifyIndex {
		t.Fatalf("submission %+v (index %d), want what was sent, at job modify index %d", got, meta.LastIndex, reg.JobModifyIndex)
	}
	// The fields Nomad's server adds, which its client leaves out.
	_, body := do(t, "GET", ts.URL+"/v1/job/web/submission?version=0", "")
	var named struct {
		Namespace, JobID        string
		Version, JobModifyIndex uint64
	}
	if err := json.Unmarshal(body, &named); err != nil || named.Namespace != "default" || named.JobID != "web" ||
		named.Version != 0 || named.JobModifyIndex != reg.JobModifyIndex {
		t.Fatalf("submission's names: %v %s", err, body)
	}

	// Version 1, registered without a source.
	job.TaskGroups[0].Tasks[0].Resources.CPU = ptr(300)
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Submission("web", 1, nil); err == nil || !strings.Contains(err.Error(), "job source not found") {
		t.Fatalf("version 1's submission: %v", err)
	}
	// Version 2, with a source over the limit.
	job.TaskGroups[0].Tasks[0].Resources.CPU = ptr(400)
	big := &api.JobSubmission{Source: strings.Repeat("#", 2100), Format: "hcl2", VariableFlags: map[string]string{"replicas": "2"}}
	reg, _, err = c.Jobs().RegisterOpts(job, &api.RegisterOptions{Submission: big}, nil)
	// As Nomad words its answer's warnings (helper.MergeMultierrorWarnings).
	if err != nil || reg.Warnings != "1 warning:\n\n* job source size of 2.1 kB exceeds maximum of 2.0 kB and will be discarded" {
		t.Fatalf("register with a large source: %v %q", err, reg.Warnings)
	}
	if j, _, err := c.Jobs().Info("web", nil); err != nil || *j.Version != 2 {
		t.Fatalf("the job with a dropped source did not register: %v", err)
	}
	if _, _, err := c.Jobs().Submission("web", 2, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a dropped source was kept: %v", err)
	}
	resp, body := do(t, "GET", ts.URL+"/v1/job/web/submission?version=x", "")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "version parameter") {
		t.Fatalf("a bad version: %d %s", resp.StatusCode, body)
	}
	// A purge takes the sources with the job.
	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Submission("web", 0, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a purged job's source: %v", err)
	}
}

// manualUpdate is an update block whose health the operator sets.
func manualUpdate(maxParallel int, autoRevert bool) *api.UpdateStrategy {
	return &api.UpdateStrategy{MaxParallel: ptr(maxParallel), HealthCheck: ptr("manual"), AutoRevert: ptr(autoRevert),
		MinHealthyTime: ptr(time.Duration(0)), HealthyDeadline: ptr(time.Minute), ProgressDeadline: ptr(time.Hour)}
}

// deploy registers job, waits for its eval and returns its deployment.
func deploy(t *testing.T, c *api.Client, job *api.Job) *api.Deployment {
	t.Helper()
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEval(t, c, reg.EvalID)
	d, _, err := c.Jobs().LatestDeployment(*job.ID, nil)
	if err != nil || d == nil {
		t.Fatalf("deployment: %v %+v", err, d)
	}
	return d
}

// A group with health_check = "manual" waits for the operator: health set
// through Nomad's SetAllocHealth keeps what the node reported, counts in
// the deployment, and an unhealthy allocation fails the deployment.
func TestNomadClient_SetAllocHealth(t *testing.T) {
	ts, srv := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCL(webHCL, true)
	if err != nil {
		t.Fatal(err)
	}
	job.TaskGroups[0].Update = manualUpdate(2, false)
	d := deploy(t, c, job)
	allocs, _, err := c.Deployments().Allocations(d.ID, nil)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("deployment allocations: %v %d", err, len(allocs))
	}
	first, second := allocs[0].ID, allocs[1].ID
	if _, err := srv.UpdateAllocsFromClient([]server.AllocUpdate{{ID: first, ClientStatus: "running"},
		{ID: second, ClientStatus: "running"}}); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct {
		name               string
		healthy, unhealthy []string
		code               string
	}{
		{"no allocations", nil, nil, "400"},
		{"an allocation that is not there", []string{"no-such-alloc"}, nil, "404"},
		{"one allocation listed twice", []string{first}, []string{first}, "400"},
	} {
		if _, _, err := c.Deployments().SetAllocHealth(d.ID, bad.healthy, bad.unhealthy, nil); err == nil ||
			!strings.Contains(err.Error(), bad.code) {
			t.Fatalf("%s: %v, want %s", bad.name, err, bad.code)
		}
	}

	// Each answer names its eval, as Nomad's does.
	setHealth := func(healthy, unhealthy []string) {
		t.Helper()
		resp, _, err := c.Deployments().SetAllocHealth(d.ID, healthy, unhealthy, nil)
		if err != nil {
			t.Fatal(err)
		}
		if e, _, err := c.Evaluations().Info(resp.EvalID, nil); err != nil || e.TriggeredBy != "deployment-watcher" ||
			e.DeploymentID != d.ID || resp.EvalCreateIndex == 0 {
			t.Fatalf("SetAllocHealth's eval %q: %v %+v", resp.EvalID, err, e)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicAllocation: {first}}, srv.Store().Snapshot().Index()+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	setHealth([]string{first}, nil)
	// On the event stream, an operator's health is Nomad's
	// DeploymentAllocHealth, not a node's AllocationUpdated.
	select {
	case evs := <-stream:
		if evs.Err != nil || len(evs.Events) == 0 || evs.Events[0].Type != "DeploymentAllocHealth" {
			t.Fatalf("the health's allocation events: %+v", evs)
		}
	case <-ctx.Done():
		t.Fatal("no allocation event for the health")
	}
	a, _, err := c.Allocations().Info(first, nil)
	if err != nil || a.ClientStatus != "running" || a.DeploymentStatus == nil || !*a.DeploymentStatus.Healthy {
		t.Fatalf("allocation after SetAllocHealth: %v %+v", err, a)
	}
	if d, _, err = c.Deployments().Info(d.ID, nil); err != nil || d.TaskGroups["frontend"].HealthyAllocs != 1 {
		t.Fatalf("deployment after one healthy allocation: %v %+v", err, d.TaskGroups["frontend"])
	}

	setHealth(nil, []string{second})
	deadline := time.Now().Add(10 * time.Second)
	for d.Status != "failed" {
		if time.Now().After(deadline) {
			t.Fatalf("deployment %s with an unhealthy allocation: %s %q", d.ID, d.Status, d.StatusDescription)
		}
		time.Sleep(50 * time.Millisecond)
		if d, _, err = c.Deployments().Info(d.ID, nil); err != nil {
			t.Fatal(err)
		}
	}
	if d.StatusDescription != sdk.DeploymentDescriptionFailedAllocations {
		t.Fatalf("failed deployment: %q", d.StatusDescription)
	}
	if _, _, err := c.Deployments().SetAllocHealth(d.ID, []string{second}, nil, nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("health of a failed deployment's allocation: %v", err)
	}
}

// TestNomadClient_ScalingPolicies: what Nomad's autoscaler reads. A
// group's scaling block is listed and read by ID with its target and
// policy; the ID and CreateIndex last while the job keeps the policy,
// ModifyIndex moves only when it changes (a job registered again as it
// was, as `job run` does, makes no new version); a blocking list wakes on
// a change; a purge removes it.
func TestNomadClient_ScalingPolicies(t *testing.T) {
	ts, _ := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	const hcl = `
job "web" {
  group "frontend" {
    count = 2
    scaling {
      min = 1
      max = %d
      policy {
        cooldown = "1m"
        check "cpu" {
          source = "prometheus"
          query  = "avg(cpu)"
          strategy "target-value" { target = 70 }
        }
      }
    }
    task "nginx" {
      driver = "docker"
      config { image = "nginx:1.27" }
      resources { cpu = 100 }
    }
  }
  group "worker" {
    task "w" {
      driver = "docker"
      config { image = "busybox" }
      resources { cpu = 100 }
    }
  }
}`
	register := func(max int) {
		t.Helper()
		job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: fmt.Sprintf(hcl, max), Canonicalize: true})
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if _, _, err := c.Jobs().Register(job, nil); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	register(5)

	list, meta, err := c.Scaling().ListPolicies(nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}
	stub := list[0]
	want := map[string]string{"Namespace": "default", "Job": "web", "Group": "frontend"}
	if stub.Type != "horizontal" || !stub.Enabled || !maps.Equal(stub.Target, want) || stub.CreateIndex == 0 ||
		stub.ModifyIndex != stub.CreateIndex || meta.LastIndex == 0 {
		t.Fatalf("listed %+v (index %d)", stub, meta.LastIndex)
	}
	p, _, err := c.Scaling().GetPolicy(stub.ID, nil)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	checks, _ := p.Policy["check"].([]any)
	if *p.Min != 1 || *p.Max != 5 || p.Policy["cooldown"] != "1m" || len(checks) != 1 || p.ID != stub.ID {
		t.Fatalf("policy %+v", p)
	}
	job, _, err := c.Jobs().Info("web", nil)
	if err != nil || job.TaskGroups[0].Scaling == nil || job.TaskGroups[0].Scaling.ID != stub.ID {
		t.Fatalf("the job does not carry the policy's ID: %v %+v", err, job.TaskGroups[0].Scaling)
	}

	// The same job planned, then registered again: no change, no new
	// version, the same policy.
	parsed, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: fmt.Sprintf(hcl, 5), Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan, _, err := c.Jobs().Plan(parsed, true, nil); err != nil || plan.Diff.Type != "None" {
		t.Fatalf("plan of the job as registered: %v %+v", err, plan.Diff)
	}
	register(5)
	if job, _, err = c.Jobs().Info("web", nil); err != nil || *job.Version != 0 {
		t.Fatalf("registered unchanged: %v version %v", err, *job.Version)
	}
	if again, _, err := c.Scaling().GetPolicy(stub.ID, nil); err != nil || again.ModifyIndex != stub.ModifyIndex {
		t.Fatalf("unchanged policy: %v %+v", err, again)
	}

	// A blocking list wakes when the policy changes; ID and CreateIndex stay.
	changed := make(chan []*api.ScalingPolicyListStub, 1)
	go func() {
		l, _, err := c.Scaling().ListPolicies(&api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		changed <- l
	}()
	time.Sleep(50 * time.Millisecond)
	register(9)
	l := <-changed
	if len(l) != 1 || l[0].ID != stub.ID || l[0].CreateIndex != stub.CreateIndex || l[0].ModifyIndex <= stub.ModifyIndex {
		t.Fatalf("after the change: %+v, was %+v", l, stub)
	}
	if p, _, err = c.Scaling().GetPolicy(stub.ID, nil); err != nil || *p.Max != 9 {
		t.Fatalf("changed policy: %v %+v", err, p)
	}

	// Filters: job, type (a prefix), ID prefix, namespace.
	for _, tc := range []struct {
		q    map[string]string
		want int
	}{
		{map[string]string{"job": "web"}, 1},
		{map[string]string{"job": "we"}, 0},
		{map[string]string{"type": "horiz"}, 1},
		{map[string]string{"type": "vertical"}, 0},
		{map[string]string{"prefix": stub.ID[:4]}, 1},
		{map[string]string{"prefix": "zzzz"}, 0},
		{map[string]string{"namespace": "*"}, 1},
		{map[string]string{"namespace": "other"}, 0},
	} {
		got, _, err := c.Scaling().ListPolicies(&api.QueryOptions{Params: tc.q})
		if err != nil || len(got) != tc.want {
			t.Errorf("list %v: %v, %d policies, want %d", tc.q, err, len(got), tc.want)
		}
	}

	// A purge removes the policy.
	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if l, _, err := c.Scaling().ListPolicies(nil); err != nil || len(l) != 0 {
		t.Fatalf("after the purge: %v %+v", err, l)
	}
	if _, _, err := c.Scaling().GetPolicy(stub.ID, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a purged job's policy: %v", err)
	}
}

// TestNomadClient_DeploymentUpdateAnswers: the answers of deployment
// changes carry what Nomad's do. A fail or an operator's unhealthy mark
// that auto-reverts names the version reverted to in RevertedJobVersion
// (what `nomad deployment fail` prints), and a pause, which makes no
// eval, has no EvalCreateIndex.
func TestNomadClient_DeploymentUpdateAnswers(t *testing.T) {
	ts, _ := newAPI(t, 2)
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCL(webHCL, true)
	if err != nil {
		t.Fatal(err)
	}
	job.TaskGroups[0].Update = manualUpdate(1, true)
	register := func(image string) *api.Deployment {
		t.Helper()
		job.TaskGroups[0].Tasks[0].Config["image"] = image
		return deploy(t, c, job)
	}
	register("nginx:1.26")
	if _, _, err := c.Jobs().Stable("web", 0, true, nil); err != nil {
		t.Fatal(err)
	}

	d := register("nginx:1.27") // version 1
	paused, _, err := c.Deployments().Pause(d.ID, true, nil)
	if err != nil || paused.EvalID != "" || paused.EvalCreateIndex != 0 || paused.DeploymentModifyIndex == 0 {
		t.Fatalf("pause: %v %+v", err, paused)
	}
	resumed, _, err := c.Deployments().Pause(d.ID, false, nil)
	if err != nil || resumed.EvalID == "" || resumed.EvalCreateIndex == 0 {
		t.Fatalf("resume: %v %+v", err, resumed)
	}
	failed, _, err := c.Deployments().Fail(d.ID, nil)
	if err != nil || failed.EvalID == "" || failed.RevertedJobVersion == nil || *failed.RevertedJobVersion != 0 {
		t.Fatalf("fail with an auto-revert: %v %+v", err, failed)
	}

	d = register("nginx:1.28") // version 3, after the revert's version 2
	allocs, _, err := c.Deployments().Allocations(d.ID, nil)
	if err != nil || len(allocs) == 0 {
		t.Fatalf("allocations of deployment %s: %v %d", d.ID, err, len(allocs))
	}
	unhealthy, _, err := c.Deployments().SetAllocHealth(d.ID, nil, []string{allocs[0].ID}, nil)
	if err != nil || unhealthy.RevertedJobVersion == nil || *unhealthy.RevertedJobVersion != 0 {
		t.Fatalf("an unhealthy mark with an auto-revert: %v %+v", err, unhealthy)
	}
}

// TestNomadClient_RelatedEvals: `?related=true` (nomad eval status
// -verbose) lists the evals of the chain, and, as Nomad's, `[]` for an
// eval that has none; without it, RelatedEvals is null.
func TestNomadClient_RelatedEvals(t *testing.T) {
	ts, srv := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	alone := mustRegister(t, srv, servertest.Job("small", sdk.JobTypeService, 1, 100, 64))
	servertest.WaitForEval(t, srv, alone)
	first := mustRegister(t, srv, servertest.Job("big", sdk.JobTypeService, 1, 100_000, 64))
	blocked := servertest.WaitForEval(t, srv, first).BlockedEval
	if blocked == "" {
		t.Fatal("no blocked eval")
	}
	for id, want := range map[string]string{first: blocked, blocked: first} {
		e, _, err := c.Evaluations().Info(id, &api.QueryOptions{Params: map[string]string{"related": "true"}})
		if err != nil || len(e.RelatedEvals) != 1 || e.RelatedEvals[0].ID != want {
			t.Fatalf("eval %s's related evals: %v %+v, want %s", id, err, e, want)
		}
	}
	for q, want := range map[string]string{"?related=true": `"RelatedEvals":[]`, "": `"RelatedEvals":null`} {
		if resp, out := do(t, "GET", ts.URL+"/v1/evaluation/"+alone+q, ""); resp.StatusCode != 200 || !strings.Contains(string(out), want) {
			t.Errorf("eval%s: %d, want %s in %s", q, resp.StatusCode, want, out)
		}
	}
}

// TestNomadClient_EmptyJobIDInAWritePath: a write whose path has an empty
// job ID (PUT /v1/job//scale, Scale("", ...)) is redirected to the clean
// path with a 301, as Nomad's ServeMux does, so the client follows it
// with a GET and is told there is no such job: with a 307 it would send
// its PUT and body to /v1/job/scale, a write of a job named "scale".
func TestNomadClient_EmptyJobIDInAWritePath(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	one := 1
	for _, group := range []string{"", "frontend"} {
		_, _, err := c.Jobs().Scale("", group, &one, "reason", false, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("scale of job \"\" group %q: %v, want a 404", group, err)
		}
	}
	if _, _, err := c.Jobs().Revert("", 0, nil, nil, "", ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("revert of job \"\": %v, want a 404", err)
	}
	if jobs, _, err := c.Jobs().List(nil); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs after the writes: %v, %d jobs, want none", err, len(jobs))
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ method, path, location string }{
		{http.MethodPut, "/v1/job//scale?region=global", "/v1/job/scale?region=global"},
		{http.MethodPost, "/v1/job/web/../plan", "/v1/job/plan"},
		{http.MethodGet, "/v1/job", "/v1/job/"},
	} {
		req, err := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(`{"Count": 1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s %s: %d to %q, want a 301 to %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Location"), tc.location)
		}
	}
}

// TestNomadClient_EventStreamKeyWithAColon: a topic whose key has a colon
// is refused in Nomad's words, which its clients and tests look for.
func TestNomadClient_EventStreamKeyWithAColon(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicEvaluation: {"::*"}}, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "400") ||
		!strings.Contains(err.Error(), "Invalid key value pair for topic, topic: Evaluation:::*") {
		t.Fatalf("stream of topic Evaluation:::*: %v, want Nomad's 400 %q", err, "Invalid key value pair")
	}
}

// TestNomadClient_VariableLocks: Nomad's client and its lock helper take,
// renew and release a variable lock; while it is held, another's
// acquisition is ErrLockConflict and a write without the lock's ID a
// conflict; its holder writes with it.
func TestNomadClient_VariableLocks(t *testing.T) {
	ts, _ := newAPI(t, 0)
	c := nomadClient(t, ts.URL)
	ctx := context.Background()
	locks, err := c.Locks(api.WriteOptions{}, api.Variable{Path: "app/leader", Lock: &api.VariableLock{TTL: "10s", LockDelay: "5s"}})
	if err != nil {
		t.Fatal(err)
	}
	if path, err := locks.Acquire(ctx); err != nil || path != "app/leader" {
		t.Fatalf("acquire = %q, %v", path, err)
	}
	held, _, err := c.Variables().Read("app/leader", nil)
	if err != nil || held.Lock == nil || held.Lock.TTL != "10s" || held.Lock.LockDelay != "5s" || held.LockID() == "" {
		t.Fatalf("the locked variable reads %+v, %v", held, err)
	}
	if list, _, err := c.Variables().PrefixList("app/", nil); err != nil || len(list) != 1 || list[0].Lock == nil || list[0].Lock.ID != held.LockID() {
		t.Fatalf("list = %+v, %v", list, err)
	}
	other, err := c.Locks(api.WriteOptions{}, api.Variable{Path: "app/leader", Lock: &api.VariableLock{TTL: "10s"}}, api.LocksOptionWithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx); !errors.Is(err, api.ErrLockConflict) {
		t.Fatalf("a second acquisition: err = %v, want ErrLockConflict", err)
	}
	if _, _, err := c.Variables().Update(&api.Variable{Path: "app/leader", Items: api.VariableItems{"who": "me"}}, nil); err == nil ||
		!strings.Contains(err.Error(), "409") {
		t.Fatalf("a write without the lock: err = %v, want a 409", err)
	}
	mine, _, err := c.Variables().Update(&api.Variable{Path: "app/leader", Items: api.VariableItems{"who": "me"},
		Lock: &api.VariableLock{ID: held.LockID()}}, nil)
	if err != nil || mine.LockID() != held.LockID() || mine.Items["who"] != "me" {
		t.Fatalf("the holder's write = %+v, %v", mine, err)
	}
	if err := locks.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Renew(ctx); !errors.Is(err, api.ErrLockConflict) {
		t.Fatalf("another's renewal: err = %v", err)
	}
	if err := locks.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _, err := c.Variables().Read("app/leader", nil); err != nil || v.Lock != nil || v.Items["who"] != "me" {
		t.Fatalf("after the release: %+v, %v", v, err)
	}
	if _, err := other.Acquire(ctx); err != nil {
		t.Fatalf("an acquisition after the release: %v", err)
	}
	if _, _, err := c.Variables().AcquireLock(&api.Variable{Path: "app/bad", Lock: &api.VariableLock{TTL: "1s"}}, nil); err == nil ||
		!strings.Contains(err.Error(), "TTL must be between 10 seconds and 24 hours") {
		t.Fatalf("a 1s TTL: err = %v", err)
	}
}
