package stack

import (
	"maps"
	"slices"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/internal/chunk"
	"github.com/drover-sched/drover/sdk/internal/usage"
	"github.com/drover-sched/drover/sdk/preempt"
)

// Plan is the plan a scheduler builds for one evaluation, together with
// what it does to each node it touches, so that a node's usage and the
// job's allocation counts there are read in O(1) instead of being
// recomputed from the plan for every candidate (Nomad recomputes them; that
// is what makes its spread scoring quadratic).
//
// Every change to the plan goes through Plan's methods; they keep the
// counters and tell the registered counters (spread, distinct_property)
// about allocations of the job that come and go.
//
// The two kinds of count see different allocations, as Nomad v1.6.1's
// scheduler does. The per-node counts (distinct_hosts, job anti-affinity)
// hold every allocation of the job on the node but those the node reports
// finished: one the servers stopped still occupies its node until then
// (Nomad reads them from the node's proposed allocations). The registered
// counters hear only of live allocations, those the servers have not
// stopped (Nomad's property sets skip terminal allocations). Either way a
// stop in the plan itself takes the allocation out of the counts within
// the plan, so a destructive update may replace an allocation on its own
// node.
type Plan struct {
	*sdk.Plan
	state sdk.State
	job   *sdk.Job
	// nodes holds, per node the plan touches or the job runs on, what the
	// plan changes there and the job's allocations there after the plan:
	// by the node's number in bySlot when the state numbers its nodes
	// (numbered), else by ID in nodes (see slotRecord).
	nodes    map[string]*nodeChange
	numbered numberedState
	bySlot   []*nodeChange
	// last is the record of the node a selection chose last, found by
	// number, where the allocation is placed next (see hint).
	last     *nodeChange
	records  chunk.Chunks[nodeChange] // where new nodeChanges come from
	watchers []Watcher
	// changed lists the records of every change (a record each time its
	// version rises, so possibly more than once), for caches that follow
	// the few nodes that change rather than check every node's version.
	changed []*nodeChange
	// lists and counts are where first entries of per-node lists come
	// from: most nodes get one allocation of the plan, of one group.
	lists  chunk.Chunks[*sdk.Allocation]
	counts chunk.Chunks[groupCount]
	allocs chunk.Chunks[sdk.Allocation]
	usage  usage.Cache
	// preempted counts the plan's preemptions per job and group.
	preempted map[preempt.Group]int
	// csi counts the CSI claims of the plan's placements, once a selection
	// for a group with CSI volumes needs them.
	csi csiClaims
}

// recordChunk bounds the chunks nodeChanges are allocated in, above the
// default: a walk touches every node it visits, and one allocation per
// node was most of a small eval's allocations.
const recordChunk = 1024

// Watcher hears about allocations of the plan's job that the plan adds
// (delta 1) or removes (delta -1) on a node.
type Watcher interface {
	Add(n *sdk.Node, delta int)
	// Matches reports whether allocations of task group tg concern it.
	Matches(tg string) bool
}

// nodeChange is what the plan does to one node, and the job's allocations
// there after the plan (overall and per task group): all but those the node
// reports finished, stopped ones it still runs among them.
type nodeChange struct {
	nodeID  string
	delta   sdk.Usage
	placed  []*sdk.Allocation
	removed map[string]bool
	job     int
	groups  []groupCount
	// version rises with every change, so that what was computed from the
	// node's state can be cached until the node changes.
	version uint32
}

type groupCount struct {
	tg string
	n  int
}

func (c *nodeChange) group(tg string) int {
	for _, g := range c.groups {
		if g.tg == tg {
			return g.n
		}
	}
	return 0
}

