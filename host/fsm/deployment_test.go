package fsm

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

func TestDeploymentAccounting_PlacementsHealthAndPromotion(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	apply := func(i uint64, msg interface {
		MarshalMsg([]byte) ([]byte, error)
		UnmarshalMsg([]byte) ([]byte, error)
	}) {
		t.Helper()
		if err := f.ApplyDecoded(i, msg); err != nil {
			t.Fatal(err)
		}
	}
	apply(1, &NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}})
	apply(2, &JobRegisterRequest{Job: job})
	now := time.Unix(1000, 0)
	d := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning,
		TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 2, DesiredCanaries: 1, ProgressDeadline: time.Minute}}}
	canary := &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DeploymentID: "d1",
		DeploymentStatus: &sdk.AllocDeploymentStatus{Canary: true}, DesiredStatus: "run", ClientStatus: "pending"}
	other := &sdk.Allocation{ID: "a2", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DeploymentID: "d1",
		DesiredStatus: "run", ClientStatus: "pending"}
	apply(3, &ApplyPlanResultsRequest{Job: job, EvalID: "e1", Deployment: d, AllocsUpdated: []*sdk.Allocation{canary, other},
		UpdatedAt: now.UnixNano()})

	s := store.Snapshot().Deployment("d1").TaskGroups["g"]
	if s.PlacedAllocs != 2 || len(s.PlacedCanaries) != 1 || s.PlacedCanaries[0] != "a1" || !s.RequireProgressBy.Equal(now.Add(time.Minute)) {
		t.Fatalf("after placement: %+v", s)
	}

	healthy := true
	later := now.Add(10 * time.Second)
	apply(4, &AllocClientUpdateRequest{UpdatedAt: later.UnixNano(), Allocs: []*sdk.Allocation{
		{ID: "a1", ClientStatus: "running", DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}}}})
	snap := store.Snapshot()
	s = snap.Deployment("d1").TaskGroups["g"]
	if s.HealthyAllocs != 1 || s.UnhealthyAllocs != 0 || !s.RequireProgressBy.Equal(later.Add(time.Minute)) {
		t.Fatalf("after health: %+v", s)
	}
	if a := snap.Alloc("a1"); !a.DeploymentStatus.IsHealthy() || !a.DeploymentStatus.Canary || a.DeploymentStatus.ModifyIndex != 4 {
		t.Fatalf("health report dropped the canary mark or is not stamped with its index (4): %+v", a.DeploymentStatus)
	}
	// A repeated report does not count twice.
	apply(5, &AllocClientUpdateRequest{UpdatedAt: later.UnixNano(), Allocs: []*sdk.Allocation{
		{ID: "a1", ClientStatus: "running", DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}}}})
	if got := store.Snapshot().Deployment("d1").TaskGroups["g"].HealthyAllocs; got != 1 {
		t.Fatalf("healthy counted twice: %d", got)
	}

	// In-place updates: one into a new deployment is that deployment's
	// placement; one that stays in its deployment is not counted again.
	d2 := &sdk.Deployment{ID: "d2", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning,
		TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 1}}}
	moved := *store.Snapshot().Alloc("a2")
	moved.DeploymentID, moved.DeploymentStatus = "d2", nil
	stays := *store.Snapshot().Alloc("a1")
	finished := &sdk.Allocation{ID: "a3", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DeploymentID: "d1",
		DesiredStatus: "run", ClientStatus: "failed"}
	if err := store.Write(6, func(tx *state.Txn) error { return tx.UpsertAlloc(finished) }); err != nil {
		t.Fatal(err)
	}
	annotated := *finished
	annotated.DeploymentID, annotated.FollowupEvalID = "d2", "later"
	apply(7, &ApplyPlanResultsRequest{Job: job, EvalID: "e3", Deployment: d2, AllocsUpdated: []*sdk.Allocation{&moved, &stays, &annotated},
		UpdatedAt: later.UnixNano()})
	snap = store.Snapshot()
	if got := snap.Deployment("d2").TaskGroups["g"].PlacedAllocs; got != 1 {
		t.Fatalf("in-place updates into a deployment (one of a failed allocation) counted %d placements, want 1", got)
	}
	if got := snap.Deployment("d1").TaskGroups["g"].PlacedAllocs; got != 2 {
		t.Fatalf("an in-place update within the deployment changed its placements to %d, want 2", got)
	}

	ev := &sdk.Evaluation{ID: "e2", Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending,
		TriggeredBy: sdk.EvalTriggerDeploymentWatcher}
	promoted := later.Add(30 * time.Second)
	apply(8, &DeploymentPromoteRequest{DeploymentID: "d1", Eval: ev, UpdatedAt: promoted.UnixNano()})
	snap = store.Snapshot()
	if !snap.Deployment("d1").TaskGroups["g"].Promoted || snap.Eval("e2") == nil {
		t.Fatalf("promotion not applied")
	}
	// As Nomad's, a promotion gives the rollout after it a new deadline.
	if got := snap.Deployment("d1").TaskGroups["g"].RequireProgressBy; !got.Equal(promoted.Add(time.Minute)) {
		t.Fatalf("progress deadline after the promotion %v, want %v", got, promoted.Add(time.Minute))
	}
	// The promoted canary is one no more (a replacement of it is placed
	// as any allocation), as Nomad's state store writes it.
	if a := snap.Alloc("a1"); a.DeploymentStatus.Canary || a.DeploymentStatus.ModifyIndex != 8 || a.AllocModifyIndex != 8 ||
		!a.DeploymentStatus.IsHealthy() {
		t.Fatalf("promoted canary: %+v (alloc modify index %d)", a.DeploymentStatus, a.AllocModifyIndex)
	}
	if got := snap.Deployment("d1").TaskGroups["g"].PlacedCanaries; len(got) != 1 {
		t.Fatalf("placed canaries %v: the deployment still lists them", got)
	}
}

