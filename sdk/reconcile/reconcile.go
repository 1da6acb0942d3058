// Package reconcile decides what a service or batch job needs: which
// allocations to place, stop, migrate, update in place or replace, how a
// rolling update or canary deployment advances, and which failed or lost
// allocations to reschedule now or later. It is pure: Compute takes the job,
// its allocations, the nodes they are on, the latest deployment and the
// time, and returns decisions. Which node a placement goes to is the
// scheduler's choice (the stack's, in the built-in schedulers).
//
//	latest := state.LatestDeployment(ns, id)
//	res := reconcile.Compute(reconcile.Input{
//		Job: job, Allocs: state.AllocsByJob(ns, id), Tainted: tainted,
//		Deployment: latest, EvalID: eval.ID,
//		Now: ctx.Now, NewID: ctx.NewID, Update: st.UpdateFunc(eval.ID), // st: a stack.Stack
//	})
//	pass := carry.Out(carry.Input{Ctx: ctx, Eval: eval, Plan: plan, Result: res, Deployment: latest, Pick: pick})
//
// Result says what a scheduler must do with each of its parts; a placement
// left out of the active deployment stalls it. Package sdk/carry does all
// of it in a stack.Plan (as above), leaving the scheduler only the choice
// of each placement's node.
//
// The semantics are Nomad's allocation reconciler's, group by group:
// allocations on down or missing nodes are lost and replaced; allocations
// marked to migrate are stopped and placed elsewhere; failed allocations
// are rescheduled now, or later through a follow-up eval, as their
// reschedule policy and its delay function say; batch allocations that
// completed successfully are kept; counts above the group's are stopped
// from the highest index; a job version change updates allocations in
// place when only non-destructive fields changed and replaces them
// otherwise, max_parallel at a time within a deployment, after canaries
// when the update block asks for them.
package reconcile

