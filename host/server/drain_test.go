package server_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// runClients plays the node agents: allocations placed become running,
// stopped ones complete, and a running service allocation is reported
// healthy (as by a migrate block with no min_healthy_time) on the next
// round.
func runClients(ctx context.Context, s *server.Server) { (&fakeClients{}).run(ctx, s) }

// fakeClients plays the node agents as runClients does, except that while
// holdStops is set they keep running the allocations told to stop (a
// slow shutdown), and while noHealth is set they report no health.
type fakeClients struct{ holdStops, noHealth atomic.Bool }

func (c *fakeClients) run(ctx context.Context, s *server.Server) {
	healthy := true
	for ctx.Err() == nil {
		var updates []server.AllocUpdate
		for _, a := range s.Store().Snapshot().Allocs() {
			switch {
			case a.ClientTerminalStatus():
			case a.DesiredStatus != sdk.AllocDesiredStatusRun:
				if !c.holdStops.Load() {
					updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete})
				}
			case a.ClientStatus != sdk.AllocClientStatusRunning:
				updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning})
			case a.Job != nil && a.Job.Type == sdk.JobTypeService && !a.DeploymentStatus.HasHealth() &&
				!c.noHealth.Load():
				updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning,
					DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}})
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
	registerMigrating(t, s, 4)
	node0 := servertest.Node(0, 8000, 8192).ID
	for i := 1; i <= 2; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 8000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.UpdateNodeDrain(node0, &server.DrainSpec{}, false, nil); err != nil {
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
	checkDrained(t, s.Store().Snapshot(), []string{node0}, 4, 4)
}

