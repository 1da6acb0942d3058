package fsm

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// applyAll applies msgs to f in order, at indexes 1, 2, ...
func applyAll(t *testing.T, f *FSM, msgs ...interface {
	MarshalMsg([]byte) ([]byte, error)
	UnmarshalMsg([]byte) ([]byte, error)
}) {
	t.Helper()
	for i, msg := range msgs {
		if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
			t.Fatal(err)
		}
	}
}

// Plugins never see allocation Metrics (state syncs leave them out), so an
// in-place update without Metrics must keep the stored ones, and one with
// Metrics replaces them.
func TestApplyPlanResults_InPlaceUpdateKeepsMetricsUnlessGiven(t *testing.T) {
	for _, tc := range []struct {
		name      string
		update    *sdk.AllocMetric
		evaluated int
	}{{"without metrics", nil, 7}, {"with metrics", &sdk.AllocMetric{NodesEvaluated: 1}, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := state.NewStore()
			f := New(store, nil, zerolog.Nop())
			job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
				TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
			applyAll(t, f,
				&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
				&JobRegisterRequest{Job: job},
				&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{{ID: "a1", Namespace: "default",
					JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", Metrics: &sdk.AllocMetric{NodesEvaluated: 7}}}},
				&ApplyPlanResultsRequest{Job: job, EvalID: "e2", AllocsUpdated: []*sdk.Allocation{{ID: "a1", Namespace: "default",
					JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", EvalID: "e2", Metrics: tc.update}}},
			)
			a := store.Snapshot().Alloc("a1")
			if a.EvalID != "e2" || a.Metrics == nil || a.Metrics.NodesEvaluated != tc.evaluated {
				t.Fatalf("alloc after the in-place update: eval %s, metrics %+v", a.EvalID, a.Metrics)
			}
		})
	}
}

// An update that names the version its allocation runs (an annotation: a
// failed allocation given its follow-up eval) leaves it on that version;
// one that names the plan's version moves it there (an in-place update).
func TestApplyPlanResults_AnnotationKeepsTheAllocationsVersion(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	v0 := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	v1 := v0.Copy()
	v1.TaskGroups[0].Tasks[0].Driver = "exec"
	alloc := func(id, eval string, v *sdk.Job) *sdk.Allocation {
		a := &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", EvalID: eval}
		if v != nil {
			a.JobVersion, a.JobModifyIndex = v.Version, v.JobModifyIndex
		}
		return a
	}
	apply := func(index uint64, msg interface {
		MarshalMsg([]byte) ([]byte, error)
		UnmarshalMsg([]byte) ([]byte, error)
	}) {
		t.Helper()
		if err := f.ApplyDecoded(index, msg); err != nil {
			t.Fatal(err)
		}
	}
	apply(1, &NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}})
	apply(2, &JobRegisterRequest{Job: v0})
	stored0 := store.Snapshot().Job("default", "web")
	apply(3, &ApplyPlanResultsRequest{Job: stored0, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{alloc("a1", "e1", nil), alloc("a2", "e1", nil)}})
	apply(4, &AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a1", ClientStatus: sdk.AllocClientStatusFailed}}})
	apply(5, &JobRegisterRequest{Job: v1})
	stored1 := store.Snapshot().Job("default", "web")

	note := alloc("a1", "e2", stored0)
	note.FollowupEvalID = "e3"
	apply(6, &ApplyPlanResultsRequest{Job: stored1, EvalID: "e2", AllocsUpdated: []*sdk.Allocation{note, alloc("a2", "e2", stored1)}})
	snap := store.Snapshot()
	if a := snap.Alloc("a1"); a.FollowupEvalID != "e3" || a.Job.Version != stored0.Version || a.Job.TaskGroups[0].Tasks[0].Driver != "docker" {
		t.Fatalf("annotated allocation: follow-up %q, version %d", a.FollowupEvalID, a.Job.Version)
	}
	if a := snap.Alloc("a2"); a.Job.Version != stored1.Version || a.Job.TaskGroups[0].Tasks[0].Driver != "exec" {
		t.Fatalf("allocation updated in place runs version %d", a.Job.Version)
	}
}

// A plan made from a snapshot in which an allocation still ran may mark it
// unknown on its disconnected node; if the node reported it finished
// meanwhile, it stays finished: a plan never brings an allocation back.
func TestApplyPlanResults_UnknownMarkDoesNotReviveAFinishedAllocation(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	alloc := func(id string, status string) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run",
			ClientStatus: status}
	}
	applyAll(t, f,
		&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
		&JobRegisterRequest{Job: job},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{alloc("a1", ""), alloc("a2", "")}},
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a1", ClientStatus: sdk.AllocClientStatusFailed},
			{ID: "a2", ClientStatus: sdk.AllocClientStatusRunning}}},
		&NodeUpdateStatusRequest{NodeID: "n1", Status: sdk.NodeStatusDisconnected},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e2", AllocsUpdated: []*sdk.Allocation{
			alloc("a1", sdk.AllocClientStatusUnknown), alloc("a2", sdk.AllocClientStatusUnknown)}},
	)
	snap := store.Snapshot()
	if a := snap.Alloc("a1"); a.ClientStatus != sdk.AllocClientStatusFailed {
		t.Fatalf("finished allocation marked %s", a.ClientStatus)
	}
	if a := snap.Alloc("a2"); a.ClientStatus != sdk.AllocClientStatusUnknown {
		t.Fatalf("running allocation on the disconnected node is %s, want unknown", a.ClientStatus)
	}
}

