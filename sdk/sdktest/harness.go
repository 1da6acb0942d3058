package sdktest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/verify"
)

// Verdict is what the harness does with a submitted plan.
type Verdict struct {
	// Err refuses the plan whole: nothing is committed and the scheduler's
	// SubmitPlan returns Err (for example sdk.ErrPlanInvalid).
	Err error
	// Reject lists nodes whose part of the plan is not committed; the
	// result then carries a RefreshIndex.
	Reject []string
}

// Harness is an in-memory cluster and a recording planner. It is not safe
// for concurrent use.
type Harness struct {
	// Now is the time handed to the scheduler.
	Now time.Time
	// Config is the plugin configuration handed to the scheduler.
	Config map[string]string
	// OnPlan, when set, decides each plan's fate; by default every plan
	// commits whole when it fits.
	OnPlan func(plan *sdk.Plan) Verdict

	// Plans are the plans submitted, in order; Results what was committed.
	Plans   []*sdk.Plan
	Results []*sdk.PlanResult
	// Updated, Created and Reblocked are the evals passed to the planner.
	Updated, Created, Reblocked []*sdk.Evaluation
	// Collected are the garbage-collection requests of core evals (ABI
	// 1.1); the harness deletes what they name.
	Collected []*sdk.GCRequest
	// Logs are the scheduler's log messages.
	Logs []abi.LogRecord

	index   uint64
	nodes   map[string]*sdk.Node
	jobs    map[sdk.NamespacedID]*sdk.Job
	allocs  map[string]*sdk.Allocation
	byNode  map[string]map[string]*sdk.Allocation
	deploys map[string]*sdk.Deployment
	evals   map[string]*sdk.Evaluation
	csi     map[sdk.NamespacedID]*sdk.CSIVolume
	// versions are the job versions the harness has seen, by version:
	// registered, or run by an allocation.
	versions map[sdk.NamespacedID]map[uint64]*sdk.Job
	// created are the evals each eval's processing created, with their
	// status, by the processed eval's ID.
	created map[string]map[string]string
	// processing is the ID of the eval last delivered (Deliver): the one
	// the planner operations concern, as on the host; "" before any.
	processing string
	config     *sdk.SchedulerConfiguration
	changes    []change
	ids        int
}

type kind uint8

const (
	kindNode kind = iota + 1
	kindJob
	kindAlloc
	kindDeployment
	kindConfig
	kindEval
	kindCSIVolume
)

type change struct {
	index uint64
	kind  kind
	key   string
	ns    string
}

// New returns an empty cluster at index 1.
func New() *Harness {
	return &Harness{
		Now: time.Unix(1_700_000_000, 0).UTC(), index: 1,
		nodes: map[string]*sdk.Node{}, jobs: map[sdk.NamespacedID]*sdk.Job{}, allocs: map[string]*sdk.Allocation{},
		byNode: map[string]map[string]*sdk.Allocation{}, deploys: map[string]*sdk.Deployment{}, evals: map[string]*sdk.Evaluation{},
		csi:      map[sdk.NamespacedID]*sdk.CSIVolume{},
		versions: map[sdk.NamespacedID]map[uint64]*sdk.Job{}, created: map[string]map[string]string{},
		config: sdk.DefaultSchedulerConfiguration(),
	}
}

// Index is the cluster's current index.
func (h *Harness) Index() uint64 { return h.index }

func (h *Harness) bump(cs ...change) uint64 {
	h.index++
	for i := range cs {
		cs[i].index = h.index
	}
	h.changes = append(h.changes, cs...)
	return h.index
}

// UpsertNode adds or replaces nodes and, as the host's state store does on
// every node write, computes their class: a test may change a node's
// attributes or meta after sdktest.Node, and feasibility that schedulers
// cache per computed class (feasible.Eligibility) must see the change.
func (h *Harness) UpsertNode(nodes ...*sdk.Node) {
	cs := make([]change, len(nodes))
	for i, n := range nodes {
		n.ComputeClass()
		h.nodes[n.ID] = n
		cs[i] = change{kind: kindNode, key: n.ID}
	}
	h.bump(cs...)
}

// DeleteNode removes a node.
func (h *Harness) DeleteNode(id string) {
	delete(h.nodes, id)
	h.bump(change{kind: kindNode, key: id})
}

