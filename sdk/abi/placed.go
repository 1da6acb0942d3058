package abi

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/internal/chunk"
)

// Placements is a plan's new allocations split for the wire (ABI 1.8):
// the node lists that go in Plan.NodeAllocation as they are (Whole), and
// the rest as templates (Shared) and what each allocation has of its own
// (Placed). A plugin reuses one Placements across plans.
type Placements struct {
	Whole  map[string][]*sdk.Allocation
	Shared []*sdk.Allocation
	Placed []Placed

	// share says that Split may take the NodesAvailable the placements
	// share off their metrics (ABI 1.10); nodesAvailable is the map taken,
	// which Reset puts back.
	share          bool
	nodesAvailable map[string]int
}

// ShareNodesAvailable lets the next Splits send the NodesAvailable map of
// the placements' metrics once (PlanRequest.NodesAvailable), for a host
// whose ABI TakesNodesAvailable.
func (p *Placements) ShareNodesAvailable(on bool) { p.share = on }

// NodesAvailable is the map Split took off the placements' metrics, for
// PlanRequest.NodesAvailable, or nil.
func (p *Placements) NodesAvailable() map[string]int { return p.nodesAvailable }

// maxShared bounds the templates of one plan, and so the comparisons an
// allocation may cost before it is sent whole.
const maxShared = 8

// Split fills p from a plan's NodeAllocation, whose allocations leave Job
// nil (the plan carries it). A node's list is placed when every
// allocation in it is on that node and matches a template (shares every
// field but those of Placed, and has no TaskStates, AllocStates,
// PreemptedAllocations or DesiredTransition), and goes whole otherwise,
// so that Expand restores each list in its order; an empty list goes
// whole, its key being all there is to send. Allocations share
// AllocatedResources when they hold the same pointer: templates are never
// compared deeply.
//
// With ShareNodesAvailable on, Split may take the NodesAvailable map off
// the placements' metrics, which are the caller's: they stay without it
// until Reset (or the next Split) puts it back, so call Reset once the
// request is encoded, whether or not that succeeded.
func (p *Placements) Split(na map[string][]*sdk.Allocation) {
	p.Reset()
	for node, allocs := range na {
		placed, shared := len(p.Placed), len(p.Shared)
		for _, a := range allocs {
			t := -1
			if a != nil && a.NodeID == node {
				t = p.template(a)
			}
			if t < 0 {
				// Templates made for this list serve no other. (What is cut
				// off is cleared: Reset clears up to the length.)
				clear(p.Shared[shared:])
				clear(p.Placed[placed:])
				p.Shared, p.Placed = p.Shared[:shared], p.Placed[:placed]
				break
			}
			p.Placed = append(p.Placed, placedOf(a, uint32(t)))
		}
		if len(p.Placed) == placed {
			if p.Whole == nil {
				p.Whole = make(map[string][]*sdk.Allocation)
			}
			p.Whole[node] = allocs
		}
	}
	if p.share {
		p.takeNodesAvailable()
	}
}

// takeNodesAvailable takes the placements' NodesAvailable off their
// metrics when every one of them holds the same map (the stack gives the
// placements of a pass one). An allocation sent whole keeps its map: if
// its metric is one of the placements', taking theirs would take its
// own, and nothing is taken.
func (p *Placements) takeNodesAvailable() {
	if len(p.Placed) < 2 || p.Placed[0].Metrics == nil {
		return
	}
	shared := p.Placed[0].Metrics.NodesAvailable
	if len(shared) == 0 {
		return
	}
	for i := range p.Placed {
		if m := p.Placed[i].Metrics; m == nil || !sameMap(m.NodesAvailable, shared) {
			return
		}
	}
	// The whole allocations' metrics that hold the map (a preemption's or
	// an in-place update's, usually none) are compared by pointer below.
	var held []*sdk.AllocMetric
	for _, allocs := range p.Whole {
		for _, a := range allocs {
			if a != nil && a.Metrics != nil && sameMap(a.Metrics.NodesAvailable, shared) {
				held = append(held, a.Metrics)
			}
		}
	}
	p.setNodesAvailable(nil)
	for _, m := range held {
		if m.NodesAvailable == nil {
			p.setNodesAvailable(shared)
			return
		}
	}
	p.nodesAvailable = shared
}

// setNodesAvailable sets the NodesAvailable of every placement's metric.
func (p *Placements) setNodesAvailable(m map[string]int) {
	for i := range p.Placed {
		p.Placed[i].Metrics.NodesAvailable = m
	}
}

// sameMap reports whether a and b are the same map, not equal ones: a map
// value is a pointer to the map's runtime header. Comparing counts and
// entries would cost what sending the map once saves.
func sameMap(a, b map[string]int) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// Reset puts back what Split took off the placements' metrics, empties p,
// keeping its room, and drops its references to the last plan's objects.
func (p *Placements) Reset() {
	if p.nodesAvailable != nil {
		p.setNodesAvailable(p.nodesAvailable)
		p.nodesAvailable = nil
	}
	clear(p.Whole)
	clear(p.Shared)
	clear(p.Placed)
	p.Shared, p.Placed = p.Shared[:0], p.Placed[:0]
}