// A plan that marks an allocation unknown records the transition dated by
// the mark its scheduler added (never after the commit, nor before the
// allocation last changed), else at the commit, on top of the stored
// record; any other update keeps the stored record, whatever the plan's
// copy says; a new allocation starts without one; a client that reports
// an allocation unknown marks it at its update.
func TestApplyPlanResults_UnknownMarkIsRecordedInAllocStates(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 7, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	t0 := time.Unix(1_700_000_000, 0).UTC()
	running := t0.Add(-time.Minute) // when the client last reported them
	commit := t0.Add(50 * time.Millisecond)
	unknownAt := func(at time.Time) *sdk.AllocState {
		return &sdk.AllocState{Field: sdk.AllocStateFieldClientStatus, Value: sdk.AllocClientStatusUnknown, Time: at}
	}
	earlier := unknownAt(t0.Add(-48 * time.Hour)) // a5's record, from a disconnect long ago
	alloc := func(id string, status string, states ...*sdk.AllocState) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run",
			ClientStatus: status, AllocStates: states}
	}
	var running5 []*sdk.Allocation
	for _, id := range []string{"a1", "a2", "a3", "a4", "a5"} {
		running5 = append(running5, &sdk.Allocation{ID: id, ClientStatus: sdk.AllocClientStatusRunning})
	}
	applyAll(t, f,
		&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
		&JobRegisterRequest{Job: job},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{
			alloc("a1", ""), alloc("a2", ""), alloc("a3", ""), alloc("a4", ""), alloc("a5", ""),
			alloc("a6", "", unknownAt(t0))}}, // a placement: its record is the servers'
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a5", ClientStatus: sdk.AllocClientStatusUnknown}},
			UpdatedAt: earlier.Time.UnixNano()},
		&AllocClientUpdateRequest{Allocs: running5, UpdatedAt: running.UnixNano()},
		&NodeUpdateStatusRequest{NodeID: "n1", Status: sdk.NodeStatusDisconnected},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e2", UpdatedAt: commit.UnixNano(), AllocsUpdated: []*sdk.Allocation{
			alloc("a1", sdk.AllocClientStatusUnknown, unknownAt(t0)),                    // dated by its scheduler
			alloc("a2", sdk.AllocClientStatusUnknown, unknownAt(t0.Add(time.Hour))),     // in the future: the commit
			alloc("a3", sdk.AllocClientStatusRunning, unknownAt(t0)),                    // not a mark: no record
			alloc("a4", sdk.AllocClientStatusUnknown, unknownAt(time.Unix(1, 0).UTC())), // before its last change
			alloc("a5", sdk.AllocClientStatusUnknown, earlier)}},                        // old's record, no mark added: the commit
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a7", ClientStatus: sdk.AllocClientStatusRunning}},
			UpdatedAt: running.UnixNano()},
	)
	snap := store.Snapshot()
	for id, want := range map[string]time.Time{"a1": t0, "a2": commit, "a3": {}, "a4": running, "a5": commit, "a6": {}} {
		a := snap.Alloc(id)
		if got := a.LastUnknown(); !got.Equal(want) {
			t.Errorf("%s: last unknown %v, want %v", id, got, want)
		}
		wantN := 1
		switch {
		case want.IsZero():
			wantN = 0
		case id == "a5":
			wantN = 2 // the earlier mark, kept, and this one
		}
		if n := len(a.AllocStates); n != wantN {
			t.Errorf("%s: %d states recorded, want %d", id, n, wantN)
		}
	}
}

