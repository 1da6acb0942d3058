package carry_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// A scheduler whose whole policy is one choice: of the nodes where an
// allocation may go, the one with the most free memory.
func ExampleScheduler() {
	mostFreeMemory := carry.Scheduler{Choose: func(_ carry.Placement, cands []carry.Candidate) int {
		free := func(c carry.Candidate) int64 { return c.Capacity.MemoryMB - c.Used.MemoryMB }
		best := 0
		for i, c := range cands {
			if free(c) > free(cands[best]) {
				best = i
			}
		}
		return best
	}}
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("x", 4000, 2048), sdktest.Node("y", 4000, 1600))
	job := sdktest.Job("web", 3) // 256 MB each
	h.UpsertJob(job)
	if err := h.Process(mostFreeMemory, h.RegisterEval(job)); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range h.AllocsByJob("default", "web") {
		fmt.Println(a.Name, "on", a.NodeID)
	}
	// Unordered output:
	// web.web[0] on x
	// web.web[1] on x
	// web.web[2] on y
}

// Choose sees only nodes that pass the group's checks and have room; a
// node it picks whose ports are taken is dropped and Choose asked again;
// what it leaves unplaced waits in a blocked eval, explained.
func TestScheduler_ChoosesAmongFeasibleNodesAndIsAskedAgain(t *testing.T) {
	h := sdktest.New()
	small := sdktest.Node("small", 4000, 200) // no room for 256 MB
	other := sdktest.Node("other", 4000, 8192)
	other.Datacenter = "dc2" // not the job's
	h.UpsertNode(sdktest.Node("a", 4000, 8192), sdktest.Node("b", 4000, 8192), small, other)
	job := sdktest.Job("web", 3)
	job.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}}
	h.UpsertJob(job)
	var offered [][]string
	first := carry.Scheduler{Choose: func(_ carry.Placement, cands []carry.Candidate) int {
		var ids []string
		for _, c := range cands {
			ids = append(ids, fmt.Sprintf("%s:%d", c.Node.ID, c.GroupCount))
		}
		offered = append(offered, ids)
		return 0
	}}
	e := h.RegisterEval(job)
	if err := h.Process(first, e); err != nil {
		t.Fatal(err)
	}
	// Port 8080 once per node: a on the first, b on the second (a dropped
	// after Choose picked it again), none on the third. Each candidate
	// comes with the group's count on it.
	if got, want := fmt.Sprint(offered), "[[a:0 b:0] [a:1 b:0] [b:0] [a:1 b:1] [b:1]]"; got != want {
		t.Fatalf("offered %s, want %s", got, want)
	}
	byNode := map[string]int{}
	for _, a := range h.AllocsByJob("default", "web") {
		byNode[a.NodeID]++
	}
	if fmt.Sprint(byNode) != "map[a:1 b:1]" {
		t.Fatalf("placed %v", byNode)
	}
	got := h.Updated[len(h.Updated)-1]
	if len(h.Created) != 1 || h.Created[0].Status != sdk.EvalStatusBlocked {
		t.Fatalf("created %+v, want one blocked eval", h.Created)
	}
	m := got.FailedTGAllocs["web"]
	if got.ID != e.ID || m == nil || m.CoalescedFailures != 0 || m.DimensionExhausted["memory"] != 1 ||
		m.DimensionExhausted["network: reserved port collision http=8080"] != 2 {
		t.Fatalf("eval %s failed groups %+v", got.ID, m)
	}
}

// distinct_hosts and distinct_property hold whatever Choose prefers: a
// node that already holds what they allow is not offered.
func TestScheduler_DistinctConstraintsHold(t *testing.T) {
	for _, tc := range []struct {
		name       string
		constraint *sdk.Constraint
		want       string
	}{
		{"distinct_hosts", &sdk.Constraint{Operand: sdk.ConstraintDistinctHosts}, "map[a:1 b:1 c:1]"},
		{"distinct_property", &sdk.Constraint{Operand: sdk.ConstraintDistinctProperty, LTarget: "${meta.rack}", RTarget: "2"},
			"map[a:2 c:1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.New()
			a, b, c := sdktest.Node("a", 4000, 8192), sdktest.Node("b", 4000, 8192), sdktest.Node("c", 4000, 8192)
			a.Meta, b.Meta, c.Meta = map[string]string{"rack": "r1"}, map[string]string{"rack": "r1"}, map[string]string{"rack": "r2"}
			h.UpsertNode(a, b, c)
			job := sdktest.Job("web", 3)
			job.TaskGroups[0].Constraints = []*sdk.Constraint{tc.constraint}
			h.UpsertJob(job)
			first := carry.Scheduler{Choose: func(carry.Placement, []carry.Candidate) int { return 0 }}
			if err := h.Process(first, h.RegisterEval(job)); err != nil {
				t.Fatal(err)
			}
			byNode := map[string]int{}
			for _, al := range h.AllocsByJob("default", "web") {
				byNode[al.NodeID]++
			}
			if fmt.Sprint(byNode) != tc.want {
				t.Fatalf("placed %v, want %s", byNode, tc.want)
			}
		})
	}
}

