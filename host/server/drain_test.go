package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// runClients plays the node agents: allocations placed become running,
// stopped ones complete.
func runClients(ctx context.Context, s *server.Server) {
	for ctx.Err() == nil {
		var updates []server.AllocUpdate
		for _, a := range s.Store().Snapshot().Allocs() {
			switch {
			case a.ClientTerminalStatus():
			case a.DesiredStatus != sdk.AllocDesiredStatusRun:
				updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete})
			case a.ClientStatus != sdk.AllocClientStatusRunning:
				updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning})
			}
		}
		if len(updates) > 0 {
			_, _ = s.UpdateAllocsFromClient(updates)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDrain_MigratesEverythingThenCompletes(t *testing.T) {
	s := servertest.New(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go runClients(ctx, s)
	if _, _, err := s.RegisterNode(servertest.Node(0, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	job := servertest.Job("web", sdk.JobTypeService, 4, 100, 64)
	job.TaskGroups[0].Migrate = &sdk.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks",
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	node0 := servertest.Node(0, 8000, 8192).ID
	for i := 1; i <= 2; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 8000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.UpdateNodeDrain(node0, &server.DrainSpec{}, false); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		n := s.Store().Snapshot().Node(node0)
		if n.DrainStrategy == nil {
			if n.LastDrain["Status"] != "complete" || n.SchedulingEligibility != sdk.NodeSchedulingIneligible {
				t.Fatalf("drain ended as %v, eligibility %s", n.LastDrain, n.SchedulingEligibility)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("drain did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	snap := s.Store().Snapshot()
	live := 0
	for _, a := range snap.AllocsByJob("default", "web") {
		if a.TerminalStatus() {
			continue
		}
		live++
		if a.NodeID == node0 {
			t.Errorf("allocation %s still on the drained node", a.Name)
		}
	}
	if live != 4 {
		t.Errorf("%d live allocations after the drain, want 4", live)
	}
	// max_parallel 1: one batch, and so one node-drain eval, per allocation.
	drains := 0
	for _, e := range snap.EvalsByJob("default", "web") {
		if e.TriggeredBy == sdk.EvalTriggerNodeDrain {
			drains++
		}
	}
	if drains != 4 {
		t.Errorf("%d node-drain evals, want 4 (one per allocation at max_parallel 1)", drains)
	}
}

func TestScaleJob(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	job := servertest.Job("web", sdk.JobTypeService, 2, 100, 64)
	job.TaskGroups[0].Scaling = &sdk.ScalingPolicy{Enabled: true, Min: 1, Max: 5}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	evalID, _, err = s.ScaleJob("default", "web", "g", 5)
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.WaitForEval(t, s, evalID)
	if e.TriggeredBy != sdk.EvalTriggerScaling || e.Status != sdk.EvalStatusComplete {
		t.Fatalf("scale eval = %s / %s", e.TriggeredBy, e.Status)
	}
	snap := s.Store().Snapshot()
	if j := snap.Job("default", "web"); j.TaskGroups[0].Count != 5 || j.Version != 1 {
		t.Fatalf("job after scaling: count %d version %d", j.TaskGroups[0].Count, j.Version)
	}
	if n := len(snap.AllocsByJob("default", "web")); n != 5 {
		t.Fatalf("%d allocations, want 5", n)
	}
	for _, tc := range []struct {
		group string
		count int
	}{{"g", 6}, {"g", 0}, {"nope", 2}, {"g", -1}} {
		if _, _, err := s.ScaleJob("default", "web", tc.group, tc.count); err == nil {
			t.Errorf("scaling %s to %d was accepted", tc.group, tc.count)
		}
	}
}

// TestDrain_CancelMarkingEligibleBringsSystemJobsBack: a forced drain stops
// the node's system allocation; canceling it with MarkEligible makes the
// node eligible with node-update evals, as Nomad does, so the system job
// runs there again.
func TestDrain_CancelMarkingEligibleBringsSystemJobsBack(t *testing.T) {
	s := servertest.New(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go runClients(ctx, s)
	node := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(node); err != nil {
		t.Fatal(err)
	}
	evalID, _, err := s.RegisterJob(servertest.Job("mon", sdk.JobTypeSystem, 1, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	running := func() int {
		n := 0
		for _, a := range s.Store().Snapshot().AllocsByNode(node.ID) {
			if !a.TerminalStatus() {
				n++
			}
		}
		return n
	}
	if running() != 1 {
		t.Fatalf("%d system allocations on the node before the drain, want 1", running())
	}
	if _, err := s.UpdateNodeDrain(node.ID, &server.DrainSpec{Deadline: -1}, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the forced drain to complete", func() bool {
		n := s.Store().Snapshot().Node(node.ID)
		return n.DrainStrategy == nil && running() == 0
	})

	w, err := s.UpdateNodeDrain(node.ID, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.EvalIDs) != 1 {
		t.Fatalf("eval IDs %v, want the system job's node-update eval", w.EvalIDs)
	}
	if e := servertest.WaitForEval(t, s, w.EvalIDs[0]); e.TriggeredBy != sdk.EvalTriggerNodeUpdate || e.JobID != "mon" {
		t.Fatalf("eval %+v, want mon's node-update", e)
	}
	if running() != 1 {
		t.Fatalf("%d system allocations on the node after the drain cancel, want 1", running())
	}
}