// placedOf is a's entry, of template t.
func placedOf(a *sdk.Allocation, t uint32) Placed {
	return Placed{Shared: t, ID: a.ID, Name: a.Name, NodeID: a.NodeID, NodeName: a.NodeName,
		PreviousAllocation: a.PreviousAllocation, DeploymentStatus: a.DeploymentStatus,
		RescheduleTracker: a.RescheduleTracker, Metrics: a.Metrics}
}

// setOn sets the entry's own fields on a.
func (p *Placed) setOn(a *sdk.Allocation) {
	a.ID, a.Name, a.NodeID, a.NodeName = p.ID, p.Name, p.NodeID, p.NodeName
	a.PreviousAllocation, a.DeploymentStatus, a.RescheduleTracker, a.Metrics =
		p.PreviousAllocation, p.DeploymentStatus, p.RescheduleTracker, p.Metrics
}

// template returns the index of a's template, adding one if there is room,
// or -1 when a cannot be placed.
func (p *Placements) template(a *sdk.Allocation) int {
	if a.Job != nil || a.TaskStates != nil || a.PreemptedAllocations != nil || a.AllocStates != nil ||
		a.DesiredTransition != (sdk.DesiredTransition{}) {
		return -1
	}
	for i, t := range p.Shared {
		if shares(a, t) {
			return i
		}
	}
	if len(p.Shared) == maxShared {
		return -1
	}
	t := *a
	(&Placed{}).setOn(&t)
	p.Shared = append(p.Shared, &t)
	return len(p.Shared) - 1
}

// shares reports whether a has template t's value in every field that a
// template holds.
func shares(a, t *sdk.Allocation) bool {
	return a.TaskGroup == t.TaskGroup && a.AllocatedResources == t.AllocatedResources &&
		a.JobID == t.JobID && a.Namespace == t.Namespace && a.EvalID == t.EvalID &&
		a.JobVersion == t.JobVersion && a.JobModifyIndex == t.JobModifyIndex &&
		a.DesiredStatus == t.DesiredStatus && a.DesiredDescription == t.DesiredDescription &&
		a.ClientStatus == t.ClientStatus && a.ClientDescription == t.ClientDescription &&
		a.DeploymentID == t.DeploymentID && a.FollowupEvalID == t.FollowupEvalID &&
		a.NextAllocation == t.NextAllocation && a.PreemptedByAllocation == t.PreemptedByAllocation &&
		a.CreateIndex == t.CreateIndex && a.ModifyIndex == t.ModifyIndex && a.AllocModifyIndex == t.AllocModifyIndex &&
		a.CreateTime == t.CreateTime && a.ModifyTime == t.ModifyTime
}

// ErrPlaced is returned by Expand for a Placed entry that names no
// template.
var ErrPlaced = errors.New("abi: placed allocation without a template")

// Expand moves r.Placed into r.Plan.NodeAllocation, each entry a copy of
// its template with its own fields, appended to its node's list in the
// order sent, gives each entry's metrics without NodesAvailable
// r.NodesAvailable, and clears r.Shared, r.Placed and r.NodesAvailable.
// Allocations of one template share its AllocatedResources, and those of
// one plan the NodesAvailable map, as the plugin's did.
func (r *PlanRequest) Expand() error {
	defer func() { r.Shared, r.Placed, r.NodesAvailable = nil, nil, nil }()
	if len(r.Placed) == 0 {
		return nil
	}
	if r.Plan == nil {
		return fmt.Errorf("%w: the request has no plan", ErrPlaced)
	}
	if r.Plan.NodeAllocation == nil {
		r.Plan.NodeAllocation = make(map[string][]*sdk.Allocation)
	}
	copies := chunk.Chunks[sdk.Allocation]{Limit: 64}
	copies.Reserve(min(len(r.Placed), 64))
	for i := range r.Placed {
		p := &r.Placed[i]
		if int(p.Shared) >= len(r.Shared) || r.Shared[p.Shared] == nil {
			return fmt.Errorf("%w: entry %d names template %d of %d", ErrPlaced, i, p.Shared, len(r.Shared))
		}
		a := copies.One()
		*a = *r.Shared[p.Shared]
		p.setOn(a)
		if m := a.Metrics; m != nil && m.NodesAvailable == nil {
			m.NodesAvailable = r.NodesAvailable
		}
		r.Plan.NodeAllocation[p.NodeID] = append(r.Plan.NodeAllocation[p.NodeID], a)
	}
	return nil
}

// DecodePlanRequest decodes an OpSubmitPlan request and expands its placed
// allocations: the plan a host acts on. Every host-side reader of a
// PlanRequest goes through it, so that none drops placed allocations.
func DecodePlanRequest(msg []byte) (*sdk.Plan, error) {
	var req PlanRequest
	if err := Decode(msg, &req); err != nil {
		return nil, err
	}
	if req.Plan == nil {
		return nil, errors.New("abi: plan request without a plan")
	}
	if err := req.Expand(); err != nil {
		return nil, err
	}
	return req.Plan, nil
}
