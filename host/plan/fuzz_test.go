package plan

import (
	"fmt"
	"math"
	"testing"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/verify"
	"github.com/rs/zerolog"
)

// FuzzValidateEvaluate feeds the host any plan request a plugin could
// send: decoding it, Validate, Evaluate and committing what Evaluate
// allows through the FSM must never panic, whatever the plan says, and a
// committed plan never over-commits a node, nor holds resources whose
// sums wrap around (which would hide an over-commit).
func FuzzValidateEvaluate(f *testing.F) {
	_, job := fixture(f)
	ref := &sdk.Job{Namespace: job.Namespace, ID: job.ID, Version: job.Version, JobModifyIndex: job.JobModifyIndex}
	for _, p := range []*sdk.Plan{
		{EvalID: "e1", Job: ref, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a1", "n0", 300)}, "n1": {place("a2", "n1", 300)}}},
		{EvalID: "e1", Job: job, AllAtOnce: true, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a1", "n0", 300), nil}}},
		{EvalID: "hi", Job: ref, NodeAllocation: map[string][]*sdk.Allocation{"n1": {place("a3", "n1", 500)}},
			NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1"}}}},
		{EvalID: "e1", Job: ref, NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1", DesiredStatus: "stop"}}}},
		{EvalID: "o1", NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1"}}}},
		{EvalID: "l1", Job: &sdk.Job{Namespace: "default", ID: "init"}, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {lifecyclePlacement("l1", "n0"), lifecyclePlacement("l2", "n0")}}},
		// Resources whose sum is past the int64 maximum.
		{EvalID: "e1", Job: ref, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {place("a1", "n0", math.MaxInt64), place("a2", "n0", 2)}}},
	} {
		b, err := (&abi.PlanRequest{Plan: p}).MarshalMsg(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		// The same plan as a plugin sends it to a host that declares 1.8.
		var split abi.Placements
		split.Split(p.NodeAllocation)
		wire := *p
		wire.NodeAllocation = split.Whole
		if b, err = (&abi.PlanRequest{Plan: &wire, Shared: split.Shared, Placed: split.Placed}).MarshalMsg(nil); err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := abi.DecodePlanRequest(b)
		if err != nil {
			return
		}
		s, _ := fixture(t)
		snap := s.Snapshot()
		if verify.Plan(snap, p, verify.DefaultLimits()) != nil {
			return
		}
		seq := 0
		_, apply := Evaluate(snap, p, 1, func() string { seq++; return fmt.Sprintf("fuzz-%d", seq) })
		if apply == nil {
			return
		}
		if err := fsm.New(s, nil, zerolog.Nop()).ApplyDecoded(snap.Index()+1, apply); err != nil {
			return
		}
		after := s.Snapshot()
		for _, n := range after.Nodes() {
			// used is what the allocations say they use, need what their
			// groups say they need: a plan must not make the one less
			// than the other (by its tasks' resources or lifecycles).
			var used, need sdk.Usage
			for _, a := range after.AllocsByNode(n.ID) {
				if a.TerminalStatus() {
					continue
				}
				u := a.Usage()
				noWrap(t, "allocation "+a.ID, u, allocParts(a)...)
				prev := used
				used.Add(u)
				noWrap(t, "node "+n.ID, used, prev, u)
				if job := after.JobVersion(a.Namespace, a.JobID, a.JobVersion); job != nil {
					if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
						g := sdk.GroupUsage(tg)
						noWrap(t, "group "+tg.Name, g, groupParts(tg)...)
						if u.CPU < g.CPU || u.MemoryMB < g.MemoryMB || u.DiskMB < g.DiskMB || u.Cores < g.Cores {
							t.Fatalf("allocation %s uses %+v, less than its group needs (%+v)", a.ID, u, g)
						}
						prev := need
						need.Add(g)
						noWrap(t, "node "+n.ID+" by its groups", need, prev, g)
					}
				}
			}
			if c := n.Capacity(); used.CPU > c.CPU || used.MemoryMB > c.MemoryMB || used.DiskMB > c.DiskMB ||
				need.CPU > c.CPU || need.MemoryMB > c.MemoryMB || need.DiskMB > c.DiskMB {
				t.Fatalf("node %s over-committed: %+v (by its groups %+v) of %+v", n.ID, used, need, c)
			}
		}
	})
}

// noWrap fails the test if sum, a sum of resources, is less than one of
// its parts, none of which is negative (CheckCovers sees to that): such a
// sum wrapped around past the int64 maximum, and would fit any node. The
// over-commit check cannot see that by itself: it sums with the same
// arithmetic.
func noWrap(t *testing.T, what string, sum sdk.Usage, parts ...sdk.Usage) {
	t.Helper()
	for _, p := range parts {
		if sum.CPU < p.CPU || sum.MemoryMB < p.MemoryMB || sum.DiskMB < p.DiskMB || sum.Cores < p.Cores {
			t.Fatalf("%s: the sum of its resources, %+v, is less than a part, %+v", what, sum, p)
		}
	}
}

// allocParts is what each task of an allocation holds, and its disk.
func allocParts(a *sdk.Allocation) []sdk.Usage {
	r := a.AllocatedResources
	if r == nil {
		return nil
	}
	parts := []sdk.Usage{{DiskMB: r.Shared.DiskMB}}
	for _, tr := range r.Tasks {
		parts = append(parts, sdk.Usage{CPU: tr.Cpu.CpuShares, MemoryMB: tr.Memory.MemoryMB})
	}
	return parts
}

// groupParts is what each task of a group asks for, and its disk.
func groupParts(tg *sdk.TaskGroup) []sdk.Usage {
	var parts []sdk.Usage
	if tg.EphemeralDisk != nil {
		parts = append(parts, sdk.Usage{DiskMB: int64(tg.EphemeralDisk.SizeMB)})
	}
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			parts = append(parts, sdk.Usage{CPU: int64(t.Resources.CPU), MemoryMB: int64(t.Resources.MemoryMB)})
		}
	}
	return parts
}

// lifecyclePlacement places an allocation of lifecycleJob on node as the
// SDK does: two fit a 1,000 MHz node, folded by lifecycle.
func lifecyclePlacement(id, node string) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Namespace: "default", JobID: "init", TaskGroup: "g", NodeID: node,
		DesiredStatus: "run", AllocatedResources: sdk.RequestedResources(lifecycleJob().TaskGroups[0])}
}
