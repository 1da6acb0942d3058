package plan

import (
	"errors"
	"fmt"
	"slices"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/google/uuid"
)

// ErrInvalidPlan wraps the reason a plan was rejected whole.
var ErrInvalidPlan = errors.New("plan: invalid plan")

// MinPreemptionPriorityDelta is how much higher a plan's priority must be
// than the priority of a job whose allocations it preempts.
const MinPreemptionPriorityDelta = 10

// Limits bound what one plan may carry.
type Limits struct {
	// MaxAllocs bounds placements, stops and preemptions together.
	MaxAllocs int
}

// DefaultLimits are generous enough for a system job on a large cluster.
func DefaultLimits() Limits { return Limits{MaxAllocs: 100_000} }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidPlan, fmt.Sprintf(format, args...))
}

// Validate checks what does not depend on capacity: the plan's shape, its
// job, node and allocation IDs. A plan that fails is rejected whole.
func Validate(snap *state.Snapshot, p *sdk.Plan, lim Limits) error {
	if p.EvalID == "" {
		return invalid("no eval ID")
	}
	total := 0
	for _, m := range []map[string][]*sdk.Allocation{p.NodeUpdate, p.NodeAllocation, p.NodePreemptions} {
		for _, as := range m {
			total += len(as)
		}
	}
	if total > lim.MaxAllocs {
		return invalid("plan touches %d allocations, over the limit of %d", total, lim.MaxAllocs)
	}
	if len(p.NodeAllocation) > 0 && p.Job == nil {
		return invalid("placements without a job")
	}
	seen := map[string]bool{}
	dup := func(id string) error {
		if id == "" {
			return invalid("allocation without an ID")
		}
		if seen[id] {
			return invalid("allocation %s appears twice", id)
		}
		seen[id] = true
		return nil
	}
	for node, allocs := range p.NodeAllocation {
		if snap.Node(node) == nil {
			return invalid("unknown node %s", node)
		}
		for _, a := range allocs {
			if err := dup(a.ID); err != nil {
				return err
			}
			if a.NodeID != node {
				return invalid("allocation %s filed under node %s names node %s", a.ID, node, a.NodeID)
			}
			if a.JobID != p.Job.ID || a.Namespace != p.Job.Namespace {
				return invalid("allocation %s belongs to job %s/%s, not the plan's job %s/%s",
					a.ID, a.Namespace, a.JobID, p.Job.Namespace, p.Job.ID)
			}
			if p.Job.LookupTaskGroup(a.TaskGroup) == nil {
				return invalid("allocation %s names unknown task group %q", a.ID, a.TaskGroup)
			}
			if old := snap.Alloc(a.ID); old != nil && (old.JobID != a.JobID || old.Namespace != a.Namespace || old.NodeID != a.NodeID) {
				return invalid("allocation ID %s is already used by another allocation", a.ID)
			}
		}
	}
	// Stops must all belong to the plan's job; a plan without a job (its job
	// was purged) may stop the allocations of one job only.
	var owner *sdk.NamespacedID
	if p.Job != nil {
		owner = &sdk.NamespacedID{Namespace: p.Job.Namespace, ID: p.Job.ID}
	}
	for node, stops := range p.NodeUpdate {
		for _, s := range stops {
			if err := dup(s.ID); err != nil {
				return err
			}
			old := snap.Alloc(s.ID)
			if old == nil {
				return invalid("stop of unknown allocation %s", s.ID)
			}
			if old.NodeID != node {
				return invalid("stop of allocation %s filed under node %s, but it runs on %s", s.ID, node, old.NodeID)
			}
			jk := sdk.NamespacedID{Namespace: old.Namespace, ID: old.JobID}
			if owner == nil {
				owner = &jk
			}
			if jk != *owner {
				return invalid("stop of allocation %s of another job (%s)", s.ID, jk)
			}
		}
	}
	for node, pre := range p.NodePreemptions {
		for _, s := range pre {
			if err := dup(s.ID); err != nil {
				return err
			}
			old := snap.Alloc(s.ID)
			if old == nil {
				return invalid("preemption of unknown allocation %s", s.ID)
			}
			if old.NodeID != node {
				return invalid("preemption of allocation %s filed under node %s, but it runs on %s", s.ID, node, old.NodeID)
			}
			prio := sdk.JobDefaultPriority
			if old.Job != nil {
				prio = old.Job.Priority
			}
			if p.Priority-prio < MinPreemptionPriorityDelta {
				return invalid("allocation %s (priority %d) may not be preempted by priority %d", s.ID, prio, p.Priority)
			}
		}
	}
	return nil
}

