package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/rs/zerolog"
)

// collectAll is a core scheduler that asks to collect every terminal eval
// and allocation, and, when greedy, also every allocation whatever its state.
type collectAll struct {
	greedy bool
	seen   chan map[string]string
}

func (c *collectAll) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	c.seen <- ctx.Config
	es, ok := ctx.State.(sdk.EvalState)
	if !ok {
		return errors.New("state does not mirror evals")
	}
	req := &sdk.GCRequest{}
	for _, e := range es.Evals() {
		if e.TerminalStatus() && e.Type != sdk.JobTypeCore {
			req.Evals = append(req.Evals, e.ID)
		}
	}
	for _, n := range ctx.State.Nodes() {
		for _, a := range ctx.State.AllocsByNode(n.ID) {
			if c.greedy || a.TerminalStatus() {
				req.Allocs = append(req.Allocs, a.ID)
			}
		}
	}
	if err := ctx.Planner.(sdk.Collector).GarbageCollect(req); err != nil {
		return err
	}
	done := eval.Copy()
	done.Status = sdk.EvalStatusComplete
	return ctx.Planner.UpdateEval(done)
}

func gcServer(t *testing.T, greedy bool) (*server.Server, *collectAll) {
	reg := servertest.NativeBuiltins(t, 1)
	core := &collectAll{greedy: greedy, seen: make(chan map[string]string, 16)}
	f := native.New(plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}, MirrorEvals: true},
		func() sdk.Scheduler { return core })
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: "native"}); err != nil {
		t.Fatal(err)
	}
	s := servertest.New(t, reg, func(c *server.Config) { c.Broker.DeliveryLimit = 1; c.EvalGCThreshold = 42 * time.Minute })
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	return s, core
}

func TestGC_ForceCollectsTerminalObjects(t *testing.T) {
	s, core := gcServer(t, false)
	evalID, _, err := s.RegisterJob(servertest.Job("web", "service", 2, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	stopID, _, err := s.DeregisterJob("default", "web", false)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, stopID)

	servertest.ForceGC(t, s, sdk.EvalStatusComplete)
	if cfg := <-core.seen; cfg[sdk.ConfigEvalGCThreshold] != "42m0s" {
		t.Errorf("core config = %v, want the server's eval GC threshold", cfg)
	}
	snap := s.Store().Snapshot()
	if n := len(snap.AllocsByJob("default", "web")); n != 0 {
		t.Errorf("%d stopped allocations survived GC", n)
	}
	if snap.Eval(evalID) != nil || snap.Eval(stopID) != nil {
		t.Error("terminal evals survived GC")
	}
}

// A user's job may be named like a kind of collection: the collector's
// evals are in their own namespace, not among the job's. (No allocation:
// this test's collector takes every terminal eval.)
func TestGC_CoreEvalsAreNotAJobsEvals(t *testing.T) {
	s, _ := gcServer(t, false)
	evalID, _, err := s.RegisterJob(servertest.Job(sdk.CoreJobForceGC, "service", 0, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	gcID := servertest.ForceGC(t, s, sdk.EvalStatusComplete).ID
	snap := s.Store().Snapshot()
	if e := snap.Eval(gcID); e.Namespace != sdk.CoreJobNamespace {
		t.Errorf("core eval in namespace %q, want %q", e.Namespace, sdk.CoreJobNamespace)
	}
	for _, e := range snap.EvalsByJob(sdk.DefaultNamespace, sdk.CoreJobForceGC) {
		if e.ID != evalID {
			t.Errorf("job %s/%s has eval %s (type %s) besides its own", sdk.DefaultNamespace, sdk.CoreJobForceGC, e.ID, e.Type)
		}
	}
}

func TestGC_LiveObjectsAreNotCollected(t *testing.T) {
	s, _ := gcServer(t, true)
	evalID, _, err := s.RegisterJob(servertest.Job("web", "service", 2, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	// The request names live allocations: it is refused whole, the plugin's
	// eval fails (delivery limit 1) and nothing is deleted.
	e := servertest.ForceGC(t, s, sdk.EvalStatusFailed)
	if e.NextEval != "" {
		t.Errorf("a core eval got a failed-follow-up: %s", e.NextEval)
	}
	if n := len(s.Store().Snapshot().AllocsByJob("default", "web")); n != 2 {
		t.Fatalf("%d allocations left, want 2", n)
	}
}

// TestGC_JobSummaryKeepsWhatWasCollected: as Nomad's summary, which keeps
// running totals, a job's summary still counts the terminal allocations
// garbage collection took (QA saw Complete, Failed and Lost go back to 0,
// and the summary's index go back).
func TestGC_JobSummaryKeepsWhatWasCollected(t *testing.T) {
	s, _ := gcServer(t, false)
	j := servertest.Job("b", sdk.JobTypeBatch, 3, 100, 64)
	j.TaskGroups[0].ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: 0}
	evalID, _, err := s.RegisterJob(j)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	allocs := s.Store().Snapshot().AllocsByJob("default", "b")
	if len(allocs) != 3 {
		t.Fatalf("placed %d, want 3", len(allocs))
	}
	if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: allocs[0].ID, ClientStatus: sdk.AllocClientStatusFailed},
		{ID: allocs[1].ID, ClientStatus: sdk.AllocClientStatusComplete}, {ID: allocs[2].ID, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	summary := func() *server.Summary {
		snap := s.Store().Snapshot()
		return server.JobSummary(snap, snap.Job("default", "b"))
	}
	want := server.TaskGroupSummary{Failed: 1, Complete: 2}
	before := summary()
	if got := *before.Summary["g"]; got != want {
		t.Fatalf("summary before GC %+v, want %+v", got, want)
	}

	servertest.ForceGC(t, s, sdk.EvalStatusComplete)
	snap := s.Store().Snapshot()
	if n := len(snap.AllocsByJob("default", "b")); n != 0 || snap.Eval(evalID) != nil {
		t.Fatalf("%d allocations and the eval (%v) left after GC, want none", n, snap.Eval(evalID) != nil)
	}
	after := summary()
	if got := *after.Summary["g"]; got != want {
		t.Fatalf("summary after GC %+v, want %+v as before", got, want)
	}
	if after.ModifyIndex < before.ModifyIndex {
		t.Fatalf("summary index went back from %d to %d", before.ModifyIndex, after.ModifyIndex)
	}
}