// A client that reports an allocation unknown marks it at its update,
// after any earlier mark.
func TestAllocClientUpdate_UnknownIsRecordedInAllocStates(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	earlier := time.Unix(1_600_000_000, 0).UTC()
	at := time.Unix(1_700_000_000, 0).UTC()
	applyAll(t, f,
		&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
		&JobRegisterRequest{Job: job},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{{ID: "a1", Namespace: "default",
			JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run"}}},
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a1", ClientStatus: sdk.AllocClientStatusUnknown}},
			UpdatedAt: earlier.UnixNano()},
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a1", ClientStatus: sdk.AllocClientStatusRunning}},
			UpdatedAt: earlier.Add(time.Hour).UnixNano()},
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a1", ClientStatus: sdk.AllocClientStatusUnknown}},
			UpdatedAt: at.UnixNano()},
	)
	if a := store.Snapshot().Alloc("a1"); !a.LastUnknown().Equal(at) || len(a.AllocStates) != 2 {
		t.Fatalf("last unknown %v with %d marks, want %v and 2", a.LastUnknown(), len(a.AllocStates), at)
	}
}

// An unknown allocation its node reports again (back from a disconnect)
// drops the follow-up eval of its disconnect timeout: failed, it is
// rescheduled by its policy's follow-up, not that eval. A follow-up of an
// allocation that was not unknown stays.
func TestAllocClientUpdate_ReportedAgainDropsTheDisconnectFollowup(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	alloc := func(id, status string) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1",
			DesiredStatus: "run", ClientStatus: status, FollowupEvalID: "f-" + id}
	}
	applyAll(t, f,
		&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
		&JobRegisterRequest{Job: job},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{alloc("a1", ""), alloc("a2", ""), alloc("a3", "")}},
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{
			{ID: "a1", ClientStatus: sdk.AllocClientStatusUnknown},
			{ID: "a3", ClientStatus: sdk.AllocClientStatusUnknown}}, UpdatedAt: 1},
		// a3 is reported unknown again, then only its health changes
		// (no client status): it still waits for its disconnect timeout.
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a3", ClientStatus: sdk.AllocClientStatusUnknown}}, UpdatedAt: 2},
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: "a3", DeploymentStatus: &sdk.AllocDeploymentStatus{}}}, UpdatedAt: 3},
		&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{
			{ID: "a1", ClientStatus: sdk.AllocClientStatusFailed},
			{ID: "a2", ClientStatus: sdk.AllocClientStatusFailed}}, UpdatedAt: 4},
	)
	snap := store.Snapshot()
	if got := snap.Alloc("a1").FollowupEvalID; got != "" {
		t.Errorf("a1, back from unknown: follow-up %q kept", got)
	}
	if got := snap.Alloc("a2").FollowupEvalID; got != "f-a2" {
		t.Errorf("a2, never unknown: follow-up %q, want f-a2", got)
	}
	if a3 := snap.Alloc("a3"); a3.FollowupEvalID != "f-a3" || a3.ClientStatus != sdk.AllocClientStatusUnknown {
		t.Errorf("a3, still unknown: %s, follow-up %q, want f-a3", a3.ClientStatus, a3.FollowupEvalID)
	}
}

// Committing a plan touches its eval, as Nomad's UpsertPlanResults does:
// the eval's ModifyIndex is the plan's, and the plan's events include the
// eval's (PlanResult), status unchanged.
func TestApplyPlanResults_TouchesThePlansEval(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	b := events.New(10)
	f.SetPublisher(b)
	sub := b.Subscribe(events.Request{Topics: map[string][]string{events.TopicEvaluation: nil}, Index: 3, Namespace: "*"})
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	applyAll(t, f,
		&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
		&JobRegisterRequest{Job: job, Eval: &sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web",
			Type: "service", TriggeredBy: sdk.EvalTriggerJobRegister, Status: sdk.EvalStatusPending}},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{{ID: "a1", Namespace: "default",
			JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", EvalID: "e1"}}},
	)
	if e := store.Snapshot().Eval("e1"); e.ModifyIndex != 3 || e.CreateIndex != 2 || e.Status != sdk.EvalStatusPending {
		t.Fatalf("the plan's eval: create %d, modify %d, %s; want 2, 3 (the plan's), pending", e.CreateIndex, e.ModifyIndex, e.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	batch, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("no eval event at the plan's index: %v", err)
	}
	if ev := batch.Events[0]; batch.Index != 3 || len(batch.Events) != 1 || ev.Key != "e1" || ev.Type != events.TypePlanResult {
		t.Fatalf("the plan's eval events: %+v", batch)
	}
}
