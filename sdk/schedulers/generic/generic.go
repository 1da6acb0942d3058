// Package generic is the scheduler for service and batch jobs, built from
// the SDK's building blocks as any plugin would be: the reconciler
// (sdk/reconcile) decides what the job needs, the stack (sdk/stack) picks
// nodes for what must be placed, and sdk/conclude ends the evaluation.
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
	"errors"
	"fmt"

	"github.com/drover-sched/drover/sdk"
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
	limit := conclude.MaxServiceAttempts
	if s.Batch {
		limit = conclude.MaxBatchAttempts
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
	switch {
	case errors.Is(err, conclude.ErrMaxAttempts):
		b, berr := conclude.Blocked(ctx, eval, p.stack.Eligibility(), p.failed, true)
		if berr != nil {
			return berr
		}
		return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusFailed, Description: conclude.FailedMaxAttempts(limit),
			Blocked: b, Failed: p.failed, Queued: p.queued, DeploymentID: p.deploymentID()})
	case err != nil:
		return err
	}
	if eval.Status == sdk.EvalStatusBlocked && len(p.failed) != 0 {
		return conclude.Reblock(ctx, eval, p.stack.Eligibility(), p.failed, p.queued)
	}
	return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusComplete, Blocked: p.blocked,
		Failed: p.failed, Queued: p.queued, DeploymentID: p.deploymentID()})
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
	failed     map[string]*sdk.AllocMetric
	queued     map[string]int
	placed     []*sdk.Allocation
	blocked    *sdk.Evaluation
	followups  []*sdk.Evaluation
	preempt    bool
}

func newPass(ctx *sdk.Context, eval *sdk.Evaluation, batch bool, blocked *sdk.Evaluation, ready *stack.ReadyCache) *pass {
	job := ctx.State.Job(eval.Namespace, eval.JobID)
	p := &pass{ctx: ctx, eval: eval, batch: batch, job: job, blocked: blocked,
		queued: map[string]int{}}
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
		for _, tg := range job.TaskGroups {
			p.queued[tg.Name] = 0
		}
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
	if err := p.computeJobAllocs(); err != nil {
		return false, false, err
	}
	delayInstead := len(p.followups) > 0 && p.eval.WaitUntil.IsZero()
	if p.eval.Status != sdk.EvalStatusBlocked && len(p.failed) != 0 && p.blocked == nil && !delayInstead {
		b, err := conclude.Blocked(p.ctx, p.eval, p.stack.Eligibility(), p.failed, false)
		if err != nil {
			return false, false, err
		}
		p.blocked = b
	}
	if p.plan.IsNoOp() && !p.eval.AnnotatePlan {
		return true, false, nil
	}
	if delayInstead {
		for _, ev := range p.followups {
			ev.PreviousEval = p.eval.ID
			if err := p.ctx.Planner.CreateEval(ev); err != nil {
				return false, false, fmt.Errorf("generic: create follow-up eval: %w", err)
			}
		}
	}
	result, err := p.ctx.Planner.SubmitPlan(p.plan.Plan)
	if err != nil {
		return false, false, fmt.Errorf("generic: submit plan: %w", err)
	}
	conclude.AdjustQueued(result, p.placed, p.queued)
	full, _, _ := result.FullCommit(p.plan.Plan)
	return full && result.RefreshIndex == 0, conclude.Progress(result), nil
}

// computeJobAllocs reconciles the job and fills the plan.
func (p *pass) computeJobAllocs() error {
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
	if p.eval.AnnotatePlan {
		p.plan.Annotations = &sdk.PlanAnnotations{DesiredTGUpdates: res.DesiredTGUpdates}
	}
	p.plan.Deployment = res.Deployment
	p.plan.DeploymentUpdates = res.DeploymentUpdates
	p.followups = res.FollowupEvals
	deploymentID := ""
	if d := res.ActiveDeployment(p.deployment); d != nil {
		deploymentID = d.ID
	}
	if res.Deployment != nil {
		p.deployment = res.Deployment
	} else if p.deployment != nil && res.Ends(p.deployment.ID) {
		p.deployment = nil // cancelled (or concluded) by this plan: nothing new joins it
	}
	for _, st := range res.Stop {
		p.plan.Stop(st.Alloc, st.Description, st.ClientStatus, st.FollowupEvalID)
	}
	for _, a := range res.Disconnect {
		p.plan.Annotate(a)
	}
	for _, a := range res.InPlace {
		if a.DeploymentID != deploymentID {
			a.DeploymentID = deploymentID
			a.DeploymentStatus = nil
		}
		p.plan.Update(a)
	}
	for _, a := range res.Annotate {
		p.plan.Annotate(a)
	}
	if len(res.Place)+len(res.Destructive) == 0 {
		return nil
	}
	p.stack.Expect(len(res.Place) + len(res.Destructive))
	for _, d := range res.Destructive {
		p.queued[d.TaskGroup.Name]++
		p.place(placement{Placement: d.Placement(), stopPrev: d.StopDescription}, deploymentID)
	}
	for _, pl := range res.Place {
		p.queued[pl.TaskGroup.Name]++
		one := placement{Placement: pl}
		if pl.DowngradeNonCanary {
			one.deployed = p.deployedVersion(pl)
		}
		p.place(one, deploymentID)
	}
	return nil
}

