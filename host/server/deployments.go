package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
)

// The deployment watcher runs on the leader and moves rolling updates
// along, as Nomad's deploymentwatcher does:
//
//   - when allocations of an active deployment become healthy, it creates a
//     deployment-watcher eval so the scheduler places the next batch (and,
//     once everything is healthy, marks the deployment successful);
//   - an unhealthy allocation of a group with a progress deadline and
//     reschedule attempts left is marked for rescheduling (Nomad's
//     DesiredTransition.Reschedule), with a deployment-watcher eval, so
//     the scheduler replaces it within the deployment;
//   - an unhealthy allocation of a group without a progress deadline or
//     out of reschedule attempts, or a progress deadline passed before
//     the deployment completed, fails the deployment and, for groups with
//     auto_revert, re-registers the job's latest stable version;
//   - canaries of groups with auto_promote are promoted once all of them
//     are healthy;
//   - a successful deployment's job version is stable: the FSM marks it in
//     the entry that makes the deployment successful; the watcher marks
//     any it finds unmarked (state written before the FSM did so).
//
// Decisions (decide) are pure over a state snapshot and a time; the loop
// only waits for changes and applies the decisions through raft. Seed 002:
// its evals have no PreviousEval, the chain breaks here.

// deploymentPollInterval bounds how long a passed progress deadline goes
// unnoticed when nothing else changes; deploymentMinInterval rate-limits
// passes when the state changes often.
const (
	deploymentPollInterval = time.Second
	deploymentMinInterval  = 100 * time.Millisecond
)

// Errors of the deployment endpoints.
var (
	ErrDeploymentNotActive = errors.New("server: deployment is not active")
	ErrNothingToPromote    = errors.New("server: deployment has no unpromoted canaries")
)

// deploymentActionKind is what the watcher does about a deployment.
type deploymentActionKind uint8

const (
	actionEval deploymentActionKind = iota + 1
	actionFail
	actionPromote
	actionStable
	actionReschedule
)

// deploymentAction is one decision of the watcher.
type deploymentAction struct {
	kind       deploymentActionKind
	deployment *sdk.Deployment
	// desc is the failed deployment's status description.
	desc string
	// revert is the job version re-registered by an auto-revert.
	revert *sdk.Job
	// eval is the deployment-watcher eval that goes with the action.
	eval *sdk.Evaluation
	// reschedule are the unhealthy allocations a reschedule action allows
	// to be replaced.
	reschedule []string
}

// deploymentWatch remembers, per deployment, when it last created an eval
// for allocations that became healthy: it creates at most one per
// deploymentEvalBatch, as Nomad's watcher batches them, so that
// allocations becoming healthy one after the other make one eval. It is
// the leader's and starts empty on each new leadership.
type deploymentWatch struct {
	lastEval map[string]time.Time
}

// deploymentEvalBatch is Nomad's perJobEvalBatchPeriod.
const deploymentEvalBatch = time.Second

func newDeploymentWatch() *deploymentWatch { return &deploymentWatch{lastEval: map[string]time.Time{}} }