import (
	"slices"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// Why allocations are stopped (DesiredDescription), as Nomad words it.
const (
	AllocNotNeeded     = "alloc not needed due to job update"
	AllocMigrating     = "alloc is being migrated"
	AllocUpdating      = "alloc is being updated due to job update"
	AllocLost          = "alloc is lost since its node is down"
	AllocUnknown       = "alloc is unknown since its node is disconnected"
	AllocInPlace       = "alloc updating in-place"
	AllocNodeTainted   = "alloc not needed as node is tainted"
	AllocRescheduled   = "alloc was rescheduled because it failed"
	AllocReconnected   = "alloc not needed due to disconnected client reconnect"
	RescheduleEvalDesc = "created for delayed rescheduling"
	DisconnectEvalDesc = "created for delayed disconnect timeout"
)

// UpdateFunc decides how an existing allocation follows a new job
// version: ignore it (nothing changed that matters), replace it
// (destructive), or update it in place, returning the updated allocation.
type UpdateFunc func(existing *sdk.Allocation, job *sdk.Job, tg *sdk.TaskGroup) (ignore, destructive bool, updated *sdk.Allocation)

// Input is everything the reconciler decides from.
type Input struct {
	// Job is the job's current version; nil (purged) or stopped means stop
	// everything.
	Job *sdk.Job
	// Namespace and JobID identify the job when Job is nil.
	Namespace, JobID string
	// Batch selects batch semantics: successfully completed allocations
	// are kept, not replaced.
	Batch bool
	// Allocs are all of the job's allocations, terminal ones included.
	Allocs []*sdk.Allocation
	// Tainted holds the nodes of Allocs that are not plainly usable:
	// down, disconnected or draining, and nil for nodes that no longer
	// exist.
	Tainted map[string]*sdk.Node
	// Deployment is the job's latest deployment, if any; nil for batch
	// jobs, which roll out without deployments (as in Nomad). It is not
	// modified.
	Deployment *sdk.Deployment
	// EvalID and EvalPriority are the evaluation's.
	EvalID       string
	EvalPriority int
	// Now is the time decisions are made at.
	Now time.Time
	// Update decides in-place versus destructive updates. Nil means every
	// change to the job's version is destructive, even a scaling;
	// stack.Stack.UpdateFunc is the built-in generic scheduler's rule.
	Update UpdateFunc
	// NewID makes IDs for deployments and follow-up evals.
	NewID func() string
}

// Placement is an allocation to place.
type Placement struct {
	// Name is the allocation's name ("job.group[index]").
	Name      string
	TaskGroup *sdk.TaskGroup
	// Previous is the allocation this one replaces, if any.
	Previous *sdk.Allocation
	// Reschedule is set when Previous failed and this is its reschedule.
	Reschedule bool
	// Lost is set when Previous was lost.
	Lost bool
	// Disconnected is set when Previous went unknown on a disconnected
	// node: like a reschedule, its replacement records it in its
	// RescheduleTracker, as Nomad's does, though Previous keeps running
	// until its node comes back or lost_after passes.
	Disconnected bool
	Canary       bool
	// DowngradeNonCanary asks for the placement to run the job version
	// currently deployed (not the canaried one) while canaries are not
	// promoted; MinJobVersion is the oldest acceptable version.
	DowngradeNonCanary bool
	MinJobVersion      uint64
}

// Fill writes into a, the new allocation that carries out the placement,
// what the reconciler decided about it: its name and task group, the
// allocation it replaces (PreviousAllocation, and for a reschedule or the
// replacement of a disconnected allocation a RescheduleTracker as of now), and its deployment: deploymentID (the
// result's ActiveDeployment, "" for none) and, for a canary in a
// deployment, a DeploymentStatus marking it one. An allocation placed
// without the deployment's ID is invisible to it: the deployment never
// counts it, never succeeds, and blocks scaling the job until its progress
// deadline fails it.
//
// The caller writes what placing decides: ID, namespace, eval, job and
// version, node, resources, metrics and statuses.
func (pl Placement) Fill(a *sdk.Allocation, deploymentID string, now time.Time) {
	a.Name = pl.Name
	a.TaskGroup = pl.TaskGroup.Name
	a.DeploymentID = deploymentID
	if pl.Previous != nil {
		a.PreviousAllocation = pl.Previous.ID
		if pl.Reschedule || pl.Disconnected {
			a.RescheduleTracker = RescheduleTracker(pl.Previous, now)
		}
	}
	if pl.Canary && deploymentID != "" {
		a.DeploymentStatus = &sdk.AllocDeploymentStatus{Canary: true}
	}
}

// Destructive is an allocation replaced by a new one (same name).
type Destructive struct {
	Name      string
	TaskGroup *sdk.TaskGroup
	// Stop is the allocation replaced; it is stopped only if its
	// replacement is placed.
	Stop            *sdk.Allocation
	StopDescription string
}

// Placement returns the placement of the replacement: same name and
// group, replacing Stop.
func (d Destructive) Placement() Placement {
	return Placement{Name: d.Name, TaskGroup: d.TaskGroup, Previous: d.Stop}
}

// Stop is an allocation to stop.
type Stop struct {
	Alloc *sdk.Allocation
	// ClientStatus is set to "lost" for lost allocations.
	ClientStatus   string
	Description    string
	FollowupEvalID string
}

// Result is what the job needs. A scheduler carries out every part of it
// in its plan, as sdk/carry's Out does for the built-in generic scheduler
// and examples/plugins/zones:
//
//   - Stop, Annotate and Disconnect: stop or update those allocations
//     (stack.Plan's Stop and Annotate);
//   - Deployment and DeploymentUpdates: the plan's own fields;
//   - FollowupEvals: create them (PreviousEval set to the eval) before
//     submitting the plan whose stops name them, unless the eval is itself
//     a delayed one (WaitUntil set), as Nomad does;
//   - InPlace: update in place (stack.Plan.Update), joined to the
//     ActiveDeployment;
//   - Destructive: stop the old allocation and place its replacement
//     (Destructive.Placement), or keep the old one if nothing fits;
//   - Place: place, each new allocation filled by Placement.Fill with the
//     ActiveDeployment's ID, a DowngradeNonCanary placement running the
//     version deployed when there is one;
//   - DesiredTGUpdates: the plan's Annotations when the eval is a dry run
//     (AnnotatePlan), whose plan is submitted even if it changes nothing.
type Result struct {
	Place       []Placement
	Destructive []Destructive
	InPlace     []*sdk.Allocation
	Stop        []Stop
	// Annotate are allocations updated without a change in what they hold:
	// their FollowupEvalID is set for a delayed reschedule.
	Annotate []*sdk.Allocation
	// Disconnect are allocations whose node disconnected: their client
	// status becomes unknown.
	Disconnect []*sdk.Allocation
	// Deployment is a deployment to create.
	Deployment        *sdk.Deployment
	DeploymentUpdates []*sdk.DeploymentStatusUpdate
	DesiredTGUpdates  map[string]*sdk.DesiredUpdates
	// FollowupEvals are delayed evals (rescheduling, disconnect timeouts),
	// per task group; the caller sets PreviousEval.
	FollowupEvals []*sdk.Evaluation
}

// Ends reports whether the result moves deployment id to a terminal
// status (cancelled, or successful).
func (r *Result) Ends(id string) bool {
	for _, u := range r.DeploymentUpdates {
		if u.DeploymentID == id && !sdk.DeploymentStatusActive(u.Status) {
			return true
		}
	}
	return false
}

// ActiveDeployment returns the deployment that the result's placements and
// in-place updates join, given latest, the Input's Deployment: the one the
// result creates, else latest unless the result ends it; nil when that
// deployment is not active, or there is none.
func (r *Result) ActiveDeployment(latest *sdk.Deployment) *sdk.Deployment {
	d := r.Deployment
	if d == nil && latest != nil && !r.Ends(latest.ID) {
		d = latest
	}
	if d == nil || !d.Active() {
		return nil
	}
	return d
}

// Changes counts the decisions that change something.
func (r *Result) Changes() int {
	return len(r.Place) + len(r.Destructive) + len(r.InPlace) + len(r.Stop) + len(r.Annotate) + len(r.Disconnect)
}

type reconciler struct {
	in     Input
	job    *sdk.Job
	res    *Result
	now    time.Time
	batch  bool
	update UpdateFunc
	// deployment is a copy of the current deployment (nil once canceled);
	// oldDeployment is the one superseded.
	deployment, oldDeployment          *sdk.Deployment
	deploymentPaused, deploymentFailed bool
	disconnected                       set
}

// Compute reconciles the job's desired state with its allocations.
func Compute(in Input) *Result {
	r := &reconciler{
		in: in, job: in.Job, now: in.Now, batch: in.Batch, update: in.Update,
		res:          &Result{DesiredTGUpdates: map[string]*sdk.DesiredUpdates{}},
		disconnected: set{},
	}
	if r.update == nil {
		r.update = destructiveOnly
	}
	if in.Deployment != nil {
		r.deployment = copyDeployment(in.Deployment)
	}
	groups, names := r.matrix()
	r.cancelUnneededDeployments()
	if r.job.Stopped() {
		for _, name := range names {
			d := &sdk.DesiredUpdates{}
			r.res.DesiredTGUpdates[name] = d
			d.Stop = r.stopAll(groups[name].filterByTerminal())
		}
		return r.res
	}
	if r.deployment != nil {
		r.deploymentPaused = r.deployment.Status == sdk.DeploymentStatusPaused || r.deployment.Status == sdk.DeploymentStatusPending
		r.deploymentFailed = r.deployment.Status == sdk.DeploymentStatusFailed
	}
	complete := true
	for _, name := range names {
		if !r.computeGroup(name, groups[name]) {
			complete = false
		}
	}
	r.computeDeploymentUpdates(complete)
	return r.res
}

func destructiveOnly(a *sdk.Allocation, job *sdk.Job, _ *sdk.TaskGroup) (bool, bool, *sdk.Allocation) {
	if a.Job != nil && a.Job.JobModifyIndex == job.JobModifyIndex {
		return true, false, nil
	}
	return false, true, nil
}

// matrix groups the allocations by task group: the job's groups in order
// (each present, even without allocations), then groups that no longer
// exist, by name.
func (r *reconciler) matrix() (map[string]set, []string) {
	groups := map[string]set{}
	var names []string
	if !r.job.Stopped() {
		for _, tg := range r.job.TaskGroups {
			groups[tg.Name] = set{}
			names = append(names, tg.Name)
		}
	}
	var gone []string
	for _, a := range r.in.Allocs {
		s, ok := groups[a.TaskGroup]
		if !ok {
			s = set{}
			groups[a.TaskGroup] = s
			gone = append(gone, a.TaskGroup)
		}
		s[a.ID] = a
	}
	slices.Sort(gone)
	return groups, append(names, gone...)
}

func copyDeployment(d *sdk.Deployment) *sdk.Deployment {
	c := *d
	c.TaskGroups = make(map[string]*sdk.DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		s := *v
		s.PlacedCanaries = slices.Clone(v.PlacedCanaries)
		c.TaskGroups[k] = &s
	}
	return &c
}

func (r *reconciler) deploymentUpdate(d *sdk.Deployment, status, desc string) {
	r.res.DeploymentUpdates = append(r.res.DeploymentUpdates, &sdk.DeploymentStatusUpdate{
		DeploymentID: d.ID, Status: status, StatusDescription: desc,
	})
}

// cancelUnneededDeployments cancels an active deployment of a stopped job
// or of another job version, and forgets a successful one.
func (r *reconciler) cancelUnneededDeployments() {
	d := r.deployment
	if r.job.Stopped() {
		if d != nil && d.Active() {
			r.deploymentUpdate(d, sdk.DeploymentStatusCancelled, sdk.DeploymentDescriptionStoppedJob)
		}
		r.oldDeployment, r.deployment = d, nil
		return
	}
	if d == nil {
		return
	}
	if d.JobCreateIndex != r.job.CreateIndex || d.JobVersion != r.job.Version {
		if d.Active() {
			r.deploymentUpdate(d, sdk.DeploymentStatusCancelled, sdk.DeploymentDescriptionNewerJob)
		}
		r.oldDeployment, r.deployment = d, nil
	}
	if d.Status == sdk.DeploymentStatusSuccessful {
		r.oldDeployment, r.deployment = d, nil
	}
}

func (r *reconciler) computeDeploymentUpdates(complete bool) {
	if r.deployment != nil && complete && r.deployment.Status != sdk.DeploymentStatusSuccessful {
		r.deploymentUpdate(r.deployment, sdk.DeploymentStatusSuccessful, sdk.DeploymentDescriptionSuccessful)
	}
	if d := r.res.Deployment; d != nil && requiresPromotion(d) {
		if hasAutoPromote(d) {
			d.StatusDescription = sdk.DeploymentDescriptionRunningAutoPromotion
		} else {
			d.StatusDescription = sdk.DeploymentDescriptionRunningNeedsPromotion
		}
	}
}

func requiresPromotion(d *sdk.Deployment) bool {
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 && !s.Promoted {
			return true
		}
	}
	return false
}