// UpsertJob adds or replaces a job; its Version rises when it replaces one,
// and it keeps the replaced one's CreateIndex (unless it sets its own).
func (h *Harness) UpsertJob(j *sdk.Job) {
	if j.Namespace == "" {
		j.Namespace = "default"
	}
	old := h.jobs[j.NamespacedID()]
	if old != nil && old != j {
		j.Version = old.Version + 1
	}
	idx := h.bump(change{kind: kindJob, key: j.ID, ns: j.Namespace})
	switch {
	case j.CreateIndex != 0:
	case old != nil:
		j.CreateIndex = old.CreateIndex // a new version of the same job, as the host keeps it
	default:
		j.CreateIndex = idx
	}
	j.ModifyIndex, j.JobModifyIndex = idx, idx
	h.jobs[j.NamespacedID()] = j
	h.keepVersion(j)
}

// keepVersion records j as its version of its job.
func (h *Harness) keepVersion(j *sdk.Job) {
	k := j.NamespacedID()
	if h.versions[k] == nil {
		h.versions[k] = map[uint64]*sdk.Job{}
	}
	h.versions[k][j.Version] = j
}

// JobVersion returns a version of a job that the harness has seen:
// registered, or run by an allocation.
func (h *Harness) JobVersion(namespace, id string, version uint64) *sdk.Job {
	return h.versions[sdk.NamespacedID{Namespace: namespace, ID: id}][version]
}

// UpsertAlloc adds or replaces allocations. An allocation without Job is
// linked to its job's current version.
func (h *Harness) UpsertAlloc(allocs ...*sdk.Allocation) {
	cs := make([]change, len(allocs))
	for i, a := range allocs {
		cs[i] = change{kind: kindAlloc, key: a.ID}
	}
	idx := h.bump(cs...)
	for _, a := range allocs {
		h.putAlloc(a, idx)
	}
}

func (h *Harness) putAlloc(a *sdk.Allocation, idx uint64) {
	if a.Namespace == "" {
		a.Namespace = "default"
	}
	if a.Job == nil {
		a.Job = h.jobs[sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}]
	}
	if a.Job != nil {
		a.JobVersion, a.JobModifyIndex = a.Job.Version, a.Job.JobModifyIndex
		if h.JobVersion(a.Job.Namespace, a.Job.ID, a.Job.Version) == nil {
			h.keepVersion(a.Job)
		}
	}
	if a.CreateIndex == 0 {
		a.CreateIndex = idx
	}
	a.ModifyIndex = idx
	h.claims(a, h.allocs[a.ID], idx)
	h.setAlloc(a)
}

// claims keeps the CSI volume claims in step with an allocation's write,
// as the host's state store does: a new allocation claims its group's
// volumes, one that finishes on its node (or, without a, is deleted)
// releases them.
func (h *Harness) claims(a, old *sdk.Allocation, idx uint64) {
	var claim bool
	switch {
	case a != nil && old == nil && !a.ClientTerminalStatus():
		claim = true
	case a == nil && old != nil, old != nil && !old.ClientTerminalStatus() && a.ClientTerminalStatus():
		a = old
	default:
		return
	}
	for _, r := range sdk.CSIAllocRequests(a.Job, a) {
		k := sdk.NamespacedID{Namespace: a.Namespace, ID: r.Source}
		v := h.csi[k]
		if v == nil {
			continue
		}
		c := *v
		c.ReadClaims, c.WriteClaims = maps.Clone(v.ReadClaims), maps.Clone(v.WriteClaims)
		if claim {
			c.AddClaim(r.Claim(a))
		} else {
			c.ReleaseClaim(a.ID)
		}
		c.ModifyIndex = idx
		h.csi[k] = &c
		h.changes = append(h.changes, change{index: idx, kind: kindCSIVolume, key: k.ID, ns: k.Namespace})
	}
}

// UpsertCSIVolume registers CSI volumes (in namespace default unless they
// name one), keeping the claims of one already registered.
func (h *Harness) UpsertCSIVolume(vols ...*sdk.CSIVolume) {
	cs := make([]change, len(vols))
	for i, v := range vols {
		if v.Namespace == "" {
			v.Namespace = "default"
		}
		cs[i] = change{kind: kindCSIVolume, key: v.ID, ns: v.Namespace}
	}
	idx := h.bump(cs...)
	for _, v := range vols {
		k := sdk.NamespacedID{Namespace: v.Namespace, ID: v.ID}
		if old := h.csi[k]; old != nil {
			v.ReadClaims, v.WriteClaims, v.CreateIndex = old.ReadClaims, old.WriteClaims, old.CreateIndex
		} else {
			v.CreateIndex = idx
		}
		v.ModifyIndex = idx
		h.csi[k] = v
	}
}