// NewPlan starts an empty plan for eval and job (nil for a purged job)
// over state. The plan reads state as it is now: the state must not change
// while the plan is built and read. A scheduler makes a new plan for each
// attempt, after SubmitPlan has refreshed the state (sdk.Planner).
func NewPlan(state sdk.State, eval *sdk.Evaluation, job *sdk.Job) *Plan {
	p := &Plan{
		Plan:  &sdk.Plan{EvalID: eval.ID, Priority: eval.Priority, Job: job, SnapshotIndex: state.Index()},
		state: state, job: job, nodes: map[string]*nodeChange{},
		records: chunk.Chunks[nodeChange]{Limit: recordChunk},
	}
	if ns, ok := state.(numberedState); ok {
		p.numbered, p.bySlot = ns, make([]*nodeChange, ns.NodeSlots())
	}
	if job != nil {
		p.Plan.AllAtOnce = job.AllAtOnce
		for _, a := range state.AllocsByJob(job.Namespace, job.ID) {
			if !a.ClientTerminalStatus() {
				p.count(a.NodeID, a.TaskGroup, 1)
			}
		}
	}
	return p
}

func (p *Plan) count(nodeID, tg string, delta int) {
	c := p.change(nodeID)
	p.countOn(c, tg, delta)
	p.changed = append(p.changed, c)
}

func (p *Plan) countOn(c *nodeChange, tg string, delta int) {
	c.version++
	c.job += delta
	for i := range c.groups {
		if c.groups[i].tg == tg {
			c.groups[i].n += delta
			return
		}
	}
	if c.groups == nil {
		c.groups = p.counts.Take(1)[:0]
	}
	c.groups = append(c.groups, groupCount{tg: tg, n: delta})
}

// appendAlloc adds a to the plan's allocations on its node.
func (p *Plan) appendAlloc(a *sdk.Allocation) {
	if p.NodeAllocation == nil {
		p.NodeAllocation = map[string][]*sdk.Allocation{}
	}
	p.NodeAllocation[a.NodeID] = p.appendTo(p.NodeAllocation[a.NodeID], a)
}

// appendTo appends a to list, starting a new list in a chunk.
func (p *Plan) appendTo(list []*sdk.Allocation, a *sdk.Allocation) []*sdk.Allocation {
	if list == nil {
		list = p.lists.Take(1)[:0]
	}
	return append(list, a)
}

// Watch registers w for the job's allocations from now on. The caller
// builds w from the state and this plan's effects so far (see Replay).
func (p *Plan) Watch(w Watcher) { p.watchers = append(p.watchers, w) }

// Replay tells w about the job's allocations the plan already added or
// removed, so that a watcher built from the state (counting the job's live
// allocations) catches up with the plan.
func (p *Plan) Replay(w Watcher) {
	if p.job == nil {
		return
	}
	for nodeID, stops := range p.NodeUpdate {
		n := p.state.Node(nodeID)
		for _, s := range stops {
			if n != nil && s.JobID == p.job.ID && w.Matches(s.TaskGroup) && p.wasLive(s.ID) {
				w.Add(n, -1)
			}
		}
	}
	for nodeID, placed := range p.NodeAllocation {
		n := p.state.Node(nodeID)
		for _, a := range placed {
			if n != nil && w.Matches(a.TaskGroup) && p.state.Alloc(a.ID) == nil {
				w.Add(n, 1)
			}
		}
	}
}

// wasLive reports whether the state allocation with id is live: not
// stopped by the servers, nor finished on its node.
func (p *Plan) wasLive(id string) bool {
	a := p.state.Alloc(id)
	return a != nil && !a.TerminalStatus()
}

func (p *Plan) notify(nodeID, tg string, delta int) {
	if len(p.watchers) == 0 {
		return
	}
	n := p.state.Node(nodeID)
	if n == nil {
		return
	}
	for _, w := range p.watchers {
		if w.Matches(tg) {
			w.Add(n, delta)
		}
	}
}