func hasAutoPromote(d *sdk.Deployment) bool {
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 && !s.AutoPromote {
			return false
		}
	}
	return true
}

func (r *reconciler) markStop(s set, clientStatus, desc string) {
	r.markStopWith(s, clientStatus, desc, nil)
}

func (r *reconciler) markStopWith(s set, clientStatus, desc string, followups map[string]string) {
	for _, a := range s.sorted() {
		r.res.Stop = append(r.res.Stop, Stop{Alloc: a, ClientStatus: clientStatus, Description: desc, FollowupEvalID: followups[a.ID]})
	}
}

// stopAll stops every allocation of s (a stopped job or a removed group).
func (r *reconciler) stopAll(s set) uint64 {
	untainted, migrate, lost, disconnecting, reconnecting, ignore := r.filterByTainted(s)
	r.markStop(untainted, "", AllocNotNeeded)
	r.markStop(migrate, "", AllocNotNeeded)
	r.markStop(lost, sdk.AllocClientStatusLost, AllocLost)
	r.markStop(disconnecting, "", AllocNotNeeded)
	r.markStop(reconnecting, "", AllocNotNeeded)
	r.markStop(ignore.filterByClientStatus(sdk.AllocClientStatusUnknown), "", AllocNotNeeded)
	return uint64(len(s))
}

// computeGroup reconciles one task group and reports whether the
// deployment is complete as far as the group is concerned.
func (r *reconciler) computeGroup(name string, all set) bool {
	desired := &sdk.DesiredUpdates{}
	r.res.DesiredTGUpdates[name] = desired
	tg := r.job.LookupTaskGroup(name)
	if tg == nil {
		desired.Stop = r.stopAll(all)
		return true
	}

	dstate, existingDeployment := r.deploymentState(tg)

	group := all // every allocation of the group, to follow replacement chains
	all, ignore := r.filterOldTerminal(all)
	desired.Ignore += uint64(len(ignore))

	canaries, all := r.cancelUnneededCanaries(all, desired)

	untainted, migrate, lost, disconnecting, reconnecting, ignore := r.filterByTainted(all)
	desired.Ignore += uint64(len(ignore)) + uint64(len(reconnecting))
	waiting := ignore.union(reconnecting) // unknown: their node is away, or back but not yet reporting
	if originals, replacements := reconnected(r.job, tg, untainted, group); len(originals)+len(replacements) > 0 {
		// As Nomad words it: an original that comes back to be stopped is
		// not needed; a replacement that goes is not needed because the
		// original reconnected.
		r.markStop(originals, "", AllocNotNeeded)
		r.markStop(replacements, "", AllocReconnected)
		desired.Stop += uint64(len(originals) + len(replacements))
		untainted = untainted.difference(originals).difference(replacements)
	}
	if failed := failedWhileAway(untainted); len(failed) > 0 {
		r.markStop(failed, sdk.AllocClientStatusFailed, AllocRescheduled)
		desired.Stop += uint64(len(failed))
		untainted = untainted.difference(failed)
	}

	untainted, rescheduleNow, rescheduleLater := r.filterByRescheduleable(untainted, false)
	_, rescheduleDisconnecting, _ := r.filterByRescheduleable(disconnecting, true)
	rescheduleNow = rescheduleNow.union(rescheduleDisconnecting)

	lostLater := r.delayByStopAfterClientDisconnect(lost)
	lostLaterEvals := r.createFollowupEvals(lostLater, sdk.EvalTriggerRetryFailedAlloc, RescheduleEvalDesc)
	for id, ev := range r.createDisconnectEvals(disconnecting) {
		lostLaterEvals[id] = ev
	}

	names := newNameIndex(r.jobID(), name, tg.Count, untainted.union(migrate, rescheduleNow, lost, disconnecting))

	isCanarying := dstate != nil && dstate.DesiredCanaries != 0 && !dstate.Promoted
	stop := r.computeStop(tg, names, untainted, migrate, lost, canaries, isCanarying, lostLaterEvals)
	desired.Stop += uint64(len(stop))
	untainted = untainted.difference(stop)

	// Failed allocations are rescheduled only up to the count (canaries
	// awaiting promotion left out, failed or not, as they run beside it:
	// a failed canary is replaced by a canary): after a scale-down the
	// surplus ones (highest indexes first) are stopped, not replaced.
	// Nomad v1.6.1 replaces them all and stops the surplus at a later
	// eval, if one comes.
	stays, ofCount := untainted, rescheduleNow
	if isCanarying {
		stays, ofCount = untainted.difference(canaries), rescheduleNow.difference(canaries)
	}
	if surplus := r.surplusFailed(tg, stays, migrate, ofCount); len(surplus) > 0 {
		r.markStop(surplus, "", AllocNotNeeded)
		desired.Stop += uint64(len(surplus))
		rescheduleNow = rescheduleNow.difference(surplus)
	}

	ignore, inplace, destructive := r.computeUpdates(tg, untainted)
	desired.Ignore += uint64(len(ignore))
	desired.InPlaceUpdate += uint64(len(inplace))
	if !existingDeployment {
		dstate.DesiredTotal += len(destructive) + len(inplace)
	}

	if isCanarying {
		untainted = untainted.difference(canaries)
	}
	requiresCanaries := tg.Update != nil && len(destructive) != 0 && len(canaries) < tg.Update.Canary && !dstate.Promoted
	if requiresCanaries {
		dstate.DesiredCanaries = tg.Update.Canary
		if !r.deploymentPaused && !r.deploymentFailed {
			n := tg.Update.Canary - len(canaries)
			desired.Canary += uint64(n)
			for _, nm := range names.nextCanaries(n, canaries, destructive) {
				r.res.Place = append(r.res.Place, Placement{Name: nm, Canary: true, TaskGroup: tg})
			}
		}
	}

	isCanarying = dstate != nil && dstate.DesiredCanaries != 0 && !dstate.Promoted
	underProvisionedBy := r.underProvisionedBy(tg, untainted, destructive, migrate, isCanarying)
	// Who holds which name once this pass is done: the allocations that
	// stay (promoted canaries among them), then each placement as it is
	// named (see nameHolders.take).
	holders := newNameHolders(untainted, tg.Count)

	var place []Placement
	if len(lostLater) == 0 {
		// An allocation waiting unknown keeps its name: a placement made
		// while it waits (its replacement, when it could not be placed at
		// once, or one made before its node, back, reports it) takes
		// another, so that no two allocations share an index once it runs
		// again. Nomad v1.6.1 reuses the name.
		names.set(waiting)
		// A lost allocation that was replaced when its node disconnected
		// (its lost_after has now passed) is only stopped. Nomad v1.6.1
		// replaces it again, under the name its replacement holds, when
		// the group is short.
		lostUnreplaced := set{}
		for id, a := range lost {
			if liveReplacement(a, group, untainted) == nil {
				lostUnreplaced[id] = a
			}
		}
		// So is one stopped as lost by an earlier pass whose replacement
		// could not be placed: replacing it is not the rollout a failed
		// or paused deployment holds back, and its replacement takes its
		// name (no new allocation does). Nomad v1.6.1 replaces only what
		// this pass finds lost, and a job whose deployment failed after
		// that stays short.
		awaiting := r.lostAwaitingReplacement(all, untainted)
		names.set(awaiting)
		for id, a := range awaiting {
			lostUnreplaced[id] = a
		}
		replace := disconnecting.difference(rescheduleNow)
		if isCanarying {
			replace = replace.difference(canaries) // see cancelUnneededCanaries
		}
		place = r.computePlacements(tg, names, holders, untainted, migrate, rescheduleNow, lostUnreplaced, replace, isCanarying)
		if !existingDeployment {
			dstate.DesiredTotal += len(place)
		}
	}

	placeReady := !r.deploymentPaused && !r.deploymentFailed && !isCanarying
	underProvisionedBy = r.computeReplacements(placeReady, desired, place, rescheduleNow, underProvisionedBy)

	if placeReady {
		n := min(len(destructive), underProvisionedBy)
		desired.DestructiveUpdate += uint64(n)
		desired.Ignore += uint64(len(destructive) - n)
		for _, a := range destructive.sorted()[:n] {
			// a stays among the holders: if its replacement cannot be
			// placed, it runs on. Nomad v1.6.1 gives a replacement its
			// predecessor's name even when a promoted canary holds it
			// (hashicorp/nomad#10727).
			name := holders.take(a, true, names)
			r.res.Destructive = append(r.res.Destructive, Destructive{Name: name, TaskGroup: tg, Stop: a, StopDescription: AllocUpdating})
		}
	} else {
		desired.Ignore += uint64(len(destructive))
	}

	desired.Migrate += uint64(len(migrate))
	for _, a := range migrate.sorted() {
		r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: AllocMigrating})
		r.res.Place = append(r.res.Place, Placement{
			Name: holders.take(a, false, names), TaskGroup: tg, Previous: a, Canary: isCanary(a),
			DowngradeNonCanary: isCanarying && !isCanary(a), MinJobVersion: a.JobVersion,
		})
	}

	// Failed allocations to reschedule later get their follow-up eval,
	// unless this pass already stops or replaces them (a new job version
	// replaces them at once, as in Nomad).
	later := rescheduleLater
	if len(later) > 0 {
		gone := map[string]bool{}
		for _, st := range r.res.Stop {
			gone[st.Alloc.ID] = true
		}
		for _, d := range r.res.Destructive {
			gone[d.Stop.ID] = true
		}
		later = slices.DeleteFunc(slices.Clone(later), func(d delayed) bool { return gone[d.alloc.ID] })
	}
	for id, ev := range r.createFollowupEvals(later, sdk.EvalTriggerRetryFailedAlloc, RescheduleEvalDesc) {
		c := *all[id]
		c.FollowupEvalID = ev
		r.res.Annotate = append(r.res.Annotate, &c)
	}

	r.createDeployment(tg, existingDeployment, dstate, all, destructive)

	complete := len(destructive)+len(inplace)+len(place)+len(migrate)+len(rescheduleNow)+len(rescheduleLater) == 0 && !requiresCanaries
	if !complete || r.deployment == nil {
		return false
	}
	if s, ok := r.deployment.TaskGroups[name]; ok {
		if s.HealthyAllocs < max(s.DesiredTotal, s.DesiredCanaries) || (s.DesiredCanaries > 0 && !s.Promoted) {
			return false
		}
	}
	return true
}