// decide returns what to do about the deployments of snap at now. newID
// makes eval IDs. It records when it creates an eval for newly healthy
// allocations (newlyHealthy reads every eval of the job and allocation of
// the deployment, for each active deployment on each pass: cheap beside
// the scheduling the eval asks for).
func (w *deploymentWatch) decide(snap *state.Snapshot, now time.Time, newID func() string) []deploymentAction {
	var out []deploymentAction
	seen := map[string]bool{}
	for _, d := range snap.Deployments() {
		seen[d.ID] = true
		job := snap.Job(d.Namespace, d.JobID)
		if d.Status == sdk.DeploymentStatusSuccessful {
			if v := snap.JobVersion(d.Namespace, d.JobID, d.JobVersion); v != nil && !v.Stable {
				out = append(out, deploymentAction{kind: actionStable, deployment: d})
			}
			continue
		}
		if !d.Active() || job == nil {
			continue
		}
		eval := func() *sdk.Evaluation { return deploymentEval(d, job, newID(), now) }
		failGroups, reschedule := unhealthy(snap, d, now)
		desc := sdk.DeploymentDescriptionFailedAllocations
		if failGroups == nil && d.Status == sdk.DeploymentStatusRunning {
			desc, failGroups = sdk.DeploymentDescriptionProgressDeadline, lateGroups(d, now)
		}
		if len(failGroups) > 0 {
			a := deploymentAction{kind: actionFail, deployment: d, desc: desc, eval: eval()}
			a.planRevert(snap, job, failGroups, true)
			out = append(out, a)
			delete(w.lastEval, d.ID)
			continue
		}
		if d.Status != sdk.DeploymentStatusRunning {
			continue // paused: only an unhealthy allocation fails it
		}
		if len(reschedule) > 0 {
			out = append(out, deploymentAction{kind: actionReschedule, deployment: d, eval: eval(), reschedule: reschedule})
			continue
		}
		if canAutoPromote(snap, d) {
			out = append(out, deploymentAction{kind: actionPromote, deployment: d, eval: eval()})
			continue
		}
		if newlyHealthy(snap, d) && now.Sub(w.lastEval[d.ID]) >= deploymentEvalBatch {
			w.lastEval[d.ID] = now
			out = append(out, deploymentAction{kind: actionEval, deployment: d, eval: eval()})
		}
	}
	for id := range w.lastEval {
		if !seen[id] {
			delete(w.lastEval, id)
		}
	}
	return out
}

// newlyHealthy reports whether an allocation of d became healthy after
// the state the job's latest eval saw (its snapshot, or its creation if
// not yet processed; cancelled evals saw nothing), as Nomad's watcher
// decides to create an eval: health written with an eval (an operator's
// mark) needs no other.
func newlyHealthy(snap *state.Snapshot, d *sdk.Deployment) bool {
	var seen uint64
	for _, e := range snap.EvalsByJob(d.Namespace, d.JobID) {
		if e.Status == sdk.EvalStatusCanceled {
			continue
		}
		if e.SnapshotIndex != 0 {
			seen = max(seen, e.SnapshotIndex)
		} else {
			seen = max(seen, e.CreateIndex)
		}
	}
	for _, a := range snap.AllocsByDeployment(d.ID) {
		if a.DeploymentStatus.IsHealthy() && a.DeploymentStatus.ModifyIndex > seen {
			return true
		}
	}
	return false
}

// deploymentEval is a deployment-watcher eval for d's job.
func deploymentEval(d *sdk.Deployment, job *sdk.Job, id string, now time.Time) *sdk.Evaluation {
	prio := d.EvalPriority
	if prio == 0 {
		prio = job.Priority
	}
	t := now.UnixNano()
	return &sdk.Evaluation{ID: id, Namespace: d.Namespace, Priority: prio, Type: job.Type,
		TriggeredBy: sdk.EvalTriggerDeploymentWatcher, JobID: d.JobID, JobModifyIndex: job.JobModifyIndex,
		DeploymentID: d.ID, Status: sdk.EvalStatusPending, CreateTime: t, ModifyTime: t}
}

// unhealthy looks at d's unhealthy allocations, as Nomad's watcher does:
// one fails d at once when its group has no progress deadline, or when
// its reschedule policy has no attempt left at now (failGroups lists
// those allocations' groups, which decide the revert); otherwise d waits
// for its replacement, and reschedule lists those not yet marked for it.
func unhealthy(snap *state.Snapshot, d *sdk.Deployment, now time.Time) (failGroups, reschedule []string) {
	any := false
	for _, s := range d.TaskGroups {
		any = any || s.UnhealthyAllocs > 0
	}
	if !any {
		return nil, nil
	}
	for _, a := range snap.AllocsByDeployment(d.ID) {
		s := d.TaskGroups[a.TaskGroup]
		if s == nil || !a.DeploymentStatus.IsUnhealthy() {
			continue
		}
		if s.ProgressDeadline == 0 || !reconcile.RescheduleEligible(a, now) {
			if !slices.Contains(failGroups, a.TaskGroup) {
				failGroups = append(failGroups, a.TaskGroup)
			}
			continue
		}
		if !a.DesiredTransition.ShouldReschedule() {
			reschedule = append(reschedule, a.ID)
		}
	}
	if failGroups != nil {
		slices.Sort(failGroups)
		return failGroups, nil
	}
	return nil, reschedule
}

