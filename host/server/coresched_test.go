package server_test

import (
	"context"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/core"
	"github.com/rs/zerolog"
)

// TestCoreScheduler_ForceGC runs the built-in core scheduler against a
// server: after a job is stopped and its allocations finish, a forced GC
// removes the job, its evals and its allocations, and leaves the rest.
func TestCoreScheduler_ForceGC(t *testing.T) {
	s := coreServer(t)
	for _, id := range []string{"gone", "kept"} {
		evalID, _, err := s.RegisterJob(servertest.Job(id, sdk.JobTypeService, 2, 100, 64))
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, evalID)
	}
	stopID, _, err := s.DeregisterJob("default", "gone", false)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, stopID)
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "gone") {
		if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
			t.Fatal(err)
		}
	}
	servertest.ForceGC(t, s, sdk.EvalStatusComplete)
	snap := s.Store().Snapshot()
	if snap.Job("default", "gone") != nil || len(snap.AllocsByJob("default", "gone")) != 0 || len(snap.EvalsByJob("default", "gone")) != 0 {
		t.Fatalf("the stopped job survived: job %v, %d allocs, %d evals", snap.Job("default", "gone") != nil,
			len(snap.AllocsByJob("default", "gone")), len(snap.EvalsByJob("default", "gone")))
	}
	if snap.Job("default", "kept") == nil || len(snap.AllocsByJob("default", "kept")) != 2 {
		t.Fatal("the running job was collected")
	}
}

// coreServer is a server with the built-in core scheduler and one node.
func coreServer(t *testing.T) *server.Server {
	t.Helper()
	reg := servertest.NativeBuiltins(t, 1)
	f := native.New(plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}, MirrorEvals: true},
		func() sdk.Scheduler { return &core.Scheduler{} })
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: "native"}); err != nil {
		t.Fatal(err)
	}
	s := servertest.New(t, reg, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCoreScheduler_ForceGC_OrphanedAlloc: an allocation whose eval was
// deleted (DELETE /v1/evaluations) is collected once it has stopped; its
// live sibling stays.
func TestCoreScheduler_ForceGC_OrphanedAlloc(t *testing.T) {
	s := coreServer(t)
	evalID, _, err := s.RegisterJob(servertest.Job("web", sdk.JobTypeService, 2, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	allocs := s.Store().Snapshot().AllocsByJob("default", "web")
	if len(allocs) != 2 {
		t.Fatalf("%d allocations placed, want 2", len(allocs))
	}
	stopped, sibling := allocs[0].ID, allocs[1].ID
	stopID, _, err := s.StopAlloc(stopped)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, stopID)
	if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: stopped, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEvals([]string{evalID}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{}); err != nil {
		t.Fatal(err)
	}
	servertest.ForceGC(t, s, sdk.EvalStatusComplete)
	snap := s.Store().Snapshot()
	if snap.Alloc(stopped) != nil {
		t.Error("the stopped allocation whose eval was deleted survived a forced GC")
	}
	if snap.Alloc(sibling) == nil || snap.Job("default", "web") == nil || len(snap.AllocsByJob("default", "web")) != 2 {
		t.Errorf("the live job lost allocations: %d left, want the sibling and the replacement", len(snap.AllocsByJob("default", "web")))
	}
}
