package plan

import (
	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
)

var _ verify.State = (*state.Snapshot)(nil)

// overlay is a snapshot as it will be once a committing plan result is
// applied: the result's allocations (placed, updated, stopped, preempted)
// replace or join the snapshot's. Only what judging a plan reads is laid
// over; the rest reads through.
type overlay struct {
	*state.Snapshot
	allocs map[string]*sdk.Allocation
	byNode map[string][]*sdk.Allocation
}

var _ verify.State = (*overlay)(nil)

func newOverlay(snap *state.Snapshot, req *fsm.ApplyPlanResultsRequest) *overlay {
	o := &overlay{Snapshot: snap, allocs: map[string]*sdk.Allocation{}, byNode: map[string][]*sdk.Allocation{}}
	put := func(a *sdk.Allocation) {
		o.allocs[a.ID] = a
		o.byNode[a.NodeID] = append(o.byNode[a.NodeID], a)
	}
	end := func(ref *sdk.Allocation, desired string) {
		if old := snap.Alloc(ref.ID); old != nil {
			c := *old
			c.DesiredStatus = desired
			put(&c)
		}
	}
	for _, a := range req.AllocsStopped {
		end(a, sdk.AllocDesiredStatusStop)
	}
	for _, a := range req.AllocsPreempted {
		end(a, sdk.AllocDesiredStatusEvict)
	}
	for _, a := range req.AllocsUpdated {
		put(a)
	}
	return o
}

func (o *overlay) Alloc(id string) *sdk.Allocation {
	if a, ok := o.allocs[id]; ok {
		return a
	}
	return o.Snapshot.Alloc(id)
}

func (o *overlay) AllocsByNode(nodeID string) []*sdk.Allocation {
	over := o.byNode[nodeID]
	base := o.Snapshot.AllocsByNode(nodeID)
	if len(over) == 0 {
		return base
	}
	out := make([]*sdk.Allocation, 0, len(base)+len(over))
	for _, a := range base {
		if _, replaced := o.allocs[a.ID]; !replaced {
			out = append(out, a)
		}
	}
	return append(out, over...)
}
