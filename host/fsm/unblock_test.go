package fsm

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

type commits []*Commit

func (c *commits) Committed(x *Commit) { *c = append(*c, x) }

// entry is a log entry's request.
type entry interface {
	MarshalMsg([]byte) ([]byte, error)
	UnmarshalMsg([]byte) ([]byte, error)
}

// An allocation's node reporting it finished frees its room, and so
// unblocks its node's class: also when the servers had already stopped it,
// since a stopped allocation holds its resources until then (as schedulers
// count it).
func TestAllocClientUpdate_FinishedUnblocksItsNodesClass(t *testing.T) {
	for _, desired := range []string{sdk.AllocDesiredStatusRun, sdk.AllocDesiredStatusStop} {
		t.Run(desired, func(t *testing.T) {
			store, _ := state.NewStore()
			var seen commits
			f := New(store, &seen, zerolog.Nop())
			job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
				TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}}}}}
			alloc := func(client string) *sdk.Allocation {
				return &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1",
					DesiredStatus: desired, ClientStatus: client}
			}
			steps := []entry{
				&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
				&JobRegisterRequest{Job: job},
				&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{alloc("")}},
				&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{alloc(sdk.AllocClientStatusRunning)}},
			}
			for i, msg := range steps {
				if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
					t.Fatal(err)
				}
			}
			seen = nil
			if err := f.ApplyDecoded(uint64(len(steps)+1),
				&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{alloc(sdk.AllocClientStatusComplete)}}); err != nil {
				t.Fatal(err)
			}
			class := store.Snapshot().Node("n1").ComputedClass
			if len(seen) != 1 || !slices.Equal(seen[0].Classes, []string{class}) {
				t.Fatalf("commits %+v, want class %s unblocked", seen, class)
			}
		})
	}
}

// A plan that stops or preempts an allocation frees no room yet: the
// allocation holds it, as schedulers count it, until its node reports it
// finished, so unblocking its class then would only wake blocked evals to
// fail again. A stop that finishes the allocation itself (lost, on a node
// that is down) frees its room at once.
func TestApplyPlanResults_UnblocksOnlyWhereThePlanFinishesAnAllocation(t *testing.T) {
	cases := []struct {
		name string
		plan func(a *sdk.Allocation) *ApplyPlanResultsRequest
		want bool
	}{
		{"stopped", func(a *sdk.Allocation) *ApplyPlanResultsRequest {
			a.DesiredStatus = sdk.AllocDesiredStatusStop
			return &ApplyPlanResultsRequest{EvalID: "e2", AllocsStopped: []*sdk.Allocation{a}}
		}, false},
		{"preempted", func(a *sdk.Allocation) *ApplyPlanResultsRequest {
			return &ApplyPlanResultsRequest{EvalID: "e2", AllocsPreempted: []*sdk.Allocation{a}}
		}, false},
		{"stopped as lost", func(a *sdk.Allocation) *ApplyPlanResultsRequest {
			a.DesiredStatus, a.ClientStatus = sdk.AllocDesiredStatusStop, sdk.AllocClientStatusLost
			return &ApplyPlanResultsRequest{EvalID: "e2", AllocsStopped: []*sdk.Allocation{a}}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := state.NewStore()
			var seen commits
			f := New(store, &seen, zerolog.Nop())
			job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
				TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}}}}}
			alloc := func() *sdk.Allocation {
				return &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1",
					DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning}
			}
			steps := []entry{
				&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
				&JobRegisterRequest{Job: job},
				&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{alloc()}},
				&AllocClientUpdateRequest{Allocs: []*sdk.Allocation{alloc()}},
				tc.plan(alloc()),
			}
			for i, msg := range steps {
				if i == len(steps)-1 {
					seen = nil
				}
				if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
					t.Fatal(err)
				}
			}
			class := store.Snapshot().Node("n1").ComputedClass
			got := len(seen) == 1 && slices.Equal(seen[0].Classes, []string{class})
			if got != tc.want {
				t.Fatalf("commits %+v: class %s unblocked %v, want %v", seen, class, got, tc.want)
			}
			if a := store.Snapshot().Alloc("a1"); tc.want != a.ClientTerminalStatus() {
				t.Fatalf("allocation client status %q after the plan", a.ClientStatus)
			}
		})
	}
}