// lateGroups returns the groups that fail d at its progress deadline, as
// Nomad's watcher judges it: once the earliest deadline of a group still
// in progress (not all healthy, or canaries awaiting promotion) has
// passed, every group that falls short fails the deployment. A group with
// unpromoted canaries falls short only while they are not all healthy:
// with all of them healthy it waits for its operator's promotion, however
// long. Any other group falls short until all its allocations are
// healthy.
func lateGroups(d *sdk.Deployment, now time.Time) []string {
	var cutoff time.Time
	for _, s := range d.TaskGroups {
		done := (s.DesiredCanaries == 0 || s.Promoted) && s.HealthyAllocs >= s.DesiredTotal
		if done || s.ProgressDeadline == 0 || s.RequireProgressBy.IsZero() {
			continue
		}
		if cutoff.IsZero() || s.RequireProgressBy.Before(cutoff) {
			cutoff = s.RequireProgressBy
		}
	}
	if cutoff.IsZero() || !now.After(cutoff) {
		return nil
	}
	var out []string
	for _, name := range sortedGroups(d) {
		s := d.TaskGroups[name]
		need := s.DesiredTotal
		if s.DesiredCanaries > 0 && !s.Promoted {
			need = s.DesiredCanaries
		}
		if s.HealthyAllocs < need {
			out = append(out, name)
		}
	}
	return out
}

func sortedGroups(d *sdk.Deployment) []string {
	out := make([]string, 0, len(d.TaskGroups))
	for k := range d.TaskGroups {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// autoRevert reports whether one of groups of d (any group when groups is
// nil) has auto_revert: as in Nomad, a failure reverts when a group it
// concerns asks for it, and an operator's fail when any group does.
func autoRevert(d *sdk.Deployment, groups []string) bool {
	for name, s := range d.TaskGroups {
		if s.AutoRevert && (groups == nil || slices.Contains(groups, name)) {
			return true
		}
	}
	return false
}

// planRevert sets the revert of a failing deployment's action when the
// deployment asks for one: to the latest stable version older than the
// one deployed, named in the description. As Nomad's watcher, it reverts
// nothing when that version has the deployed one's spec, which would
// change nothing, and says so; when there is no stable version, it says
// so if sayNone (Nomad's watcher and fail endpoint do, its health
// endpoint does not). job is the job as it is now.
func (a *deploymentAction) planRevert(snap *state.Snapshot, job *sdk.Job, groups []string, sayNone bool) {
	d := a.deployment
	if !autoRevert(d, groups) {
		return
	}
	v := latestStable(snap, d)
	if v == nil {
		if sayNone {
			a.desc += " - no stable job version to auto revert to"
		}
		return
	}
	deployed := snap.JobVersion(d.Namespace, d.JobID, d.JobVersion)
	if deployed == nil {
		deployed = job
	}
	if !state.SpecChanged(deployed, v) {
		a.desc = fmt.Sprintf("%s - not rolling back to stable job version %d as current job has same specification", a.desc, v.Version)
		return
	}
	a.revert = v
	a.desc = fmt.Sprintf("%s - rolling back to job version %d", a.desc, v.Version)
}

// latestStable is the newest stable version of d's job older than the one
// being deployed, or nil.
func latestStable(snap *state.Snapshot, d *sdk.Deployment) *sdk.Job {
	for _, v := range snap.JobVersions(d.Namespace, d.JobID) { // newest first
		if v.Version < d.JobVersion && v.Stable {
			return v
		}
	}
	return nil
}

// canAutoPromote reports whether d is to be promoted now, as Nomad's
// watcher decides: a group still awaits promotion, and every group with
// canaries (promoted or not) auto-promotes and has them all healthy.
func canAutoPromote(snap *state.Snapshot, d *sdk.Deployment) bool {
	waiting := false
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries == 0 {
			continue
		}
		if !s.AutoPromote || healthyCanaries(snap, s) < s.DesiredCanaries {
			return false
		}
		waiting = waiting || !s.Promoted
	}
	return waiting
}

func healthyCanaries(snap *state.Snapshot, s *sdk.DeploymentState) int {
	n := 0
	for _, id := range s.PlacedCanaries {
		if a := snap.Alloc(id); a != nil && !a.TerminalStatus() && a.DeploymentStatus.IsHealthy() {
			n++
		}
	}
	return n
}

// watchDeployments runs the deployment watcher until ctx ends.
func (s *Server) watchDeployments(ctx context.Context) {
	w := newDeploymentWatch()
	var index uint64
	for {
		wctx, cancel := context.WithTimeout(ctx, deploymentPollInterval)
		_, _ = s.store.WaitForIndex(wctx, index+1)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(deploymentMinInterval):
		}
		snap := s.store.Snapshot()
		index = snap.Index()
		for _, a := range w.decide(snap, s.now(), newID) {
			if err := s.applyDeploymentAction(snap, a); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Str("deployment_id", a.deployment.ID).Msg("deployment watcher action failed")
			}
		}
	}
}