// A promotion sets the description to "running" only once no group awaits
// promotion, and a paused deployment stays described as paused; resumed,
// it has its progress deadline again (a paused deployment's does not run).
func TestDeploymentPromotion_DescriptionAndResume(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	apply := func(i uint64, msg entry) {
		t.Helper()
		if err := f.ApplyDecoded(i, msg); err != nil {
			t.Fatal(err)
		}
	}
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "a", Count: 1}, {Name: "b", Count: 1}}}
	apply(1, &JobRegisterRequest{Job: job})
	start := time.Unix(1000, 0)
	canaries := func() map[string]*sdk.DeploymentState {
		return map[string]*sdk.DeploymentState{
			"a": {DesiredTotal: 1, DesiredCanaries: 1, ProgressDeadline: time.Minute, RequireProgressBy: start.Add(time.Minute)},
			"b": {DesiredTotal: 1, DesiredCanaries: 1, ProgressDeadline: time.Minute, RequireProgressBy: start.Add(time.Minute)}}
	}
	apply(2, &ApplyPlanResultsRequest{Job: job, EvalID: "e1", UpdatedAt: start.UnixNano(), Deployment: &sdk.Deployment{ID: "d1",
		Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning,
		StatusDescription: sdk.DeploymentDescriptionRunningNeedsPromotion, TaskGroups: canaries()}})
	apply(3, &DeploymentPromoteRequest{DeploymentID: "d1", Groups: []string{"a"}, UpdatedAt: start.UnixNano()})
	if d := store.Snapshot().Deployment("d1"); d.StatusDescription != sdk.DeploymentDescriptionRunningNeedsPromotion {
		t.Fatalf("after promoting a alone: %q, want it to still need promotion", d.StatusDescription)
	}
	apply(4, &DeploymentStatusUpdateRequest{UpdatedAt: start.UnixNano(), Update: &sdk.DeploymentStatusUpdate{DeploymentID: "d1",
		Status: sdk.DeploymentStatusPaused, StatusDescription: sdk.DeploymentDescriptionPaused}})
	apply(5, &DeploymentPromoteRequest{DeploymentID: "d1", Groups: []string{"b"}, UpdatedAt: start.UnixNano()})
	if d := store.Snapshot().Deployment("d1"); d.StatusDescription != sdk.DeploymentDescriptionPaused {
		t.Fatalf("after promoting b while paused: %q, want it still paused", d.StatusDescription)
	}
	resumed := start.Add(time.Hour)
	apply(6, &DeploymentStatusUpdateRequest{UpdatedAt: resumed.UnixNano(), Update: &sdk.DeploymentStatusUpdate{DeploymentID: "d1",
		Status: sdk.DeploymentStatusRunning, StatusDescription: sdk.DeploymentDescriptionRunning}})
	for name, s := range store.Snapshot().Deployment("d1").TaskGroups {
		if !s.RequireProgressBy.Equal(resumed.Add(time.Minute)) {
			t.Fatalf("group %s: progress deadline %v after the resume, want %v", name, s.RequireProgressBy, resumed.Add(time.Minute))
		}
	}
}

