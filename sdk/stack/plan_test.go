package stack

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/mirror"
)

// TestPlan_StoppedAllocationsCounts: the plan's per-node counts of the
// job (distinct_hosts, job anti-affinity) hold an allocation the servers
// stopped until its node reports it finished, while the registered
// counters (distinct_property, spread) count live allocations only, as
// Nomad v1.6.1 counts them; a stop in the plan takes an allocation out of
// whichever counts held it.
func TestPlan_StoppedAllocationsCounts(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service",
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 3}}}
	alloc := func(id, node, desired, client string) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: node,
			DesiredStatus: desired, ClientStatus: client}
	}
	run, stop := sdk.AllocDesiredStatusRun, sdk.AllocDesiredStatusStop
	live := alloc("live", "n1", run, sdk.AllocClientStatusRunning)
	stopping := alloc("stopping", "n2", stop, sdk.AllocClientStatusRunning)
	finished := alloc("finished", "n3", stop, sdk.AllocClientStatusComplete)
	sync := &abi.StateSync{Full: true, Index: 1, SchedulerConfig: sdk.DefaultSchedulerConfiguration(), Jobs: []*sdk.Job{job},
		Allocs: []*sdk.Allocation{live, stopping, finished}}
	for _, id := range []string{"n1", "n2", "n3"} {
		sync.Nodes = append(sync.Nodes, &sdk.Node{ID: id, Meta: map[string]string{"rack": "r0"}})
	}
	state := mirror.New()
	if err := state.Apply(sync); err != nil {
		t.Fatal(err)
	}
	plan := NewPlan(state, &sdk.Evaluation{ID: "e1"}, job)
	racks := feasible.NewPropertyCounts(state, job, "${meta.rack}", "g", nil)
	plan.Replay(racks)
	plan.Watch(racks)

	counts := func() map[string]int {
		return map[string]int{"n1": plan.GroupCount("g", "n1"), "n2": plan.GroupCount("g", "n2"),
			"n3": plan.GroupCount("g", "n3"), "r0": racks.Count("r0")}
	}
	steps := []struct {
		name string
		do   func()
		want map[string]int
	}{
		{"from the state", func() {}, map[string]int{"n1": 1, "n2": 1, "n3": 0, "r0": 1}},
		{"the stopping allocation stopped again", func() { plan.Stop(stopping, "", "", "") },
			map[string]int{"n1": 1, "n2": 0, "n3": 0, "r0": 1}},
		{"that stop taken back", func() { plan.PopStop(stopping) }, map[string]int{"n1": 1, "n2": 1, "n3": 0, "r0": 1}},
		{"the live allocation stopped", func() { plan.Stop(live, "", "", "") }, map[string]int{"n1": 0, "n2": 1, "n3": 0, "r0": 0}},
	}
	for _, st := range steps {
		st.do()
		got := counts()
		for k, w := range st.want {
			if got[k] != w {
				t.Fatalf("%s: counts %v, want %v", st.name, got, st.want)
			}
		}
	}
	if plan.JobCount("n2") != 1 {
		t.Fatalf("job count on n2 = %d, want 1", plan.JobCount("n2"))
	}
}

// TestPlan_ANodeHasOneRecord: over a state that numbers its nodes, the
// plan finds a node's record by number or by ID alike, for a copy of the
// node too. A plan used across a change of its state (which NewPlan rules
// out) still never gives a node another node's record: one given the
// number of a deleted node gets a record of its own.
func TestPlan_ANodeHasOneRecord(t *testing.T) {
	state := mirror.New()
	node := func(id string) *sdk.Node { return &sdk.Node{ID: id, ComputedClass: "c"} }
	if err := state.Apply(&abi.StateSync{Full: true, Index: 1, Nodes: []*sdk.Node{node("n1"), node("n2")}}); err != nil {
		t.Fatal(err)
	}
	plan := NewPlan(state, &sdk.Evaluation{ID: "e1"}, nil)
	n1, n2 := state.Node("n1"), state.Node("n2")
	_, _, r1 := plan.learn(n1)
	_, _, r2 := plan.learn(n2)
	c2 := *n2
	if _, _, r := plan.learn(&c2); r != r2 || plan.find("n2") != r2 || plan.change("n2") != r2 {
		t.Fatal("node n2's record differs by lookup")
	}
	if r1 == r2 || plan.find("n1") != r1 {
		t.Fatal("nodes n1 and n2 share a record")
	}
	if s, _ := n1.Slots(); s == 0 {
		t.Fatal("the mirror did not number n1")
	}
	// Misuse: the state changes under the plan, and n3 takes n1's number.
	if err := state.Apply(&abi.StateSync{FromIndex: 1, Index: 2, DeletedNodes: []string{"n1"}, Nodes: []*sdk.Node{node("n3")}}); err != nil {
		t.Fatal(err)
	}
	n3 := state.Node("n3")
	if a, _ := n3.Slots(); a != func() int32 { s, _ := n1.Slots(); return s }() {
		t.Fatalf("n3 numbered %d, not n1's number", a)
	}
	_, _, r3 := plan.learn(n3)
	if r3 == r1 || r3.nodeID != "n3" || plan.find("n3") != r3 || plan.change("n3") != r3 {
		t.Fatal("n3 was given n1's record, or lookups differ")
	}
}