// reserve makes room for records of n nodes, so that the plan's index of
// nodes does not grow (rehashing) one node at a time during a walk.
func (p *Plan) reserve(n int) {
	if p.numbered != nil {
		p.records.Reserve(n)
		return
	}
	if n <= 2*len(p.nodes) {
		return
	}
	p.nodes = withRoom(p.nodes, n)
	p.records.Reserve(n - len(p.nodes))
}

// reservePlacements makes room in the plan's placements for n nodes
// besides those it has (unless it has n already), so that the map does
// not grow (rehashing) one node at a time.
func (p *Plan) reservePlacements(n int) {
	if have := len(p.NodeAllocation); n > have {
		p.NodeAllocation = withRoom(p.NodeAllocation, have+n)
	}
}

// withRoom returns a copy of m made for n entries.
func withRoom[K comparable, V any](m map[K]V, n int) map[K]V {
	r := make(map[K]V, n)
	maps.Copy(r, m)
	return r
}

// numberedState is a state that numbers its nodes (sdk.Node.Slots), as
// sdk/mirror's Mirror does: the stack keeps what it knows per node in
// slices indexed by number, and reads a node's usage and capacity without
// hashing its ID, the largest part of learning a node in a wasm guest.
type numberedState interface {
	// NodeSlots bounds the numbers.
	NodeSlots() int
	// Numbered returns n's number if n is the node the state holds under
	// it, else 0 (a copy, a node of another state, one since replaced).
	Numbered(n *sdk.Node) int32
	// Occupancy returns NodeUsage and Capacity of the node numbered s.
	Occupancy(s int32) (used, capacity sdk.Usage)
}

// change returns node nodeID's record, creating it.
func (p *Plan) change(nodeID string) *nodeChange { return p.lookup(nodeID, true) }

// find returns node nodeID's record, or nil if the plan has none.
func (p *Plan) find(nodeID string) *nodeChange { return p.lookup(nodeID, false) }

func (p *Plan) lookup(nodeID string, create bool) *nodeChange {
	if c := p.last; c != nil && c.nodeID == nodeID {
		return c
	}
	if p.numbered != nil {
		if n := p.state.Node(nodeID); n != nil {
			if c, ok := p.slotRecord(n, create); ok {
				return c
			}
		}
	}
	c := p.nodes[nodeID]
	if c == nil && create {
		c = p.records.One()
		c.nodeID = nodeID
		p.nodes[nodeID] = c
	}
	return c
}

// hint remembers the record of node n, which a selection chose: placing
// there next finds it without looking the node up by ID.
func (p *Plan) hint(n *sdk.Node) {
	if p.numbered == nil {
		return
	}
	if c, ok := p.slotRecord(n, true); ok {
		p.last = c
	}
}

// slotRecord returns node n's record by its number; ok is false when the
// record is by ID instead: n is not the state's node under a number. Over
// a state that does not change (see NewPlan) the answer is the same for
// every lookup of a node, so that its record is in one place. The check
// of the record's node ID is a guard against a plan used across a change
// of its state: a node given the number of a deleted one then gets a
// record by ID rather than the deleted node's (its counts are lost, as
// the deleted node's are, but never mixed with another node's).
func (p *Plan) slotRecord(n *sdk.Node, create bool) (c *nodeChange, ok bool) {
	return p.slotRecordAt(n, p.numbered.Numbered(n), create)
}

// slotRecordAt is slotRecord for n numbered s.
func (p *Plan) slotRecordAt(n *sdk.Node, s int32, create bool) (c *nodeChange, ok bool) {
	if s <= 0 || int(s) >= len(p.bySlot) {
		return nil, false
	}
	c = p.bySlot[s]
	switch {
	case c == nil && create:
		c = p.records.One()
		c.nodeID = n.ID
		p.bySlot[s] = c
	case c != nil && c.nodeID != n.ID:
		return nil, false
	}
	return c, true
}