func (r *reconciler) jobID() string {
	if r.job != nil {
		return r.job.ID
	}
	return r.in.JobID
}

func isCanary(a *sdk.Allocation) bool { return a.DeploymentStatus != nil && a.DeploymentStatus.Canary }

// deploymentState returns the group's state in the current deployment, or a
// fresh one (not yet attached) when there is none.
func (r *reconciler) deploymentState(tg *sdk.TaskGroup) (*sdk.DeploymentState, bool) {
	if r.deployment != nil {
		if s, ok := r.deployment.TaskGroups[tg.Name]; ok {
			return s, true
		}
	}
	s := &sdk.DeploymentState{}
	if tg.Update.Rolling() {
		s.AutoRevert = tg.Update.AutoRevert
		s.AutoPromote = tg.Update.AutoPromote
		s.ProgressDeadline = tg.Update.ProgressDeadline
	}
	return s, false
}

// filterOldTerminal drops, for batch jobs, terminal allocations of older
// job versions: they ran their course and must not be replaced.
func (r *reconciler) filterOldTerminal(all set) (set, set) {
	if !r.batch {
		return all, nil
	}
	keep, ignore := set{}, set{}
	for id, a := range all {
		if olderThan(a, r.job) && a.TerminalStatus() {
			ignore[id] = a
		} else {
			keep[id] = a
		}
	}
	return keep, ignore
}

// cancelUnneededCanaries stops canaries of a superseded or failed
// deployment that were never promoted, and returns the current
// deployment's live canaries (migrating or lost ones are stopped).
func (r *reconciler) cancelUnneededCanaries(all set, desired *sdk.DesiredUpdates) (canaries, rest set) {
	var stop []string
	for _, d := range []*sdk.Deployment{r.oldDeployment, r.deploymentIfFailed()} {
		if d == nil {
			continue
		}
		for _, name := range sortedKeys(d.TaskGroups) {
			if s := d.TaskGroups[name]; !s.Promoted {
				stop = append(stop, s.PlacedCanaries...)
			}
		}
	}
	stopSet := all.fromKeys(stop)
	r.markStop(stopSet, "", AllocNotNeeded)
	desired.Stop += uint64(len(stopSet))
	rest = all.difference(stopSet)
	canaries = set{}
	if r.deployment != nil {
		var ids []string
		for _, name := range sortedKeys(r.deployment.TaskGroups) {
			ids = append(ids, r.deployment.TaskGroups[name].PlacedCanaries...)
		}
		canaries = rest.fromKeys(ids)
		untainted, migrate, lost, disconnecting, reconnecting, waiting := r.filterByTainted(canaries)
		r.markStop(migrate, "", AllocMigrating)
		r.markStop(lost, sdk.AllocClientStatusLost, AllocLost)
		// A canary on a disconnected node (going unknown, waiting, or
		// back but not yet reporting) still counts: it is not replaced,
		// and the deployment waits for it until it is lost. Nomad v1.6.1
		// places a new canary unlinked to it, and keeps both when the
		// node comes back.
		canaries = untainted.union(disconnecting, reconnecting, waiting)
		rest = rest.difference(migrate, lost)
	}
	return canaries, rest
}

