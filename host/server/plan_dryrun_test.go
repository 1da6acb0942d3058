package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// oneInstance is a server whose schedulers run one plugin instance each, so
// a plan and the evals after it share that instance's state mirror.
func oneInstance(t *testing.T, nodes int, cpu int64) *server.Server {
	t.Helper()
	s := servertest.New(t, servertest.NativeBuiltins(t, 1), func(c *server.Config) { c.NumWorkers = 1 })
	for i := 0; i < nodes; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, cpu, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestPlanJob_NewJobPreviewsPlacementsAndCommitsNothing(t *testing.T) {
	s := oneInstance(t, 2, 4000)
	before := s.Store().LatestIndex()
	res, err := s.PlanJob(context.Background(), servertest.Job("web", "service", 3, 500, 256))
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Annotations.DesiredTGUpdates["g"]; u == nil || u.Place != 3 || u.Stop != 0 {
		t.Fatalf("annotations = %+v", res.Annotations.DesiredTGUpdates["g"])
	}
	if res.Plan == nil || len(res.FailedTGAllocs) != 0 || res.Current != nil || res.JobModifyIndex != 0 {
		t.Fatalf("result = %+v", res)
	}
	snap := s.Store().Snapshot()
	if snap.Job("default", "web") != nil || len(snap.AllocsByJob("default", "web")) != 0 || len(snap.EvalsByJob("default", "web")) != 0 {
		t.Fatal("a plan wrote to the state")
	}
	if s.Store().LatestIndex() != before {
		t.Fatalf("the state index moved from %d to %d", before, s.Store().LatestIndex())
	}
}

func TestPlanJob_ReportsWhatCannotBePlaced(t *testing.T) {
	s := oneInstance(t, 1, 1000)
	res, err := s.PlanJob(context.Background(), servertest.Job("big", "service", 2, 800, 256))
	if err != nil {
		t.Fatal(err)
	}
	if m := res.FailedTGAllocs["g"]; m == nil || m.DimensionExhausted["cpu"] == 0 {
		t.Fatalf("failures = %+v", res.FailedTGAllocs)
	}
	if len(res.CreatedEvals) != 1 || res.CreatedEvals[0].Status != sdk.EvalStatusBlocked {
		t.Fatalf("created evals = %+v", res.CreatedEvals)
	}
	if got := s.Store().Snapshot().EvalsByJob("default", "big"); len(got) != 0 {
		t.Fatalf("the blocked eval was committed: %+v", got)
	}
}

// A plan that preempts shows which allocations it would evict and counts
// them on the preempting group, as Nomad's plan does, and evicts nothing.
func TestPlanJob_AnnotatesPreemptions(t *testing.T) {
	s := oneInstance(t, 2, 1000)
	low := servertest.Job("low", "service", 2, 900, 256)
	low.Priority = 20
	evalID, _, err := s.RegisterJob(low)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	sys := servertest.Job("agent", sdk.JobTypeSystem, 1, 500, 64)
	sys.Priority = 90
	res, err := s.PlanJob(context.Background(), sys)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FailedTGAllocs) != 0 {
		t.Fatalf("failures = %+v", res.FailedTGAllocs)
	}
	pre := res.Annotations.PreemptedAllocs
	if len(pre) != 2 || pre[0].JobID != "low" || pre[1].JobID != "low" || pre[0].Name > pre[1].Name {
		t.Fatalf("preempted = %+v", pre)
	}
	if u := res.Annotations.DesiredTGUpdates["g"]; u == nil || u.Place != 2 || u.Preemptions != 2 {
		t.Fatalf("annotations = %+v", u)
	}
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "low") {
		if a.DesiredStatus != sdk.AllocDesiredStatusRun {
			t.Fatalf("the plan evicted %s", a.Name)
		}
	}
}

// TestPlanJob_LeavesTheMirrorHonest checks that the hypothetical job a
// plan shows the plugin does not outlive the plan: the next eval of the
// same job, which changes nothing about it, must see the registered job.
func TestPlanJob_LeavesTheMirrorHonest(t *testing.T) {
	s := oneInstance(t, 3, 4000)
	evalID, _, err := s.RegisterJob(servertest.Job("web", "service", 2, 500, 256))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	res, err := s.PlanJob(context.Background(), servertest.Job("web", "service", 5, 500, 256))
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Annotations.DesiredTGUpdates["g"]; u.Place != 3 || u.Ignore+u.InPlaceUpdate != 2 {
		t.Fatalf("plan of a scale-up: %+v", u)
	}
	if res.JobModifyIndex == 0 || res.Job.Version != 1 {
		t.Fatalf("plan: job modify index %d, version %d", res.JobModifyIndex, res.Job.Version)
	}
	evalID, _, err = s.EvaluateJob("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if n := len(s.Store().Snapshot().AllocsByJob("default", "web")); n != 2 {
		t.Fatalf("after a plan for 5 and a re-evaluation of the registered job (2), %d allocations", n)
	}
}

