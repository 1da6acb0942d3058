// Package schedtest is a test harness for schedulers, in the spirit of
// Nomad's scheduler Harness: an in-memory state (a state mirror, as a plugin
// sees it), a planner that commits plans the way the host's applier does
// (re-checking every node with feasible.AllocsFit, committing the nodes
// that fit, asking for a refresh when some did not), and a record of every
// plan and eval the scheduler produced.
//
//	h := schedtest.New(t)
//	h.UpsertNodes(schedtest.Node("n1"))
//	job := schedtest.ServiceJob("web", 3)
//	eval := h.RegisterJob(job)
//	h.Process(&generic.Scheduler{}, eval)
//	h.AssertEvalStatus(sdk.EvalStatusComplete)
package schedtest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/mirror"
)

// Harness holds a state and records what schedulers do to it.
type Harness struct {
	t     testing.TB
	State *mirror.Mirror
	// Now is handed to schedulers as the context's time.
	Now time.Time

	Plans   []*sdk.Plan
	Results []*sdk.PlanResult
	// Evals are eval updates (UpdateEval and ReblockEval), in order.
	Evals []*sdk.Evaluation
	// Created are evals the scheduler created.
	Created []*sdk.Evaluation
	// Reblocked are evals the scheduler reblocked.
	Reblocked []*sdk.Evaluation

	// RejectNodes makes the next plan's placements on these nodes fail
	// (a concurrent scheduler took the room), once.
	RejectNodes map[string]bool
	// RejectAll makes every plan commit nothing.
	RejectAll bool

	evals map[string]*sdk.Evaluation
	next  uint64
}

// New returns a harness over an empty state.
func New(t testing.TB) *Harness {
	h := &Harness{t: t, State: mirror.New(), Now: time.Unix(1_700_000_000, 0).UTC(), evals: map[string]*sdk.Evaluation{}}
	h.apply(&abi.StateSync{Full: true, Index: 1, SchedulerConfig: sdk.DefaultSchedulerConfiguration()})
	return h
}

func (h *Harness) apply(s *abi.StateSync) {
	h.t.Helper()
	if !s.Full {
		s.FromIndex = h.State.Index()
		s.Index = s.FromIndex + 1
	}
	if err := h.State.Apply(s); err != nil {
		h.t.Fatalf("schedtest: apply state: %v", err)
	}
}

// NextIndex is the index the next write gets.
func (h *Harness) NextIndex() uint64 { return h.State.Index() + 1 }

// UpsertNodes adds or replaces nodes (computing their class).
func (h *Harness) UpsertNodes(nodes ...*sdk.Node) {
	h.t.Helper()
	for _, n := range nodes {
		n.ComputeClass()
		if n.CreateIndex == 0 {
			n.CreateIndex = h.NextIndex()
		}
		n.ModifyIndex = h.NextIndex()
	}
	h.apply(&abi.StateSync{Nodes: nodes})
}

// UpsertJob registers a job version: the version rises when a job with the
// same ID exists.
func (h *Harness) UpsertJob(job *sdk.Job) {
	h.t.Helper()
	if old := h.State.Job(job.Namespace, job.ID); old != nil {
		job.Version = old.Version + 1
		job.CreateIndex = old.CreateIndex
	} else {
		job.CreateIndex = h.NextIndex()
	}
	job.ModifyIndex = h.NextIndex()
	job.JobModifyIndex = h.NextIndex()
	h.apply(&abi.StateSync{Jobs: []*sdk.Job{job}})
}

// RegisterJob upserts job and returns a pending job-register eval for it.
func (h *Harness) RegisterJob(job *sdk.Job) *sdk.Evaluation {
	h.UpsertJob(job)
	return h.NewEval(job, sdk.EvalTriggerJobRegister)
}

// NewEval returns a pending eval of job with the trigger.
func (h *Harness) NewEval(job *sdk.Job, trigger string) *sdk.Evaluation {
	h.next++
	e := &sdk.Evaluation{ID: fmt.Sprintf("eval-%03d", h.next), Namespace: job.Namespace, Priority: job.Priority,
		Type: job.Type, TriggeredBy: trigger, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Status: sdk.EvalStatusPending}
	h.evals[e.ID] = e
	return e
}