func (r *reconciler) deploymentIfFailed() *sdk.Deployment {
	if r.deployment != nil && r.deployment.Status == sdk.DeploymentStatusFailed {
		return r.deployment
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// lostAfter is how long an allocation may stay unknown on a disconnected
// node before it is lost; 0 when its group does not tolerate disconnects.
func lostAfter(a *sdk.Allocation) time.Duration {
	if a.Job == nil {
		return 0
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return 0
	}
	return tg.LostAfter()
}

// stopAfter is how long after its node went down an allocation's group
// waits before being replaced (stop_after_client_disconnect); 0 for none.
func stopAfter(a *sdk.Allocation) time.Duration {
	if a.Job == nil {
		return 0
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return 0
	}
	if tg.Disconnect != nil && tg.Disconnect.StopOnClientAfter != nil {
		return *tg.Disconnect.StopOnClientAfter
	}
	if tg.StopAfterClientDisconnect != nil {
		return *tg.StopAfterClientDisconnect
	}
	return 0
}

// expired reports whether an unknown allocation outlived its lost_after.
func (r *reconciler) expired(a *sdk.Allocation) bool { return unknownExpired(a, r.now) }

// unknownExpired reports whether an unknown allocation outlived its
// lost_after at now, counted from when its scheduler marked it unknown
// (the time its lost eval was dated from, not the later time the host
// committed that plan), or for an allocation without that record, from
// its last event.
func unknownExpired(a *sdk.Allocation, now time.Time) bool {
	d := lostAfter(a)
	if d == 0 || a.ClientStatus != sdk.AllocClientStatusUnknown {
		return false
	}
	since := a.LastUnknown()
	if since.IsZero() {
		since = LastEventTime(a)
	}
	return !since.Add(d).After(now)
}

// surplusFailed returns the failed allocations of rescheduleNow that would
// take the group over its count beside the allocations that stay
// (untainted and migrating), keeping the lowest indexes. Allocations being
// replaced after their node disconnected are not among them.
func (r *reconciler) surplusFailed(tg *sdk.TaskGroup, untainted, migrate, rescheduleNow set) set {
	failed := rescheduleNow.difference(r.disconnected).sorted()
	room := max(tg.Count-len(untainted)-len(migrate)-(len(rescheduleNow)-len(failed)), 0)
	if len(failed) <= room {
		return nil
	}
	out := set{}
	for _, a := range failed[room:] {
		out[a.ID] = a
	}
	return out
}

// reconnected returns, among a group's usable allocations, the copies to
// stop after a disconnected node came back: an allocation still live with
// a live replacement has reconnected, and one of the two goes. The
// replacement is the live end of its chain of NextAllocation links (among
// every allocation of the group): the first replacement may itself have
// failed, or been replaced when its own node disconnected, while the node
// was away. An allocation that comes back while an ancestor in its chain
// runs (it replaced an allocation that came back, and was kept, before it)
// pairs with that ancestor. An original of an older version of job than
// the current one goes, as in Nomad (its replacement is the newer, or
// will be updated). Otherwise the group's disconnect.reconcile says which
// goes: keep_replacement stops the original; keep_original,
// longest_running (the original has run longer) and best_score (the
// default; plugins do not see placement scores, so the original, which was
// placed by score first, is kept) stop the replacement. An original whose
// chain ends in a replacement that failed while it was away (and is still
// meant to run: not yet rescheduled) is kept whatever the version or
// disconnect.reconcile, and that replacement stopped: nothing of it runs
// to keep. (Nomad v1.6.1 stops such a replacement too, unless the
// original runs an older version than the job's: then it stops the
// original, and the failed replacement is rescheduled; Drover keeps an
// older original without a live replacement and updates it through the
// rollout.)
func reconnected(job *sdk.Job, tg *sdk.TaskGroup, untainted, group set) (originals, replacements set) {
	keepReplacement := tg.Disconnect != nil && tg.Disconnect.Reconcile == sdk.ReconcileKeepReplacement
	originals, replacements = set{}, set{}
	for _, a := range untainted.sorted() {
		if originals[a.ID] != nil || replacements[a.ID] != nil || a.TerminalStatus() || a.ClientStatus != sdk.AllocClientStatusRunning {
			continue
		}
		orig, repl := a, liveReplacement(a, group, untainted)
		live := repl != nil && untainted[repl.ID] != nil
		// A failed end of a's chain is stopped whether or not a live
		// link comes before it (a replaced X, then C replaced a when a's
		// node went away in turn, and C failed): X and a are paired below.
		if failed := failedReplacement(a, group, untainted); failed != nil {
			replacements[failed.ID] = failed
			if !live {
				continue
			}
		}
		if !live {
			if orig, repl = liveAncestor(a, group, untainted), a; orig == nil {
				continue
			}
		}
		if keepReplacement || olderThan(orig, job) {
			originals[orig.ID] = orig
		} else {
			replacements[repl.ID] = repl
		}
	}
	return originals, replacements
}

// olderThan reports whether a runs an older version of job, or a version
// of an earlier registration of it (purged and registered again).
func olderThan(a *sdk.Allocation, job *sdk.Job) bool {
	if !a.OfInstance(job) {
		return true
	}
	return a.JobVersion < job.Version
}

// failedWhileAway returns the allocations of s that their node, back from
// a disconnect, reports failed, and that were replaced while it was away:
// they are stopped (their replacement runs in their stead), as Nomad stops
// an allocation that fails to reconnect. Such an allocation is still
// desired to run yet already has its NextAllocation: a failed allocation
// rescheduled otherwise is stopped by the plan that replaces it.
func failedWhileAway(s set) set {
	out := set{}
	for id, a := range s {
		if a.DesiredStatus == sdk.AllocDesiredStatusRun && a.ClientStatus == sdk.AllocClientStatusFailed && a.NextAllocation != "" {
			out[id] = a
		}
	}
	return out
}

// liveReplacement returns the live end of a's chain of replacements
// (NextAllocation links among group), or nil when a has none. The chain is
// followed past finished allocations and past live ones that were replaced
// in turn while away (not in untainted). When a link was garbage
// collected, the chain's live end is found in untainted by the name every
// replacement took.
func liveReplacement(a *sdk.Allocation, group, untainted set) *sdk.Allocation {
	if a.NextAllocation == "" {
		return nil
	}
	next := group[a.NextAllocation]
	for hops := 0; next != nil && (next.TerminalStatus() || untainted[next.ID] == nil && next.NextAllocation != "") && hops < len(group); hops++ {
		next = group[next.NextAllocation]
	}
	if next == nil {
		next = namesake(untainted, a)
	}
	if next == nil || next.TerminalStatus() {
		return nil
	}
	return next
}

// failedReplacement returns the end of a's chain of replacements
// (NextAllocation links among group) when it is in untainted, failed and
// still meant to run (not yet rescheduled, which would have linked it
// onward), or nil. A link to an allocation no longer in group (collected)
// ends the chain there, so a failed end beyond it is not found: that
// replacement is then left to its reschedule.
func failedReplacement(a *sdk.Allocation, group, untainted set) *sdk.Allocation {
	next := group[a.NextAllocation]
	for hops := 0; next != nil && next.NextAllocation != "" && hops < len(group); hops++ {
		next = group[next.NextAllocation]
	}
	if next == nil || untainted[next.ID] == nil || next.DesiredStatus != sdk.AllocDesiredStatusRun ||
		next.ClientStatus != sdk.AllocClientStatusFailed {
		return nil
	}
	return next
}

// lostAwaitingReplacement returns the allocations of all (a group of the
// current job) that an earlier pass stopped as lost and that have no
// replacement yet: not linked to one, and no later allocation of theirs
// running under their name in untainted.
func (r *reconciler) lostAwaitingReplacement(all, untainted set) set {
	out := set{}
	for id, a := range all {
		if a.DesiredStatus != sdk.AllocDesiredStatusStop || a.ClientStatus != sdk.AllocClientStatusLost ||
			a.DesiredDescription != AllocLost || a.NextAllocation != "" {
			continue
		}
		// Not of an earlier instance of the job (purged and registered
		// again).
		if !a.OfInstance(r.job) {
			continue
		}
		// Nor a canary: cancelUnneededCanaries stops a lost one (it stays
		// in all, stopped) without a linked replacement, and a new canary
		// takes its place while the deployment needs one. Taken for one
		// awaiting replacement, its replacement would be a second canary
		// under the new one's name, placed before, and in place of, what
		// the group is short of. The mark is left only on canaries lost
		// before their deployment's promotion: promotion clears it on the
		// canaries it keeps (host/fsm, as Nomad's state store does), so a
		// promoted allocation lost afterwards is replaced as any other.
		if isCanary(a) {
			continue
		}
		if namesake(untainted, a) == nil {
			out[id] = a
		}
	}
	return out
}

// liveAncestor returns the first allocation up a's chain of
// PreviousAllocation links (among group) that runs in untainted, or nil.
func liveAncestor(a *sdk.Allocation, group, untainted set) *sdk.Allocation {
	prev := group[a.PreviousAllocation]
	for hops := 0; prev != nil && hops < len(group); hops++ {
		if untainted[prev.ID] != nil && !prev.TerminalStatus() && prev.ClientStatus == sdk.AllocClientStatusRunning {
			return prev
		}
		prev = group[prev.PreviousAllocation]
	}
	return nil
}

// namesake returns the live allocation of s, other than a, that holds a's
// name and was created after it (the oldest such), or nil.
func namesake(s set, a *sdk.Allocation) *sdk.Allocation {
	var out *sdk.Allocation
	for _, b := range s.sorted() {
		if b.ID != a.ID && b.Name == a.Name && !b.TerminalStatus() && b.CreateIndex > a.CreateIndex &&
			(out == nil || b.CreateIndex < out.CreateIndex) {
			out = b
		}
	}
	return out
}

// filterByTainted sorts allocations by what their node's state means for
// them:
//   - untainted: on a usable node (or terminal);
//   - migrate: marked to migrate (draining node, alloc stop);
//   - lost: on a down or vanished node, or disconnected beyond lost_after;
//   - disconnecting: running on a node that just disconnected, in a group
//     that tolerates disconnects (they become unknown and are replaced);
//   - reconnecting: unknown allocations whose node is ready again (their
//     node reports them next; meanwhile they are left alone);
//   - ignore: unknown allocations still waiting for their node.
func (r *reconciler) filterByTainted(s set) (untainted, migrate, lost, disconnecting, reconnecting, ignore set) {
	untainted, migrate, lost, disconnecting, reconnecting, ignore = set{}, set{}, set{}, set{}, set{}, set{}
	for id, a := range s {
		tolerates := lostAfter(a) > 0
		node, tainted := r.in.Tainted[a.NodeID]
		if tainted && node != nil && node.Status == sdk.NodeStatusDisconnected && !a.TerminalStatus() {
			switch {
			case !tolerates:
				lost[id] = a
			case a.ClientStatus == sdk.AllocClientStatusRunning:
				disconnecting[id] = a
			case a.ClientStatus == sdk.AllocClientStatusPending:
				lost[id] = a
			case r.expired(a):
				lost[id] = a
			default:
				ignore[id] = a
			}
			continue
		}
		if a.TerminalStatus() {
			untainted[id] = a
			continue
		}
		if a.DesiredTransition.ShouldMigrate() {
			migrate[id] = a
			continue
		}
		if tolerates && a.ClientStatus == sdk.AllocClientStatusUnknown {
			switch {
			case r.expired(a):
				lost[id] = a
			case !tainted || (node != nil && node.Status == sdk.NodeStatusReady):
				reconnecting[id] = a
			default:
				ignore[id] = a
			}
			continue
		}
		if !tainted {
			untainted[id] = a
			continue
		}
		if node == nil || node.TerminalStatus() {
			lost[id] = a
			continue
		}
		untainted[id] = a
	}
	return
}

// delayed is an allocation to reschedule at a later time.
type delayed struct {
	alloc *sdk.Allocation
	at    time.Time
}

// filterByRescheduleable splits allocations into those that stay
// (untainted), failed ones to reschedule now, and failed ones to reschedule
// later. disconnecting sets are rescheduled by their disconnect time.
func (r *reconciler) filterByRescheduleable(s set, disconnecting bool) (untainted, now set, later []delayed) {
	untainted, now = set{}, set{}
	for _, a := range s.sorted() {
		if disconnecting && a.ClientStatus == sdk.AllocClientStatusUnknown {
			continue
		}
		if a.NextAllocation != "" && a.TerminalStatus() {
			continue // already replaced
		}
		keep, ignore := shouldFilter(a, r.batch)
		if keep && !disconnecting {
			untainted[a.ID] = a
		}
		if keep || ignore {
			continue
		}
		eligibleNow, eligibleLater, at := r.rescheduleTiming(a, disconnecting)
		if !disconnecting && !eligibleNow {
			untainted[a.ID] = a
			if eligibleLater {
				later = append(later, delayed{alloc: a, at: at})
			}
			continue
		}
		now[a.ID] = a
	}
	return untainted, now, later
}

// shouldFilter says whether an allocation simply stays (untainted) or is
// left out (ignore); neither means it failed and may be rescheduled.
//
// Batch: a stopped allocation that ran successfully stays, other stopped or
// evicted ones are ignored, failed ones are candidates, anything else stays.
// Service: stopped, evicted, complete and lost ones are ignored, failed
// ones are candidates, anything else stays.
func shouldFilter(a *sdk.Allocation, batch bool) (untainted, ignore bool) {
	if batch {
		switch a.DesiredStatus {
		case sdk.AllocDesiredStatusStop:
			return ranSuccessfully(a), !ranSuccessfully(a)
		case sdk.AllocDesiredStatusEvict:
			return false, true
		}
		return a.ClientStatus != sdk.AllocClientStatusFailed, false
	}
	switch a.DesiredStatus {
	case sdk.AllocDesiredStatusStop, sdk.AllocDesiredStatusEvict:
		return false, true
	}
	switch a.ClientStatus {
	case sdk.AllocClientStatusComplete, sdk.AllocClientStatusLost:
		return false, true
	}
	return a.ClientStatus != sdk.AllocClientStatusFailed, false
}

// ranSuccessfully reports whether the node reports the allocation complete.
func ranSuccessfully(a *sdk.Allocation) bool { return a.ClientStatus == sdk.AllocClientStatusComplete }

// rescheduleTiming decides when a failed (or disconnecting) allocation is
// rescheduled.
func (r *reconciler) rescheduleTiming(a *sdk.Allocation, disconnecting bool) (now, later bool, at time.Time) {
	// The deployment this pass keeps: one a new job version cancelled no
	// longer holds back its failed allocations, as in Nomad.
	d := r.deployment
	if d != nil && a.DeploymentID == d.ID && d.Active() && !a.DesiredTransition.ShouldReschedule() {
		return false, false, time.Time{}
	}
	if a.DesiredTransition.ShouldForceReschedule() {
		now = true
	}
	var eligible bool
	if disconnecting {
		at, eligible = NextRescheduleTimeByFailTime(a, r.now)
	} else {
		at, eligible = NextRescheduleTime(a)
	}
	if eligible && (a.FollowupEvalID == r.in.EvalID || at.Sub(r.now) <= RescheduleWindow) {
		return true, false, at
	}
	if eligible && a.FollowupEvalID == "" {
		later = true
	}
	return now, later, at
}

// minKillTimeout is the least time a task is given to stop (Nomad's
// default kill_timeout).
const minKillTimeout = 5 * time.Second

// delayByStopAfterClientDisconnect returns the lost allocations whose group
// waits (stop_after_client_disconnect) before replacing them: the client
// stops them that long after losing the servers, and takes up to the
// longest kill_timeout of their tasks to do so. The wait counts from when
// the allocation was found lost: now, when this pass finds it (its node's
// last heartbeat is not in the state), or when it was reported lost.
func (r *reconciler) delayByStopAfterClientDisconnect(lost set) []delayed {
	var out []delayed
	for _, a := range lost.sorted() {
		d := stopAfter(a)
		if d == 0 {
			continue
		}
		from := r.now
		if a.ClientStatus == sdk.AllocClientStatusLost {
			from = LastEventTime(a)
		}
		if at := from.Add(d + killTimeout(a)); at.After(r.now) {
			out = append(out, delayed{alloc: a, at: at})
		}
	}
	return out
}

// killTimeout is the longest kill_timeout of an allocation's tasks, at
// least minKillTimeout.
func killTimeout(a *sdk.Allocation) time.Duration {
	out := minKillTimeout
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
		for _, t := range tg.Tasks {
			out = max(out, t.KillTimeout)
		}
	}
	return out
}

// createFollowupEvals creates delayed evals for allocations due later,
// batching those due within BatchWindow of each other into one eval, and
// returns each allocation's eval ID.
func (r *reconciler) createFollowupEvals(later []delayed, trigger, desc string) map[string]string {
	out := map[string]string{}
	if len(later) == 0 {
		return out
	}
	slices.SortStableFunc(later, func(a, b delayed) int { return a.at.Compare(b.at) })
	var ev *sdk.Evaluation
	for _, d := range later {
		if ev == nil || d.at.Sub(ev.WaitUntil) >= BatchWindow {
			ev = r.followupEval(trigger, desc, d.at)
		}
		out[d.alloc.ID] = ev.ID
	}
	return out
}

func (r *reconciler) followupEval(trigger, desc string, at time.Time) *sdk.Evaluation {
	ev := &sdk.Evaluation{
		ID: r.in.NewID(), Namespace: r.job.Namespace, Priority: r.in.EvalPriority, Type: r.job.Type,
		TriggeredBy: trigger, JobID: r.job.ID, JobModifyIndex: r.job.ModifyIndex,
		Status: sdk.EvalStatusPending, StatusDescription: desc, WaitUntil: at.UTC(),
	}
	r.res.FollowupEvals = append(r.res.FollowupEvals, ev)
	return ev
}

// createDisconnectEvals marks disconnecting allocations unknown and creates
// the evals that declare them lost once their lost_after passes.
func (r *reconciler) createDisconnectEvals(disconnecting set) map[string]string {
	var later []delayed
	for _, a := range disconnecting.sorted() {
		later = append(later, delayed{alloc: a, at: r.now.Add(lostAfter(a))})
	}
	ids := r.createFollowupEvals(later, sdk.EvalTriggerMaxDisconnectTimeout, DisconnectEvalDesc)
	for _, a := range disconnecting.sorted() {
		// Marked unknown at r.now, the time its lost eval counts from.
		c := a.MarkedUnknown(r.now, AllocUnknown)
		c.FollowupEvalID = ids[a.ID]
		r.res.Disconnect = append(r.res.Disconnect, c)
		r.disconnected[a.ID] = a
	}
	// Disconnecting allocations are not stopped: they may come back.
	return map[string]string{}
}

// computeStop stops lost allocations and, when the group has more
// allocations than its count, the surplus: names shared with promoted
// canaries first, then migrating allocations, then the highest indexes,
// and among allocations sharing a name the newest.
func (r *reconciler) computeStop(tg *sdk.TaskGroup, names *nameIndex, untainted, migrate, lost, canaries set, isCanarying bool, followups map[string]string) set {
	stop := set{}.union(lost)
	r.markStopWith(lost, sdk.AllocClientStatusLost, AllocLost, followups)
	if isCanarying {
		untainted = untainted.difference(canaries)
	}
	remove := len(untainted) + len(migrate) - tg.Count
	if remove <= 0 {
		return stop
	}
	take := func(a *sdk.Allocation, from set) bool {
		stop[a.ID] = a
		r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: AllocNotNeeded})
		delete(from, a.ID)
		remove--
		return remove == 0
	}
	// Failed allocations waiting for a delayed reschedule (or out of
	// attempts) hold a place in the count but run nothing: they go first,
	// highest indexes first. Nomad v1.6.1 passes over them (they are
	// terminal) and stops running allocations instead; a new job version
	// then replaces the failed ones at once, over the count.
	failed := untainted.filterByDesiredRunFailed().sorted()
	for i := len(failed) - 1; i >= 0; i-- {
		names.unsetIndex(failed[i].Index())
		if take(failed[i], untainted) {
			return stop
		}
	}
	untainted = untainted.filterByTerminal()
	if !isCanarying && len(canaries) != 0 {
		canaryNames := canaries.nameSet()
		for _, a := range untainted.difference(canaries).sorted() {
			if canaryNames[a.Name] && take(a, untainted) {
				return stop
			}
		}
	}
	if len(migrate) != 0 {
		highest := newNameIndex(r.jobID(), tg.Name, tg.Count, migrate).highest(remove)
		for _, a := range migrate.sorted() {
			if highest[a.Name] {
				names.unsetIndex(a.Index())
				if take(a, migrate) {
					return stop
				}
			}
		}
	}
	// Among allocations sharing a name (a replacement and the original it
	// replaced, both alive after a reconnect), stop the newest first.
	ordered := untainted.sorted()
	slices.SortStableFunc(ordered, func(a, b *sdk.Allocation) int {
		if ia, ib := a.Index(), b.Index(); ia != ib {
			return ia - ib
		}
		return int(a.CreateIndex) - int(b.CreateIndex)
	})
	seen := map[string]bool{}
	for _, a := range ordered {
		if seen[a.Name] && take(a, untainted) {
			return stop
		}
		seen[a.Name] = true
	}
	highest := names.highest(remove)
	for i := len(ordered) - 1; i >= 0; i-- {
		if a := ordered[i]; untainted[a.ID] != nil && highest[a.Name] && take(a, untainted) {
			return stop
		}
	}
	for i := len(ordered) - 1; i >= 0; i-- {
		if a := ordered[i]; untainted[a.ID] != nil && take(a, untainted) {
			return stop
		}
	}
	return stop
}

