package server

import (
	"errors"
	"fmt"
	"slices"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/dustin/go-humanize"
)

// ErrConflict is returned by writes whose check-and-set index does not
// match the current state.
var ErrConflict = errors.New("server: conflicting index")

// RegisterOptions are the options of a job registration, as Nomad's API
// has them.
type RegisterOptions struct {
	// EnforceIndex registers only if the job's current JobModifyIndex is
	// JobModifyIndex (0: only if the job does not exist).
	EnforceIndex   bool
	JobModifyIndex uint64
	// PreserveCounts keeps the counts of groups the job already has.
	PreserveCounts bool
	// PreserveResources keeps the resources of tasks the job already has.
	PreserveResources bool
	// EvalPriority overrides the job's priority for the registration's eval
	// (1 to 100; 0: the job's priority).
	EvalPriority int
	// Submission is the source the job was registered from, kept with the
	// version the registration makes current (see AdmitSubmission).
	Submission *state.JobSubmission
	// trigger is the eval's TriggeredBy (job-register unless set; scaling
	// sets job-scaling).
	trigger string
	// scaling is the scaling event a count change records with the
	// registration, naming its eval.
	scaling *fsm.ScalingEventRequest
}

// AdmitSubmission returns the submission to keep with a registration, and
// a warning for the registration's answer when it is larger than
// job_max_source_size allows: then, as in Nomad, it is dropped and the job
// registered without it.
func (s *Server) AdmitSubmission(sub *state.JobSubmission) (*state.JobSubmission, string) {
	if sub == nil {
		return nil, ""
	}
	if n, max := sub.Size(), s.cfg.JobMaxSourceSize; n > max {
		return nil, fmt.Sprintf("job source size of %s exceeds maximum of %s and will be discarded",
			humanize.Bytes(uint64(n)), humanize.Bytes(uint64(max)))
	}
	return sub, ""
}

// JobWarnings is what a registration, plan or validation of job warns
// about, as Nomad's servers: its dubious settings and deprecated fields
// (jobspec.Warnings), then each task's memory_max while memory
// oversubscription is off, which placements then ignore. The job is not
// changed.
func (s *Server) JobWarnings(job *sdk.Job) []string {
	j := job.Copy()
	jobspec.Canonicalize(j)
	ws := jobspec.Warnings(j)
	if s.store.Snapshot().SchedulerConfig().MemoryOversubscriptionEnabled {
		return ws
	}
	for _, tg := range j.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Resources != nil && t.Resources.MemoryMaxMB != 0 {
				ws = append(ws, fmt.Sprintf("Memory oversubscription is not enabled; Task \"%v.%v\" memory_max value will be ignored. "+
					"Update the Scheduler Configuration to allow oversubscription.", tg.Name, t.Name))
			}
		}
	}
	return ws
}

// registerAttempts bounds how often a registration is built again when
// the version of the job it was built on was replaced before it applied.
const registerAttempts = 10

// RegisterJobOpts registers a job (or a new version of it) with options
// and, unless it is a periodic or parameterized template, creates its
// job-register eval.
//
// What a registration reads of the job's current version (its kind, the
// counts and resources it preserves, the index it enforces) is checked
// again when its log entry applies: a registration whose version was
// replaced in between is refused with ErrConflict if the caller enforced
// an index, and otherwise built again on the new version, up to
// registerAttempts times. A plain registration, whose content does not
// depend on that version, is never refused: its last attempt applies
// unchecked.
func (s *Server) RegisterJobOpts(job *sdk.Job, opts RegisterOptions) (evalID string, index uint64, err error) {
	jobspec.Canonicalize(job)
	if err := checkEvalPriority(opts.EvalPriority); err != nil {
		return "", 0, err
	}
	// Preserving counts or resources writes the version read into job:
	// attempts after the first start again from the caller's job, kept
	// only then (a copy per registration would be work for nothing).
	preserve := opts.PreserveCounts || opts.PreserveResources
	var spec *sdk.Job
	if preserve {
		spec = job.Copy()
	}
	// A registration whose content does not depend on the version it
	// read is not refused for a version replaced meanwhile: its last
	// attempt applies unchecked, as a registration did before the check.
	dependent := opts.EnforceIndex || preserve
	for attempt := 1; ; attempt++ {
		if attempt > 1 && spec != nil {
			*job = *spec.Copy()
		}
		evalID, index, err = s.registerJob(job, opts, dependent || attempt < registerAttempts)
		if !errors.Is(err, fsm.ErrConflict) {
			return evalID, index, err
		}
		if opts.EnforceIndex || attempt == registerAttempts {
			return "", 0, fmt.Errorf("%w: %v", ErrConflict, err)
		}
	}
}