// TestDrain_CompletesOnceTheNodeStoppedItsAllocations: as in Nomad, a
// drain is complete once the node reported its allocations stopped, not
// once the server told it to stop them: whoever shuts a node down when its
// drain completes must not kill what still runs there.
func TestDrain_CompletesOnceTheNodeStoppedItsAllocations(t *testing.T) {
	s := servertest.New(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clients fakeClients
	go clients.run(ctx, s)
	node0 := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(node0); err != nil {
		t.Fatal(err)
	}
	registerMigrating(t, s, 1)
	waitFor(t, "the allocation's health", func() bool {
		as := s.Store().Snapshot().AllocsByNode(node0.ID)
		return len(as) == 1 && as[0].DeploymentStatus.HasHealth()
	})
	if _, _, err := s.RegisterNode(servertest.Node(1, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	clients.holdStops.Store(true)
	if _, err := s.UpdateNodeDrain(node0.ID, &server.DrainSpec{}, false, nil); err != nil {
		t.Fatal(err)
	}
	var old *sdk.Allocation
	waitFor(t, "the allocation to be told to stop", func() bool {
		old = s.Store().Snapshot().AllocsByNode(node0.ID)[0]
		return old.DesiredStatus == sdk.AllocDesiredStatusStop
	})
	waitFor(t, "the replacement's health", func() bool {
		r := s.Store().Snapshot().Alloc(old.NextAllocation)
		return r != nil && r.DeploymentStatus.HasHealth()
	})
	// A few drainer rounds while the node still runs it, with nothing else
	// to wait for.
	time.Sleep(1500 * time.Millisecond)
	if n := s.Store().Snapshot().Node(node0.ID); n.DrainStrategy == nil {
		t.Fatalf("the drain ended (%v) while the node still runs %s", n.LastDrain, old.ID)
	}
	clients.holdStops.Store(false)
	waitFor(t, "the drain to complete", func() bool { return s.Store().Snapshot().Node(node0.ID).DrainStrategy == nil })
	snap := s.Store().Snapshot()
	if a := snap.Alloc(old.ID); !a.ClientTerminalStatus() {
		t.Fatalf("drain complete, and %s is %s on its node", a.ID, a.ClientStatus)
	}
	if n := snap.Node(node0.ID); n.LastDrain["Status"] != "complete" {
		t.Fatalf("drain ended as %v", n.LastDrain)
	}
}

// TestDrain_DeadlineEndsTheDrain: as in Nomad, the deadline marks what is
// left and completes the drain, with the node event's detail
// deadline_reached, even when replacements never report their health
// (which holds the group's next moves until then).
func TestDrain_DeadlineEndsTheDrain(t *testing.T) {
	s := servertest.New(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clients fakeClients
	go clients.run(ctx, s)
	node0 := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(node0); err != nil {
		t.Fatal(err)
	}
	registerMigrating(t, s, 2)
	waitFor(t, "the allocations' health", func() bool {
		as := s.Store().Snapshot().AllocsByNode(node0.ID)
		return len(as) == 2 && as[0].DeploymentStatus.HasHealth() && as[1].DeploymentStatus.HasHealth()
	})
	clients.noHealth.Store(true)
	if _, _, err := s.RegisterNode(servertest.Node(1, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	const deadline = 1500 * time.Millisecond
	start := time.Now()
	if _, err := s.UpdateNodeDrain(node0.ID, &server.DrainSpec{Deadline: deadline}, false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drain to end", func() bool { return s.Store().Snapshot().Node(node0.ID).DrainStrategy == nil })
	if took := time.Since(start); took < deadline {
		t.Fatalf("the drain ended after %v, before its deadline", took)
	}
	snap := s.Store().Snapshot()
	n := snap.Node(node0.ID)
	last := n.Events[len(n.Events)-1]
	if last.Message != "Node drain complete" || last.Details["deadline_reached"] != "true" || n.LastDrain["Status"] != "complete" {
		t.Fatalf("drain ended with event %+v, LastDrain %v", last, n.LastDrain)
	}
	for _, a := range snap.AllocsByNode(node0.ID) {
		if !a.DesiredTransition.ShouldMigrate() {
			t.Errorf("allocation %s left unmarked at the deadline", a.ID)
		}
	}
}

// TestUpdateNodeDrain_AsNomadsEndpoint: the drain endpoint's bookkeeping,
// as Nomad's Node.UpdateDrain: an update keeps the drain's start and says
// so, a cancel says "Node drain disabled", a cancel of a node that does
// not drain is a no-op (no event) that MarkEligible still makes eligible,
// and a drain at once stores no ForceDeadline.
func TestUpdateNodeDrain_AsNomadsEndpoint(t *testing.T) {
	s := servertest.New(t, nil, nil)
	node := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(node); err != nil {
		t.Fatal(err)
	}
	// An allocation that does not move before the deadline keeps the node
	// draining (nobody plays its node: it stays pending).
	job := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
	job.TaskGroups[0].Migrate = &sdk.MigrateStrategy{MaxParallel: 0, HealthCheck: "checks"}
	servertest.WaitForEval(t, s, registerJob(t, s, job))
	nodeNow := func() *sdk.Node { return s.Store().Snapshot().Node(node.ID) }
	lastEvent := func() string { ev := nodeNow().Events; return ev[len(ev)-1].Message }

	events := len(nodeNow().Events)
	if _, err := s.UpdateNodeDrain(node.ID, nil, false, nil); err != nil {
		t.Fatalf("canceling the drain of a node that does not drain: %v", err)
	}
	if n := nodeNow(); len(n.Events) != events || n.LastDrain != nil {
		t.Fatalf("a no-op cancel recorded events %+v, LastDrain %v", n.Events[events:], n.LastDrain)
	}

	if _, err := s.UpdateNodeDrain(node.ID, &server.DrainSpec{Deadline: time.Hour}, false, nil); err != nil {
		t.Fatal(err)
	}
	started := nodeNow().DrainStrategy.StartedAt
	if lastEvent() != "Node drain strategy set" {
		t.Fatalf("drain started with event %q", lastEvent())
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := s.UpdateNodeDrain(node.ID, &server.DrainSpec{Deadline: 2 * time.Hour}, false, nil); err != nil {
		t.Fatal(err)
	}
	if ds := nodeNow().DrainStrategy; !ds.StartedAt.Equal(started) || ds.ForceDeadline.Sub(ds.StartedAt) < 2*time.Hour ||
		lastEvent() != "Node drain strategy updated" {
		t.Fatalf("updated drain %+v (started %v), event %q", ds, started, lastEvent())
	}

	if _, err := s.UpdateNodeDrain(node.ID, nil, false, nil); err != nil {
		t.Fatal(err)
	}
	if n := nodeNow(); n.DrainStrategy != nil || lastEvent() != "Node drain disabled" ||
		n.SchedulingEligibility != sdk.NodeSchedulingIneligible {
		t.Fatalf("canceled: drain %+v, event %q, eligibility %s", n.DrainStrategy, lastEvent(), n.SchedulingEligibility)
	}
	events = len(nodeNow().Events)
	if _, err := s.UpdateNodeDrain(node.ID, nil, true, nil); err != nil {
		t.Fatalf("marking eligible a node that does not drain: %v", err)
	}
	if n := nodeNow(); len(n.Events) != events || n.SchedulingEligibility != sdk.NodeSchedulingEligible {
		t.Fatalf("marked eligible: events %+v, eligibility %s", n.Events[events:], n.SchedulingEligibility)
	}

	if _, err := s.UpdateNodeDrain(node.ID, &server.DrainSpec{Deadline: -1}, false, nil); err != nil {
		t.Fatal(err)
	}
	if ds := nodeNow().DrainStrategy; ds != nil && !ds.ForceDeadline.IsZero() {
		t.Fatalf("drain at once stored ForceDeadline %v", ds.ForceDeadline)
	}
	waitFor(t, "the drain at once to complete", func() bool { return nodeNow().DrainStrategy == nil })
	if ev := nodeNow().Events[len(nodeNow().Events)-1]; ev.Message != "Node drain complete" || ev.Details["deadline_reached"] != "true" {
		t.Fatalf("drain at once ended with %+v", ev)
	}
}

// migratingNow counts the allocations of a job's group that are migrating:
// marked for migration and not yet replaced by a running allocation whose
// health was reported.
func migratingNow(snap *state.Snapshot, ns, jobID string) int {
	n := 0
	for _, a := range snap.AllocsByJob(ns, jobID) {
		if !a.DesiredTransition.ShouldMigrate() {
			continue
		}
		if !a.TerminalStatus() {
			n++
			continue
		}
		if next := snap.Alloc(a.NextAllocation); next == nil || next.ClientStatus != sdk.AllocClientStatusRunning ||
			!next.DeploymentStatus.HasHealth() {
			n++
		}
	}
	return n
}

// TestDrain_MaxParallelAcrossNodes: two nodes drained at the same moment
// share their group's migrate.max_parallel, as in Nomad: with max_parallel
// 1, never more than one allocation of the group migrates at a time,
// whatever node it is on.
func TestDrain_MaxParallelAcrossNodes(t *testing.T) {
	s := servertest.New(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go runClients(ctx, s)
	// Three nodes with room for two allocations each take the job's six.
	for i := range 3 {
		if _, _, err := s.RegisterNode(servertest.Node(i, 250, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	registerMigrating(t, s, 6)
	drained := []string{servertest.Node(0, 0, 0).ID, servertest.Node(1, 0, 0).ID}
	for _, id := range drained {
		if n := len(s.Store().Snapshot().AllocsByNode(id)); n != 2 {
			t.Fatalf("%d allocations on %s before the drain, want 2", n, id)
		}
	}
	waitFor(t, "the allocations to run", func() bool {
		for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
			if a.ClientStatus != sdk.AllocClientStatusRunning {
				return false
			}
		}
		return true
	})
	// Room for the replacements.
	for i := 3; i <= 4; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 8000, 8192)); err != nil {
			t.Fatal(err)
		}
	}

	// Watch every state the store reaches while the nodes drain.
	most := make(chan int, 1)
	watch, stop := context.WithCancel(ctx)
	go func() {
		top, index := 0, s.Store().LatestIndex()
		defer func() { most <- top }()
		for {
			snap, err := s.Store().WaitForIndex(watch, index+1)
			if err != nil {
				return
			}
			index = snap.Index()
			top = max(top, migratingNow(snap, "default", "web"))
		}
	}()
	for _, id := range drained {
		if _, err := s.UpdateNodeDrain(id, &server.DrainSpec{}, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		snap := s.Store().Snapshot()
		if snap.Node(drained[0]).DrainStrategy == nil && snap.Node(drained[1]).DrainStrategy == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the drains did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if top := <-most; top != 1 {
		t.Errorf("at most %d allocations migrated at once, want 1 (max_parallel)", top)
	}

	snap := s.Store().Snapshot()
	for _, id := range drained {
		if n := snap.Node(id); n.LastDrain["Status"] != "complete" {
			t.Errorf("drain of %s ended as %v", id, n.LastDrain)
		}
	}
	checkDrained(t, snap, drained, 6, 4)
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
	count := func(n int64) *int64 { return &n }
	res, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: count(5),
		Message: "up", Meta: sdk.Opaque{"policy": "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.WaitForEval(t, s, res.EvalID)
	if e.TriggeredBy != sdk.EvalTriggerScaling || e.Status != sdk.EvalStatusComplete {
		t.Fatalf("scale eval = %s / %s", e.TriggeredBy, e.Status)
	}
	snap := s.Store().Snapshot()
	if j := snap.Job("default", "web"); j.TaskGroups[0].Count != 5 || j.Version != 1 || j.JobModifyIndex != res.JobModifyIndex {
		t.Fatalf("job after scaling: count %d version %d modify index %d (answered %d)", j.TaskGroups[0].Count, j.Version,
			j.JobModifyIndex, res.JobModifyIndex)
	}
	if n := len(snap.AllocsByJob("default", "web")); n != 5 {
		t.Fatalf("%d allocations, want 5", n)
	}

	// An autoscaler's report without a count changes nothing but is kept,
	// newest first.
	res, err = s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Message: "policy failed", Error: true})
	if err != nil || res.EvalID != "" {
		t.Fatalf("an event alone: %v, eval %q", err, res.EvalID)
	}
	snap = s.Store().Snapshot()
	if j := snap.Job("default", "web"); j.TaskGroups[0].Count != 5 || j.Version != 1 {
		t.Fatalf("an event alone changed the job: count %d version %d", j.TaskGroups[0].Count, j.Version)
	}
	evs := snap.ScalingEvents("default", "web").ScalingEvents["g"]
	if len(evs) != 2 || !evs[0].Error || evs[0].Count != nil || evs[0].Message != "policy failed" ||
		evs[1].Count == nil || *evs[1].Count != 5 || evs[1].PreviousCount != 2 || evs[1].EvalID == nil ||
		*evs[1].EvalID != e.ID || evs[1].Meta["policy"] != "cpu" || evs[1].CreateIndex == 0 {
		t.Fatalf("scaling events: %+v", evs)
	}

	for _, tc := range []struct {
		name  string
		req   server.ScaleRequest
		wants string
	}{
		{"above the policy's max", server.ScaleRequest{Group: "g", Count: count(6)}, "outside the scaling policy's range"},
		{"below its min", server.ScaleRequest{Group: "g", Count: count(0)}, "outside the scaling policy's range"},
		{"an unknown group", server.ScaleRequest{Group: "nope", Count: count(2)}, `task group "nope"`},
		{"a negative count", server.ScaleRequest{Group: "g", Count: count(-1)}, "negative"},
		{"no group", server.ScaleRequest{Count: count(2)}, "missing task group"},
		{"a count with an error", server.ScaleRequest{Group: "g", Count: count(2), Error: true}, "should not contain count"},
	} {
		tc.req.Namespace, tc.req.JobID = "default", "web"
		if _, err := s.ScaleJob(tc.req); err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wants)
		}
	}
	if n := len(s.Store().Snapshot().ScalingEvents("default", "web").ScalingEvents["g"]); n != 2 {
		t.Errorf("%d events after refused requests, want 2", n)
	}
}

// TestScaleJob_BlockedDuringActiveDeployment: as Nomad, a count change is
// refused while a deployment of the job is running; an event alone is not.
func TestScaleJob_BlockedDuringActiveDeployment(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	job := servertest.Job("web", sdk.JobTypeService, 2, 100, 64)
	job.Update = sdk.UpdateStrategy{MaxParallel: 1, HealthCheck: "task_states", MinHealthyTime: time.Minute,
		HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	d := s.Store().Snapshot().LatestDeployment("default", "web")
	if d == nil || !d.Active() {
		t.Fatalf("no active deployment: %+v", d)
	}
	three := int64(3)
	if _, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &three}); err == nil ||
		!strings.Contains(err.Error(), "active deployment") {
		t.Fatalf("scaling during a deployment: %v", err)
	}
	if _, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Message: "waiting"}); err != nil {
		t.Fatalf("an event during a deployment: %v", err)
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
	if _, err := s.UpdateNodeDrain(node.ID, &server.DrainSpec{Deadline: -1}, false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the forced drain to complete", func() bool {
		n := s.Store().Snapshot().Node(node.ID)
		return n.DrainStrategy == nil && running() == 0
	})

	w, err := s.UpdateNodeDrain(node.ID, nil, true, nil)
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

// checkDrained checks job web after drains of the drained nodes: live
// allocations, none on a drained node, and, at max_parallel 1, one
// node-drain eval per allocation marked.
func checkDrained(t *testing.T, snap *state.Snapshot, drained []string, wantLive, wantDrainEvals int) {
	t.Helper()
	live := 0
	for _, a := range snap.AllocsByJob("default", "web") {
		if a.TerminalStatus() {
			continue
		}
		live++
		if slices.Contains(drained, a.NodeID) {
			t.Errorf("allocation %s still on the drained node %s", a.Name, a.NodeID)
		}
	}
	if live != wantLive {
		t.Errorf("%d live allocations after the drain, want %d", live, wantLive)
	}
	drains := 0
	for _, e := range snap.EvalsByJob("default", "web") {
		if e.TriggeredBy == sdk.EvalTriggerNodeDrain {
			drains++
			// As Nomad's: the job's eval, for all the nodes of the round.
			if e.NodeID != "" {
				t.Errorf("node-drain eval %s names node %s", e.ID, e.NodeID)
			}
		}
	}
	if drains != wantDrainEvals {
		t.Errorf("%d node-drain evals, want %d (one per allocation at max_parallel 1)", drains, wantDrainEvals)
	}
}

// registerMigrating registers job web of count allocations, migrating one
// at a time, and waits for its eval.
func registerMigrating(t *testing.T, s *server.Server, count int) {
	t.Helper()
	job := servertest.Job("web", sdk.JobTypeService, count, 100, 64)
	job.TaskGroups[0].Migrate = &sdk.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks",
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
}

// A job stored before a check it fails was added (a version's stricter
// validation) can still be scaled: scaling changes the count alone, and
// checks that, as Nomad's Job.Scale does. Registering the job again is
// still refused.
func TestScaleJob_StoredJobThatLaterChecksRefuse(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	job := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
	job.Namespace = sdk.DefaultNamespace
	// Ten attempts 30 s apart do not fit in a minute.
	job.TaskGroups[0].ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: 10, Interval: time.Minute,
		Delay: 30 * time.Second, DelayFunction: "constant"}
	if _, _, err := s.RegisterJob(job.Copy()); err == nil || !strings.Contains(err.Error(), "attempts") {
		t.Fatalf("registration of a job the reschedule check refuses: %v", err)
	}
	if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: job.Copy()}); err != nil {
		t.Fatal(err)
	}
	count := int64(3)
	res, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &count})
	if err != nil {
		t.Fatalf("scaling the stored job: %v", err)
	}
	servertest.WaitForEval(t, s, res.EvalID)
	if j := s.Store().Snapshot().Job("default", "web"); j.TaskGroups[0].Count != 3 {
		t.Fatalf("count %d after scaling, want 3", j.TaskGroups[0].Count)
	}
	// The plan size limit still applies to a scaled count.
	huge := int64(1 << 40)
	if _, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &huge}); err == nil {
		t.Fatal("a count over the plan size limit was scaled to")
	}
}