// computeUpdates sorts allocations into those left alone, updated in place
// and replaced.
func (r *reconciler) computeUpdates(tg *sdk.TaskGroup, untainted set) (ignore, inplace, destructive set) {
	ignore, inplace, destructive = set{}, set{}, set{}
	for _, a := range untainted.sorted() {
		ign, destr, updated := r.update(a, r.job, tg)
		switch {
		case ign:
			ignore[a.ID] = a
		case destr:
			destructive[a.ID] = a
		default:
			inplace[a.ID] = a
			r.res.InPlace = append(r.res.InPlace, updated)
		}
	}
	return
}

// underProvisionedBy is how many allocations may still be placed or
// replaced in this group now: the count without an update strategy or
// without anything to replace; max_parallel less the deployment's
// allocations not yet healthy otherwise; none while canaries await
// promotion, the deployment is paused or failed, or one of its allocations
// is unhealthy.
func (r *reconciler) underProvisionedBy(tg *sdk.TaskGroup, untainted, destructive, migrate set, isCanarying bool) int {
	if !tg.Update.Rolling() || len(destructive)+len(migrate) == 0 {
		return tg.Count
	}
	if r.deployment == nil {
		return tg.Update.MaxParallel
	}
	if r.deploymentPaused || r.deploymentFailed || isCanarying {
		return 0
	}
	n := tg.Update.MaxParallel
	partOf, _ := untainted.filterByDeployment(r.deployment.ID)
	for _, a := range partOf {
		if a.DeploymentStatus.IsUnhealthy() {
			return 0
		}
		if !a.DeploymentStatus.IsHealthy() {
			n--
		}
	}
	return max(n, 0)
}