// CSIVolume returns a CSI volume, with its claims.
func (h *Harness) CSIVolume(namespace, id string) *sdk.CSIVolume {
	return h.csi[sdk.NamespacedID{Namespace: namespace, ID: id}]
}

// Nodes returns every node, by ID.
func (h *Harness) Nodes() []*sdk.Node {
	out := make([]*sdk.Node, 0, len(h.nodes))
	for _, n := range h.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *sdk.Node) int { return cmp(a.ID, b.ID) })
	return out
}

// setAlloc stores a in the indexes.
func (h *Harness) setAlloc(a *sdk.Allocation) {
	if old := h.allocs[a.ID]; old != nil && old.NodeID != a.NodeID {
		delete(h.byNode[old.NodeID], a.ID)
	}
	h.allocs[a.ID] = a
	if h.byNode[a.NodeID] == nil {
		h.byNode[a.NodeID] = map[string]*sdk.Allocation{}
	}
	h.byNode[a.NodeID][a.ID] = a
}

// removeAlloc drops an allocation from the indexes.
func (h *Harness) removeAlloc(id string) {
	if a := h.allocs[id]; a != nil {
		delete(h.byNode[a.NodeID], id)
	}
	delete(h.allocs, id)
}

// DeleteAlloc removes an allocation.
func (h *Harness) DeleteAlloc(id string) {
	old := h.allocs[id]
	h.removeAlloc(id)
	idx := h.bump(change{kind: kindAlloc, key: id})
	h.claims(nil, old, idx)
}

// UpsertDeployment adds or replaces a deployment.
func (h *Harness) UpsertDeployment(d *sdk.Deployment) {
	idx := h.bump(change{kind: kindDeployment, key: d.ID})
	if d.CreateIndex == 0 {
		d.CreateIndex = idx
	}
	d.ModifyIndex = idx
	h.deploys[d.ID] = d
}

// UpsertEval adds or replaces evaluations; plugins that mirror evals (the
// core scheduler) see them.
func (h *Harness) UpsertEval(evals ...*sdk.Evaluation) {
	cs := make([]change, len(evals))
	for i, e := range evals {
		cs[i] = change{kind: kindEval, key: e.ID}
	}
	idx := h.bump(cs...)
	for _, e := range evals {
		if e.CreateIndex == 0 {
			e.CreateIndex = idx
		}
		e.ModifyIndex = idx
		h.evals[e.ID] = e
	}
}

// Deliver readies eval for processing: as on the host, whose broker hands
// out only evals its state holds, an eval is in the cluster while it is
// processed, so one the cluster does not hold yet is stored. Process calls
// it; so must whatever else runs a scheduler against the harness. From then
// on, until the next Deliver, the planner operations are this eval's, and
// checked as the host checks them: plans for it only (another eval's is
// refused as the host refuses its stale token), updates and reblocks of it
// only, new evals that follow it up.
func (h *Harness) Deliver(eval *sdk.Evaluation) {
	if h.evals[eval.ID] == nil {
		h.UpsertEval(eval)
	}
	h.processing = eval.ID
	// What a delivery created is its own, as on the host: an eval
	// delivered again starts with none (see verify.MayCreate).
	delete(h.created, eval.ID)
}

// processed returns the eval the planner operations concern: the one
// delivered, or, before any was, the stored eval with ID id.
func (h *Harness) processed(id string) *sdk.Evaluation {
	if h.processing != "" {
		id = h.processing
	}
	return h.evals[id]
}

// Eval returns an evaluation.
func (h *Harness) Eval(id string) *sdk.Evaluation { return h.evals[id] }

// SetSchedulerConfig replaces the scheduler configuration.
func (h *Harness) SetSchedulerConfig(c *sdk.SchedulerConfiguration) {
	h.config = c
	h.bump(change{kind: kindConfig})
}

// Node, Job and Alloc read the cluster.
func (h *Harness) Node(id string) *sdk.Node { return h.nodes[id] }

// Job returns a job.
func (h *Harness) Job(namespace, id string) *sdk.Job {
	return h.jobs[sdk.NamespacedID{Namespace: namespace, ID: id}]
}