// Plans run back to back on one instance predict the same: the second,
// on the full sync that follows a scratch call, still links the running
// allocations to their job version and finds the change in place.
func TestPlanJob_RepeatedPlansAgree(t *testing.T) {
	s := oneInstance(t, 3, 4000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 3, 500, 256)))
	for i := range 3 {
		job := servertest.Job("web", "service", 3, 500, 256)
		job.TaskGroups[0].Tasks[0].KillTimeout = 7 * time.Second // an in-place change
		res, err := s.PlanJob(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		if u := res.Annotations.DesiredTGUpdates["g"]; u.InPlaceUpdate != 3 || u.DestructiveUpdate != 0 || u.Ignore != 0 {
			t.Fatalf("plan %d: %+v, want 3 in-place updates", i+1, u)
		}
	}
}

func TestPlanJob_RejectsInvalidJobs(t *testing.T) {
	s := oneInstance(t, 1, 4000)
	job := servertest.Job("web", "service", -1, 500, 256)
	if _, err := s.PlanJob(context.Background(), job); err == nil {
		t.Fatal("planned an invalid job")
	}
	job = servertest.Job("web", "service", 1, 500, 256)
	job.Scheduler = "nope"
	if _, err := s.PlanJob(context.Background(), job); err == nil {
		t.Fatal("planned a job for a scheduler that is not registered")
	}
}

func TestRegisterJobOpts(t *testing.T) {
	s := oneInstance(t, 2, 4000)
	first, _, err := s.RegisterJobOpts(servertest.Job("web", "service", 2, 500, 256), server.RegisterOptions{EvalPriority: 90})
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Store().Snapshot().Eval(first); e.Priority != 90 {
		t.Fatalf("eval priority %d, want 90", e.Priority)
	}
	servertest.WaitForEval(t, s, first)
	jmi := s.Store().Snapshot().Job("default", "web").JobModifyIndex
	// Refusals in Nomad's words (its CLI recognizes "Enforcing job modify
	// index"), as a conflict.
	for _, tc := range []struct {
		id   string
		jmi  uint64
		want string
	}{
		{"web", jmi + 1, fmt.Sprintf("Enforcing job modify index %d: job exists with conflicting job modify index: %d", jmi+1, jmi)},
		{"web", 0, "Enforcing job modify index 0: job already exists"},
		{"nope", 7, "Enforcing job modify index 7: job does not exist"},
	} {
		_, _, err := s.RegisterJobOpts(servertest.Job(tc.id, "service", 3, 500, 256), server.RegisterOptions{EnforceIndex: true, JobModifyIndex: tc.jmi})
		if !errors.Is(err, server.ErrConflict) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s at index %d: %v, want a conflict saying %q", tc.id, tc.jmi, err, tc.want)
		}
	}
	evalID, _, err := s.RegisterJobOpts(servertest.Job("web", "service", 4, 600, 256),
		server.RegisterOptions{EnforceIndex: true, JobModifyIndex: jmi, PreserveCounts: true})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if job := s.Store().Snapshot().Job("default", "web"); job.TaskGroups[0].Count != 2 || job.Version != 1 ||
		job.TaskGroups[0].Tasks[0].Resources.CPU != 600 {
		t.Fatalf("preserve counts: count %d, version %d, cpu %d", job.TaskGroups[0].Count, job.Version, job.TaskGroups[0].Tasks[0].Resources.CPU)
	}
	evalID, _, err = s.RegisterJobOpts(servertest.Job("web", "service", 2, 900, 256), server.RegisterOptions{PreserveResources: true})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if job := s.Store().Snapshot().Job("default", "web"); job.TaskGroups[0].Tasks[0].Resources.CPU != 600 {
		t.Fatalf("preserve resources: cpu %d, want 600", job.TaskGroups[0].Tasks[0].Resources.CPU)
	}
	if _, _, err := s.RegisterJobOpts(servertest.Job("web", "service", 1, 500, 256), server.RegisterOptions{EvalPriority: 500}); err == nil {
		t.Fatal("accepted an eval priority of 500")
	}
}