// computePlacements returns the placements that bring the group to its
// count: reschedules of failed allocations, replacements of lost ones and
// of ones gone unknown on a disconnected node (linked to them, so that the
// two are told apart if the node comes back), and new allocations for free
// names.
func (r *reconciler) computePlacements(tg *sdk.TaskGroup, names *nameIndex, holders nameHolders, untainted, migrate, reschedule, lost, disconnecting set, isCanarying bool) []Placement {
	// Every reschedule, and lost, disconnected and new placements up to
	// the count.
	existing := len(untainted) + len(migrate) + len(reschedule)
	place := make([]Placement, 0, len(reschedule)+max(tg.Count-existing, 0))
	name := func(a *sdk.Allocation) string {
		if isCanarying && isCanary(a) {
			// A canary shares its name with the allocation it is to
			// replace (nextCanaries), and its replacement keeps it.
			holders[a.Name]++
			return a.Name
		}
		return holders.take(a, false, names)
	}
	for _, a := range reschedule.sorted() {
		place = append(place, Placement{
			Name: name(a), TaskGroup: tg, Previous: a, Reschedule: true, Canary: isCanary(a),
			DowngradeNonCanary: isCanarying && !isCanary(a), MinJobVersion: a.JobVersion,
		})
	}
	for _, a := range lost.sorted() {
		if existing >= tg.Count {
			break
		}
		existing++
		place = append(place, Placement{
			Name: name(a), TaskGroup: tg, Previous: a, Lost: true, Canary: isCanary(a),
			DowngradeNonCanary: isCanarying && !isCanary(a), MinJobVersion: a.JobVersion,
		})
	}
	for _, a := range disconnecting.sorted() {
		if existing >= tg.Count {
			break
		}
		existing++
		place = append(place, Placement{
			Name: name(a), TaskGroup: tg, Previous: a, Disconnected: true, Canary: isCanary(a),
			DowngradeNonCanary: isCanarying && !isCanary(a), MinJobVersion: a.JobVersion,
		})
	}
	if existing < tg.Count {
		for _, nm := range names.next(tg.Count - existing) {
			holders[nm]++
			place = append(place, Placement{Name: nm, TaskGroup: tg, DowngradeNonCanary: isCanarying})
		}
	}
	return place
}