// registerJob is one attempt of RegisterJobOpts; check has the entry
// checked, when it applies, against the job version read here.
func (s *Server) registerJob(job *sdk.Job, opts RegisterOptions, check bool) (evalID string, index uint64, err error) {
	snap := s.store.Snapshot()
	cur := snap.Job(job.Namespace, job.ID)
	var have uint64
	if cur != nil {
		have = cur.JobModifyIndex
	}
	if opts.EnforceIndex && have != opts.JobModifyIndex {
		// Nomad's words (its CLI recognizes them).
		why := fmt.Sprintf("job exists with conflicting job modify index: %d", have)
		switch {
		case cur == nil:
			why = "job does not exist"
		case opts.JobModifyIndex == 0:
			why = "job already exists"
		}
		return "", 0, fmt.Errorf("%w: Enforcing job modify index %d: %s", ErrConflict, opts.JobModifyIndex, why)
	}
	if cur != nil && (opts.PreserveCounts || opts.PreserveResources) {
		for _, tg := range job.TaskGroups {
			old := cur.LookupTaskGroup(tg.Name)
			if old == nil {
				continue
			}
			if opts.PreserveCounts {
				tg.Count = old.Count
			}
			for _, t := range tg.Tasks {
				if ot := old.LookupTask(t.Name); opts.PreserveResources && ot != nil && ot.Resources != nil {
					r := *ot.Resources
					t.Resources = &r
				}
			}
		}
	}
	if err := validateJobUpdate(cur, job); err != nil {
		return "", 0, badRequest(err)
	}
	validate := s.ValidateJob
	if opts.scaling != nil {
		// Scaling changes a stored job's count alone: the job passed the
		// checks of the version that registered it, and a later version's
		// stricter ones must not make it unscalable (Nomad's Job.Scale
		// checks the count only).
		validate = s.validateCounts
	}
	if err := validate(job); err != nil {
		return "", 0, err
	}
	if err := registrationsAllowed(snap); err != nil {
		return "", 0, err
	}
	job.SubmitTime = s.now().UnixNano()
	req := &fsm.JobRegisterRequest{Job: job, EnforceIndex: check, JobModifyIndex: have, Submission: opts.Submission,
		RefsMustExist: true}
	if (!job.IsPeriodic() && !job.IsParameterized()) || hasLiveAllocs(snap, job) {
		trigger := opts.trigger
		if trigger == "" {
			trigger = sdk.EvalTriggerJobRegister
		}
		req.Eval = s.jobEval(job, trigger, opts.EvalPriority)
		evalID = req.Eval.ID
	}
	if sc := opts.scaling; sc != nil {
		if evalID != "" {
			sc.Event.EvalID = &evalID
		}
		req.Scaling = sc
	}
	index, err = s.Apply(fsm.JobRegisterRequestType, req)
	return evalID, index, err
}

// errRegistrationDisabled is Nomad's refusal of a registration, a
// dispatch or a scaling request while the scheduler configuration's
// RejectJobRegistration sheds that load.
var errRegistrationDisabled = errors.New("job registration, dispatch, and scale are disabled by the scheduler configuration")

// registrationsAllowed refuses, as Nomad's Job.Register, Job.Dispatch and
// Job.Scale do, whatever would add a job version or a job while
// RejectJobRegistration is set: a 403, as Nomad answers it. (Nomad lets a
// management token through; Drover has no ACLs, as Nomad without ACLs
// lets none through.)
func registrationsAllowed(snap *state.Snapshot) error {
	if snap.SchedulerConfig().RejectJobRegistration {
		return forbidden(errRegistrationDisabled)
	}
	return nil
}