// TestScaleJob_SysBatch: as Nomad's Job.Scale, which refuses only system
// jobs, a sysbatch group's count can be scaled, and it runs that many
// allocations on each node; a system job's cannot.
func TestScaleJob_SysBatch(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for i := 0; i < 2; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 8000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	count := func(n int64) *int64 { return &n }
	for _, typ := range []string{sdk.JobTypeSysBatch, sdk.JobTypeSystem} {
		evalID, _, err := s.RegisterJob(servertest.Job(typ, typ, 1, 100, 64))
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, evalID)
	}
	res, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: sdk.JobTypeSysBatch, Group: "g", Count: count(3)})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, res.EvalID)
	if n := len(s.Store().Snapshot().AllocsByJob("default", sdk.JobTypeSysBatch)); n != 6 {
		t.Fatalf("%d allocations, want 3 on each of 2 nodes", n)
	}
	if _, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: sdk.JobTypeSystem, Group: "g", Count: count(2)}); err == nil ||
		!strings.Contains(err.Error(), "no count to scale") {
		t.Fatalf("scaling a system job: %v", err)
	}
}

// A node agent that registers again (restarted, or back after a lost
// connection) sends its node without what the servers own: the drain, the
// eligibility, the last drain and the events are kept, as Nomad keeps
// them, and the first registration is an event.
func TestRegisterNode_KeepsWhatTheServersOwn(t *testing.T) {
	s := servertest.New(t, nil, nil)
	n := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	first := s.Store().Snapshot().Node(n.ID)
	if len(first.Events) != 1 || first.Events[0].Message != "Node registered" || first.Events[0].Subsystem != "Cluster" {
		t.Fatalf("events of a new node: %+v", first.Events)
	}
	if _, err := s.UpdateNodeDrain(n.ID, &server.DrainSpec{Deadline: time.Hour}, false, nil); err != nil {
		t.Fatal(err)
	}
	drained := s.Store().Snapshot().Node(n.ID)
	again := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(again); err != nil {
		t.Fatal(err)
	}
	got := s.Store().Snapshot().Node(n.ID)
	if got.DrainStrategy == nil || got.SchedulingEligibility != sdk.NodeSchedulingIneligible ||
		len(got.Events) != len(drained.Events) || got.Events[len(got.Events)-1].Message != "Node drain strategy set" {
		t.Fatalf("registered again: drain %+v eligibility %s events %+v", got.DrainStrategy, got.SchedulingEligibility, got.Events)
	}
}

