package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

// PlanResult is what registering a job would do, found by running the
// job's real scheduler plugin on the current state without committing
// anything (`job plan`).
type PlanResult struct {
	// Job is the job as it would be registered (canonicalized, with the
	// version it would get).
	Job *sdk.Job
	// Current is the registered job, nil for a new job.
	Current *sdk.Job
	// JobModifyIndex is the current job's JobModifyIndex (0 for a new job),
	// for a later registration that enforces it.
	JobModifyIndex uint64
	// Plan is what the scheduler submitted; nil when it submitted nothing.
	Plan *sdk.Plan
	// Annotations count, per group, what the plan does (the scheduler's own
	// annotations when it made them, else counted from the plan).
	Annotations *sdk.PlanAnnotations
	// FailedTGAllocs explains, per group, what could not be placed.
	FailedTGAllocs map[string]*sdk.AllocMetric
	// CreatedEvals are the evals the scheduler would create (a blocked eval
	// for allocations that do not fit, ...).
	CreatedEvals []*sdk.Evaluation
	// Eval is the hypothetical eval, as the scheduler left it.
	Eval *sdk.Evaluation
	// NextPeriodicLaunch is when a periodic job would next launch.
	NextPeriodicLaunch time.Time
}

// PlanJob runs the scheduler that would evaluate the job's registration
// against the current state and returns what it would do. Nothing is
// written: the plugin sees the state with the job replaced, and its plans
// and evals are recorded, not applied.
func (s *Server) PlanJob(ctx context.Context, job *sdk.Job) (*PlanResult, error) {
	if err := s.ValidateJob(job); err != nil {
		return nil, err
	}
	// Compare and schedule the job as the state would hold it, after the
	// encoding every write goes through.
	job, err := roundTrip(job)
	if err != nil {
		return nil, err
	}
	snap := s.store.Snapshot()
	cur := snap.Job(job.Namespace, job.ID)
	res := &PlanResult{Job: job, Current: cur}
	job.SubmitTime = s.now().UnixNano()
	next := snap.Index() + 1
	switch {
	case cur == nil:
		job.Version, job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = 0, next, next, next
	case state.SpecChanged(cur, job):
		res.JobModifyIndex = cur.JobModifyIndex
		job.Version, job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = cur.Version+1, cur.CreateIndex, next, next
	default:
		res.JobModifyIndex = cur.JobModifyIndex
		job.Version, job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = cur.Version, cur.CreateIndex, next, cur.JobModifyIndex
	}
	if job.Status == "" {
		job.Status = sdk.JobStatusPending
	}
	if job.IsPeriodic() || job.IsParameterized() {
		// Templates are not evaluated until launched or dispatched: their
		// groups change nothing now (annotations are always there, as
		// Nomad's CLI reads them without a check).
		if job.IsPeriodic() && job.Periodic.Enabled {
			// As Nomad's Job.Plan: a disabled schedule has no launch.
			res.NextPeriodicLaunch, _ = NextLaunch(job.Periodic, s.now())
		}
		res.Annotations = annotate(snap, job, nil)
		return res, nil
	}
	eval := s.newEval(job, sdk.EvalTriggerJobRegister)
	eval.JobModifyIndex = job.JobModifyIndex
	eval.AnnotatePlan = true
	eval.ModifyIndex, eval.CreateIndex = next, next
	entry, err := s.plugins.ForEval(eval, job)
	if err != nil {
		return nil, badRequest(err)
	}
	p := &dryRunPlanner{eval: eval, next: next}
	call := &runtime.Call{
		Eval: eval.Copy(), Token: "plan-" + eval.ID, Now: s.now(), State: &withJob{snap: snap, job: job},
		Planner: p, Config: entry.Config, Log: s.log.With().Str("eval_id", eval.ID).Str("job_id", job.ID).Bool("dry_run", true).Logger(),
		Scratch: true,
	}
	timeout := DefaultPluginTimeout
	if entry.Timeout > 0 {
		timeout = entry.Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := entry.Plugin.Process(pctx, call); err != nil {
		return nil, fmt.Errorf("server: plan job %s: %w", job.ID, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	res.Plan, res.Eval, res.CreatedEvals = p.plan, p.updated, p.created
	if res.Eval == nil {
		res.Eval = eval
	}
	res.FailedTGAllocs = res.Eval.FailedTGAllocs
	if res.Plan != nil && res.Plan.Annotations != nil {
		res.Annotations = res.Plan.Annotations
	} else {
		res.Annotations = annotate(snap, job, res.Plan)
	}
	annotatePreemptions(snap, res.Annotations, res.Plan)
	return res, nil
}

// roundTrip returns a job as the state would hold it: encoded and decoded
// as raft log entries are.
func roundTrip(job *sdk.Job) (*sdk.Job, error) {
	b, err := job.MarshalMsg(nil)
	if err != nil {
		return nil, fmt.Errorf("server: encode job: %w", err)
	}
	var out sdk.Job
	if _, err := out.UnmarshalMsg(b); err != nil {
		return nil, fmt.Errorf("server: decode job: %w", err)
	}
	return &out, nil
}

// withJob is a state in which one job is replaced by a hypothetical version.
type withJob struct {
	snap *state.Snapshot
	job  *sdk.Job
}

var _ runtime.StateSource = (*withJob)(nil)

func (w *withJob) Index() uint64 { return w.snap.Index() }

func (w *withJob) Sync(from uint64, evals bool) *abi.StateSync {
	sync := w.snap.Sync(from, evals)
	id := w.job.NamespacedID()
	sync.Jobs = slices.DeleteFunc(slices.Clone(sync.Jobs), func(j *sdk.Job) bool { return j.NamespacedID() == id })
	sync.DeletedJobs = slices.DeleteFunc(slices.Clone(sync.DeletedJobs), func(d sdk.NamespacedID) bool { return d == id })
	sync.Jobs = append(sync.Jobs, w.job)
	// The registered version stops being the current job, so the
	// allocations running it (sent without their job, linked by its job
	// modify index) need it among the versions: a full sync carries it
	// nowhere else.
	if cur := w.snap.Job(id.Namespace, id.ID); cur != nil && cur.JobModifyIndex != w.job.JobModifyIndex &&
		!slices.ContainsFunc(sync.JobVersions, func(v *sdk.Job) bool {
			return v.NamespacedID() == id && v.JobModifyIndex == cur.JobModifyIndex
		}) {
		sync.JobVersions = append(slices.Clone(sync.JobVersions), cur)
	}
	return sync
}

// dryRunPlanner records what a scheduler asks instead of doing it. Every
// plan is taken as fully committed, as Nomad's plan dry run does.
type dryRunPlanner struct {
	eval *sdk.Evaluation
	next uint64

	mu      sync.Mutex
	plan    *sdk.Plan
	updated *sdk.Evaluation
	created []*sdk.Evaluation
}

var _ runtime.Planner = (*dryRunPlanner)(nil)

// errDryRun is returned to a plugin that touches an eval other than its own.
var errDryRun = errors.New("server: plan dry run: only the planned eval may be updated")

func (p *dryRunPlanner) SubmitPlan(_ context.Context, pl *sdk.Plan) (*sdk.PlanResult, runtime.StateSource, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plan == nil {
		p.plan = pl
	} else {
		mergePlan(p.plan, pl)
	}
	return &sdk.PlanResult{NodeUpdate: pl.NodeUpdate, NodeAllocation: pl.NodeAllocation,
		NodePreemptions: pl.NodePreemptions, Deployment: pl.Deployment, DeploymentUpdates: pl.DeploymentUpdates,
		AllocIndex: p.next}, nil, nil
}

func (p *dryRunPlanner) UpdateEval(_ context.Context, e *sdk.Evaluation) error {
	if e.ID != p.eval.ID {
		return fmt.Errorf("%w: %w", sdk.ErrInvalidEval, errDryRun)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.updated = e
	return nil
}

func (p *dryRunPlanner) CreateEval(_ context.Context, e *sdk.Evaluation) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created = append(p.created, e)
	return nil
}

func (p *dryRunPlanner) ReblockEval(ctx context.Context, e *sdk.Evaluation) error {
	return p.UpdateEval(ctx, e)
}

// mergePlan adds a later plan of the same eval (after a refresh) to the
// first.
func mergePlan(into, more *sdk.Plan) {
	for _, as := range more.NodeUpdate {
		for _, a := range as {
			into.AppendStoppedAlloc(a, a.DesiredDescription, a.ClientStatus)
		}
	}
	for _, as := range more.NodeAllocation {
		for _, a := range as {
			into.AppendAlloc(a)
		}
	}
	for node, as := range more.NodePreemptions {
		if into.NodePreemptions == nil {
			into.NodePreemptions = map[string][]*sdk.Allocation{}
		}
		into.NodePreemptions[node] = append(into.NodePreemptions[node], as...)
	}
	if more.Deployment != nil {
		into.Deployment = more.Deployment
	}
	into.DeploymentUpdates = append(into.DeploymentUpdates, more.DeploymentUpdates...)
}

// annotate counts what a plan does to each group of job, for schedulers
// that do not annotate their plans: a placement whose name matches an
// allocation it stops is a destructive update; an existing allocation placed
// again is an in-place update; live allocations the plan leaves alone are
// ignored.
func annotate(snap *state.Snapshot, job *sdk.Job, pl *sdk.Plan) *sdk.PlanAnnotations {
	ann := &sdk.PlanAnnotations{DesiredTGUpdates: map[string]*sdk.DesiredUpdates{}}
	for _, tg := range job.TaskGroups {
		ann.DesiredTGUpdates[tg.Name] = &sdk.DesiredUpdates{}
	}
	group := func(name string) *sdk.DesiredUpdates {
		u := ann.DesiredTGUpdates[name]
		if u == nil {
			u = &sdk.DesiredUpdates{}
			ann.DesiredTGUpdates[name] = u
		}
		return u
	}
	touched := map[string]bool{}
	stoppedNames := map[string]int{}
	if pl != nil {
		for _, as := range pl.NodeUpdate {
			for _, a := range as {
				touched[a.ID] = true
				if old := snap.Alloc(a.ID); old != nil && old.JobID == job.ID && old.Namespace == job.Namespace {
					stoppedNames[old.TaskGroup+"\x00"+old.Name]++
					group(old.TaskGroup).Stop++
				}
			}
		}
		for _, as := range pl.NodeAllocation {
			for _, a := range as {
				touched[a.ID] = true
				u := group(a.TaskGroup)
				key := a.TaskGroup + "\x00" + a.Name
				switch {
				case snap.Alloc(a.ID) != nil:
					u.InPlaceUpdate++
				case stoppedNames[key] > 0:
					stoppedNames[key]--
					u.Stop--
					u.DestructiveUpdate++
				default:
					u.Place++
				}
				if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
					u.Canary++
				}
			}
		}
	}
	for _, a := range snap.AllocsByJob(job.Namespace, job.ID) {
		if !touched[a.ID] && !a.TerminalStatus() {
			group(a.TaskGroup).Ignore++
		}
	}
	return ann
}

// annotatePreemptions completes a plan's annotations, whoever wrote them,
// with what it would preempt, as Nomad's: the preempted allocations as they
// are in the state (sorted by job, group and name), and per group of the
// planned job how many allocations its new placements preempt.
func annotatePreemptions(snap *state.Snapshot, ann *sdk.PlanAnnotations, pl *sdk.Plan) {
	if pl == nil || len(pl.NodePreemptions) == 0 {
		return
	}
	ann.PreemptedAllocs = ann.PreemptedAllocs[:0]
	for _, as := range pl.NodePreemptions {
		for _, a := range as {
			if old := snap.Alloc(a.ID); old != nil {
				ann.PreemptedAllocs = append(ann.PreemptedAllocs, old.Stub())
			}
		}
	}
	slices.SortFunc(ann.PreemptedAllocs, func(a, b *sdk.AllocationListStub) int {
		return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.TaskGroup, b.TaskGroup), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.ID, b.ID))
	})
	for _, u := range ann.DesiredTGUpdates {
		u.Preemptions = 0
	}
	for _, as := range pl.NodeAllocation {
		for _, a := range as {
			// Only new allocations preempt: one updated in place keeps
			// the list of what it preempted when it was placed.
			if len(a.PreemptedAllocations) == 0 || snap.Alloc(a.ID) != nil {
				continue
			}
			if ann.DesiredTGUpdates == nil {
				ann.DesiredTGUpdates = map[string]*sdk.DesiredUpdates{}
			}
			u := ann.DesiredTGUpdates[a.TaskGroup]
			if u == nil {
				u = &sdk.DesiredUpdates{}
				ann.DesiredTGUpdates[a.TaskGroup] = u
			}
			u.Preemptions += uint64(len(a.PreemptedAllocations))
		}
	}
}