// validateJobUpdate refuses what a job may not become, as Nomad does: a
// job keeps its type, and stays periodic, parameterized or dispatched, or
// not, until it is purged (stopped is not enough: its allocations and
// evals are still the old kind's). Only a dispatch makes a dispatched job.
func validateJobUpdate(cur, job *sdk.Job) error {
	if cur == nil {
		if job.Dispatched {
			return errors.New("a job cannot be registered as dispatched: dispatch its parameterized job")
		}
		return nil
	}
	switch {
	case cur.Type != job.Type:
		return fmt.Errorf("job %q cannot change from type %q to %q (purge it first)", job.ID, cur.Type, job.Type)
	case cur.IsPeriodic() != job.IsPeriodic():
		return fmt.Errorf("job %q cannot change from periodic %v to %v (purge it first)", job.ID, cur.IsPeriodic(), job.IsPeriodic())
	case cur.IsParameterized() != job.IsParameterized():
		return fmt.Errorf("job %q cannot change from parameterized %v to %v (purge it first)", job.ID, cur.IsParameterized(), job.IsParameterized())
	case cur.Dispatched != job.Dispatched:
		return fmt.Errorf("job %q: Dispatched is read-only", job.ID)
	}
	return nil
}

// ValidateJob canonicalizes a job and checks it as registration does:
// Validate, a scheduler plugin that would run it, and its namespace and
// node pool (checkJobPlacement).
func (s *Server) ValidateJob(job *sdk.Job) error {
	jobspec.Canonicalize(job)
	if err := jobspec.Validate(job); err != nil {
		return badRequest(err)
	}
	e, err := s.plugins.ForEval(&sdk.Evaluation{Type: job.Type}, job)
	if err != nil {
		return badRequest(err)
	}
	if types := e.Plugin.Info().Types; job.Scheduler != "" && slices.Contains(types, sdk.JobTypeCore) && !slices.Contains(types, job.Type) {
		// Its every eval of the job would fail: it takes only the agent's
		// own garbage-collection evals.
		return badRequest(fmt.Errorf("job %q names scheduler %q, which schedules the agent's core (garbage collection) evaluations, not jobs",
			job.ID, job.Scheduler))
	}
	if err := s.validateCounts(job); err != nil {
		return err
	}
	if job.IsPeriodic() && job.Periodic.Enabled {
		// As jobspec.Validate, a disabled schedule is not checked (Nomad's
		// PeriodicConfig.Validate).
		if _, err := NextLaunch(job.Periodic, s.now()); err != nil {
			return badRequest(err)
		}
	}
	return checkJobPlacement(s.store.Snapshot(), job)
}

// validateCounts refuses a job that could never be placed in one plan: its
// every evaluation would build a plan the applier must reject. Counts are
// not negative (Validate; ScaleJob for a scaled count), and the sum is
// compared part by part so that huge counts cannot wrap it below the
// limit.
func (s *Server) validateCounts(job *sdk.Job) error {
	limit, total := s.cfg.PlanLimits.MaxAllocs, 0
	for _, tg := range job.TaskGroups {
		if tg.Count > limit-total {
			return badRequest(fmt.Errorf("job %q asks for more than %d allocations in all, over the plan size limit", job.ID, limit))
		}
		total += tg.Count
	}
	return nil
}

// jobEval is a new eval of job; priority overrides the job's when set.
func (s *Server) jobEval(job *sdk.Job, trigger string, priority int) *sdk.Evaluation {
	e := s.newEval(job, trigger)
	if priority > 0 {
		e.Priority = priority
	}
	return e
}

func checkEvalPriority(p int) error {
	if p != 0 && (p < sdk.JobMinPriority || p > sdk.JobMaxPriority) {
		return badRequest(fmt.Errorf("eval priority must be between %d and %d, not %d", sdk.JobMinPriority, sdk.JobMaxPriority, p))
	}
	return nil
}

// DeregisterOptions are the options of a job deregistration.
type DeregisterOptions struct {
	// Purge removes the job from the state instead of stopping it.
	Purge bool
	// EvalPriority overrides the job's priority for the eval (0: the job's).
	EvalPriority int
}

