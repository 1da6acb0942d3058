// Package mirror keeps a scheduler plugin's copy of the cluster state,
// brought up to date by abi.StateSync messages, and serves it as sdk.State.
//
// Per-node usage is maintained as allocations come and go, so a scheduler
// never sums a node's allocations per candidate. Slices are built lazily and
// cached until the next change to what they cover.
package mirror

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/internal/chunk"
	"github.com/drover-sched/drover/sdk/internal/usage"
)

// ErrOutOfSync is returned by Apply when a delta does not start at the
// mirror's index; the host answers with a full sync.
var ErrOutOfSync = errors.New("mirror: delta does not start at the mirror's index")

// ErrMalformed is returned by Apply for a sync that no state could produce
// (a null object in one of its lists); the mirror is left as it was.
var ErrMalformed = errors.New("mirror: malformed sync")

// versionKey names a job version: its JobModifyIndex is unique across
// versions and across registrations of the same job ID.
type versionKey struct {
	ns, id   string
	modIndex uint64
}

func versionOf(j *sdk.Job) versionKey { return versionKey{j.Namespace, j.ID, j.JobModifyIndex} }

// allocSet is a set of allocations sorted by ID. A few (a node's, most
// often) are kept in a sorted slice; a map with a lazily sorted view takes
// over beyond smallSet, where inserting into the slice would cost more
// than hashing, which costs most inside wasm.
type allocSet struct {
	few    []*sdk.Allocation // the set while m is nil
	m      map[string]*sdk.Allocation
	sorted []*sdk.Allocation
	dirty  bool
}

const smallSet = 16

func (s *allocSet) find(id string) (int, bool) {
	return slices.BinarySearchFunc(s.few, id, func(a *sdk.Allocation, id string) int { return strings.Compare(a.ID, id) })
}

// reserve makes room for n more allocations at once, so that a plan's
// worth of them does not grow the set step by step.
func (s *allocSet) reserve(n int) {
	if s.m != nil || len(s.few)+n <= smallSet {
		return
	}
	s.toMap(len(s.few) + n)
	s.dirty = true
}

// toMap moves the set from its small sorted slice to a map with room for
// capacity members.
func (s *allocSet) toMap(capacity int) {
	s.m = make(map[string]*sdk.Allocation, capacity)
	for _, b := range s.few {
		s.m[b.ID] = b
	}
	s.few = nil
}

func (s *allocSet) put(a *sdk.Allocation) {
	if s.m == nil {
		i, found := s.find(a.ID)
		switch {
		case found:
			s.few[i] = a
			return
		case len(s.few) < smallSet:
			s.few = slices.Insert(s.few, i, a)
			return
		}
		s.toMap(2 * smallSet)
	}
	s.m[a.ID] = a
	s.dirty = true
}

func (s *allocSet) del(id string) {
	if s.m == nil {
		if i, found := s.find(id); found {
			s.few = slices.Delete(s.few, i, i+1)
		}
		return
	}
	delete(s.m, id)
	s.dirty = true
}

func (s *allocSet) len() int {
	if s.m == nil {
		return len(s.few)
	}
	return len(s.m)
}

func (s *allocSet) list() []*sdk.Allocation {
	if s == nil {
		return nil
	}
	if s.m == nil {
		return s.few
	}
	if s.dirty || (s.sorted == nil && len(s.m) > 0) {
		s.sorted = s.sorted[:0]
		for _, a := range s.m {
			s.sorted = append(s.sorted, a)
		}
		slices.SortFunc(s.sorted, func(a, b *sdk.Allocation) int { return strings.Compare(a.ID, b.ID) })
		s.dirty = false
	}
	return s.sorted
}