// Alloc returns an allocation.
func (h *Harness) Alloc(id string) *sdk.Allocation { return h.allocs[id] }

// AllocsByNode returns a node's allocations (terminal ones included), by
// ID.
func (h *Harness) AllocsByNode(nodeID string) []*sdk.Allocation {
	out := make([]*sdk.Allocation, 0, len(h.byNode[nodeID]))
	for _, a := range h.byNode[nodeID] {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *sdk.Allocation) int { return cmp(a.ID, b.ID) })
	return out
}

// Deployment returns a deployment.
func (h *Harness) Deployment(id string) *sdk.Deployment { return h.deploys[id] }

// AllocsByJob returns a job's allocations (terminal ones included), by ID.
func (h *Harness) AllocsByJob(namespace, jobID string) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, a := range h.allocs {
		if a.Namespace == namespace && a.JobID == jobID {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *sdk.Allocation) int { return cmp(a.ID, b.ID) })
	return out
}

// RegisterEval returns a pending job-register eval for job, with a
// deterministic ID.
func (h *Harness) RegisterEval(job *sdk.Job) *sdk.Evaluation {
	h.ids++
	return &sdk.Evaluation{
		ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", h.ids), Namespace: job.Namespace, JobID: job.ID,
		Type: job.Type, Priority: job.Priority, TriggeredBy: sdk.EvalTriggerJobRegister,
		Status: sdk.EvalStatusPending, ModifyIndex: h.index,
	}
}

// RejectAll makes every following plan commit no allocation change, with a
// RefreshIndex, so a scheduler exhausts its plan attempts. As on the host,
// a plan's deployment and deployment updates still commit.
func (h *Harness) RejectAll() {
	h.OnPlan = func(p *sdk.Plan) Verdict {
		var v Verdict
		for n := range p.NodeAllocation {
			v.Reject = append(v.Reject, n)
		}
		for n := range p.NodeUpdate {
			v.Reject = append(v.Reject, n)
		}
		return v
	}
}

// RejectNodes makes the next plan leave the named nodes uncommitted (a
// partial commit); later plans commit whole.
func (h *Harness) RejectNodes(ids ...string) {
	h.OnPlan = func(*sdk.Plan) Verdict {
		h.OnPlan = nil
		return Verdict{Reject: ids}
	}
}