// UpsertAllocs adds or replaces allocations; each gets the job version it
// names (JobVersion) unless Job is set.
func (h *Harness) UpsertAllocs(allocs ...*sdk.Allocation) {
	h.t.Helper()
	for _, a := range allocs {
		if a.Job != nil {
			a.JobVersion = a.Job.Version
			if h.State.JobVersion(a.Namespace, a.JobID, a.JobVersion) == nil {
				h.apply(&abi.StateSync{JobVersions: []*sdk.Job{a.Job}})
			}
			a.Job = nil
		}
		if a.CreateIndex == 0 {
			a.CreateIndex = h.NextIndex()
		}
		a.ModifyIndex = h.NextIndex()
	}
	h.apply(&abi.StateSync{Allocs: allocs})
}

// UpsertDeployment adds or replaces a deployment.
func (h *Harness) UpsertDeployment(d *sdk.Deployment) {
	h.t.Helper()
	if d.CreateIndex == 0 {
		d.CreateIndex = h.NextIndex()
	}
	d.ModifyIndex = h.NextIndex()
	h.apply(&abi.StateSync{Deployments: []*sdk.Deployment{d}})
}

// SetSchedulerConfig replaces the scheduler configuration.
func (h *Harness) SetSchedulerConfig(c *sdk.SchedulerConfiguration) {
	h.t.Helper()
	h.apply(&abi.StateSync{SchedulerConfig: c})
}

// Process runs the scheduler on eval over the harness's state.
func (h *Harness) Process(s sdk.Scheduler, eval *sdk.Evaluation) {
	h.t.Helper()
	if err := h.ProcessErr(s, eval); err != nil {
		h.t.Fatalf("schedtest: process eval %s: %v", eval.ID, err)
	}
}

// ProcessErr is Process that returns the scheduler's error.
func (h *Harness) ProcessErr(s sdk.Scheduler, eval *sdk.Evaluation) error {
	ctx := sdk.NewContext(h.State, h, nil, h.Now, nil, eval.ID)
	return s.Process(ctx, eval)
}

// SubmitPlan implements sdk.Planner: it commits the nodes whose part of
// the plan fits the latest state, as the host's applier does.
func (h *Harness) SubmitPlan(p *sdk.Plan) (*sdk.PlanResult, error) {
	h.Plans = append(h.Plans, p)
	res := &sdk.PlanResult{NodeUpdate: map[string][]*sdk.Allocation{}, NodeAllocation: map[string][]*sdk.Allocation{},
		NodePreemptions: map[string][]*sdk.Allocation{}}
	nodes := map[string]bool{}
	for _, m := range []map[string][]*sdk.Allocation{p.NodeUpdate, p.NodeAllocation, p.NodePreemptions} {
		for n := range m {
			nodes[n] = true
		}
	}
	ids := slices.Sorted(maps.Keys(nodes))
	for _, n := range ids {
		if h.RejectAll || h.RejectNodes[n] || !h.fits(p, n) {
			res.RejectedNodes = append(res.RejectedNodes, n)
			continue
		}
		if us := p.NodeUpdate[n]; len(us) > 0 {
			res.NodeUpdate[n] = us
		}
		if as := p.NodeAllocation[n]; len(as) > 0 {
			res.NodeAllocation[n] = as
		}
		if ps := p.NodePreemptions[n]; len(ps) > 0 {
			res.NodePreemptions[n] = ps
		}
	}
	h.RejectNodes = nil
	if len(res.RejectedNodes) > 0 && p.AllAtOnce {
		res.NodeUpdate, res.NodeAllocation, res.NodePreemptions = nil, nil, nil
	}
	res.Deployment, res.DeploymentUpdates = p.Deployment, p.DeploymentUpdates
	if h.RejectAll {
		res.Deployment, res.DeploymentUpdates = nil, nil
	}
	h.commit(p, res)
	if len(res.RejectedNodes) > 0 {
		res.RefreshIndex = h.State.Index()
	}
	res.AllocIndex = h.State.Index()
	h.Results = append(h.Results, res)
	return res, nil
}