// Mirror is a state mirror. It is not safe for concurrent use: a plugin
// instance processes one eval at a time.
type Mirror struct {
	index uint64

	nodes     map[string]*sdk.Node
	nodeList  []*sdk.Node
	nodesDirt bool
	// nodesVersion rises whenever nodes change (NodesVersion), full syncs
	// included: it is never reset.
	nodesVersion uint64

	jobs     map[sdk.NamespacedID]*sdk.Job
	versions map[versionKey]*sdk.Job

	allocs map[string]*sdk.Allocation
	byJob  map[sdk.NamespacedID]*allocSet
	// lastJob is the entry of byJob last looked up: allocations come in
	// runs of one job (a plan's), and hashing the key once per run is
	// enough. Its set is nil when the entry is gone.
	lastJob struct {
		key sdk.NamespacedID
		set *allocSet
	}
	// byNode holds each node's allocations and usage, one lookup for
	// both; a node the mirror does not hold and that has no allocations
	// has no entry.
	byNode map[string]*nodeAllocs
	// The mirror numbers its nodes and their classes (sdk.Node.Slots).
	// slotNodes[s] is the node numbered s (nil: a free number; 0 is never
	// given), slotUsage[s] its entry's usage in byNode and slotCap[s] its
	// capacity, in arrays a scheduler's walk over the nodes reads without
	// chasing a pointer per node; freeSlots are the numbers of deleted
	// nodes, given again.
	// classes numbers the computed classes of the held nodes, as long as
	// one holds each, and holds one string per class, which its nodes
	// share; freeClasses are numbers of classes no node holds any more,
	// given again, so that numbers track the classes of the cluster, not
	// their churn (a per-class cache by number grows to the largest).
	slotNodes   []*sdk.Node
	slotUsage   []sdk.Usage
	slotCap     []sdk.Usage
	freeSlots   []int32
	classes     map[string]*classSlot
	freeClasses []int32
	usage       usage.Cache

	deployments map[string]*sdk.Deployment
	schedConfig *sdk.SchedulerConfiguration
	csiVolumes  map[sdk.NamespacedID]*sdk.CSIVolume

	// evals are mirrored only for plugins that ask (Info.MirrorEvals).
	evals     map[string]*sdk.Evaluation
	evalList  []*sdk.Evaluation
	evalsDirt bool

	// kept is the last wholly committed plan (Keep), waiting for the next
	// sync to say whether its allocations join the mirror (ABI 1.2).
	kept *sdk.Plan
	// early holds kept's allocations once PreApply has added them, and
	// what they replaced, until the next sync confirms or undoes them.
	early *earlyKept
}

// earlyKept is a kept plan applied ahead of its sync (PreApply): the
// copies added, unstamped, and for each the allocation it replaced (nil
// for a new one), so that a sync without abi.StateSync.Kept can undo it.
type earlyKept struct {
	copies   []*sdk.Allocation
	replaced []*sdk.Allocation
}

var (
	_ sdk.State     = (*Mirror)(nil)
	_ sdk.EvalState = (*Mirror)(nil)
	_ sdk.Catalog   = (*Mirror)(nil)
)

// New returns an empty mirror at index 0.
func New() *Mirror {
	m := &Mirror{}
	m.reset()
	return m
}

func (m *Mirror) reset() {
	m.index = 0
	m.nodes = map[string]*sdk.Node{}
	m.nodeList = nil
	m.nodesDirt = true
	m.nodesVersion++
	m.jobs = map[sdk.NamespacedID]*sdk.Job{}
	m.versions = map[versionKey]*sdk.Job{}
	m.allocs = map[string]*sdk.Allocation{}
	m.byJob = map[sdk.NamespacedID]*allocSet{}
	m.lastJob.set = nil
	m.byNode = map[string]*nodeAllocs{}
	m.slotNodes, m.slotUsage, m.slotCap, m.freeSlots = nil, nil, nil, nil
	m.classes, m.freeClasses = map[string]*classSlot{}, nil
	m.deployments = map[string]*sdk.Deployment{}
	m.schedConfig = sdk.DefaultSchedulerConfiguration()
	m.csiVolumes = map[sdk.NamespacedID]*sdk.CSIVolume{}
	m.evals = map[string]*sdk.Evaluation{}
	m.evalList = nil
	m.evalsDirt = true
	m.kept, m.early = nil, nil
}

// Keep records a plan the host committed whole (abi.PlanResponse.Whole).
// Its new allocations join the mirror with the next sync that carries
// abi.StateSync.Kept, stamped as abi.KeptAlloc says, and are forgotten by
// one that does not; until then the mirror does not show them, as it
// would not have without Keep, unless PreApply added them early. A later
// Keep replaces an earlier one.
func (m *Mirror) Keep(plan *sdk.Plan) {
	m.undo(m.early)
	m.kept, m.early = plan, nil
}