// DeregisterJobOpts stops (or purges) a job and evaluates it. A job that
// is not there gives no eval, index 0 and no error.
func (s *Server) DeregisterJobOpts(namespace, id string, opts DeregisterOptions) (evalID string, index uint64, err error) {
	if err := checkEvalPriority(opts.EvalPriority); err != nil {
		return "", 0, err
	}
	snap := s.store.Snapshot()
	job := snap.Job(namespace, id)
	if job == nil {
		// As Nomad's: stopping a job that is not there is done already, so
		// that a teardown can be retried.
		return "", 0, nil
	}
	req := &fsm.JobDeregisterRequest{Namespace: namespace, JobID: id, Purge: opts.Purge}
	// A template (periodic, parameterized) runs nothing itself and gets no
	// eval, as in Nomad, unless it still has allocations: a job with a
	// disabled periodic block ran as any job before Drover read it as
	// periodic, and stopping it must stop what it runs.
	if (!job.IsPeriodic() && !job.IsParameterized()) || hasLiveAllocs(snap, job) {
		req.Eval = s.jobEval(job, sdk.EvalTriggerJobDeregister, opts.EvalPriority)
		evalID = req.Eval.ID
	}
	index, err = s.Apply(fsm.JobDeregisterRequestType, req)
	return evalID, index, err
}

// EvaluateOptions are the options of a forced evaluation.
type EvaluateOptions struct {
	// ForceReschedule reschedules the job's failed allocations now, even
	// those whose reschedule policy is exhausted or delayed.
	ForceReschedule bool
}

// EvaluateJobOpts forces a new evaluation of a job.
func (s *Server) EvaluateJobOpts(namespace, id string, opts EvaluateOptions) (string, uint64, error) {
	snap := s.store.Snapshot()
	job := snap.Job(namespace, id)
	if job == nil {
		return "", 0, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if job.IsPeriodic() || job.IsParameterized() {
		return "", 0, badRequest(errors.New("periodic and parameterized jobs cannot be evaluated"))
	}
	e := s.newEval(job, sdk.EvalTriggerJobRegister)
	e.JobModifyIndex = job.JobModifyIndex
	if !opts.ForceReschedule {
		index, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{e}})
		return e.ID, index, err
	}
	yes := true
	req := &fsm.AllocUpdateDesiredTransitionRequest{Allocs: map[string]*sdk.DesiredTransition{}, Evals: []*sdk.Evaluation{e}}
	for _, a := range forceReschedulable(job, snap.AllocsByJobInstance(namespace, id)) {
		req.Allocs[a.ID] = &sdk.DesiredTransition{ForceReschedule: &yes}
	}
	index, err := s.Apply(fsm.AllocUpdateDesiredTransitionRequestType, req)
	return e.ID, index, err
}

// forceReschedulable returns the allocations of job that a forced
// reschedule marks, as Nomad's Job.Evaluate picks them: failed, not
// replaced yet, not marked already, and of a group the job still has
// whose rescheduling is enabled (a forced reschedule overrides a policy's
// exhausted attempts and its delay, not a policy that reschedules
// nothing).
func forceReschedulable(job *sdk.Job, allocs []*sdk.Allocation) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, a := range allocs {
		tg := job.LookupTaskGroup(a.TaskGroup)
		if tg == nil || !rescheduleEnabled(tg.ReschedulePolicy) {
			continue
		}
		if a.ClientStatus == sdk.AllocClientStatusFailed && a.NextAllocation == "" && !a.DesiredTransition.ShouldForceReschedule() {
			out = append(out, a)
		}
	}
	return out
}

// rescheduleEnabled says whether a reschedule policy reschedules at all,
// as Nomad's ReschedulePolicy.Enabled: some attempts, or unlimited.
func rescheduleEnabled(p *sdk.ReschedulePolicy) bool {
	return p != nil && (p.Attempts > 0 || p.Unlimited)
}

// SetSchedulerConfigCAS replaces the scheduler configuration if its
// ModifyIndex is still cas; it reports whether it did.
func (s *Server) SetSchedulerConfigCAS(c *sdk.SchedulerConfiguration, cas uint64) (bool, uint64, error) {
	index, err := s.setSchedulerConfig(&fsm.SchedulerConfigRequest{Config: c, CAS: true, ModifyIndex: cas})
	if errors.Is(err, fsm.ErrConflict) {
		return false, s.store.LatestIndex(), nil
	}
	return err == nil, index, err
}

