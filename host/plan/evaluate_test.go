package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

func fixture(t *testing.T) (*state.Snapshot, *sdk.Job) {
	t.Helper()
	s, _ := state.NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 3}}}
	err := s.Write(1, func(tx *state.Txn) error {
		for i, st := range []string{"ready", "ready", "down"} {
			n := &sdk.Node{ID: fmt.Sprintf("n%d", i), Status: st, SchedulingEligibility: "eligible",
				NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 1000}, Memory: sdk.NodeMemoryResources{MemoryMB: 1000}, Disk: sdk.NodeDiskResources{DiskMB: 1000}}}
			if err := tx.UpsertNode(n); err != nil {
				return err
			}
		}
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		other := &sdk.Job{Namespace: "default", ID: "other", Type: "service", Priority: 50, TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
		if err := tx.UpsertJob(other); err != nil {
			return err
		}
		// n1 is already 800 MHz full.
		return tx.UpsertAlloc(&sdk.Allocation{ID: "busy", Namespace: "default", JobID: "other", Job: other, TaskGroup: "g",
			NodeID: "n1", DesiredStatus: "run", AllocatedResources: res(800)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.Snapshot(), s.Snapshot().Job("default", "web")
}

func res(cpu int64) *sdk.AllocatedResources {
	return &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: cpu},
		Memory: sdk.AllocatedMemoryResources{MemoryMB: 10}}}}
}

func place(id, node string, cpu int64) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: node,
		DesiredStatus: "run", AllocatedResources: res(cpu)}
}

func TestEvaluate_PartialCommitRejectsOnlyNodesThatDoNotFit(t *testing.T) {
	snap, job := fixture(t)
	p := &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
		"n0": {place("a0", "n0", 500)},
		"n1": {place("a1", "n1", 500)}, // 800 + 500 > 1000
		"n2": {place("a2", "n2", 100)}, // node is down
	}}
	if err := Validate(snap, p, DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	res, req := Evaluate(snap, p, 0, NewID)
	if len(res.NodeAllocation) != 1 || res.NodeAllocation["n0"] == nil {
		t.Fatalf("committed %v, want only n0", res.NodeAllocation)
	}
	if strings.Join(res.RejectedNodes, ",") != "n1,n2" {
		t.Fatalf("rejected = %v, want n1,n2", res.RejectedNodes)
	}
	if res.RefreshIndex == 0 {
		t.Error("partial commit without a refresh index")
	}
	if req == nil || len(req.AllocsUpdated) != 1 {
		t.Fatalf("apply request = %+v", req)
	}
}

func TestEvaluate_AllAtOnceRejectsEverything(t *testing.T) {
	snap, job := fixture(t)
	p := &sdk.Plan{EvalID: "e1", Job: job, AllAtOnce: true, NodeAllocation: map[string][]*sdk.Allocation{
		"n0": {place("a0", "n0", 500)}, "n1": {place("a1", "n1", 500)}}}
	res, req := Evaluate(snap, p, 0, NewID)
	if req != nil || len(res.NodeAllocation) != 0 {
		t.Fatalf("all-at-once plan partly committed: %+v", res)
	}
}

func TestEvaluate_StopsFreeRoomForPlacements(t *testing.T) {
	snap, _ := fixture(t)
	other := snap.Job("default", "other")
	p := &sdk.Plan{EvalID: "e1", Job: other,
		NodeUpdate:     map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1"}}},
		NodeAllocation: map[string][]*sdk.Allocation{"n1": {{ID: "new", Namespace: "default", JobID: "other", TaskGroup: "g", NodeID: "n1", AllocatedResources: res(900)}}}}
	if err := Validate(snap, p, DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	res, _ := Evaluate(snap, p, 0, NewID)
	if len(res.RejectedNodes) != 0 {
		t.Fatalf("rejected %v: the stop should have made room", res.RejectedNodes)
	}
}

func TestValidate_RejectsWholePlan(t *testing.T) {
	snap, job := fixture(t)
	cases := []struct {
		name string
		plan *sdk.Plan
		want string
	}{
		{"unknown node", &sdk.Plan{EvalID: "e", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"nX": {place("a", "nX", 1)}}}, "unknown node"},
		{"another job's allocation", &sdk.Plan{EvalID: "e", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {{ID: "a", Namespace: "default", JobID: "other", TaskGroup: "g", NodeID: "n0"}}}}, "belongs to job"},
		{"stop of another job", &sdk.Plan{EvalID: "e", Job: job, NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "busy"}}}}, "another job"},
		{"duplicate IDs", &sdk.Plan{EvalID: "e", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {place("a", "n0", 1), place("a", "n0", 1)}}}, "appears twice"},
		{"ID already used", &sdk.Plan{EvalID: "e", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("busy", "n0", 1)}}}, "already used"},
		{"preempting an equal priority", &sdk.Plan{EvalID: "e", Job: job, Priority: 50, NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy"}}}}, "may not be preempted"},
		{"oversize", &sdk.Plan{EvalID: "e", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 1), place("b", "n0", 1)}}}, "over the limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := DefaultLimits()
			if tc.name == "oversize" {
				lim.MaxAllocs = 1
			}
			err := Validate(snap, tc.plan, lim)
			if !errors.Is(err, ErrInvalidPlan) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidPlan mentioning %q", err, tc.want)
			}
		})
	}
}