func TestJobSummary_CountsByStatus(t *testing.T) {
	s := oneInstance(t, 1, 1000)
	evalID, _, err := s.RegisterJob(servertest.Job("web", "service", 3, 400, 256))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	snap := s.Store().Snapshot()
	sum := server.JobSummary(snap, snap.Job("default", "web"))
	g := sum.Summary["g"]
	if g.Starting+g.Running != 2 || g.Queued != 1 {
		t.Fatalf("summary = %+v", g)
	}
	// As Nomad's, a job that launches no children counts none: zeros,
	// not null.
	if sum.Children == nil || *sum.Children != (server.ChildrenSummary{}) {
		t.Fatalf("children = %+v, want zeros", sum.Children)
	}
}

// A system job's allocations that preempted when they were placed keep
// the list of what they preempted; updated in place by a later plan, they
// preempt nothing more. Nomad counts a group's preemptions as its new
// placements make them (scheduler_system.go computePlacements), so a plan
// that updates one group in place and places a new one counts only the
// new group's.
func TestPlanJob_PreemptionsCountOnlyNewPlacements(t *testing.T) {
	s := oneInstance(t, 2, 1000)
	low := servertest.Job("low", "service", 2, 900, 256)
	low.Priority = 20
	servertest.WaitForEval(t, s, registerJob(t, s, low))
	sys := servertest.Job("agent", sdk.JobTypeSystem, 1, 500, 64)
	sys.Priority = 90
	servertest.WaitForEval(t, s, registerJob(t, s, sys))
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "agent") {
		if len(a.PreemptedAllocations) != 1 {
			t.Fatalf("setup: %s preempted %v, want one allocation of low", a.Name, a.PreemptedAllocations)
		}
	}
	var evicted []server.AllocUpdate // their nodes report them finished
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "low") {
		evicted = append(evicted, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete})
	}
	if _, err := s.UpdateAllocsFromClient(evicted); err != nil {
		t.Fatal(err)
	}
	low2 := servertest.Job("low2", "service", 2, 400, 256)
	low2.Priority = 20
	servertest.WaitForEval(t, s, registerJob(t, s, low2))

	next := servertest.Job("agent", sdk.JobTypeSystem, 1, 500, 64)
	next.Priority = 90
	g2 := next.Copy().TaskGroups[0]
	g2.Name = "g2"
	next.TaskGroups = append(next.TaskGroups, g2)
	res, err := s.PlanJob(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Annotations.DesiredTGUpdates["g"]; u == nil || u.InPlaceUpdate != 2 || u.Preemptions != 0 {
		t.Fatalf("g, updated in place: %+v, want 2 in-place updates and no preemption", u)
	}
	if u := res.Annotations.DesiredTGUpdates["g2"]; u == nil || u.Place != 2 || u.Preemptions != 2 {
		t.Fatalf("g2, placed: %+v, want 2 placements preempting 2", u)
	}
	if n := len(res.Annotations.PreemptedAllocs); n != 2 {
		t.Fatalf("preempted %d allocations, want the 2 of low2", n)
	}
}

// TestPlanJob_TemplatesAreAnnotated: a periodic or parameterized job is
// not evaluated when registered, and its plan says so with annotations
// that change nothing, never none (Nomad's CLI reads them unchecked: QA
// saw 'nomad job plan' panic on every template).
func TestPlanJob_TemplatesAreAnnotated(t *testing.T) {
	s := oneInstance(t, 1, 4000)
	periodic := servertest.Job("cron", sdk.JobTypeBatch, 2, 100, 64)
	periodic.Periodic = &sdk.PeriodicConfig{Enabled: true, SpecType: "cron", Spec: "*/5 * * * *"}
	dispatch := servertest.Job("report", sdk.JobTypeBatch, 1, 100, 64)
	dispatch.ParameterizedJob = &sdk.ParameterizedJobConfig{Payload: "optional"}
	for _, j := range []*sdk.Job{periodic, dispatch} {
		res, err := s.PlanJob(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		if res.Annotations == nil || res.Annotations.DesiredTGUpdates["g"] == nil {
			t.Fatalf("%s: annotations %+v, want the group's", j.ID, res.Annotations)
		}
		if u := *res.Annotations.DesiredTGUpdates["g"]; u != (sdk.DesiredUpdates{}) {
			t.Fatalf("%s: a template's plan changes %+v", j.ID, u)
		}
	}
}