// deployedVersion returns, for a non-canary placement while canaries of
// the job's new version await promotion, an allocation running the version
// to place instead (as Nomad's downgraded placements): the newest version
// that a live non-canary allocation of the group, or the allocation
// replaced, runs, no older than the placement's minimum and still having
// the group. It returns nil when there is none: the placement then runs
// the job's new version.
func (p *pass) deployedVersion(pl reconcile.Placement) *sdk.Allocation {
	var best *sdk.Allocation
	consider := func(a *sdk.Allocation) {
		j := a.Job
		if j == nil || j.JobModifyIndex == p.job.JobModifyIndex || j.Version < pl.MinJobVersion ||
			j.LookupTaskGroup(pl.TaskGroup.Name) == nil || (a.DeploymentStatus != nil && a.DeploymentStatus.Canary) {
			return
		}
		if best == nil || j.Version > best.Job.Version {
			best = a
		}
	}
	for _, a := range p.ctx.State.AllocsByJob(p.eval.Namespace, p.eval.JobID) {
		if a.TaskGroup == pl.TaskGroup.Name && !a.TerminalStatus() {
			consider(a)
		}
	}
	if best == nil && pl.Previous != nil {
		consider(pl.Previous)
	}
	return best
}

// placement is one allocation to place.
type placement struct {
	reconcile.Placement
	stopPrev string // non-empty: stop Previous (a destructive update) if placed
	// deployed, when set, runs the job version to place instead of the
	// job's (see deployedVersion).
	deployed *sdk.Allocation
}

// place selects a node for one placement and adds it to the plan, or
// records why it failed.
func (p *pass) place(pl placement, deploymentID string) {
	tg := pl.TaskGroup
	if m, ok := p.failed[tg.Name]; ok {
		m.CoalescedFailures++
		m.ExhaustResources(tg)
		return
	}
	if pl.stopPrev != "" {
		// Stop first: the replacement may take the old one's room.
		p.plan.Stop(pl.Previous, pl.stopPrev, "", "")
	}
	job := p.job
	if pl.deployed != nil {
		job = pl.deployed.Job
		tg = job.LookupTaskGroup(tg.Name)
		deploymentID = ""
		if d := p.ctx.State.Deployment(pl.deployed.DeploymentID); d != nil {
			deploymentID = d.ID
		}
	}
	opts := stack.Options{PenaltyNodes: penaltyNodes(pl.Previous), Preferred: p.preferredNode(pl), Job: job}
	option, metric := p.stack.Select(tg, opts)
	if option == nil && p.preempt {
		opts.Preempt = true
		option, metric = p.stack.Select(tg, opts)
	}
	if option == nil {
		metric.ExhaustResources(tg)
		if p.failed == nil {
			p.failed = map[string]*sdk.AllocMetric{}
		}
		p.failed[tg.Name] = metric
		if pl.stopPrev != "" {
			p.plan.PopStop(pl.Previous)
		}
		return
	}
	a := p.plan.NewAllocation()
	*a = sdk.Allocation{
		ID: p.ctx.NewID(), Namespace: p.job.Namespace, EvalID: p.eval.ID,
		NodeID: option.Node.ID, NodeName: option.Node.Name, JobID: p.job.ID, JobVersion: job.Version,
		AllocatedResources: option.Resources, Metrics: metric,
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
	}
	pl.Fill(a, deploymentID, p.ctx.Now)
	if pl.deployed != nil {
		a.JobModifyIndex = job.JobModifyIndex
	}
	for _, v := range option.Preempted {
		p.plan.Preempt(v, a.ID)
		a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
	}
	p.plan.Place(a)
	p.placed = append(p.placed, a)
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
func (p *pass) preferredNode(pl placement) *sdk.Node {
	if pl.Previous == nil || pl.TaskGroup.EphemeralDisk == nil || !(pl.TaskGroup.EphemeralDisk.Sticky || pl.TaskGroup.EphemeralDisk.Migrate) {
		return nil
	}
	if n := p.ctx.State.Node(pl.Previous.NodeID); n != nil && n.Ready() {
		return n
	}
	return nil
}
