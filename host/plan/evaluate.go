package plan

import (
	"slices"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
	"github.com/google/uuid"
)

// Evaluate verifies p (already validated) against snap node by node and
// returns what may be committed: the result to answer with, and the request
// to apply (nil if nothing). Nodes whose part does not fit are rejected, with
// the reason kept per node; with AllAtOnce a single rejection rejects
// everything. The result's RefreshIndex is snap's index when something was
// rejected; the applier raises it to the commit's index.
func Evaluate(snap verify.State, p *sdk.Plan, now int64, newID func() string) (*sdk.PlanResult, *fsm.ApplyPlanResultsRequest) {
	result := &sdk.PlanResult{
		NodeUpdate: map[string][]*sdk.Allocation{}, NodeAllocation: map[string][]*sdk.Allocation{},
		NodePreemptions: map[string][]*sdk.Allocation{},
	}
	nodes := planNodes(p)
	var rejected map[string]bool
	for _, n := range nodes {
		if ok, _ := verify.NodeFits(snap, p, n); !ok {
			if rejected == nil {
				rejected = map[string]bool{}
			}
			rejected[n] = true
		}
	}
	if verify.PlacesCSIVolumes(snap, p) {
		for n := range verify.CSIClaims(snap, p, nodes, rejected) {
			if rejected == nil {
				rejected = map[string]bool{}
			}
			rejected[n] = true
		}
	}
	for _, n := range nodes {
		if rejected[n] {
			result.RejectedNodes = append(result.RejectedNodes, n)
			continue
		}
		if us := p.NodeUpdate[n]; len(us) > 0 {
			result.NodeUpdate[n] = us
		}
		if as := p.NodeAllocation[n]; len(as) > 0 {
			result.NodeAllocation[n] = as
		}
		if ps := p.NodePreemptions[n]; len(ps) > 0 && placesOn(snap, p, n) {
			result.NodePreemptions[n] = ps
		}
	}
	if len(result.RejectedNodes) > 0 {
		result.RefreshIndex = snap.Index()
		if p.AllAtOnce {
			result.NodeUpdate, result.NodeAllocation, result.NodePreemptions = nil, nil, nil
			return result, nil
		}
	}
	result.Deployment = p.Deployment
	result.DeploymentUpdates = p.DeploymentUpdates
	req := &fsm.ApplyPlanResultsRequest{
		Job: p.Job, EvalID: p.EvalID, Deployment: p.Deployment,
		DeploymentUpdates: p.DeploymentUpdates, UpdatedAt: now,
	}
	for _, n := range nodes {
		req.AllocsStopped = append(req.AllocsStopped, result.NodeUpdate[n]...)
		req.AllocsUpdated = append(req.AllocsUpdated, result.NodeAllocation[n]...)
		req.AllocsPreempted = append(req.AllocsPreempted, stillLive(snap, result.NodePreemptions[n])...)
	}
	req.PreemptionEvals = preemptionEvals(snap, req.AllocsPreempted, now, newID)
	if len(req.AllocsStopped)+len(req.AllocsUpdated)+len(req.AllocsPreempted) == 0 &&
		req.Deployment == nil && len(req.DeploymentUpdates) == 0 {
		return result, nil
	}
	return result, req
}

// stillLive returns the preempted allocations that snap does not already
// stop or evict. Schedulers may preempt one whose node still runs it (it
// holds its room until then): that changes nothing, so it is not marked
// again, keeping why it stops, and its job gets no preemption eval, as
// Nomad's plan applier drops such preemptions.
func stillLive(snap verify.State, preempted []*sdk.Allocation) []*sdk.Allocation {
	out := preempted[:0:0]
	for _, p := range preempted {
		if a := snap.Alloc(p.ID); a == nil || !a.TerminalStatus() {
			out = append(out, p)
		}
	}
	return out
}

// placesOn reports whether p places an allocation on node n, new or
// updated, one that is not just the annotation of an allocation the node
// reports finished. A preemption makes room for such a placement: on a
// node without one it has no reason, and is dropped (otherwise a plan
// could evict any allocation of lower priority). Nomad's applier drops
// those on a node where the plan neither places nor stops anything, and
// keeps those beside stops alone.
func placesOn(snap verify.State, p *sdk.Plan, n string) bool {
	for _, a := range p.NodeAllocation[n] {
		if old := snap.Alloc(a.ID); old == nil || !old.ClientTerminalStatus() {
			return true
		}
	}
	return false
}

// planNodes returns the nodes a plan stops or places allocations on,
// sorted: those its preemptions may be on (placesOn).
func planNodes(p *sdk.Plan) []string {
	var ids []string
	for _, m := range []map[string][]*sdk.Allocation{p.NodeUpdate, p.NodeAllocation} {
		for n := range m {
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// preemptionEvals returns one pending eval per job that lost allocations.
// As seed 002 says, they have no PreviousEval and the preempting eval gets
// no pointer to them: the chain breaks here.
func preemptionEvals(snap verify.State, preempted []*sdk.Allocation, now int64, newID func() string) []*sdk.Evaluation {
	seen := map[sdk.NamespacedID]bool{}
	var out []*sdk.Evaluation
	for _, p := range preempted {
		a := snap.Alloc(p.ID)
		if a == nil {
			continue
		}
		jk := sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
		if seen[jk] {
			continue
		}
		seen[jk] = true
		j := snap.Job(a.Namespace, a.JobID)
		if j == nil {
			continue // purged: nothing to reschedule
		}
		out = append(out, &sdk.Evaluation{ID: newID(), Namespace: a.Namespace, JobID: a.JobID,
			Priority: j.Priority, Type: j.Type, JobModifyIndex: j.JobModifyIndex,
			TriggeredBy: sdk.EvalTriggerPreemption, Status: sdk.EvalStatusPending,
			CreateTime: now, ModifyTime: now})
	}
	return out
}

// NewID returns a random UUID.
func NewID() string { return uuid.NewString() }