func cmp(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Sync returns the abi.StateSync that brings a mirror at index from to the
// harness's index: a delta, or a full sync when from is 0 or ahead. evals
// says whether the mirror holds evaluations.
func (h *Harness) Sync(from uint64, evals bool) *abi.StateSync {
	if from == 0 || from > h.index {
		return h.FullSync(evals)
	}
	s := &abi.StateSync{FromIndex: from, Index: h.index}
	seen := map[change]bool{}
	start := sort.Search(len(h.changes), func(i int) bool { return h.changes[i].index > from })
	for _, c := range h.changes[start:] {
		c.index = 0
		if seen[c] {
			continue
		}
		seen[c] = true
		switch c.kind {
		case kindNode:
			if n := h.nodes[c.key]; n != nil {
				s.Nodes = append(s.Nodes, n)
			} else {
				s.DeletedNodes = append(s.DeletedNodes, c.key)
			}
		case kindJob:
			if j := h.Job(c.ns, c.key); j != nil {
				s.Jobs = append(s.Jobs, j)
			} else {
				s.DeletedJobs = append(s.DeletedJobs, sdk.NamespacedID{Namespace: c.ns, ID: c.key})
			}
		case kindAlloc:
			if a := h.allocs[c.key]; a != nil {
				s.Allocs = append(s.Allocs, h.wireAlloc(a, s))
			} else {
				s.DeletedAllocs = append(s.DeletedAllocs, c.key)
			}
		case kindDeployment:
			if d := h.deploys[c.key]; d != nil {
				s.Deployments = append(s.Deployments, d)
			} else {
				s.DeletedDeployments = append(s.DeletedDeployments, c.key)
			}
		case kindConfig:
			s.SchedulerConfig = h.config
		case kindCSIVolume:
			if v := h.CSIVolume(c.ns, c.key); v != nil {
				s.CSIVolumes = append(s.CSIVolumes, v)
			} else {
				s.DeletedCSIVolumes = append(s.DeletedCSIVolumes, sdk.NamespacedID{Namespace: c.ns, ID: c.key})
			}
		case kindEval:
			if !evals {
				continue
			}
			if e := h.evals[c.key]; e != nil {
				s.Evals = append(s.Evals, e)
			} else {
				s.DeletedEvals = append(s.DeletedEvals, c.key)
			}
		}
	}
	return s
}

// syncFor is Sync in the forms a plugin that declares info reads, as the
// host's runtime sends it.
func (h *Harness) syncFor(from uint64, info abi.Info) *abi.StateSync {
	s := h.Sync(from, info.MirrorEvals)
	if !abi.Version(info.ABI).TakesCSIVolumes() {
		s.CSIVolumes, s.DeletedCSIVolumes = nil, nil
	}
	if abi.Version(info.ABI).TakesJobStatuses() {
		s.CompactJobs()
	}
	return s
}

// FullSync returns the whole cluster as a full sync.
func (h *Harness) FullSync(evals bool) *abi.StateSync {
	s := &abi.StateSync{Full: true, Index: h.index, SchedulerConfig: h.config}
	for _, n := range h.nodes {
		s.Nodes = append(s.Nodes, n)
	}
	for _, j := range h.jobs {
		s.Jobs = append(s.Jobs, j)
	}
	for _, a := range h.allocs {
		s.Allocs = append(s.Allocs, h.wireAlloc(a, s))
	}
	for _, d := range h.deploys {
		s.Deployments = append(s.Deployments, d)
	}
	for _, v := range h.csi {
		s.CSIVolumes = append(s.CSIVolumes, v)
	}
	if evals {
		for _, e := range h.evals {
			s.Evals = append(s.Evals, e)
		}
		slices.SortFunc(s.Evals, func(a, b *sdk.Evaluation) int { return cmp(a.ID, b.ID) })
	}
	slices.SortFunc(s.Nodes, func(a, b *sdk.Node) int { return cmp(a.ID, b.ID) })
	slices.SortFunc(s.Allocs, func(a, b *sdk.Allocation) int { return cmp(a.ID, b.ID) })
	return s
}

// wireAlloc strips an allocation's job and metrics as the host does,
// adding the job version to the sync when it is not the job's current one.
func (h *Harness) wireAlloc(a *sdk.Allocation, s *abi.StateSync) *sdk.Allocation {
	c := *a
	c.Job, c.Metrics = nil, nil
	if a.Job == nil {
		return &c
	}
	if cur := h.Job(a.Namespace, a.JobID); cur == a.Job {
		return &c
	}
	for _, v := range s.JobVersions {
		if v == a.Job {
			return &c
		}
	}
	s.JobVersions = append(s.JobVersions, a.Job)
	return &c
}

// SubmitPlan commits a plan as the host's applier does, with the host's own
// checks (package verify): it refuses a plan that verify.Plan finds
// invalid, rejects the nodes that verify.NodeFits refuses (over-committed,
// not ready, not eligible) or that OnPlan rejects, and commits the rest.
func (h *Harness) SubmitPlan(p *sdk.Plan) (*sdk.PlanResult, error) {
	h.Plans = append(h.Plans, p)
	if h.processing != "" && p.EvalID != h.processing {
		// The host stamps the delivered eval's token on the plan, which
		// is not that of the eval the plan names.
		return nil, fmt.Errorf("%w: sdktest: a plan for eval %s while eval %s is processed", sdk.ErrStaleToken, p.EvalID, h.processing)
	}
	if err := verify.Plan(h, p, verify.DefaultLimits()); err != nil {
		return nil, err
	}
	var v Verdict
	if h.OnPlan != nil {
		v = h.OnPlan(p)
	}
	if v.Err != nil {
		return nil, v.Err
	}
	reject := map[string]bool{}
	for _, n := range v.Reject {
		reject[n] = true
	}
	for node := range p.NodeAllocation {
		if ok, _ := verify.NodeFits(h, p, node); !ok {
			reject[node] = true
		}
	}
	if verify.PlacesCSIVolumes(h, p) {
		nodes := slices.Sorted(maps.Keys(p.NodeAllocation))
		for node := range verify.CSIClaims(h, p, nodes, reject) {
			reject[node] = true
		}
	}
	if p.AllAtOnce && len(reject) > 0 {
		// All or nothing: every node of the plan is rejected.
		for _, m := range []map[string][]*sdk.Allocation{p.NodeUpdate, p.NodeAllocation, p.NodePreemptions} {
			for node := range m {
				reject[node] = true
			}
		}
	}
	res := &sdk.PlanResult{NodeUpdate: map[string][]*sdk.Allocation{}, NodeAllocation: map[string][]*sdk.Allocation{},
		NodePreemptions: map[string][]*sdk.Allocation{}}
	var cs []change
	commit := func(dst map[string][]*sdk.Allocation, src map[string][]*sdk.Allocation) {
		for node, allocs := range src {
			if reject[node] {
				continue
			}
			dst[node] = allocs
			for _, a := range allocs {
				cs = append(cs, change{kind: kindAlloc, key: a.ID})
			}
		}
	}
	commit(res.NodeUpdate, p.NodeUpdate)
	commit(res.NodeAllocation, p.NodeAllocation)
	commit(res.NodePreemptions, p.NodePreemptions)
	// As on the host, the plan's deployment and its updates commit with
	// whatever part of the plan does, even none, unless the plan is all
	// at once and something was rejected.
	if !p.AllAtOnce || len(reject) == 0 {
		if p.Deployment != nil {
			cs = append(cs, change{kind: kindDeployment, key: p.Deployment.ID})
			res.Deployment = p.Deployment
		}
		for _, u := range p.DeploymentUpdates {
			cs = append(cs, change{kind: kindDeployment, key: u.DeploymentID})
		}
		res.DeploymentUpdates = p.DeploymentUpdates
	}
	idx := h.index
	if len(cs) > 0 {
		idx = h.bump(cs...)
	}
	now := h.Now.UnixNano()
	if res.Deployment != nil {
		d := res.Deployment.Copy()
		d.CreateIndex, d.ModifyIndex, d.CreateTime, d.ModifyTime = idx, idx, now, now
		h.deploys[d.ID] = d
	}
	for _, u := range res.DeploymentUpdates {
		if cur := h.deploys[u.DeploymentID]; cur != nil {
			d := cur.Copy()
			d.Status, d.StatusDescription, d.ModifyIndex, d.ModifyTime = u.Status, u.StatusDescription, idx, now
			h.deploys[d.ID] = d
		}
	}
	for i, m := range []map[string][]*sdk.Allocation{res.NodeUpdate, res.NodePreemptions} {
		for _, stops := range m {
			for _, s := range stops {
				if i == 1 && h.allocs[s.ID].TerminalStatus() {
					continue // preempted while already stopping: the host leaves it so
				}
				c := *h.allocs[s.ID]
				old := &c
				old.DesiredStatus, old.DesiredDescription = s.DesiredStatus, s.DesiredDescription
				if s.ClientStatus != "" {
					old.ClientStatus = s.ClientStatus
				}
				if s.FollowupEvalID != "" {
					old.FollowupEvalID = s.FollowupEvalID
				}
				if s.PreemptedByAllocation != "" {
					old.PreemptedByAllocation = s.PreemptedByAllocation
				}
				old.ModifyIndex, old.ModifyTime = idx, now
				h.setAlloc(old)
			}
		}
	}
	for _, allocs := range res.NodeAllocation {
		for _, a := range allocs {
			c := *a
			c.Job = p.Job
			c.ModifyTime = now
			c.AllocModifyIndex = idx // as the host's FSM stamps a placed or updated allocation
			old := h.allocs[a.ID]
			if v, _ := verify.PlacedVersion(h, p.Job, a); v != nil && old == nil {
				c.Job = v // a new placement that runs an older version, as the host allows
			} else if old != nil && old.Job != nil && sdk.KeepsVersion(old, a) {
				c.Job = old.Job // an annotation keeps the version the allocation runs, as the host does
			}
			if old != nil {
				// An in-place update: the node's view of the allocation
				// stays, unless it is marked unknown on a disconnected node.
				if n := h.nodes[c.NodeID]; c.ClientStatus != sdk.AllocClientStatusUnknown || n == nil || n.Status != sdk.NodeStatusDisconnected {
					c.ClientStatus, c.ClientDescription, c.AllocStates = old.ClientStatus, old.ClientDescription, old.AllocStates
				} else {
					c.AllocStates = sdk.CommittedUnknown(old, &c, time.Unix(0, now))
				}
				c.TaskStates, c.NextAllocation = old.TaskStates, old.NextAllocation
				c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
				if c.Metrics == nil {
					// Plugins never see Metrics: an update without them
					// keeps the stored ones, as the host's FSM does.
					c.Metrics = old.Metrics
				}
			} else {
				c.CreateTime, c.AllocStates = now, nil
			}
			// A new allocation, or a live one updated in place into
			// another deployment, is a placement of its deployment (as the
			// host counts it).
			if d := h.deploys[c.DeploymentID]; d != nil && (old == nil || old.DeploymentID != c.DeploymentID && !old.ClientTerminalStatus()) {
				d = d.Copy()
				if d.CountPlacement(&c, h.Now) {
					d.ModifyIndex = idx
					h.deploys[d.ID] = d
					h.changes = append(h.changes, change{index: idx, kind: kindDeployment, key: d.ID})
				}
			}
			h.putAlloc(&c, idx)
			if prev := h.allocs[c.PreviousAllocation]; prev != nil {
				pc := *prev
				pc.NextAllocation, pc.ModifyIndex = c.ID, idx
				h.setAlloc(&pc)
				h.changes = append(h.changes, change{index: idx, kind: kindAlloc, key: pc.ID})
			}
		}
	}
	res.AllocIndex = idx
	for n := range reject {
		res.RejectedNodes = append(res.RejectedNodes, n)
	}
	slices.Sort(res.RejectedNodes)
	if len(reject) > 0 {
		res.RefreshIndex = h.index
	}
	h.Results = append(h.Results, res)
	return res, nil
}

// UpdateEval checks an update of the eval being processed (see Deliver;
// before any delivery, of the eval in the cluster with e's ID) as the host
// does (verify.EvalUpdate), then stores and records the eval as the host
// would store it.
func (h *Harness) UpdateEval(e *sdk.Evaluation) error {
	proc := h.processed(e.ID)
	if proc == nil {
		return fmt.Errorf("%w: eval %s is not in the cluster", sdk.ErrInvalidEval, e.ID)
	}
	c, err := verify.EvalUpdate(proc, e, h.created[e.ID])
	if err != nil {
		return err
	}
	h.Updated = append(h.Updated, c)
	h.UpsertEval(c)
	return nil
}

// CreateEval checks a new eval as the host does (verify.NewEval: it follows
// up the eval being processed, see Deliver, or before any delivery its
// PreviousEval, which must be in the cluster; verify.Recreated: its ID is
// new, or that of an eval an earlier delivery created), then stores and
// records it as the host would store it.
func (h *Harness) CreateEval(e *sdk.Evaluation) error {
	proc := h.processed(e.PreviousEval)
	if proc == nil {
		return fmt.Errorf("%w: eval %s follows up %q, which is not in the cluster", sdk.ErrInvalidEval, e.ID, e.PreviousEval)
	}
	if err := verify.MayCreate(len(h.created[proc.ID])); err != nil {
		return err
	}
	c, err := verify.NewEval(proc, e)
	if err != nil {
		return err
	}
	if h.created[proc.ID] == nil {
		h.created[proc.ID] = map[string]string{}
	}
	if old := h.evals[c.ID]; old != nil {
		// Created by an earlier delivery of proc: already there, and
		// done, as on the host.
		if err := verify.Recreated(proc, old, e); err != nil {
			return err
		}
		h.created[proc.ID][c.ID] = c.Status
		return nil
	}
	h.created[proc.ID][c.ID] = c.Status
	h.Created = append(h.Created, c)
	h.UpsertEval(c)
	return nil
}

// ReblockEval checks a reblocking of the eval being processed (see
// Deliver; before any delivery, of the eval in the cluster with e's ID),
// which the cluster must hold blocked, as the host does (verify.Reblock),
// then stores and records the eval as the host would store it.
func (h *Harness) ReblockEval(e *sdk.Evaluation) error {
	proc := h.processed(e.ID)
	if proc == nil {
		return fmt.Errorf("%w: eval %s is not in the cluster", sdk.ErrInvalidEval, e.ID)
	}
	c, err := verify.Reblock(proc, h.evals[e.ID], e)
	if err != nil {
		return err
	}
	h.Reblocked = append(h.Reblocked, c)
	h.UpsertEval(c)
	return nil
}

// GarbageCollect records a core eval's request and deletes what it names.
// Unlike the host it does not check that the objects are safe to delete:
// a test asserts on Collected instead.
func (h *Harness) GarbageCollect(req *sdk.GCRequest) error {
	h.Collected = append(h.Collected, req)
	var cs []change
	for _, id := range req.Evals {
		delete(h.evals, id)
		cs = append(cs, change{kind: kindEval, key: id})
	}
	for _, id := range req.Allocs {
		h.removeAlloc(id)
		cs = append(cs, change{kind: kindAlloc, key: id})
	}
	for _, j := range req.Jobs {
		delete(h.jobs, j)
		cs = append(cs, change{kind: kindJob, key: j.ID, ns: j.Namespace})
	}
	for _, id := range req.Nodes {
		delete(h.nodes, id)
		cs = append(cs, change{kind: kindNode, key: id})
	}
	for _, id := range req.Deployments {
		delete(h.deploys, id)
		cs = append(cs, change{kind: kindDeployment, key: id})
	}
	if len(cs) > 0 {
		h.bump(cs...)
	}
	return nil
}

var (
	_ sdk.Planner   = (*Harness)(nil)
	_ sdk.Collector = (*Harness)(nil)
)

// Plugin is a scheduler served through the ABI with a state mirror that
// lives across evals, as a pooled plugin instance does: the first eval gets
// a full sync, later ones deltas.
type Plugin struct {
	h     *Harness
	guest *plugin.Guest
	index uint64
}

// Plugin wraps s as a plugin named info.Name.
func (h *Harness) Plugin(info plugin.Info, s sdk.Scheduler) *Plugin {
	if info.Name == "" {
		info.Name = "sdktest"
	}
	return &Plugin{h: h, guest: plugin.NewGuest(info, s)}
}

// CheckConfig asks s, through the plugin ABI as a host does when it loads
// a plugin (ABI 1.7), whether it accepts h.Config. It returns nil when s
// accepts it or does not check it (sdk.ConfigChecker), and otherwise an
// error whose abi.CodeOf is abi.CodeConfigRefused and whose text is the
// scheduler's (abi.CodeScheduler if the check panicked).
func (h *Harness) CheckConfig(s sdk.Scheduler) error {
	raw, err := (&abi.ConfigRequest{Config: h.Config}).MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("sdktest: encode config request: %w", err)
	}
	out := plugin.NewGuest(plugin.Info{Name: "sdktest"}, s).CheckConfig(raw)
	var st abi.Status
	if err := abi.Decode(out, &st); err != nil {
		return fmt.Errorf("sdktest: decode config check: %w", err)
	}
	return abi.Err(st.Code, st.Message)
}