// TestNodeChanges_UnblockWhereTheNodeCanTakePlacements compares the node
// changes that unblock the node's class with Nomad's fsm
// (applyUpsertNode, applyStatusUpdate, applyNodeEligibilityUpdate,
// applyDrainUpdate). Drover unblocks when the node becomes Ready (ready,
// eligible, not draining): Nomad also unblocks for a ready node that is
// ineligible, or an eligible one that is not ready, where no placement can
// go, and it does not unblock when a drain ends and marks the node eligible
// again, which gives capacity back (its blocked evals would wait for the
// next change).
func TestNodeChanges_UnblockWhereTheNodeCanTakePlacements(t *testing.T) {
	node := func(status, elig string) *sdk.Node {
		return &sdk.Node{ID: "n1", Status: status, SchedulingEligibility: elig, Datacenter: "dc1"}
	}
	cases := []struct {
		name   string
		before entry // nil: no node yet
		change entry
		want   bool // Drover (Nomad differs where noted)
	}{
		{"register ready", nil, &NodeRegisterRequest{Node: node("ready", "eligible")}, true},
		{"register ready ineligible (Nomad: unblocks)", nil, &NodeRegisterRequest{Node: node("ready", "ineligible")}, false},
		{"register initializing", nil, &NodeRegisterRequest{Node: node("initializing", "eligible")}, false},
		{"down to ready", &NodeRegisterRequest{Node: node("down", "eligible")}, &NodeUpdateStatusRequest{NodeID: "n1", Status: "ready"}, true},
		{"ready to down", &NodeRegisterRequest{Node: node("ready", "eligible")}, &NodeUpdateStatusRequest{NodeID: "n1", Status: "down"}, false},
		{"ineligible to eligible", &NodeRegisterRequest{Node: node("ready", "ineligible")},
			&NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: "eligible"}, true},
		{"ineligible to eligible while down (Nomad: unblocks)", &NodeRegisterRequest{Node: node("down", "ineligible")},
			&NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: "eligible"}, false},
		{"drain starts", &NodeRegisterRequest{Node: node("ready", "eligible")},
			&NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: &sdk.DrainStrategy{}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := state.NewStore()
			var seen commits
			f := New(store, &seen, zerolog.Nop())
			i := uint64(1)
			if tc.before != nil {
				if err := f.ApplyDecoded(i, tc.before); err != nil {
					t.Fatal(err)
				}
				i++
			}
			seen = nil
			if err := f.ApplyDecoded(i, tc.change); err != nil {
				t.Fatal(err)
			}
			got := len(seen) == 1 && len(seen[0].Classes) == 1
			if got != tc.want {
				t.Fatalf("unblocked = %v (commits %+v), want %v", got, seen, tc.want)
			}
		})
	}
	t.Run("drain ends, marked eligible (Nomad: does not unblock)", func(t *testing.T) {
		store, _ := state.NewStore()
		var seen commits
		f := New(store, &seen, zerolog.Nop())
		for i, msg := range []entry{&NodeRegisterRequest{Node: node("ready", "eligible")},
			&NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: &sdk.DrainStrategy{}}} {
			if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
				t.Fatal(err)
			}
		}
		seen = nil
		if err := f.ApplyDecoded(3, &NodeUpdateDrainRequest{NodeID: "n1", MarkEligible: true}); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 || len(seen[0].Classes) != 1 {
			t.Fatalf("commits %+v, want the node's class unblocked", seen)
		}
	})
}

// A preemption of an allocation already told to stop (since its plan was
// evaluated) leaves it as it is: it keeps why it stops.
func TestApplyPlanResults_PreemptionLeavesAnAllocationAlreadyStopping(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}}}}}
	alloc := func(desired, why string) *sdk.Allocation {
		return &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1",
			DesiredStatus: desired, DesiredDescription: why, ClientStatus: sdk.AllocClientStatusRunning}
	}
	preempted := alloc("", "Preempted by alloc ID p1")
	preempted.PreemptedByAllocation = "p1"
	steps := []entry{
		&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
		&JobRegisterRequest{Job: job},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{alloc(sdk.AllocDesiredStatusRun, "")}},
		&ApplyPlanResultsRequest{Job: job, EvalID: "e2", AllocsStopped: []*sdk.Allocation{alloc(sdk.AllocDesiredStatusStop, "alloc not needed due to job update")}},
		&ApplyPlanResultsRequest{EvalID: "e3", AllocsPreempted: []*sdk.Allocation{preempted}},
	}
	for i, msg := range steps {
		if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
			t.Fatal(err)
		}
	}
	a := store.Snapshot().Alloc("a1")
	if a.DesiredStatus != sdk.AllocDesiredStatusStop || a.DesiredDescription != "alloc not needed due to job update" ||
		a.PreemptedByAllocation != "" || a.ModifyIndex != 4 {
		t.Fatalf("allocation %+v: the preemption marked it again", a)
	}
}