// applyDeploymentAction commits one decision.
func (s *Server) applyDeploymentAction(snap *state.Snapshot, a deploymentAction) error {
	now := s.now().UnixNano()
	d := a.deployment
	var err error
	switch a.kind {
	case actionEval:
		_, err = s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{a.eval}})
	case actionFail:
		_, err = s.Apply(fsm.DeploymentStatusUpdateRequestType, a.failRequest(now, nil))
	case actionPromote:
		_, err = s.Apply(fsm.DeploymentPromoteRequestType, &fsm.DeploymentPromoteRequest{DeploymentID: d.ID, Eval: a.eval, UpdatedAt: now})
	case actionStable:
		_, err = s.Apply(fsm.JobStabilityRequestType, &fsm.JobStabilityRequest{Namespace: d.Namespace, JobID: d.JobID,
			Version: d.JobVersion, Stable: true})
	case actionReschedule:
		yes := true
		req := &fsm.AllocUpdateDesiredTransitionRequest{Allocs: map[string]*sdk.DesiredTransition{}, Evals: []*sdk.Evaluation{a.eval}}
		for _, id := range a.reschedule {
			req.Allocs[id] = &sdk.DesiredTransition{Reschedule: &yes}
		}
		_, err = s.Apply(fsm.AllocUpdateDesiredTransitionRequestType, req)
	}
	return err
}

// failRequest is the entry that fails a's deployment at now (Unix
// nanoseconds), with its eval and revert, and with health when an
// operator's mark is what fails it.
func (a *deploymentAction) failRequest(now int64, health *fsm.AllocClientUpdateRequest) *fsm.DeploymentStatusUpdateRequest {
	req := &fsm.DeploymentStatusUpdateRequest{UpdatedAt: now, Eval: a.eval, Health: health,
		Update: &sdk.DeploymentStatusUpdate{DeploymentID: a.deployment.ID, Status: sdk.DeploymentStatusFailed, StatusDescription: a.desc}}
	if a.revert != nil {
		req.Job = revertTo(a.revert, now)
	}
	return req
}