// nameHolders counts, per name, the allocations of a group that hold it
// once the pass is done: those that stay, and the placements named so far.
type nameHolders map[string]int

// newNameHolders counts the names of the allocations that stay, with room
// for a group of count (a first pass names count placements: growing the
// map as they come costs it several rehashes).
func newNameHolders(stay set, count int) nameHolders {
	h := make(nameHolders, max(len(stay), count))
	for _, a := range stay {
		h[a.Name]++
	}
	return h
}

// take returns the name a replacement of a takes, and counts it: a's own,
// unless another allocation holds it (one that stays, as a promoted canary
// beside the allocation it was to replace, or one replaced too, whose
// replacement may not be placed, or a placement); then a free one, so that
// no two allocations share an index. counted says a itself is among the
// holders (it stays until its replacement is placed). Nomad v1.6.1 always
// reuses a's name.
func (h nameHolders) take(a *sdk.Allocation, counted bool, names *nameIndex) string {
	others := h[a.Name]
	if counted {
		others--
	}
	name := a.Name
	if others > 0 {
		name = names.next(1)[0]
	}
	h[name]++
	return name
}

// computeReplacements commits the placements when the deployment allows
// it, and otherwise still replaces lost allocations and ones gone unknown
// on a disconnected node, and reschedules failed ones (outside a failed
// deployment). It returns what remains of underProvisionedBy.
func (r *reconciler) computeReplacements(placeReady bool, desired *sdk.DesiredUpdates, place []Placement, rescheduleNow set, underProvisionedBy int) int {
	failed := rescheduleNow.difference(r.disconnected)
	if placeReady {
		desired.Place += uint64(len(place))
		r.res.Place = append(r.res.Place, place...)
		r.markStop(failed, "", AllocRescheduled)
		desired.Stop += uint64(len(failed))
		return underProvisionedBy - min(len(place), underProvisionedBy)
	}
	// Nomad v1.6.1 takes as many placements from the front of the list as
	// there are lost allocations, which are reschedules when there are
	// any: a failed allocation is then replaced twice and a lost one not
	// at all.
	for _, p := range place {
		prev := p.Previous
		switch {
		case prev == nil:
		case p.Lost, !p.Reschedule && r.disconnected[prev.ID] != nil:
			r.res.Place = append(r.res.Place, p)
			desired.Place++
		case p.Reschedule:
			if r.deploymentFailed && r.deployment != nil && r.deployment.ID == prev.DeploymentID {
				continue
			}
			r.res.Place = append(r.res.Place, p)
			desired.Place++
			if r.disconnected[prev.ID] == nil {
				r.res.Stop = append(r.res.Stop, Stop{Alloc: prev, Description: AllocRescheduled})
				desired.Stop++
			}
		}
	}
	return underProvisionedBy
}

// createDeployment starts a deployment when the group has an update
// strategy and this is the job's first run or its allocations change.
func (r *reconciler) createDeployment(tg *sdk.TaskGroup, existing bool, dstate *sdk.DeploymentState, all, destructive set) {
	if existing || !tg.Update.Rolling() || dstate.DesiredTotal == 0 {
		return
	}
	updatingSpec := len(destructive) != 0 || len(r.res.InPlace) != 0
	hadRunning := false
	for _, a := range all {
		if a.Job != nil && a.Job.Version == r.job.Version && a.OfInstance(r.job) {
			hadRunning = true
			break
		}
	}
	if hadRunning && !updatingSpec {
		return
	}
	if r.deployment == nil {
		r.deployment = NewDeployment(r.job, r.in.EvalPriority, r.in.NewID(), r.now)
		r.res.Deployment = r.deployment
	}
	r.deployment.TaskGroups[tg.Name] = dstate
}

// NewDeployment returns a running deployment of job's current version.
func NewDeployment(job *sdk.Job, priority int, id string, now time.Time) *sdk.Deployment {
	return &sdk.Deployment{
		ID: id, Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
		JobModifyIndex: job.ModifyIndex, JobSpecModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*sdk.DeploymentState{}, Status: sdk.DeploymentStatusRunning,
		StatusDescription: sdk.DeploymentDescriptionRunning, EvalPriority: priority,
		CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
}