// Every metric says which pool the placement was chosen from, as the
// stack's selections do: the blocked-eval metrics per datacenter and the
// CLI's "no nodes are available" read NodesAvailable, and a placement's
// NodesInPool of 0 beside 3 nodes evaluated misled. A PickFunc of the
// plugin's own that leaves them out gets them too.
func TestScheduler_MetricsNameThePool(t *testing.T) {
	first := carry.Scheduler{Choose: func(carry.Placement, []carry.Candidate) int { return 0 }}
	bare := sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		return carry.Process(ctx, eval, func(plan *stack.Plan, stk *stack.Stack, ready []*sdk.Node) carry.PickFunc {
			return func(pl carry.Placement) (*stack.Option, *sdk.AllocMetric) {
				for _, n := range ready {
					with := plan.Used(n.ID)
					with.Add(sdk.GroupUsage(pl.Group))
					if ok, _ := with.Fits(n.Capacity()); ok {
						held, _ := stk.Assign(pl.Group, n)
						return &stack.Option{Node: n, Resources: held}, &sdk.AllocMetric{NodesEvaluated: 1}
					}
				}
				return nil, &sdk.AllocMetric{NodesEvaluated: len(ready)}
			}
		})
	})
	for name, s := range map[string]sdk.Scheduler{"Choose": first, "PickFunc": bare} {
		t.Run(name, func(t *testing.T) {
			h := sdktest.New()
			other := sdktest.Node("other", 4000, 8192)
			other.Datacenter = "dc2" // not the job's
			h.UpsertNode(sdktest.Node("a", 4000, 600), sdktest.Node("small", 4000, 100), other)
			job := sdktest.Job("web", 3) // 256 MB each: two fit on a
			h.UpsertJob(job)
			if err := h.Process(s, h.RegisterEval(job)); err != nil {
				t.Fatal(err)
			}
			check := func(what string, m *sdk.AllocMetric) {
				t.Helper()
				if m == nil || m.NodePool != sdk.DefaultNodePool || m.NodesInPool != 2 || fmt.Sprint(m.NodesAvailable) != "map[dc1:2]" {
					t.Fatalf("%s metric %+v, want pool default, 2 nodes in it, map[dc1:2] available", what, m)
				}
			}
			placed := 0
			for _, allocs := range h.Plans[0].NodeAllocation {
				for _, a := range allocs {
					check("placement "+a.Name, a.Metrics)
					placed++
				}
			}
			if placed != 2 {
				t.Fatalf("placed %d, want 2", placed)
			}
			check("failed group", h.Updated[len(h.Updated)-1].FailedTGAllocs["web"])
		})
	}
}

// A Choose that answers an index no candidate has is a bug in the policy:
// the eval fails, saying so, rather than leaving the placement unplaced
// as -1 does, which looked like a cluster without room.
func TestScheduler_ChooseOutOfRangeFailsTheEval(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("a", 4000, 8192), sdktest.Node("b", 4000, 8192))
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	offByOne := carry.Scheduler{Choose: func(_ carry.Placement, cands []carry.Candidate) int { return len(cands) }}
	err := h.Process(offByOne, h.RegisterEval(job))
	if err == nil || !strings.Contains(err.Error(), "Choose returned 2 for 2 candidates") {
		t.Fatalf("err = %v, want the eval failed, naming the bad index", err)
	}
	if len(h.Created) != 0 {
		t.Fatalf("created %+v, want no blocked eval", h.Created)
	}
}