// Apply applies a sync. A delta must start at the mirror's index, and may
// count on a kept plan (abi.StateSync.Kept) only if the mirror holds one,
// or Apply returns ErrOutOfSync and changes nothing but forgetting the kept
// plan, as any sync does.
func (m *Mirror) Apply(s *abi.StateSync) error {
	if s == nil {
		// No word on the kept plan: it waits for the next sync, no
		// longer added early.
		m.undo(m.early)
		m.early = nil
		return nil
	}
	kept, early := m.kept, m.early
	m.kept, m.early = nil, nil
	if err := m.check(s, kept); err != nil {
		m.undo(early)
		return err
	}
	if s.Full {
		m.reset()
	} else if s.Kept == nil {
		m.undo(early)
	}
	if s.SchedulerConfig != nil {
		m.schedConfig = s.SchedulerConfig
	}
	if len(s.DeletedNodes)+len(s.Nodes) > maxNodeEdits {
		m.nodesDirt = true // cheaper to sort again than to edit in place
	}
	for _, id := range s.DeletedNodes {
		if old, ok := m.nodes[id]; ok {
			delete(m.nodes, id)
			m.unnumber(old)
			m.editNodeList(id, nil)
			m.nodesVersion++
		}
	}
	for _, n := range s.Nodes {
		n = m.number(n, m.nodes[n.ID])
		m.nodes[n.ID] = n
		m.editNodeList(n.ID, n)
		m.nodesVersion++
	}
	// Before the other job changes, while every job checkStatuses found is
	// still there (a valid delta names a job in one list only).
	for _, st := range s.JobStatuses {
		j := st.Patch(m.jobs[sdk.NamespacedID{Namespace: st.Namespace, ID: st.ID}])
		m.jobs[j.NamespacedID()] = j
		m.versions[versionOf(j)] = j
	}
	for _, id := range s.DeletedJobs {
		delete(m.jobs, id)
	}
	for _, j := range s.Jobs {
		m.jobs[j.NamespacedID()] = j
		m.versions[versionOf(j)] = j
	}
	for _, j := range s.JobVersions {
		m.versions[versionOf(j)] = j
	}
	if s.Kept != nil && !s.Full {
		// The host left these out of Allocs: they are as the plugin
		// submitted them, stamped with where and when they were stored,
		// all of the plan's job version (looked up once, after the job
		// changes above).
		if early == nil {
			m.addKept(kept, s.Kept, nil)
		} else {
			m.stamp(early, kept, s.Kept)
		}
	}
	for _, id := range s.DeletedAllocs {
		m.removeAlloc(id)
	}
	for _, a := range s.Allocs {
		m.removeAlloc(a.ID)
		m.addAlloc(a)
	}
	for _, id := range s.DeletedDeployments {
		delete(m.deployments, id)
	}
	for _, d := range s.Deployments {
		m.deployments[d.ID] = d
	}
	for _, id := range s.DeletedCSIVolumes {
		delete(m.csiVolumes, id)
	}
	for _, v := range s.CSIVolumes {
		m.csiVolumes[sdk.NamespacedID{Namespace: v.Namespace, ID: v.ID}] = v
	}
	for _, id := range s.DeletedEvals {
		delete(m.evals, id)
		m.evalsDirt = true
	}
	for _, e := range s.Evals {
		m.evals[e.ID] = e
		m.evalsDirt = true
	}
	if m.nodesDirt {
		// Sorted here, with the sync, rather than by the first Nodes call:
		// after a full sync that is the instance's first eval, not a later one.
		m.sortNodes()
	}
	m.index = s.Index
	return nil
}

// check refuses a sync Apply cannot apply to the mirror, before it changes
// anything: kept is the kept plan Apply took.
func (m *Mirror) check(s *abi.StateSync, kept *sdk.Plan) error {
	if err := checkShape(s); err != nil {
		return err
	}
	switch {
	case s.Full:
		return nil
	case s.FromIndex != m.index:
		return fmt.Errorf("%w: delta from %d, mirror at %d", ErrOutOfSync, s.FromIndex, m.index)
	case s.Kept != nil && kept == nil:
		return fmt.Errorf("%w: the delta counts on a kept plan the mirror does not hold", ErrOutOfSync)
	}
	return m.checkStatuses(s.JobStatuses)
}