// fits re-checks one node's placements against the latest state.
func (h *Harness) fits(p *sdk.Plan, nodeID string) bool {
	placed := p.NodeAllocation[nodeID]
	if len(placed) == 0 {
		return true
	}
	node := h.State.Node(nodeID)
	if node == nil {
		return false
	}
	removed := map[string]bool{}
	for _, a := range p.NodeUpdate[nodeID] {
		removed[a.ID] = true
	}
	for _, a := range p.NodePreemptions[nodeID] {
		removed[a.ID] = true
	}
	newPlacement := false
	for _, a := range placed {
		removed[a.ID] = true
		if h.State.Alloc(a.ID) == nil {
			newPlacement = true
		}
	}
	if newPlacement && !node.Ready() {
		return false
	}
	var proposed []*sdk.Allocation
	for _, a := range h.State.AllocsByNode(nodeID) {
		if !removed[a.ID] {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placed...)
	ok, _ := feasible.AllocsFit(node, proposed)
	return ok
}

// commit writes the committed part of a plan to the state.
func (h *Harness) commit(p *sdk.Plan, res *sdk.PlanResult) {
	now := h.Now.UnixNano()
	var out []*sdk.Allocation
	var deployments []*sdk.Deployment
	dep := map[string]*sdk.Deployment{}
	deployment := func(id string) *sdk.Deployment {
		if d, ok := dep[id]; ok {
			return d
		}
		d := h.State.Deployment(id).Copy()
		if res.Deployment != nil && res.Deployment.ID == id {
			d = res.Deployment.Copy()
		}
		if d != nil {
			dep[id] = d
			deployments = append(deployments, d)
		}
		return d
	}
	if res.Deployment != nil {
		deployment(res.Deployment.ID).CreateTime = now
	}
	for _, n := range sortedKeys(res.NodeUpdate) {
		for _, s := range res.NodeUpdate[n] {
			old := h.State.Alloc(s.ID)
			if old == nil {
				continue
			}
			c := *old
			c.DesiredStatus = s.DesiredStatus
			if c.DesiredStatus == "" {
				c.DesiredStatus = sdk.AllocDesiredStatusStop
			}
			c.DesiredDescription = s.DesiredDescription
			if s.ClientStatus != "" {
				c.ClientStatus = s.ClientStatus
			}
			if s.FollowupEvalID != "" {
				c.FollowupEvalID = s.FollowupEvalID
			}
			c.ModifyTime = now
			out = append(out, &c)
		}
	}
	for _, n := range sortedKeys(res.NodePreemptions) {
		for _, s := range res.NodePreemptions[n] {
			if old := h.State.Alloc(s.ID); old != nil {
				c := *old
				c.DesiredStatus = sdk.AllocDesiredStatusEvict
				c.DesiredDescription = s.DesiredDescription
				c.PreemptedByAllocation = s.PreemptedByAllocation
				c.ModifyTime = now
				out = append(out, &c)
			}
		}
	}
	for _, n := range sortedKeys(res.NodeAllocation) {
		for _, a := range res.NodeAllocation[n] {
			c := *a
			old := h.State.Alloc(a.ID)
			if old != nil {
				c.ClientStatus, c.ClientDescription, c.TaskStates = old.ClientStatus, old.ClientDescription, old.TaskStates
				c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
			} else {
				c.CreateIndex, c.CreateTime = h.NextIndex(), now
			}
			c.Job = nil
			if p.Job != nil {
				c.JobVersion = p.Job.Version
			}
			c.ModifyIndex, c.ModifyTime = h.NextIndex(), now
			if old == nil && c.DeploymentID != "" {
				if d := deployment(c.DeploymentID); d != nil {
					d.CountPlacement(&c, h.Now)
				}
			}
			out = append(out, &c)
			if c.PreviousAllocation != "" {
				prev := latest(out, c.PreviousAllocation)
				if prev == nil {
					prev = h.State.Alloc(c.PreviousAllocation)
				}
				if prev != nil {
					pc := *prev
					pc.NextAllocation = c.ID
					out = append(out, &pc)
				}
			}
		}
	}
	for _, u := range res.DeploymentUpdates {
		if d := deployment(u.DeploymentID); d != nil {
			d.Status, d.StatusDescription = u.Status, u.StatusDescription
		}
	}
	for _, d := range deployments {
		if d.CreateIndex == 0 {
			d.CreateIndex = h.NextIndex()
		}
		d.ModifyIndex = h.NextIndex()
	}
	sync := &abi.StateSync{Allocs: dedupe(out), Deployments: deployments}
	if p.Job != nil && h.State.JobVersion(p.Job.Namespace, p.Job.ID, p.Job.Version) == nil {
		sync.JobVersions = []*sdk.Job{p.Job}
	}
	h.apply(sync)
}

// latest returns the last version of allocation id in as, or nil.
func latest(as []*sdk.Allocation, id string) *sdk.Allocation {
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].ID == id {
			return as[i]
		}
	}
	return nil
}