// remove accounts for a state allocation leaving its node: one that still
// holds resources (see sdk.State.NodeUsage), even if already stopped.
func (p *Plan) remove(a *sdk.Allocation) {
	if a.ClientTerminalStatus() {
		return
	}
	c := p.change(a.NodeID)
	if c.removed == nil {
		c.removed = map[string]bool{}
	}
	if c.removed[a.ID] {
		return
	}
	c.removed[a.ID] = true
	c.delta.Sub(p.usage.Of(a))
	c.version++
	p.changed = append(p.changed, c)
	if p.job != nil && a.JobID == p.job.ID && a.Namespace == p.job.Namespace {
		p.countOn(c, a.TaskGroup, -1)
		if !a.TerminalStatus() {
			p.notify(a.NodeID, a.TaskGroup, -1)
		}
	}
}

// unremove undoes remove.
func (p *Plan) unremove(a *sdk.Allocation) {
	c := p.find(a.NodeID)
	if c == nil || !c.removed[a.ID] {
		return
	}
	delete(c.removed, a.ID)
	c.delta.Add(p.usage.Of(a))
	c.version++
	p.changed = append(p.changed, c)
	if p.job != nil && a.JobID == p.job.ID && a.Namespace == p.job.Namespace {
		p.countOn(c, a.TaskGroup, 1)
		if !a.TerminalStatus() {
			p.notify(a.NodeID, a.TaskGroup, 1)
		}
	}
}

// Stop stops an existing allocation (desc is DesiredDescription;
// clientStatus is set for lost allocations; followupEvalID links a delayed
// reschedule).
func (p *Plan) Stop(a *sdk.Allocation, desc, clientStatus, followupEvalID string) {
	p.AppendStoppedAlloc(a, desc, clientStatus)
	if followupEvalID != "" {
		stops := p.NodeUpdate[a.NodeID]
		stops[len(stops)-1].FollowupEvalID = followupEvalID
	}
	p.remove(a)
}

// PopStop takes back the last stop of a (a replacement could not be placed,
// or an in-place probe is over).
func (p *Plan) PopStop(a *sdk.Allocation) {
	stops := p.NodeUpdate[a.NodeID]
	for i := len(stops) - 1; i >= 0; i-- {
		if stops[i].ID == a.ID {
			stops = append(stops[:i], stops[i+1:]...)
			break
		}
	}
	if len(stops) == 0 {
		delete(p.NodeUpdate, a.NodeID)
	} else {
		p.NodeUpdate[a.NodeID] = stops
	}
	p.unremove(a)
}

// NewAllocation returns a new, zeroed allocation for the plan to place:
// the plan allocates them a chunk at a time.
func (p *Plan) NewAllocation() *sdk.Allocation { return p.allocs.One() }

// Place adds a new allocation (its ID is not in the state). Its
// AllocatedResources must not change afterwards: the plan counts them
// once for all the allocations that share them.
func (p *Plan) Place(a *sdk.Allocation) {
	p.appendAlloc(a)
	if p.csi.on {
		p.csi.log = append(p.csi.log, a)
	}
	c := p.change(a.NodeID)
	c.delta.Add(p.usage.Of(a))
	c.placed = p.appendTo(c.placed, a)
	c.version++
	p.changed = append(p.changed, c)
	if p.job != nil {
		p.countOn(c, a.TaskGroup, 1)
		p.notify(a.NodeID, a.TaskGroup, 1)
	}
}

// Update updates an existing allocation in place: the new version replaces
// the old on the same node.
func (p *Plan) Update(a *sdk.Allocation) {
	p.appendAlloc(a)
	if p.csi.on {
		p.csi.log = append(p.csi.log, a)
	}
	if old := p.state.Alloc(a.ID); old != nil && !old.ClientTerminalStatus() {
		c := p.change(a.NodeID)
		if c.removed == nil {
			c.removed = map[string]bool{}
		}
		if !c.removed[a.ID] {
			c.removed[a.ID] = true
			c.delta.Sub(p.usage.Of(old))
		}
		c.delta.Add(p.usage.Of(a))
		c.placed = p.appendTo(c.placed, a)
		c.version++
		p.changed = append(p.changed, c)
	}
}