// TestDeploymentSuccess_MarksTheJobVersionStable: the plan that marks a
// deployment successful marks its job version stable in the same entry.
func TestDeploymentSuccess_MarksTheJobVersionStable(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	if err := f.ApplyDecoded(1, &JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	d := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: 0, Status: sdk.DeploymentStatusRunning,
		TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 1}}}
	if err := f.ApplyDecoded(2, &ApplyPlanResultsRequest{Job: job, EvalID: "e1", Deployment: d}); err != nil {
		t.Fatal(err)
	}
	if store.Snapshot().JobVersion("default", "web", 0).Stable {
		t.Fatal("stable before the deployment succeeded")
	}
	done := &sdk.DeploymentStatusUpdate{DeploymentID: "d1", Status: sdk.DeploymentStatusSuccessful,
		StatusDescription: sdk.DeploymentDescriptionSuccessful}
	if err := f.ApplyDecoded(3, &ApplyPlanResultsRequest{Job: job, EvalID: "e2", DeploymentUpdates: []*sdk.DeploymentStatusUpdate{done}}); err != nil {
		t.Fatal(err)
	}
	snap := store.Snapshot()
	if !snap.JobVersion("default", "web", 0).Stable || !snap.Job("default", "web").Stable {
		t.Fatalf("the successful deployment left version 0 unstable: %+v", snap.JobVersion("default", "web", 0))
	}
}

// An operator's allocation health (SetAllocHealth: an update marked
// Operator, or the failure an unhealthy mark makes) is a
// DeploymentAllocHealth write, as Nomad's DeploymentAllocHealthRequest;
// a node's report stays AllocationUpdated, a watcher's failure
// DeploymentStatusUpdate.
func TestEventType_OperatorAllocHealth(t *testing.T) {
	healthy := true
	health := &AllocClientUpdateRequest{Operator: true, Allocs: []*sdk.Allocation{{ID: "a1",
		DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}}}}
	report := &AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a1", ClientStatus: sdk.AllocClientStatusRunning,
		DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}}}}
	fail := &sdk.DeploymentStatusUpdate{DeploymentID: "d1", Status: sdk.DeploymentStatusFailed}
	for _, c := range []struct {
		name string
		msg  msgp.Unmarshaler
		want string
	}{
		{"an operator's healthy", health, events.TypeDeploymentAllocHealth},
		{"an operator's unhealthy, failing the deployment", &DeploymentStatusUpdateRequest{Update: fail, Health: health}, events.TypeDeploymentAllocHealth},
		{"a node's report", report, events.TypeAllocationUpdated},
		{"the watcher's failure", &DeploymentStatusUpdateRequest{Update: fail}, events.TypeDeploymentUpdate},
	} {
		if got := eventType(c.msg); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