// dedupe keeps the last version of each allocation.
func dedupe(as []*sdk.Allocation) []*sdk.Allocation {
	last := map[string]int{}
	for i, a := range as {
		last[a.ID] = i
	}
	var out []*sdk.Allocation
	for i, a := range as {
		if last[a.ID] == i {
			out = append(out, a)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// UpdateEval implements sdk.Planner.
func (h *Harness) UpdateEval(e *sdk.Evaluation) error {
	h.Evals = append(h.Evals, e)
	h.evals[e.ID] = e
	return nil
}

// CreateEval implements sdk.Planner.
func (h *Harness) CreateEval(e *sdk.Evaluation) error {
	if e.ID == "" {
		return fmt.Errorf("%w: new eval without an ID", sdk.ErrInvalidEval)
	}
	if _, dup := h.evals[e.ID]; dup {
		return fmt.Errorf("%w: eval %s already exists", sdk.ErrInvalidEval, e.ID)
	}
	h.Created = append(h.Created, e)
	h.evals[e.ID] = e
	return nil
}

// ReblockEval implements sdk.Planner.
func (h *Harness) ReblockEval(e *sdk.Evaluation) error {
	if old := h.evals[e.ID]; old == nil || old.Status != sdk.EvalStatusBlocked {
		return fmt.Errorf("%w: eval %s is not blocked", sdk.ErrInvalidEval, e.ID)
	}
	h.Reblocked = append(h.Reblocked, e)
	h.Evals = append(h.Evals, e)
	return nil
}

// LastEval is the last eval update; the test fails if there is none.
func (h *Harness) LastEval() *sdk.Evaluation {
	h.t.Helper()
	if len(h.Evals) == 0 {
		h.t.Fatalf("schedtest: no eval was updated")
	}
	return h.Evals[len(h.Evals)-1]
}

// LastPlan is the last plan submitted; the test fails if there is none.
func (h *Harness) LastPlan() *sdk.Plan {
	h.t.Helper()
	if len(h.Plans) == 0 {
		h.t.Fatalf("schedtest: no plan was submitted")
	}
	return h.Plans[len(h.Plans)-1]
}

// Placed returns every allocation placed (new or updated) by the plan.
func Placed(p *sdk.Plan) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, n := range sortedKeys(p.NodeAllocation) {
		out = append(out, p.NodeAllocation[n]...)
	}
	return out
}

// Stopped returns every allocation the plan stops.
func Stopped(p *sdk.Plan) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, n := range sortedKeys(p.NodeUpdate) {
		out = append(out, p.NodeUpdate[n]...)
	}
	return out
}

// Preempted returns every allocation the plan preempts.
func Preempted(p *sdk.Plan) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, n := range sortedKeys(p.NodePreemptions) {
		out = append(out, p.NodePreemptions[n]...)
	}
	return out
}

// Live returns the job's non-terminal allocations in the state.
func (h *Harness) Live(ns, jobID string) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, a := range h.State.AllocsByJob(ns, jobID) {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// SetClientStatus reports allocations in a client status, as their node
// would (ModifyTime becomes Now).
func (h *Harness) SetClientStatus(status string, allocs ...*sdk.Allocation) {
	h.t.Helper()
	var out []*sdk.Allocation
	for _, a := range allocs {
		c := *h.State.Alloc(a.ID)
		c.Job = nil
		c.ClientStatus = status
		c.ModifyTime = h.Now.UnixNano()
		c.ModifyIndex = h.NextIndex()
		out = append(out, &c)
	}
	h.apply(&abi.StateSync{Allocs: out})
}

// SetHealth reports allocations healthy or not in their deployment, and
// counts it in the deployment as the host does.
func (h *Harness) SetHealth(healthy bool, allocs ...*sdk.Allocation) {
	h.t.Helper()
	var out []*sdk.Allocation
	deps := map[string]*sdk.Deployment{}
	for _, a := range allocs {
		cur := h.State.Alloc(a.ID)
		c := *cur
		c.Job = nil
		c.DeploymentStatus = &sdk.AllocDeploymentStatus{Healthy: &healthy, Timestamp: h.Now}
		if cur.DeploymentStatus != nil {
			c.DeploymentStatus.Canary = cur.DeploymentStatus.Canary
		}
		if c.DeploymentID != "" {
			d := deps[c.DeploymentID]
			if d == nil {
				d = h.State.Deployment(c.DeploymentID).Copy()
			}
			if d != nil {
				d.CountHealth(&c, cur.DeploymentStatus, c.DeploymentStatus, h.Now)
				deps[c.DeploymentID] = d
			}
		}
		c.ModifyIndex = h.NextIndex()
		out = append(out, &c)
	}
	sync := &abi.StateSync{Allocs: out}
	for _, id := range sortedKeys(deps) {
		sync.Deployments = append(sync.Deployments, deps[id])
	}
	h.apply(sync)
}

// DeleteNode removes a node.
func (h *Harness) DeleteNode(id string) {
	h.t.Helper()
	h.apply(&abi.StateSync{DeletedNodes: []string{id}})
}
