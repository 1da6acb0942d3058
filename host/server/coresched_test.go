package server_test

import (
	"context"
	"maps"
	"testing"
	"time"

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
	return coreServerWith(t, nil)
}

// coreServerWith is coreServer with its configuration modified.
func coreServerWith(t *testing.T, modify func(*server.Config)) *server.Server {
	t.Helper()
	reg := servertest.NativeBuiltins(t, 1)
	f := native.New(plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}, MirrorEvals: true},
		func() sdk.Scheduler { return &core.Scheduler{} })
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: "native"}); err != nil {
		t.Fatal(err)
	}
	s := servertest.New(t, reg, modify)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCoreScheduler_Timers: the leader creates each kind of core eval on
// its own interval, as Nomad's schedulePeriodic does with its eval, job,
// node and deployment GC tickers: job_gc_interval (JobGCInterval) paces
// job GC alone.
func TestCoreScheduler_Timers(t *testing.T) {
	const fast, slow = 20 * time.Millisecond, time.Hour
	kinds := []string{sdk.CoreJobEvalGC, sdk.CoreJobJobGC, sdk.CoreJobNodeGC, sdk.CoreJobDeploymentGC}
	for _, tc := range []struct {
		name string
		set  func(c *server.Config)
		want map[string]bool
	}{
		{"job GC slow", func(c *server.Config) {
			c.EvalGCInterval, c.NodeGCInterval, c.DeploymentGCInterval, c.JobGCInterval = fast, fast, fast, slow
		}, map[string]bool{sdk.CoreJobEvalGC: true, sdk.CoreJobNodeGC: true, sdk.CoreJobDeploymentGC: true}},
		{"only job GC fast", func(c *server.Config) {
			c.EvalGCInterval, c.NodeGCInterval, c.DeploymentGCInterval, c.JobGCInterval = slow, slow, slow, fast
		}, map[string]bool{sdk.CoreJobJobGC: true}},
		{"node and deployment GC fast", func(c *server.Config) {
			c.EvalGCInterval, c.NodeGCInterval, c.DeploymentGCInterval, c.JobGCInterval = slow, fast, fast, slow
		}, map[string]bool{sdk.CoreJobNodeGC: true, sdk.CoreJobDeploymentGC: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := coreServerWith(t, tc.set)
			created := func() map[string]bool {
				got := map[string]bool{}
				snap := s.Store().Snapshot()
				for _, k := range kinds {
					if len(snap.EvalsByJob(sdk.CoreJobNamespace, k)) > 0 {
						got[k] = true
					}
				}
				return got
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(created()) < len(tc.want) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(5 * fast) // the slow ones would have had their chance
			if got := created(); !maps.Equal(got, tc.want) {
				t.Fatalf("core evals created: %v, want %v", got, tc.want)
			}
		})
	}
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
