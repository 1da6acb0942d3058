// Package generic is the scheduler for service and batch jobs, built from
// the SDK's building blocks as any plugin would be: the reconciler
// (sdk/reconcile) decides what the job needs, sdk/carry carries it out in
// the plan with the stack (sdk/stack) picking nodes for what must be
// placed, and sdk/conclude ends the evaluation.
//
// Process follows Nomad's generic scheduler: it retries a partially
// committed plan on refreshed state (5 attempts for service jobs, 2 for
// batch, reset whenever an attempt makes progress); allocations it cannot
// place are explained per task group in FailedTGAllocs and handed to a
// queued-allocs blocked eval carrying class eligibility; failed
// allocations due later get a delayed follow-up eval instead; when every
// attempt fails the eval fails and a max-plan-attempts blocked eval takes
// over.
package generic

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/stack"
)

// Scheduler schedules service jobs, or batch jobs when Batch is set.
type Scheduler struct {
	Batch bool
	// ready keeps the ready nodes between evaluations while no node
	// changes.
	ready stack.ReadyCache
}

var (
	_ sdk.Scheduler     = (*Scheduler)(nil)
	_ sdk.ConfigChecker = (*Scheduler)(nil)
)

// CheckConfig implements sdk.ConfigChecker. The service and batch
// schedulers take no configuration (the scheduler configuration, set
// with the API, is their tuning): a key in their plugin block is an
// operator's mistake, refused as Nomad refuses an unknown setting.
func (s *Scheduler) CheckConfig(config map[string]string) error { return sdk.CheckConfigKeys(config) }

// handles lists the triggers the scheduler knows.
var handles = map[string]bool{
	sdk.EvalTriggerJobRegister: true, sdk.EvalTriggerJobDeregister: true, sdk.EvalTriggerNodeDrain: true,
	sdk.EvalTriggerNodeUpdate: true, sdk.EvalTriggerAllocStop: true, sdk.EvalTriggerRollingUpdate: true,
	sdk.EvalTriggerQueuedAllocs: true, sdk.EvalTriggerPeriodicJob: true, sdk.EvalTriggerMaxPlans: true,
	sdk.EvalTriggerDeploymentWatcher: true, sdk.EvalTriggerRetryFailedAlloc: true,
	sdk.EvalTriggerFailedFollowUp: true, sdk.EvalTriggerPreemption: true, sdk.EvalTriggerScaling: true,
	sdk.EvalTriggerMaxDisconnectTimeout: true, sdk.EvalTriggerReconnect: true,
}

// Process implements sdk.Scheduler.
func (s *Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	if !handles[eval.TriggeredBy] {
		return conclude.Unhandled(ctx, eval)
	}
	typ, limit := sdk.JobTypeService, conclude.MaxServiceAttempts
	if s.Batch {
		typ, limit = sdk.JobTypeBatch, conclude.MaxBatchAttempts
	}
	if refused, err := conclude.OtherType(ctx, eval, typ); refused || err != nil {
		return err
	}
	var p *pass
	var blocked *sdk.Evaluation
	err := conclude.Retry(limit, func() (bool, bool, error) {
		p = newPass(ctx, eval, s.Batch, blocked, &s.ready)
		done, progress, err := p.run()
		p.stack.Release()
		blocked = p.blocked
		return done, progress, err
	})
	return p.carried.Conclude(err, limit, blocked, p.stack.Eligibility(), p.deploymentID())
}

// pass is one attempt at an evaluation.
type pass struct {
	ctx        *sdk.Context
	eval       *sdk.Evaluation
	batch      bool
	job        *sdk.Job
	plan       *stack.Plan
	stack      *stack.Stack
	deployment *sdk.Deployment
	carried    *carry.Pass
	blocked    *sdk.Evaluation
	preempt    bool
}

func newPass(ctx *sdk.Context, eval *sdk.Evaluation, batch bool, blocked *sdk.Evaluation, ready *stack.ReadyCache) *pass {
	job := ctx.State.Job(eval.Namespace, eval.JobID)
	p := &pass{ctx: ctx, eval: eval, batch: batch, job: job, blocked: blocked}
	p.plan = stack.NewPlan(ctx.State, eval, job)
	sc := ctx.State.SchedulerConfig()
	jobType := sdk.JobTypeService
	if batch {
		jobType = sdk.JobTypeBatch
	}
	p.preempt = sc.PreemptionEnabled(jobType)
	p.stack = stack.New(ctx, p.plan, job, stack.ConfigFor(jobType, sc))
	if !batch {
		p.deployment = ctx.State.LatestDeployment(eval.Namespace, eval.JobID)
	}
	if !job.Stopped() {
		nodes, _, byDC := ready.ReadyNodes(ctx.State, job)
		stack.Shuffle(nodes, ctx.Rand())
		p.stack.SetNodes(nodes, byDC)
	}
	return p
}

