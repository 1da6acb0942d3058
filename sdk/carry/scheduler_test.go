package carry_test

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/sdktest"
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
