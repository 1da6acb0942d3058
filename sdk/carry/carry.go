package carry

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/stack"
)

// Input is a reconciled job and the plan to carry it out in.
type Input struct {
	// Ctx and Eval are the evaluation's: Ctx gives new allocations their
	// IDs and the time, and Submit goes through its planner.
	Ctx  *sdk.Context
	Eval *sdk.Evaluation
	// Plan is this attempt's plan, for the job Result was reconciled for
	// (its Job; nil for a purged job).
	Plan *stack.Plan
	// Result is what the job needs (reconcile.Compute), and Deployment the
	// deployment it was computed from (reconcile.Input.Deployment).
	Result     *reconcile.Result
	Deployment *sdk.Deployment
	// Pick chooses the node of each placement. A stopped or purged job has
	// no placements: Pick may then be nil.
	Pick PickFunc
}

// PickFunc chooses the node for one placement: the option (the node, what
// the allocation holds there, allocations of other jobs to preempt) and the
// metric that explains the choice, or a nil option and the metric that
// says why no node would do. It is stack.Stack.Select's signature. The
// plan it reads holds everything decided before it (stops, updates, the
// placements before this one); it must not change the plan: Out places the
// allocation.
//
// Out keeps the metric, as the allocation's Metrics or as its group's
// failure (which counts the group's later placements), so each call must
// return a metric of its own. Out reads the option at once: it may be
// reused.
type PickFunc func(pl Placement) (*stack.Option, *sdk.AllocMetric)

// Placement is one allocation to place, as a PickFunc sees it.
type Placement struct {
	reconcile.Placement
	// Job is the job version the allocation runs, and Group its group:
	// the plan's job and the placement's TaskGroup, unless the placement
	// is DowngradeNonCanary and a version of the group is deployed, which
	// it then runs (as Nomad's downgraded placements).
	Job   *sdk.Job
	Group *sdk.TaskGroup
	// Destructive is set for the replacement in a destructive update: the
	// plan stops Previous while the PickFunc runs, so that the replacement
	// may take its room, and takes the stop back if no node is picked.
	Destructive bool
}

// Pass is what Out did in one attempt at an evaluation.
type Pass struct {
	// DeploymentID is the deployment the placements and in-place updates
	// joined (reconcile.Result.ActiveDeployment), "" for none.
	DeploymentID string
	// Placed are the new allocations in the plan.
	Placed []*sdk.Allocation
	// Failed explains, per task group, the placements no node was picked
	// for (the eval's FailedTGAllocs); nil when every one found one.
	Failed map[string]*sdk.AllocMetric
	// Queued counts, per task group of the job, the placements not
	// yet committed: all of them until Submit, which takes off those the
	// plan committed (the eval's QueuedAllocations).
	Queued map[string]int

	in Input
	// deployed caches, per task group, what deployedVersion finds among
	// the job's deployments: the state does not change during a pass.
	deployed map[string]deployed
}

// Out carries out in.Result in in.Plan, in Nomad's generic scheduler's
// order: stops, disconnects, in-place updates, annotations, then
// destructive updates and placements, each picked by in.Pick. It sets the
// plan's deployment and deployment updates, and its annotations when the
// eval asks for them (a dry run, AnnotatePlan).
func Out(in Input) *Pass {
	res, plan := in.Result, in.Plan
	p := &Pass{Queued: map[string]int{}, in: in}
	if in.Eval.AnnotatePlan {
		plan.Annotations = &sdk.PlanAnnotations{DesiredTGUpdates: res.DesiredTGUpdates}
	}
	plan.Deployment = res.Deployment
	plan.DeploymentUpdates = res.DeploymentUpdates
	if d := res.ActiveDeployment(in.Deployment); d != nil {
		p.DeploymentID = d.ID
	}
	for _, s := range res.Stop {
		plan.Stop(s.Alloc, s.Description, s.ClientStatus, s.FollowupEvalID)
	}
	for _, a := range res.Disconnect {
		plan.Annotate(a)
	}
	for _, a := range res.InPlace {
		if a.DeploymentID != p.DeploymentID {
			a.DeploymentID = p.DeploymentID
			a.DeploymentStatus = nil
		}
		plan.Update(a)
	}
	for _, a := range res.Annotate {
		plan.Annotate(a)
	}
	// Every group queues nothing yet, a stopped job's too (as Nomad's
	// QueuedAllocations, {"g": 0} on a deregistration; a purged job has no
	// groups left to name).
	job := plan.Job
	if job != nil {
		for _, tg := range job.TaskGroups {
			p.Queued[tg.Name] = 0
		}
	}
	if job.Stopped() {
		return p
	}
	for _, d := range res.Destructive {
		p.place(Placement{Placement: d.Placement(), Destructive: true}, d.StopDescription)
	}
	for _, pl := range res.Place {
		p.place(Placement{Placement: pl}, "")
	}
	return p
}