// revertTo returns a copy of a stable job version to register again.
func revertTo(v *sdk.Job, now int64) *sdk.Job {
	j := *v
	j.Stop = false
	j.Stable = false
	j.SubmitTime = now
	return &j
}

// activeDeployment returns deployment id, which must be active, and its
// job (nil if the job is gone).
func activeDeployment(snap *state.Snapshot, id string) (*sdk.Deployment, *sdk.Job, error) {
	d := snap.Deployment(id)
	if d == nil {
		return nil, nil, fmt.Errorf("%w: deployment %q", ErrNotFound, id)
	}
	if !d.Active() {
		return nil, nil, badRequest(fmt.Errorf("%w: %s is %s", ErrDeploymentNotActive, id, d.Status))
	}
	return d, snap.Job(d.Namespace, d.JobID), nil
}

// PromoteDeployment promotes the canaries of a deployment's groups (all
// groups with canaries when groups is empty); every canary of those groups
// must be healthy. It returns the eval that rolls the rest out.
func (s *Server) PromoteDeployment(id string, groups []string) (string, uint64, error) {
	snap := s.store.Snapshot()
	d, job, err := activeDeployment(snap, id)
	if err != nil {
		return "", 0, err
	}
	if job == nil {
		return "", 0, fmt.Errorf("%w: job %q of deployment %s", ErrNotFound, d.JobID, id)
	}
	promoting := 0
	for _, name := range sortedGroups(d) {
		st := d.TaskGroups[name]
		if len(groups) > 0 && !slices.Contains(groups, name) || st.DesiredCanaries == 0 || st.Promoted {
			continue
		}
		if h := healthyCanaries(snap, st); h < st.DesiredCanaries {
			return "", 0, badRequest(fmt.Errorf("Task group %q has %d/%d healthy allocations", name, h, st.DesiredCanaries))
		}
		promoting++
	}
	if promoting == 0 {
		return "", 0, badRequest(fmt.Errorf("%w: %s", ErrNothingToPromote, id))
	}
	ev := deploymentEval(d, job, newID(), s.now())
	index, err := s.Apply(fsm.DeploymentPromoteRequestType, &fsm.DeploymentPromoteRequest{DeploymentID: id, Groups: groups,
		Eval: ev, UpdatedAt: s.now().UnixNano()})
	return ev.ID, index, err
}

// FailDeployment marks an active deployment failed (rolling back to the
// latest stable job version when a group has auto_revert). It returns the
// eval and, when it rolled back, the version it went back to (Nomad's
// RevertedJobVersion).
func (s *Server) FailDeployment(id string) (evalID string, reverted *uint64, index uint64, err error) {
	snap := s.store.Snapshot()
	d, job, err := activeDeployment(snap, id)
	if err != nil {
		return "", nil, 0, err
	}
	if job == nil {
		return "", nil, 0, fmt.Errorf("%w: job %q of deployment %s", ErrNotFound, d.JobID, id)
	}
	a := deploymentAction{kind: actionFail, deployment: d, desc: sdk.DeploymentDescriptionFailedByUser,
		eval: deploymentEval(d, job, newID(), s.now())}
	a.planRevert(snap, job, nil, true)
	if err := s.applyDeploymentAction(snap, a); err != nil {
		return "", nil, 0, err
	}
	return a.eval.ID, a.revertedVersion(), s.store.LatestIndex(), nil
}

// revertedVersion is the version a's revert goes back to, or nil.
func (a *deploymentAction) revertedVersion() *uint64 {
	if a.revert == nil {
		return nil
	}
	v := a.revert.Version
	return &v
}