// As Nomad's: marking a node ineligible creates no eval (it keeps what it
// runs); marking it eligible again evaluates its system jobs. A draining
// node cannot be marked eligible.
func TestUpdateNodeEligibility_EvaluatesOnlyANodeTurningEligible(t *testing.T) {
	s := servertest.New(t, nil, nil)
	n := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("sys", sdk.JobTypeSystem, 1, 100, 64)))
	for _, tc := range []struct {
		eligibility string
		evals       bool
	}{{sdk.NodeSchedulingIneligible, false}, {sdk.NodeSchedulingIneligible, false}, {sdk.NodeSchedulingEligible, true}} {
		w, err := s.UpdateNodeEligibility(n.ID, tc.eligibility)
		if err != nil {
			t.Fatal(err)
		}
		if (len(w.EvalIDs) > 0) != tc.evals {
			t.Fatalf("marked %s: evals %v", tc.eligibility, w.EvalIDs)
		}
	}
	if _, err := s.UpdateNodeDrain(n.ID, &server.DrainSpec{Deadline: time.Hour}, false, nil); err != nil {
		t.Fatal(err)
	}
	if w, err := s.UpdateNodeEligibility(n.ID, sdk.NodeSchedulingEligible); err == nil || len(w.EvalIDs) > 0 {
		t.Fatalf("a draining node marked eligible: evals %v, %v (want refused)", w.EvalIDs, err)
	}
}