func (p *pass) deploymentID() string {
	if p.deployment != nil {
		return p.deployment.ID
	}
	return ""
}

// run reconciles, places and submits the plan. done is false when the plan
// was not fully committed (the state was refreshed: try again).
func (p *pass) run() (done, progress bool, err error) {
	p.computeJobAllocs()
	if p.blocked, err = p.carried.Block(p.stack.Eligibility(), p.blocked); err != nil {
		return false, false, err
	}
	return p.carried.Submit()
}

// computeJobAllocs reconciles the job and carries the result out in the
// plan, the stack picking the nodes.
func (p *pass) computeJobAllocs() {
	allocs := p.ctx.State.AllocsByJob(p.eval.Namespace, p.eval.JobID)
	tainted := reconcile.TaintedNodes(p.ctx.State, allocs)
	for _, a := range reconcile.StillRunningOnDownNodes(tainted, allocs) {
		p.plan.Stop(a, reconcile.AllocLost, sdk.AllocClientStatusLost, "")
	}
	res := reconcile.Compute(reconcile.Input{
		Job: p.job, Namespace: p.eval.Namespace, JobID: p.eval.JobID, Batch: p.batch,
		Allocs: allocs, Tainted: tainted, Deployment: p.deployment,
		EvalID: p.eval.ID, EvalPriority: p.eval.Priority, Now: p.ctx.Now,
		Update: p.stack.UpdateFunc(p.eval.ID), NewID: p.ctx.NewID,
	})
	if n := len(res.Place) + len(res.Destructive); n != 0 {
		p.stack.Expect(n)
	}
	p.carried = carry.Out(carry.Input{Ctx: p.ctx, Eval: p.eval, Plan: p.plan, Result: res, Deployment: p.deployment, Pick: p.pick})
	// The eval names the deployment the plan creates, else the latest one
	// unless the plan ends it.
	if res.Deployment != nil {
		p.deployment = res.Deployment
	} else if p.deployment != nil && res.Ends(p.deployment.ID) {
		p.deployment = nil
	}
}

// pick selects a node for one placement with the stack, letting it preempt
// lower-priority allocations when nothing fits otherwise and the cluster
// allows it.
func (p *pass) pick(pl carry.Placement) (*stack.Option, *sdk.AllocMetric) {
	opts := stack.Options{PenaltyNodes: penaltyNodes(pl.Previous), Preferred: p.preferredNode(pl.Placement), Job: pl.Job,
		AllocName: pl.Name}
	option, metric := p.stack.Select(pl.Group, opts)
	if option == nil && p.preempt {
		opts.Preempt = true
		option, metric = p.stack.Select(pl.Group, opts)
	}
	return option, metric
}

// penaltyNodes are the nodes a replacement should avoid: where the
// allocation it replaces failed, and where its predecessors were
// rescheduled from.
func penaltyNodes(prev *sdk.Allocation) map[string]bool {
	if prev == nil {
		return nil
	}
	out := map[string]bool{}
	if prev.ClientStatus == sdk.AllocClientStatusFailed {
		out[prev.NodeID] = true
	}
	if prev.RescheduleTracker != nil {
		for _, e := range prev.RescheduleTracker.Events {
			out[e.PrevNodeID] = true
		}
	}
	return out
}

// preferredNode is the node of the allocation being replaced when the group
// keeps its ephemeral disk (sticky or migrate) and that node is ready.
func (p *pass) preferredNode(pl reconcile.Placement) *sdk.Node {
	if pl.Previous == nil || pl.TaskGroup.EphemeralDisk == nil || !(pl.TaskGroup.EphemeralDisk.Sticky || pl.TaskGroup.EphemeralDisk.Migrate) {
		return nil
	}
	if n := p.ctx.State.Node(pl.Previous.NodeID); n != nil && n.Ready() {
		return n
	}
	return nil
}
