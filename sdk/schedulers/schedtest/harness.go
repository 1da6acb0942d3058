// Package schedtest holds the built-in schedulers' test fixtures and
// helpers, over the SDK's harness (sdk/sdktest): every eval runs through
// the plugin ABI with a state mirror kept by syncs, and plans are committed
// as the host's applier does.
//
//	h := schedtest.New(t)
//	h.UpsertNodes(schedtest.Nodes("n", 3)...)
//	h.Process(&generic.Scheduler{}, h.RegisterJob(schedtest.ServiceJob("web", 3)))
//	placed := schedtest.Placed(h.LastPlan())
package schedtest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// Harness is an sdktest.Harness bound to a test.
type Harness struct {
	*sdktest.Harness
	t     testing.TB
	evals int
}

// New returns a harness over an empty cluster.
func New(t testing.TB) *Harness {
	return &Harness{Harness: sdktest.New(), t: t}
}

// State returns a view of the cluster as a scheduler sees it (a state
// mirror brought to the harness's index).
func (h *Harness) State() sdk.State {
	h.t.Helper()
	m := mirror.New()
	if err := m.Apply(h.FullSync(false)); err != nil {
		h.t.Fatalf("schedtest: mirror: %v", err)
	}
	return m
}

// UpsertNodes adds or replaces nodes; sdktest's UpsertNode computes their
// class.
func (h *Harness) UpsertNodes(nodes ...*sdk.Node) { h.UpsertNode(nodes...) }

// UpsertAllocs adds or replaces allocations; those without Job run the
// job's current version.
func (h *Harness) UpsertAllocs(allocs ...*sdk.Allocation) { h.UpsertAlloc(allocs...) }

// RegisterJob upserts job and returns a pending job-register eval for it.
func (h *Harness) RegisterJob(job *sdk.Job) *sdk.Evaluation {
	h.UpsertJob(job)
	return h.NewEval(job, sdk.EvalTriggerJobRegister)
}

// NewEval returns a pending eval of job with the trigger.
func (h *Harness) NewEval(job *sdk.Job, trigger string) *sdk.Evaluation {
	h.evals++
	return &sdk.Evaluation{ID: fmt.Sprintf("eval-%03d", h.evals), Namespace: job.Namespace, Priority: job.Priority,
		Type: job.Type, TriggeredBy: trigger, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Status: sdk.EvalStatusPending, ModifyIndex: h.Index()}
}

// Process runs the scheduler on eval; the test fails if it errs.
func (h *Harness) Process(s sdk.Scheduler, eval *sdk.Evaluation) {
	h.t.Helper()
	if err := h.Harness.Process(s, eval); err != nil {
		h.t.Fatalf("schedtest: process eval %s: %v", eval.ID, err)
	}
}

// LastEval is the last eval update; the test fails if there is none.
func (h *Harness) LastEval() *sdk.Evaluation {
	h.t.Helper()
	if len(h.Updated) == 0 {
		h.t.Fatalf("schedtest: no eval was updated")
	}
	return h.Updated[len(h.Updated)-1]
}

// LastPlan is the last plan submitted; the test fails if there is none.
func (h *Harness) LastPlan() *sdk.Plan {
	h.t.Helper()
	if len(h.Plans) == 0 {
		h.t.Fatalf("schedtest: no plan was submitted")
	}
	return h.Plans[len(h.Plans)-1]
}

// Live returns the job's non-terminal allocations.
func (h *Harness) Live(ns, jobID string) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, a := range h.AllocsByJob(ns, jobID) {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// SetClientStatus reports allocations in a client status, as their node
// would (their ModifyTime becomes Now). An unknown allocation reported
// again drops its follow-up eval (its disconnect timeout's), as the host's
// FSM does.
func (h *Harness) SetClientStatus(status string, allocs ...*sdk.Allocation) {
	var out []*sdk.Allocation
	for _, a := range allocs {
		c := *h.Alloc(a.ID)
		if c.ClientStatus == sdk.AllocClientStatusUnknown && status != sdk.AllocClientStatusUnknown {
			c.FollowupEvalID = ""
		}
		c.ClientStatus = status
		c.ModifyTime = h.Now.UnixNano()
		out = append(out, &c)
	}
	h.UpsertAlloc(out...)
}

// SetHealth reports allocations healthy or not in their deployment, and
// counts it in the deployment as the host does.
func (h *Harness) SetHealth(healthy bool, allocs ...*sdk.Allocation) {
	var out []*sdk.Allocation
	deps := map[string]*sdk.Deployment{}
	for _, a := range allocs {
		cur := h.Alloc(a.ID)
		c := *cur
		c.DeploymentStatus = &sdk.AllocDeploymentStatus{Healthy: &healthy, Timestamp: h.Now}
		if cur.DeploymentStatus != nil {
			c.DeploymentStatus.Canary = cur.DeploymentStatus.Canary
		}
		if d := deps[c.DeploymentID]; d != nil || c.DeploymentID != "" {
			if d == nil {
				d = h.State().Deployment(c.DeploymentID).Copy()
			}
			if d != nil {
				d.CountHealth(&c, cur.DeploymentStatus, c.DeploymentStatus, h.Now)
				deps[c.DeploymentID] = d
			}
		}
		out = append(out, &c)
	}
	h.UpsertAlloc(out...)
	ids := make([]string, 0, len(deps))
	for id := range deps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		h.UpsertDeployment(deps[id])
	}
}

// Placed returns every allocation placed (new or updated) by the plan.
func Placed(p *sdk.Plan) []*sdk.Allocation { return flatten(p.NodeAllocation) }

// Stopped returns every allocation the plan stops.
func Stopped(p *sdk.Plan) []*sdk.Allocation { return flatten(p.NodeUpdate) }

// Preempted returns every allocation the plan preempts.
func Preempted(p *sdk.Plan) []*sdk.Allocation { return flatten(p.NodePreemptions) }

func flatten(m map[string][]*sdk.Allocation) []*sdk.Allocation {
	nodes := make([]string, 0, len(m))
	for n := range m {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var out []*sdk.Allocation
	for _, n := range nodes {
		out = append(out, m[n]...)
	}
	return out
}
