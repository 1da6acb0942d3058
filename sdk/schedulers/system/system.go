// Package system is the scheduler for system and sysbatch jobs: count
// allocations of each task group (one, for a system job) on every ready
// node in the job's datacenters and node pool.
//
// It follows Nomad's system scheduler: a per-node reconciler
// (reconcile.System) decides what each node needs; updates are done in
// place when nothing destructive changed and the allocation still fits,
// and destructive ones roll max_parallel at a time, with a rolling-update
// follow-up eval after the update block's stagger (as Nomad: the new eval
// has PreviousEval set, the old one NextEval); placements may preempt
// lower-priority allocations (on by default for system jobs, per the
// scheduler configuration for sysbatch); nodes filtered by constraints are
// not failures unless every node was filtered.
package system

import (
	"errors"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/stack"
)

// Scheduler schedules system and sysbatch jobs: each eval as its Type says.
type Scheduler struct {
	// ready keeps the ready nodes between evaluations while no node
	// changes.
	ready stack.ReadyCache
}

var (
	_ sdk.Scheduler     = (*Scheduler)(nil)
	_ sdk.ConfigChecker = (*Scheduler)(nil)
)

// CheckConfig implements sdk.ConfigChecker. The system scheduler takes no
// configuration (the scheduler configuration, set with the API, is its
// tuning): a key in its plugin block is an operator's mistake, refused as
// Nomad refuses an unknown setting.
func (s *Scheduler) CheckConfig(config map[string]string) error { return sdk.CheckConfigKeys(config) }

func handles(sysbatch bool, trigger string) bool {
	switch trigger {
	case sdk.EvalTriggerJobRegister, sdk.EvalTriggerNodeUpdate, sdk.EvalTriggerFailedFollowUp,
		sdk.EvalTriggerJobDeregister, sdk.EvalTriggerRollingUpdate, sdk.EvalTriggerPreemption,
		sdk.EvalTriggerDeploymentWatcher, sdk.EvalTriggerNodeDrain, sdk.EvalTriggerAllocStop,
		sdk.EvalTriggerQueuedAllocs, sdk.EvalTriggerScaling, sdk.EvalTriggerReconnect:
		return true
	case sdk.EvalTriggerPeriodicJob:
		return sysbatch
	}
	return false
}

// Process implements sdk.Scheduler.
func (s *Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	sysbatch := eval.Type == sdk.JobTypeSysBatch
	if !handles(sysbatch, eval.TriggeredBy) {
		return conclude.Unhandled(ctx, eval)
	}
	if refused, err := conclude.OtherType(ctx, eval, sdk.JobTypeSystem, sdk.JobTypeSysBatch); refused || err != nil {
		return err
	}
	limit := conclude.MaxSystemAttempts
	if sysbatch {
		limit = conclude.MaxSysBatchAttempts
	}
	var p *pass
	var next, blocked *sdk.Evaluation
	err := conclude.Retry(limit, func() (bool, bool, error) {
		p = newPass(ctx, eval, sysbatch, &s.ready)
		p.next, p.blocked = next, blocked
		done, progress, err := p.run()
		p.stack.Release()
		next, blocked = p.next, p.blocked
		return done, progress, err
	})
	switch {
	case errors.Is(err, conclude.ErrMaxAttempts):
		return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusFailed, Description: conclude.FailedMaxAttempts(limit),
			Next: p.next, Failed: p.failed, Queued: p.queued})
	case err != nil:
		return err
	}
	// A blocked eval waits again only for room: when what failed is that
	// no node meets the job's constraints, more room will not help, and it
	// completes with the failure, as Nomad's system scheduler never
	// blocks on that.
	if eval.Status == sdk.EvalStatusBlocked && p.exhausted {
		return conclude.Reblock(ctx, eval, p.stack.Eligibility(), p.failed, p.queued)
	}
	return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusComplete, Next: p.next,
		Blocked: p.blocked, Failed: p.failed, Queued: p.queued})
}