// Annotate writes a changed allocation (a follow-up eval ID, a reconnect)
// without changing what it holds.
func (p *Plan) Annotate(a *sdk.Allocation) { p.appendAlloc(a) }

// Preempt evicts alloc (of another job) to make room for the allocation
// with ID by.
func (p *Plan) Preempt(a *sdk.Allocation, by string) {
	p.AppendPreemptedAlloc(a, by)
	p.remove(a)
	if p.preempted == nil {
		p.preempted = map[preempt.Group]int{}
	}
	p.preempted[preempt.GroupOf(a)]++
}

// PreemptedOf is how many allocations of group g the plan preempts.
func (p *Plan) PreemptedOf(g preempt.Group) int { return p.preempted[g] }

// Used is what node nodeID holds after the plan.
func (p *Plan) Used(nodeID string) sdk.Usage {
	u := p.state.NodeUsage(nodeID)
	if c := p.find(nodeID); c != nil {
		u.Add(c.delta)
	}
	return u
}

// JobCount is how many allocations of the job node nodeID holds after the
// plan: all but those the node reports finished, so one the servers stopped
// counts until its node reports it (what distinct_hosts reads).
func (p *Plan) JobCount(nodeID string) int {
	if c := p.find(nodeID); c != nil {
		return c.job
	}
	return 0
}

// GroupCount is how many allocations of task group tg node nodeID holds
// after the plan, counted as JobCount counts them (what distinct_hosts and
// job anti-affinity read).
func (p *Plan) GroupCount(tg, nodeID string) int {
	if c := p.find(nodeID); c != nil {
		return c.group(tg)
	}
	return 0
}

// learn returns what node n holds in the state and what it offers, and
// the record of what the plan does to it, creating an empty one: a stack
// keeps the pointer and reads the node's change and counts without
// looking it up again.
func (p *Plan) learn(n *sdk.Node) (used, capacity sdk.Usage, c *nodeChange) {
	if p.numbered != nil {
		if s := p.numbered.Numbered(n); s > 0 {
			used, capacity = p.numbered.Occupancy(s)
			if c, ok := p.slotRecordAt(n, s, true); ok {
				return used, capacity, c
			}
			return used, capacity, p.lookup(n.ID, true)
		}
	}
	return p.state.NodeUsage(n.ID), n.Capacity(), p.lookup(n.ID, true)
}

// Proposed returns the allocations node nodeID holds after the plan: those
// placed, and those of the state that hold resources (stopped ones the node
// still runs among them, as in Nomad's scheduler) and that the plan does
// not remove. It builds a new slice: use it only when quantities are not
// enough (ports, cores, devices, preemption).
func (p *Plan) Proposed(nodeID string) []*sdk.Allocation {
	return p.AppendProposed(nil, nodeID)
}

// AppendProposed appends Proposed(nodeID) to out and returns the result:
// a caller that asks about node after node reuses one slice.
func (p *Plan) AppendProposed(out []*sdk.Allocation, nodeID string) []*sdk.Allocation {
	c := p.find(nodeID)
	existing := p.state.AllocsByNode(nodeID)
	out = slices.Grow(out, len(existing)+1)
	for _, a := range existing {
		if a.ClientTerminalStatus() || (c != nil && c.removed[a.ID]) {
			continue
		}
		out = append(out, a)
	}
	if c != nil {
		out = append(out, c.placed...)
	}
	return out
}

// Preempted returns every allocation the plan preempts so far.
func (p *Plan) Preempted() []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, as := range p.NodePreemptions {
		out = append(out, as...)
	}
	return out
}

// State is the state the plan is built over.
func (p *Plan) State() sdk.State { return p.state }