// JobSummary counts a job's allocations per group and client status, and
// the allocations its latest evaluation could not place. Only the job's
// own count: after a purge and a new registration, the summary starts
// from zero, as Nomad's, whatever the purged instance left. As Nomad's
// running totals, it keeps what garbage collection took: the collected
// allocations' statuses and the last queued count (state.JobSummaryKept).
func JobSummary(snap *state.Snapshot, job *sdk.Job) *Summary {
	// Children is zero, not null, for a job that launches none, as Nomad's
	// JobSummary has it.
	sum := &Summary{JobID: job.ID, Namespace: job.Namespace, Summary: map[string]*TaskGroupSummary{},
		Children: &ChildrenSummary{}, CreateIndex: job.CreateIndex, ModifyIndex: job.ModifyIndex}
	for _, tg := range job.TaskGroups {
		sum.Summary[tg.Name] = &TaskGroupSummary{}
	}
	for _, a := range snap.AllocsByJobInstance(job.Namespace, job.ID) {
		g := sum.Summary[a.TaskGroup]
		if g == nil {
			continue // a group the job no longer has
		}
		sum.ModifyIndex = max(sum.ModifyIndex, a.ModifyIndex)
		switch a.ClientStatus {
		case sdk.AllocClientStatusPending:
			if a.DesiredStatus == sdk.AllocDesiredStatusRun {
				g.Starting++
			}
		case sdk.AllocClientStatusRunning:
			g.Running++
		case sdk.AllocClientStatusComplete:
			g.Complete++
		case sdk.AllocClientStatusFailed:
			g.Failed++
		case sdk.AllocClientStatusLost:
			g.Lost++
		case sdk.AllocClientStatusUnknown:
			g.Unknown++
		}
	}
	kept := snap.JobSummaryKept(job.Namespace, job.ID)
	if kept != nil && kept.JobCreateIndex != job.CreateIndex {
		kept = nil // an earlier instance's, purged meanwhile
	}
	if kept != nil {
		for name, c := range kept.Collected {
			if g := sum.Summary[name]; g != nil {
				g.Complete += c.Complete
				g.Failed += c.Failed
				g.Lost += c.Lost
			}
		}
		sum.ModifyIndex = max(sum.ModifyIndex, kept.ModifyIndex)
	}
	if job.IsPeriodic() || job.IsParameterized() {
		for _, child := range snap.Jobs(job.Namespace) {
			// Children launched before the job was registered are an
			// earlier instance's.
			if child.ParentID != job.ID || child.CreateIndex < job.CreateIndex {
				continue
			}
			switch child.Status {
			case sdk.JobStatusRunning:
				sum.Children.Running++
			case sdk.JobStatusDead:
				sum.Children.Dead++
			default:
				sum.Children.Pending++
			}
		}
	}
	if job.Stop {
		return sum
	}
	// Queued comes from the evaluation written last with a count, which
	// the state keeps (its eval may be collected); a state written before
	// it kept them has the evaluations to read (latestQueued).
	var queued map[string]int
	if kept != nil && kept.Queued != nil {
		queued = kept.Queued
	} else if e := latestQueued(snap, job); e != nil {
		queued = e.QueuedAllocations
		sum.ModifyIndex = max(sum.ModifyIndex, e.ModifyIndex)
	}
	for name, n := range queued {
		if g := sum.Summary[name]; g != nil {
			g.Queued = n
		}
	}
	return sum
}

// latestQueued returns the job's evaluation written last with queued
// counts, nil if none. One last written before the job was registered counted
// the queued allocations of an earlier instance; a canceled one was last
// written by its cancellation (a blocked eval that a later eval of the job
// superseded), and what it counted is no longer so, as in Nomad's summary,
// which canceling leaves alone.
func latestQueued(snap *state.Snapshot, job *sdk.Job) *sdk.Evaluation {
	var latest *sdk.Evaluation
	for _, e := range snap.EvalsByJob(job.Namespace, job.ID) {
		if e.Status == sdk.EvalStatusCanceled {
			continue
		}
		if e.QueuedAllocations != nil && e.ModifyIndex >= job.CreateIndex && (latest == nil || e.ModifyIndex > latest.ModifyIndex) {
			latest = e
		}
	}
	return latest
}

// Summary is Nomad's job summary: allocations per group and status.
type Summary struct {
	JobID       string
	Namespace   string
	Summary     map[string]*TaskGroupSummary
	Children    *ChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary counts one group's allocations by client status; Queued
// counts those not yet placed.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// ChildrenSummary counts the children of a periodic or parameterized job
// by status.
type ChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

// hasLiveAllocs reports whether the job has allocations not yet terminal.
func hasLiveAllocs(snap *state.Snapshot, j *sdk.Job) bool {
	for _, a := range snap.AllocsByJob(j.Namespace, j.ID) {
		if !a.TerminalStatus() {
			return true
		}
	}
	return false
}