// place picks a node for one placement and adds it to the plan, or
// records why none would do. stop is the description of Previous's stop
// in a destructive update.
func (p *Pass) place(pl Placement, stop string) {
	plan, ctx := p.in.Plan, p.in.Ctx
	tg := pl.TaskGroup
	p.Queued[tg.Name]++
	if m, ok := p.Failed[tg.Name]; ok {
		m.CoalescedFailures++
		m.ExhaustResources(tg)
		return
	}
	if pl.Destructive {
		plan.Stop(pl.Previous, stop, "", "")
	}
	job := plan.Job
	pl.Job, pl.Group = job, tg
	deploymentID := p.DeploymentID
	if pl.DowngradeNonCanary {
		if d, ok := p.deployedVersion(pl.Placement); ok {
			pl.Job, pl.Group, deploymentID = d.job, d.job.LookupTaskGroup(tg.Name), d.deploymentID
		}
	}
	option, metric := p.in.Pick(pl)
	if option == nil {
		metric.ExhaustResources(pl.Group)
		if p.Failed == nil {
			p.Failed = map[string]*sdk.AllocMetric{}
		}
		p.Failed[tg.Name] = metric
		if pl.Destructive {
			plan.PopStop(pl.Previous)
		}
		return
	}
	a := plan.NewAllocation()
	*a = sdk.Allocation{
		ID: ctx.NewID(), Namespace: job.Namespace, EvalID: p.in.Eval.ID,
		NodeID: option.Node.ID, NodeName: option.Node.Name, JobID: job.ID, JobVersion: pl.Job.Version,
		AllocatedResources: option.Resources, Metrics: metric,
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
	}
	pl.Fill(a, deploymentID, ctx.Now)
	if pl.Job != job {
		a.JobModifyIndex = pl.Job.JobModifyIndex
	}
	for _, v := range option.Preempted {
		plan.Preempt(v, a.ID)
		a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
	}
	plan.Place(a)
	p.Placed = append(p.Placed, a)
}

// deployed is a job version deployed to a task group, and the deployment
// that did it ("" for a version without an update block).
type deployed struct {
	job          *sdk.Job
	deploymentID string
}

// deployedVersion returns, for a non-canary placement while canaries of
// the job's new version await promotion, the version to place instead and
// the deployment it joins, as Nomad's downgradedJobForPlacement: the
// version of the job's newest deployment in which the group was promoted
// or had no canaries (allocations updated in place to a version whose
// canaries were never promoted do not make it deployed), else, when no
// deployment did, the placement's minimum version if it had no update
// block. It reports false
// when there is none, or it is older than the placement's minimum or
// lacks the group: the placement then runs the job's new version.
func (p *Pass) deployedVersion(pl reconcile.Placement) (deployed, bool) {
	state, job, group := p.in.Ctx.State, p.in.Plan.Job, pl.TaskGroup.Name
	d, ok := p.deployed[group]
	if !ok {
		d = newestDeployed(state, job, group)
		if p.deployed == nil {
			p.deployed = map[string]deployed{}
		}
		p.deployed[group] = d
	}
	if d.deploymentID == "" {
		if j := state.JobVersion(job.Namespace, job.ID, pl.MinJobVersion); j != nil && j.JobModifyIndex != job.JobModifyIndex {
			if tg := j.LookupTaskGroup(group); tg != nil && (tg.Update == nil || tg.Update.MaxParallel == 0) {
				d = deployed{job: j}
			}
		}
	}
	if d.job == nil || d.job.Version < pl.MinJobVersion || d.job.LookupTaskGroup(group) == nil {
		return deployed{}, false
	}
	return d, true
}

// newestDeployed finds, among the deployments of the job's instance that
// its allocations or its latest deployment name, the newest version whose
// deployment promoted the group or gave it no canaries.
func newestDeployed(state sdk.State, job *sdk.Job, group string) deployed {
	var best *sdk.Deployment
	consider := func(d *sdk.Deployment) {
		if d == nil || d.JobCreateIndex != job.CreateIndex || (best != nil && d.JobVersion <= best.JobVersion) {
			return
		}
		if s := d.TaskGroups[group]; s != nil && (s.Promoted || s.DesiredCanaries == 0) {
			best = d
		}
	}
	consider(state.LatestDeployment(job.Namespace, job.ID))
	seen := map[string]bool{}
	for _, a := range state.AllocsByJob(job.Namespace, job.ID) {
		if id := a.DeploymentID; id != "" && !seen[id] {
			seen[id] = true
			consider(state.Deployment(id))
		}
	}
	if best == nil {
		return deployed{}
	}
	return deployed{job: state.JobVersion(job.Namespace, job.ID, best.JobVersion), deploymentID: best.ID}
}

// Submit submits the plan, first creating the result's follow-up evals
// (PreviousEval set to the eval), which the plan's stops name, unless the
// eval is itself a delayed one (WaitUntil set), as Nomad does. A plan that
// changes nothing is not submitted, unless the eval is a dry run
// (AnnotatePlan). It returns what a conclude.Retry pass returns: done when
// the plan was committed whole on current state (or not needed), progress
// when the result committed anything.
func (p *Pass) Submit() (done, progress bool, err error) {
	ctx, eval, plan := p.in.Ctx, p.in.Eval, p.in.Plan
	if plan.IsNoOp() && !eval.AnnotatePlan {
		return true, false, nil
	}
	if eval.WaitUntil.IsZero() {
		for _, ev := range p.in.Result.FollowupEvals {
			ev.PreviousEval = eval.ID
			if err := ctx.Planner.CreateEval(ev); err != nil {
				return false, false, fmt.Errorf("carry: create follow-up eval: %w", err)
			}
		}
	}
	result, err := ctx.Planner.SubmitPlan(plan.Plan)
	if err != nil {
		return false, false, fmt.Errorf("carry: submit plan: %w", err)
	}
	conclude.AdjustQueued(result, p.Placed, p.Queued)
	full, _, _ := result.FullCommit(plan.Plan)
	return full && result.RefreshIndex == 0, conclude.Progress(result), nil
}
