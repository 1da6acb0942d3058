package plan

import (
	"maps"

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
	// claims are the CSI volume claims the committing result's new
	// allocations take as it applies, by volume.
	claims map[sdk.NamespacedID][]*sdk.CSIClaim
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
		o.claim(a, req.Job)
		put(a)
	}
	return o
}

// claim records the CSI claims a new allocation takes as it commits, as
// the FSM takes them (state.Txn.claimCSIVolumes): those of the job version
// it runs, which may be an older one than the plan's (verify.PlacedJob).
func (o *overlay) claim(a *sdk.Allocation, planJob *sdk.Job) {
	if a.ClientTerminalStatus() {
		return
	}
	rs := sdk.CSIAllocRequests(verify.PlacedJob(o.Snapshot, planJob, a), a)
	if len(rs) == 0 || o.Snapshot.Alloc(a.ID) != nil {
		return // no volume, or an update, which keeps the claims it holds
	}
	for _, r := range rs {
		if o.claims == nil {
			o.claims = map[sdk.NamespacedID][]*sdk.CSIClaim{}
		}
		k := sdk.NamespacedID{Namespace: a.Namespace, ID: r.Source}
		o.claims[k] = append(o.claims[k], r.Claim(a))
	}
}

// CSIVolume is the volume with the committing result's claims on it.
func (o *overlay) CSIVolume(ns, id string) *sdk.CSIVolume {
	v := o.Snapshot.CSIVolume(ns, id)
	claims := o.claims[sdk.NamespacedID{Namespace: ns, ID: id}]
	if v == nil || len(claims) == 0 {
		return v
	}
	c := *v
	c.ReadClaims, c.WriteClaims = maps.Clone(v.ReadClaims), maps.Clone(v.WriteClaims)
	for _, cl := range claims {
		c.AddClaim(cl)
	}
	return &c
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