// PreApply adds the kept plan's allocations (Keep) to the mirror ahead of
// the sync that says whether they join it, so that the work is done
// between evals (a plugin calls it when idle, once an eval's answer is
// with the host) rather than at the start of the next one. Until that sync
// the mirror shows them without the index and time the host stored them
// at; the sync stamps them (abi.StateSync.Kept), or removes them and puts
// back what they replaced, as Apply would have had PreApply not run.
func (m *Mirror) PreApply() {
	if m.kept != nil && m.early == nil {
		m.early = &earlyKept{}
		m.addKept(m.kept, &abi.Kept{}, m.early)
	}
}

// addKept adds copies of kept's new allocations to the mirror, stamped
// with k, replacing those of the same IDs; with e, it records in e the
// copies and what they replaced.
func (m *Mirror) addKept(kept *sdk.Plan, k *abi.Kept, e *earlyKept) {
	n := 0
	for _, as := range kept.NodeAllocation {
		n += len(as)
	}
	if e != nil {
		e.copies = make([]*sdk.Allocation, 0, n)
		e.replaced = make([]*sdk.Allocation, 0, n)
	}
	copies := chunk.Chunks[sdk.Allocation]{Limit: keptChunk}
	copies.Reserve(min(n, keptChunk))
	if kept.Job != nil && n > smallSet {
		m.jobSet(kept.Job.NamespacedID()).reserve(n)
	}
	job := m.keptJob(kept)
	for _, as := range kept.NodeAllocation {
		for _, a := range as {
			if e != nil {
				e.replaced = append(e.replaced, m.allocs[a.ID])
			}
			m.removeAlloc(a.ID)
			c := copies.One()
			*c = *a
			abi.StampKept(c, kept.Job, k)
			c.Job = job
			m.addAlloc(c)
			if e != nil {
				e.copies = append(e.copies, c)
			}
		}
	}
}

// stamp gives the allocations PreApply added the index and time k says
// the host stored them at, and links them to their job version as the
// sync left it (a job status in the same delta replaces the version).
func (m *Mirror) stamp(e *earlyKept, kept *sdk.Plan, k *abi.Kept) {
	job := m.keptJob(kept)
	for _, c := range e.copies {
		abi.StampKept(c, kept.Job, k)
		if c.Job = job; job == nil {
			c.Job = m.versions[versionKey{c.Namespace, c.JobID, c.JobModifyIndex}]
		}
	}
}

// keptJob is the mirror's copy of the kept plan's job version.
func (m *Mirror) keptJob(kept *sdk.Plan) *sdk.Job {
	if kept.Job == nil {
		return nil
	}
	return m.versions[versionOf(kept.Job)]
}

// undo takes the allocations PreApply added out of the mirror and puts
// back what they replaced.
func (m *Mirror) undo(e *earlyKept) {
	if e == nil {
		return
	}
	for i := len(e.copies) - 1; i >= 0; i-- {
		m.removeAlloc(e.copies[i].ID)
		if r := e.replaced[i]; r != nil {
			m.addAlloc(r)
		}
	}
}

// checkShape refuses a sync with a null object in one of its lists, before
// Apply changes anything.
func checkShape(s *abi.StateSync) error {
	for _, l := range [...]struct {
		what  string
		at, n int
	}{
		{"node", firstNull(s.Nodes), len(s.Nodes)},
		{"job", firstNull(s.Jobs), len(s.Jobs)},
		{"job status", firstNull(s.JobStatuses), len(s.JobStatuses)},
		{"job version", firstNull(s.JobVersions), len(s.JobVersions)},
		{"allocation", firstNull(s.Allocs), len(s.Allocs)},
		{"deployment", firstNull(s.Deployments), len(s.Deployments)},
		{"CSI volume", firstNull(s.CSIVolumes), len(s.CSIVolumes)},
		{"evaluation", firstNull(s.Evals), len(s.Evals)},
	} {
		if l.at >= 0 {
			return fmt.Errorf("%w: %s %d of %d is null", ErrMalformed, l.what, l.at+1, l.n)
		}
	}
	return nil
}

// firstNull returns the index of the first nil in xs, or -1.
func firstNull[T any](xs []*T) int {
	for i, x := range xs {
		if x == nil {
			return i
		}
	}
	return -1
}