// pass is one attempt at an evaluation.
type pass struct {
	ctx      *sdk.Context
	eval     *sdk.Evaluation
	job      *sdk.Job
	plan     *stack.Plan
	stack    *stack.Stack
	ready    []*sdk.Node
	notReady map[string]*sdk.Node
	failed   map[string]*sdk.AllocMetric
	queued   map[string]int
	placed   []*sdk.Allocation
	next     *sdk.Evaluation
	blocked  *sdk.Evaluation
	// limitReached: a rolling update left work for the next eval.
	limitReached bool
	exhausted    bool
}

func newPass(ctx *sdk.Context, eval *sdk.Evaluation, sysbatch bool, ready *stack.ReadyCache) *pass {
	job := ctx.State.Job(eval.Namespace, eval.JobID)
	p := &pass{ctx: ctx, eval: eval, job: job, queued: map[string]int{}}
	p.plan = stack.NewPlan(ctx.State, eval, job)
	jobType := sdk.JobTypeSystem
	if sysbatch {
		jobType = sdk.JobTypeSysBatch
	}
	p.stack = stack.New(ctx, p.plan, job, stack.ConfigFor(jobType, ctx.State.SchedulerConfig()))
	if !job.Stopped() {
		var byDC map[string]int
		p.ready, p.notReady, byDC = ready.ReadyNodes(ctx.State, job)
		p.stack.SetNodes(p.ready, byDC)
	}
	return p
}

func (p *pass) run() (done, progress bool, err error) {
	p.computeJobAllocs()
	if p.exhausted && p.blocked == nil && p.eval.Status != sdk.EvalStatusBlocked {
		b, err := conclude.Blocked(p.ctx, p.eval, p.stack.Eligibility(), p.failed, false)
		if err != nil {
			return false, false, err
		}
		p.blocked = b
	}
	if p.plan.IsNoOp() && !p.eval.AnnotatePlan {
		return true, false, nil
	}
	if p.limitReached && p.next == nil {
		p.next = p.eval.NextRollingEval(p.ctx.NewID(), p.job.Update.Stagger)
		if err := p.ctx.Planner.CreateEval(p.next); err != nil {
			return false, false, err
		}
	}
	result, err := p.ctx.Planner.SubmitPlan(p.plan.Plan)
	if err != nil {
		return false, false, err
	}
	conclude.AdjustQueued(result, p.placed, p.queued)
	full, _, _ := result.FullCommit(p.plan.Plan)
	return full && result.RefreshIndex == 0, conclude.Progress(result), nil
}

func (p *pass) computeJobAllocs() {
	allocs := p.ctx.State.AllocsByJob(p.eval.Namespace, p.eval.JobID)
	tainted := reconcile.TaintedNodes(p.ctx.State, allocs)
	for _, a := range reconcile.StillRunningOnDownNodes(tainted, allocs) {
		p.plan.Stop(a, reconcile.AllocLost, sdk.AllocClientStatusLost, "")
	}
	diff := reconcile.System(reconcile.SystemInput{Job: p.job, Ready: p.ready, NotReady: p.notReady, Tainted: tainted, Allocs: allocs,
		Now: p.ctx.Now})
	for _, t := range diff.Stop {
		p.plan.Stop(t.Alloc, reconcile.AllocNotNeeded, "", "")
	}
	for _, t := range diff.Migrate {
		p.plan.Stop(t.Alloc, reconcile.AllocNodeTainted, "", "")
	}
	for _, t := range diff.Lost {
		p.plan.Stop(t.Alloc, reconcile.AllocLost, sdk.AllocClientStatusLost, "")
	}
	for _, t := range diff.Disconnect {
		p.plan.Annotate(t.Alloc.MarkedUnknown(p.ctx.Now, reconcile.AllocUnknown))
	}
	destructive, inplace := p.updateInPlace(diff.Update)
	if p.eval.AnnotatePlan {
		p.plan.Annotations = &sdk.PlanAnnotations{DesiredTGUpdates: desiredUpdates(p.job, diff, inplace, destructive)}
	}
	limit := len(destructive)
	if !p.job.Stopped() && p.job.Update.Rolling() {
		limit = p.job.Update.MaxParallel
	}
	place := diff.Place
	for i, t := range destructive {
		if i == limit {
			p.limitReached = true
			break
		}
		p.plan.Stop(t.Alloc, reconcile.AllocUpdating, "", "")
		place = append(place, t)
	}
	if p.job.Stopped() {
		return
	}
	for _, tg := range p.job.TaskGroups {
		p.queued[tg.Name] = 0
	}
	// Counted by runs of one group (a map update per placement was 1.6%
	// of a wasm sysbatch eval's samples).
	for i := 0; i < len(place); {
		j := i + 1
		for j < len(place) && place[j].TaskGroup == place[i].TaskGroup {
			j++
		}
		p.queued[place[i].TaskGroup.Name] += j - i
		i = j
	}
	p.computePlacements(place, len(diff.Place))
}