// PauseDeployment pauses an active deployment (no further placements) or
// resumes a paused one (with an eval to continue).
func (s *Server) PauseDeployment(id string, pause bool) (string, uint64, error) {
	snap := s.store.Snapshot()
	d, job, err := activeDeployment(snap, id)
	if err != nil {
		return "", 0, err
	}
	req := &fsm.DeploymentStatusUpdateRequest{UpdatedAt: s.now().UnixNano(),
		Update: &sdk.DeploymentStatusUpdate{DeploymentID: id, Status: sdk.DeploymentStatusPaused, StatusDescription: sdk.DeploymentDescriptionPaused}}
	evalID := ""
	if !pause {
		req.Update.Status, req.Update.StatusDescription = sdk.DeploymentStatusRunning, sdk.DeploymentDescriptionRunning
		if job != nil {
			req.Eval = deploymentEval(d, job, newID(), s.now())
			evalID = req.Eval.ID
		}
	}
	index, err := s.Apply(fsm.DeploymentStatusUpdateRequestType, req)
	return evalID, index, err
}

// SetAllocHealth sets the deployment health of allocations of an active
// deployment, as Nomad's PUT /v1/deployment/allocation-health/:id: what
// an operator reports for a group with health_check = "manual", whose
// nodes report none. As Nomad's, healthy allocations let the rollout go on
// with a deployment-watcher eval written with them, and an unhealthy one
// fails the deployment at once (and reverts it where auto_revert is set),
// with that failure's eval. It returns the eval and, when it rolled the
// job back, the version it went back to.
func (s *Server) SetAllocHealth(id string, healthy, unhealthy []string) (evalID string, reverted *uint64, index uint64, err error) {
	snap := s.store.Snapshot()
	d, job, err := activeDeployment(snap, id)
	if err != nil {
		return "", nil, 0, err
	}
	if len(healthy)+len(unhealthy) == 0 {
		return "", nil, 0, badRequest(errors.New("no allocations: give HealthyAllocationIDs or UnhealthyAllocationIDs"))
	}
	now := s.now()
	req := &fsm.AllocClientUpdateRequest{UpdatedAt: now.UnixNano(), Operator: true}
	seen := map[string]bool{}
	var unhealthyGroups []string
	for _, set := range []struct {
		ids     []string
		healthy bool
	}{{healthy, true}, {unhealthy, false}} {
		for _, allocID := range set.ids {
			if seen[allocID] {
				return "", nil, 0, badRequest(fmt.Errorf("allocation %s is listed twice", allocID))
			}
			seen[allocID] = true
			a := snap.Alloc(allocID)
			if a == nil {
				return "", nil, 0, fmt.Errorf("%w: allocation %q", ErrNotFound, allocID)
			}
			if a.DeploymentID != d.ID {
				return "", nil, 0, badRequest(fmt.Errorf("allocation %s is not part of deployment %s", allocID, d.ID))
			}
			h := set.healthy
			req.Allocs = append(req.Allocs, &sdk.Allocation{ID: allocID,
				DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &h, Timestamp: now}})
			if !h && !slices.Contains(unhealthyGroups, a.TaskGroup) {
				unhealthyGroups = append(unhealthyGroups, a.TaskGroup)
			}
		}
	}
	if job == nil {
		index, err = s.Apply(fsm.AllocClientUpdateRequestType, req)
		return "", nil, index, err
	}
	eval := deploymentEval(d, job, newID(), now)
	if len(unhealthy) == 0 {
		req.Evals = []*sdk.Evaluation{eval}
		index, err = s.Apply(fsm.AllocClientUpdateRequestType, req)
		return eval.ID, nil, index, err
	}
	// An operator's unhealthy fails the deployment at once (and reverts it
	// where asked), whatever reschedules are left: with the health, in one
	// entry.
	a := deploymentAction{kind: actionFail, deployment: d, desc: sdk.DeploymentDescriptionFailedAllocations, eval: eval}
	a.planRevert(snap, job, unhealthyGroups, false) // as Nomad's: the groups of the unhealthy allocations
	index, err = s.Apply(fsm.DeploymentStatusUpdateRequestType, a.failRequest(now.UnixNano(), req))
	if err != nil {
		return "", nil, 0, err
	}
	return eval.ID, a.revertedVersion(), index, nil
}