// Evaluate verifies p against snap node by node and returns what may be
// committed: the result to answer with, and the request to apply (nil if
// nothing). Nodes whose changes do not fit are rejected; with AllAtOnce a
// single rejection rejects everything.
func Evaluate(snap *state.Snapshot, p *sdk.Plan, now int64, newID func() string) (*sdk.PlanResult, *fsm.ApplyPlanResultsRequest) {
	result := &sdk.PlanResult{
		NodeUpdate: map[string][]*sdk.Allocation{}, NodeAllocation: map[string][]*sdk.Allocation{},
		NodePreemptions: map[string][]*sdk.Allocation{},
	}
	nodes := map[string]bool{}
	for _, m := range []map[string][]*sdk.Allocation{p.NodeUpdate, p.NodeAllocation, p.NodePreemptions} {
		for n := range m {
			nodes[n] = true
		}
	}
	ids := make([]string, 0, len(nodes))
	for n := range nodes {
		ids = append(ids, n)
	}
	slices.Sort(ids)
	for _, n := range ids {
		if ok, _ := nodeFits(snap, p, n); !ok {
			result.RejectedNodes = append(result.RejectedNodes, n)
			continue
		}
		if us := p.NodeUpdate[n]; len(us) > 0 {
			result.NodeUpdate[n] = us
		}
		if as := p.NodeAllocation[n]; len(as) > 0 {
			result.NodeAllocation[n] = as
		}
		if ps := p.NodePreemptions[n]; len(ps) > 0 {
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
	for _, n := range ids {
		req.AllocsStopped = append(req.AllocsStopped, result.NodeUpdate[n]...)
		for _, a := range result.NodeAllocation[n] {
			c := *a
			c.Job = nil
			req.AllocsUpdated = append(req.AllocsUpdated, &c)
		}
		req.AllocsPreempted = append(req.AllocsPreempted, result.NodePreemptions[n]...)
	}
	req.PreemptionEvals = preemptionEvals(snap, req.AllocsPreempted, now, newID)
	if len(req.AllocsStopped)+len(req.AllocsUpdated)+len(req.AllocsPreempted) == 0 &&
		req.Deployment == nil && len(req.DeploymentUpdates) == 0 {
		return result, nil
	}
	return result, req
}

// nodeFits checks one node's part of the plan against the latest state.
func nodeFits(snap *state.Snapshot, p *sdk.Plan, nodeID string) (bool, string) {
	placements := p.NodeAllocation[nodeID]
	if len(placements) == 0 {
		return true, "" // only stops and preemptions: they always fit
	}
	node := snap.Node(nodeID)
	if node == nil {
		return false, "node does not exist"
	}
	removed := map[string]bool{}
	for _, a := range p.NodeUpdate[nodeID] {
		removed[a.ID] = true
	}
	for _, a := range p.NodePreemptions[nodeID] {
		removed[a.ID] = true
	}
	newPlacement := false
	for _, a := range placements {
		removed[a.ID] = true
		if snap.Alloc(a.ID) == nil {
			newPlacement = true
		}
	}
	if newPlacement && !node.Ready() {
		return false, "node is not ready for placements"
	}
	if !newPlacement && node.Status != sdk.NodeStatusReady {
		return false, "node is not ready"
	}
	proposed := make([]*sdk.Allocation, 0, len(placements)+8)
	for _, a := range snap.AllocsByNode(nodeID) {
		if !removed[a.ID] {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placements...)
	if ok, dim := feasible.AllocsFit(node, proposed); !ok {
		return false, dim + " exhausted"
	}
	return true, ""
}

// preemptionEvals returns one pending eval per job that lost allocations.
// As seed 002 says, they have no PreviousEval: the chain breaks here.
func preemptionEvals(snap *state.Snapshot, preempted []*sdk.Allocation, now int64, newID func() string) []*sdk.Evaluation {
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
		e := &sdk.Evaluation{ID: newID(), Namespace: a.Namespace, JobID: a.JobID,
			TriggeredBy: sdk.EvalTriggerPreemption, Status: sdk.EvalStatusPending,
			CreateTime: now, ModifyTime: now}
		if a.Job != nil {
			e.Priority, e.Type = a.Job.Priority, a.Job.Type
		}
		if j := snap.Job(a.Namespace, a.JobID); j != nil {
			e.Priority, e.Type, e.JobModifyIndex = j.Priority, j.Type, j.JobModifyIndex
		}
		out = append(out, e)
	}
	return out
}

// NewID returns a random UUID.
func NewID() string { return uuid.NewString() }