// checkStatuses makes sure that the mirror holds the specification each
// job status patches (abi.JobStatus), before Apply changes anything.
func (m *Mirror) checkStatuses(sts []*abi.JobStatus) error {
	for _, st := range sts {
		j := m.jobs[sdk.NamespacedID{Namespace: st.Namespace, ID: st.ID}]
		if j == nil || j.JobModifyIndex != st.JobModifyIndex {
			return fmt.Errorf("%w: the delta changes the status of job %s/%s at modify index %d, which the mirror does not hold",
				ErrOutOfSync, st.Namespace, st.ID, st.JobModifyIndex)
		}
	}
	return nil
}

// nodeAllocs is a node's allocations and the resources its live ones use.
type nodeAllocs struct {
	allocs allocSet
	usage  sdk.Usage
	// slot is the node's number while the mirror holds the node (0
	// otherwise), whose slotUsage follows usage; the entry stays, even
	// empty, as long as the node does.
	slot int32
}

type classSlot struct {
	slot  int32
	class string
	nodes int // held nodes of the class
}

// number returns the copy of n the mirror holds, numbered: old's number
// if it replaces old, else a free one. The copy (shallow: the mirror
// never changes what n points to) keeps the sync's node as it was, since
// a sync may share its nodes with others (sdktest's harness does).
func (m *Mirror) number(n, old *sdk.Node) *sdk.Node {
	c := *n
	n = &c
	var s int32
	switch {
	case old != nil:
		s, _ = old.Slots()
	case len(m.freeSlots) > 0:
		s = m.freeSlots[len(m.freeSlots)-1]
		m.freeSlots = m.freeSlots[:len(m.freeSlots)-1]
	default:
		if len(m.slotNodes) == 0 {
			m.slotNodes, m.slotUsage, m.slotCap = make([]*sdk.Node, 1), make([]sdk.Usage, 1), make([]sdk.Usage, 1)
		}
		s = int32(len(m.slotNodes))
		m.slotNodes, m.slotUsage, m.slotCap = append(m.slotNodes, nil), append(m.slotUsage, sdk.Usage{}), append(m.slotCap, sdk.Usage{})
	}
	if old != nil {
		// Released first: a class whose only node changed class frees its
		// number for the new one.
		m.releaseClass(old.ComputedClass)
	}
	cs := m.classes[n.ComputedClass]
	if cs == nil {
		cs = &classSlot{class: n.ComputedClass, slot: int32(len(m.classes) + 1)}
		if k := len(m.freeClasses); k > 0 {
			cs.slot, m.freeClasses = m.freeClasses[k-1], m.freeClasses[:k-1]
		}
		m.classes[n.ComputedClass] = cs
	}
	cs.nodes++
	n.ComputedClass = cs.class
	n.SetSlots(s, cs.slot)
	na := m.byNode[n.ID]
	if na == nil {
		na = &nodeAllocs{}
		m.byNode[n.ID] = na
	}
	na.slot = s
	m.slotNodes[s], m.slotUsage[s], m.slotCap[s] = n, na.usage, n.Capacity()
	return n
}

// unnumber frees the number of n, a node the mirror deletes.
func (m *Mirror) unnumber(n *sdk.Node) {
	s, _ := n.Slots()
	if na := m.byNode[n.ID]; na.allocs.len() == 0 {
		delete(m.byNode, n.ID)
	} else {
		na.slot = 0
	}
	m.slotNodes[s] = nil
	m.freeSlots = append(m.freeSlots, s)
	m.releaseClass(n.ComputedClass)
}

// releaseClass counts one held node of class fewer, freeing its number
// with the last.
func (m *Mirror) releaseClass(class string) {
	cs := m.classes[class]
	if cs.nodes--; cs.nodes == 0 {
		delete(m.classes, class)
		m.freeClasses = append(m.freeClasses, cs.slot)
	}
}

// keptChunk bounds the arrays kept allocations are copied into: an array
// lives as long as any of its copies does.
const keptChunk = 64