// updateInPlace updates in place the allocations whose group changed
// nothing destructive and still fits its node; it returns the others
// (destructive) and the ones it updated, finished sysbatch allocations
// among them (left as they are).
func (p *pass) updateInPlace(updates []reconcile.SystemTuple) (destructive, inplace []reconcile.SystemTuple) {
	for _, t := range updates {
		a := t.Alloc
		if a.Job == nil {
			destructive = append(destructive, t)
			continue
		}
		if changed, _ := reconcile.TasksUpdated(p.job, a.Job, t.TaskGroup.Name); changed {
			destructive = append(destructive, t)
			continue
		}
		if a.TerminalStatus() {
			// A finished sysbatch allocation: nothing to update, and
			// counted as updated in place, as Nomad's inplaceUpdate
			// counts it.
			inplace = append(inplace, t)
			continue
		}
		node := t.Node
		if node == nil {
			destructive = append(destructive, t)
			continue
		}
		p.plan.Stop(a, reconcile.AllocInPlace, "", "")
		option, metric := p.stack.SelectOn(node, t.TaskGroup, stack.Options{AllocName: t.Name})
		p.plan.PopStop(a)
		if option == nil {
			destructive = append(destructive, t)
			continue
		}
		updated := *a
		updated.Job = nil
		updated.Metrics = metric
		updated.EvalID = p.eval.ID
		updated.JobVersion, updated.JobModifyIndex = p.job.Version, p.job.JobModifyIndex
		updated.AllocatedResources = stack.KeepAssigned(option.Resources, a.AllocatedResources)
		p.plan.Update(&updated)
		inplace = append(inplace, t)
	}
	return destructive, inplace
}

// computePlacements places one allocation per slot (a name on a node) on
// the slot's node.
// The first fresh slots are the reconciler's placements; the rest replace
// allocations updated destructively.
func (p *pass) computePlacements(place []reconcile.SystemTuple, fresh int) {
	filtered := map[string]*sdk.AllocMetric{}
	p.stack.Expect(len(place))
	for i, t := range place {
		tg := t.TaskGroup
		node := t.Node
		if node == nil {
			continue
		}
		option, metric := p.stack.SelectOn(node, tg, stack.Options{AllocName: t.Name})
		if option == nil {
			if metric.NodesFiltered > 0 {
				// The node does not meet the group's constraints: not a
				// failure, unless no node does, and not a placement a dry
				// run may count (Nomad's annotations take it back too; a
				// destructive update was counted as one, not as a
				// placement).
				p.queued[tg.Name]--
				if a := p.plan.Annotations; a != nil && i < fresh {
					if u := a.DesiredTGUpdates[tg.Name]; u != nil && u.Place > 0 {
						u.Place--
					}
				}
				filtered[tg.Name] = mergeFiltered(filtered[tg.Name], metric)
				if p.queued[tg.Name] <= 0 {
					p.fail(tg, filtered[tg.Name])
				}
				continue
			}
			if m, ok := p.failed[tg.Name]; ok && !p.filteredOnly(tg.Name, filtered) {
				m.CoalescedFailures++
				m.ExhaustResources(tg)
				continue
			}
			metric.ExhaustResources(tg)
			p.fail(tg, metric)
			p.exhausted = true
			continue
		}
		a := p.plan.NewAllocation()
		*a = sdk.Allocation{
			ID: p.ctx.NewID(), Namespace: p.job.Namespace, EvalID: p.eval.ID, Name: t.Name,
			NodeID: node.ID, NodeName: node.Name, JobID: p.job.ID, JobVersion: p.job.Version,
			TaskGroup: tg.Name, AllocatedResources: option.Resources, Metrics: metric,
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
		}
		if t.Alloc != nil && t.Alloc.ID != "" {
			a.PreviousAllocation = t.Alloc.ID
		}
		for _, v := range option.Preempted {
			p.plan.Preempt(v, a.ID)
			a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
		}
		p.plan.Place(a)
		p.placed = append(p.placed, a)
	}
}