// Process runs s on eval through a fresh plugin (full sync).
func (h *Harness) Process(s sdk.Scheduler, eval *sdk.Evaluation) error {
	return h.Plugin(plugin.Info{}, s).Process(eval)
}

// Process runs one eval. It returns the scheduler's error, or the ABI
// failure, as an error that errors.Is matches against the sdk sentinels.
func (p *Plugin) Process(eval *sdk.Evaluation) error {
	h := p.h
	h.Deliver(eval)
	info := p.guest.Info()
	req := &abi.ProcessRequest{Eval: eval, EvalToken: "sdktest", Sync: h.syncFor(p.index, info), Now: h.Now.UnixNano(), Config: h.Config,
		HostABI: uint32(abi.Current)}
	raw, err := req.MarshalMsg(nil)
	if err != nil {
		return fmt.Errorf("sdktest: encode request: %w", err)
	}
	d := &dispatch{h: h, index: req.Sync.Index, info: info, core: eval.Type == sdk.JobTypeCore}
	out := p.guest.Process(raw, d.call)
	var resp abi.ProcessResponse
	if _, err := resp.UnmarshalMsg(out); err != nil {
		return fmt.Errorf("sdktest: decode response: %w", err)
	}
	p.index = resp.Index
	if resp.UpdateEval != nil {
		// The plugin's last eval update, deferred to its answer (ABI 1.4).
		if err := h.UpdateEval(resp.UpdateEval); err != nil {
			return err
		}
		d.concluded = true
	}
	if err := abi.Err(resp.Code, resp.Message); err != nil {
		return err
	}
	if !d.concluded {
		// The host nacks such an eval, and it fails after its deliveries.
		return fmt.Errorf("%w: eval %s", ErrNotConcluded, eval.ID)
	}
	return nil
}

// ErrNotConcluded is Process's error for a scheduler that returned without
// updating or reblocking its eval: the host nacks such an eval, and after
// its delivery limit it fails.
var ErrNotConcluded = errors.New("sdktest: the scheduler returned without updating or reblocking its eval")