// addAlloc adds a, whose ID the mirror does not hold.
func (m *Mirror) addAlloc(a *sdk.Allocation) {
	if a.Job == nil {
		a.Job = m.versions[versionKey{a.Namespace, a.JobID, a.JobModifyIndex}]
	}
	m.allocs[a.ID] = a
	m.jobSet(sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}).put(a)
	na := m.byNode[a.NodeID]
	if na == nil {
		na = &nodeAllocs{}
		m.byNode[a.NodeID] = na
	}
	na.allocs.put(a)
	if !a.ClientTerminalStatus() {
		na.usage.Add(m.usage.Of(a))
		if na.slot > 0 {
			m.slotUsage[na.slot] = na.usage
		}
	}
}

// jobSet returns the set of job jk's allocations, creating it.
func (m *Mirror) jobSet(jk sdk.NamespacedID) *allocSet {
	if m.lastJob.set != nil && m.lastJob.key == jk {
		return m.lastJob.set
	}
	js := m.byJob[jk]
	if js == nil {
		js = &allocSet{}
		m.byJob[jk] = js
	}
	m.lastJob.key, m.lastJob.set = jk, js
	return js
}

func (m *Mirror) removeAlloc(id string) {
	a, ok := m.allocs[id]
	if !ok {
		return
	}
	delete(m.allocs, id)
	jk := sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
	if js := m.byJob[jk]; js != nil {
		js.del(id)
		if js.len() == 0 {
			delete(m.byJob, jk)
			if m.lastJob.set == js {
				m.lastJob.set = nil
			}
		}
	}
	if na := m.byNode[a.NodeID]; na != nil {
		na.allocs.del(id)
		if !a.ClientTerminalStatus() {
			na.usage.Sub(m.usage.Of(a))
			if na.slot > 0 {
				m.slotUsage[na.slot] = na.usage
			}
		}
		if na.allocs.len() == 0 && na.slot == 0 {
			delete(m.byNode, a.NodeID)
		}
	}
}

// Index implements sdk.State.
func (m *Mirror) Index() uint64 { return m.index }

// maxNodeEdits is the most node changes a delta applies to the sorted
// node list in place; with more, the list is rebuilt and sorted.
const maxNodeEdits = 64

// editNodeList keeps the sorted node list in step with one change (n nil:
// node id deleted), unless the list is to be rebuilt anyway. Sorting every
// node again after each change cost about 80 ms in wasm at 5,000 nodes.
func (m *Mirror) editNodeList(id string, n *sdk.Node) {
	if m.nodesDirt {
		return
	}
	i, found := slices.BinarySearchFunc(m.nodeList, id, func(x *sdk.Node, id string) int { return strings.Compare(x.ID, id) })
	switch {
	case found && n == nil:
		m.nodeList = slices.Delete(m.nodeList, i, i+1)
	case found:
		m.nodeList[i] = n
	case n != nil:
		m.nodeList = slices.Insert(m.nodeList, i, n)
	}
}

// Nodes implements sdk.State.
func (m *Mirror) Nodes() []*sdk.Node {
	if m.nodesDirt {
		m.sortNodes()
	}
	return m.nodeList
}

// sortNodes rebuilds the node list sorted by ID.
func (m *Mirror) sortNodes() {
	m.nodeList = m.nodeList[:0]
	for _, n := range m.nodes {
		m.nodeList = append(m.nodeList, n)
	}
	slices.SortFunc(m.nodeList, func(a, b *sdk.Node) int { return strings.Compare(a.ID, b.ID) })
	m.nodesDirt = false
}

// NodesVersion changes whenever a node comes, goes or changes, so that
// what a scheduler derives from the nodes (stack.ReadyCache) can be kept
// between evaluations until then.
func (m *Mirror) NodesVersion() uint64 { return m.nodesVersion }

// Node implements sdk.State.
func (m *Mirror) Node(id string) *sdk.Node { return m.nodes[id] }

// NodeUsage implements sdk.State.
func (m *Mirror) NodeUsage(nodeID string) sdk.Usage {
	if na := m.byNode[nodeID]; na != nil {
		return na.usage
	}
	return sdk.Usage{}
}

// NodeSlots bounds the numbers of the mirror's nodes (sdk.Node.Slots):
// each is below it.
func (m *Mirror) NodeSlots() int { return max(len(m.slotNodes), 1) }

// Numbered returns n's number (sdk.Node.Slots) if n is the node the
// mirror holds under it, else 0: a copy, a node of another state or one
// the mirror has since replaced.
func (m *Mirror) Numbered(n *sdk.Node) int32 {
	if s, _ := n.Slots(); s > 0 && int(s) < len(m.slotNodes) && m.slotNodes[s] == n {
		return s
	}
	return 0
}