func (p *pass) fail(tg *sdk.TaskGroup, m *sdk.AllocMetric) {
	if p.failed == nil {
		p.failed = map[string]*sdk.AllocMetric{}
	}
	p.failed[tg.Name] = m
}

// filteredOnly reports whether the group's failure so far is the "every
// node filtered" kind, which a real failure replaces.
func (p *pass) filteredOnly(tg string, filtered map[string]*sdk.AllocMetric) bool {
	return filtered[tg] != nil && p.failed[tg] == filtered[tg]
}

// mergeFiltered adds what one node's filtering says to acc, as Nomad's
// mergeNodeFiltered does. acc keeps the first node's NodesInPool and
// NodesAvailable, which Nomad reports as zero when every node was filtered
// (it copies the metric before its scheduler sets them); the counts are the
// same that every other failure reports.
func mergeFiltered(acc, cur *sdk.AllocMetric) *sdk.AllocMetric {
	if acc == nil {
		c := *cur
		c.ClassFiltered = copyCounts(cur.ClassFiltered)
		c.ConstraintFiltered = copyCounts(cur.ConstraintFiltered)
		return &c
	}
	acc.NodesEvaluated += cur.NodesEvaluated
	acc.NodesFiltered += cur.NodesFiltered
	for k, v := range cur.ClassFiltered {
		if acc.ClassFiltered == nil {
			acc.ClassFiltered = map[string]int{}
		}
		acc.ClassFiltered[k] += v
	}
	for k, v := range cur.ConstraintFiltered {
		if acc.ConstraintFiltered == nil {
			acc.ConstraintFiltered = map[string]int{}
		}
		acc.ConstraintFiltered[k] += v
	}
	return acc
}

func copyCounts(m map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// desiredUpdates summarizes the diff per task group for plan annotations,
// as Nomad's desiredUpdates (scheduler/util.go) does: lost allocations
// (stopped as lost) and disconnecting ones (marked unknown) are not
// counted. A finished sysbatch allocation of an older version on a node
// that is not ready counts as updated in place when the change is not
// destructive, as Nomad's inplaceUpdate counts it; otherwise Nomad stops
// it and queues a replacement that finds no node (computePlacements:
// "could not find node"), which Drover does not do: it counts it ignored.
func desiredUpdates(job *sdk.Job, d *reconcile.SystemResult, inplace, destructive []reconcile.SystemTuple) map[string]*sdk.DesiredUpdates {
	out := map[string]*sdk.DesiredUpdates{}
	get := func(t reconcile.SystemTuple) *sdk.DesiredUpdates {
		var name string
		if t.TaskGroup != nil {
			name = t.TaskGroup.Name
		} else {
			name = t.Alloc.TaskGroup // an allocation of a group the job no longer has
		}
		u := out[name]
		if u == nil {
			u = &sdk.DesiredUpdates{}
			out[name] = u
		}
		return u
	}
	for _, t := range d.Place {
		get(t).Place++
	}
	for _, t := range d.Stop {
		get(t).Stop++
	}
	for _, t := range d.Migrate {
		get(t).Migrate++
	}
	for _, t := range d.Ignore {
		get(t).Ignore++
	}
	for _, t := range d.Finished {
		if t.Alloc.Job != nil {
			if changed, _ := reconcile.TasksUpdated(job, t.Alloc.Job, t.TaskGroup.Name); !changed {
				get(t).InPlaceUpdate++
				continue
			}
		}
		get(t).Ignore++
	}
	for _, t := range destructive {
		get(t).DestructiveUpdate++
	}
	for _, t := range inplace {
		get(t).InPlaceUpdate++
	}
	return out
}