// Occupancy returns NodeUsage and Capacity of the node numbered s, a
// number Numbered returned since the mirror last changed.
func (m *Mirror) Occupancy(s int32) (used, capacity sdk.Usage) {
	return m.slotUsage[s], m.slotCap[s]
}

// Job implements sdk.State.
func (m *Mirror) Job(namespace, id string) *sdk.Job {
	return m.jobs[sdk.NamespacedID{Namespace: namespace, ID: id}]
}

// JobVersion implements sdk.State: a version of the job as it is
// registered now (after a purge and a new registration, versions of the
// old registration are not returned).
func (m *Mirror) JobVersion(namespace, id string, version uint64) *sdk.Job {
	cur := m.jobs[sdk.NamespacedID{Namespace: namespace, ID: id}]
	if cur == nil {
		return nil
	}
	if cur.Version == version {
		return cur
	}
	for k, j := range m.versions {
		if k.ns == namespace && k.id == id && j.Version == version && j.CreateIndex == cur.CreateIndex {
			return j
		}
	}
	return nil
}

// Alloc implements sdk.State.
func (m *Mirror) Alloc(id string) *sdk.Allocation { return m.allocs[id] }

// AllocsByJob implements sdk.State.
func (m *Mirror) AllocsByJob(namespace, jobID string) []*sdk.Allocation {
	return m.byJob[sdk.NamespacedID{Namespace: namespace, ID: jobID}].list()
}

// AllocsByNode implements sdk.State.
func (m *Mirror) AllocsByNode(nodeID string) []*sdk.Allocation {
	if na := m.byNode[nodeID]; na != nil {
		return na.allocs.list()
	}
	return nil
}

// Deployment implements sdk.State.
func (m *Mirror) Deployment(id string) *sdk.Deployment { return m.deployments[id] }

// LatestDeployment implements sdk.State.
func (m *Mirror) LatestDeployment(namespace, jobID string) *sdk.Deployment {
	var latest *sdk.Deployment
	for _, d := range m.deployments {
		if d.Namespace != namespace || d.JobID != jobID {
			continue
		}
		if latest == nil || d.CreateIndex > latest.CreateIndex {
			latest = d
		}
	}
	return latest
}

// SchedulerConfig implements sdk.State.
func (m *Mirror) SchedulerConfig() *sdk.SchedulerConfiguration { return m.schedConfig }

// CSIVolume implements sdk.State.
func (m *Mirror) CSIVolume(namespace, id string) *sdk.CSIVolume {
	return m.csiVolumes[sdk.NamespacedID{Namespace: namespace, ID: id}]
}

// Evals implements sdk.EvalState.
func (m *Mirror) Evals() []*sdk.Evaluation {
	if m.evalsDirt {
		m.evalList = m.evalList[:0]
		for _, e := range m.evals {
			m.evalList = append(m.evalList, e)
		}
		slices.SortFunc(m.evalList, func(a, b *sdk.Evaluation) int { return strings.Compare(a.ID, b.ID) })
		m.evalsDirt = false
	}
	return m.evalList
}

// Eval implements sdk.EvalState.
func (m *Mirror) Eval(id string) *sdk.Evaluation { return m.evals[id] }

// Jobs implements sdk.Catalog. Like Allocs and Deployments, it builds a
// new slice: they are for the core scheduler's occasional scans, not for
// hot paths.
func (m *Mirror) Jobs() []*sdk.Job {
	return sortedValues(m.jobs, func(a, b *sdk.Job) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Allocs implements sdk.Catalog.
func (m *Mirror) Allocs() []*sdk.Allocation {
	return sortedValues(m.allocs, func(a, b *sdk.Allocation) int { return strings.Compare(a.ID, b.ID) })
}

// Deployments implements sdk.Catalog.
func (m *Mirror) Deployments() []*sdk.Deployment {
	return sortedValues(m.deployments, func(a, b *sdk.Deployment) int { return strings.Compare(a.ID, b.ID) })
}

// sortedValues returns m's values in a new slice sorted by cmp.
func sortedValues[K comparable, V any](m map[K]*V, cmp func(a, b *V) int) []*V {
	out := make([]*V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, cmp)
	return out
}
