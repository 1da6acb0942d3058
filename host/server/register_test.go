package server_test

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// TestRegisterJob_UnchangedSpecWritesOnlyTheEval: registering a spec the
// job already has leaves the job as it was (version, indexes, submit time,
// the kept version and its source), as Nomad's Job.Register, which then
// writes only the eval; the eval evaluates the job's current version.
func TestRegisterJob_UnchangedSpecWritesOnlyTheEval(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	first, _, err := s.RegisterJobOpts(servertest.Job("web", sdk.JobTypeService, 2, 100, 64),
		server.RegisterOptions{Submission: &state.JobSubmission{Source: "first", Format: "hcl2"}})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, first)
	snap := s.Store().Snapshot()
	before, kept := snap.Job("default", "web"), snap.JobVersion("default", "web", 0)
	jobsIndex := snap.TableIndex(state.TableJobs)

	again, _, err := s.RegisterJobOpts(servertest.Job("web", sdk.JobTypeService, 2, 100, 64),
		server.RegisterOptions{Submission: &state.JobSubmission{Source: "again", Format: "hcl2"}})
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.WaitForEval(t, s, again)
	if e.TriggeredBy != sdk.EvalTriggerJobRegister || e.JobModifyIndex != before.JobModifyIndex {
		t.Errorf("eval: triggered by %s at job modify index %d, want job-register at %d", e.TriggeredBy, e.JobModifyIndex, before.JobModifyIndex)
	}
	snap = s.Store().Snapshot()
	after := snap.Job("default", "web")
	if after.Version != 0 || after.ModifyIndex != before.ModifyIndex || after.JobModifyIndex != before.JobModifyIndex ||
		after.SubmitTime != before.SubmitTime {
		t.Errorf("job rewritten: version %d, modify index %d→%d, job modify index %d→%d, submit time %d→%d", after.Version,
			before.ModifyIndex, after.ModifyIndex, before.JobModifyIndex, after.JobModifyIndex, before.SubmitTime, after.SubmitTime)
	}
	if v := snap.JobVersion("default", "web", 0); v.SubmitTime != kept.SubmitTime || v.ModifyIndex != kept.ModifyIndex {
		t.Errorf("version 0 rewritten: submit time %d→%d", kept.SubmitTime, v.SubmitTime)
	}
	if got := snap.TableIndex(state.TableJobs); got != jobsIndex {
		t.Errorf("jobs table index %d→%d: blocking queries on jobs woke for nothing", jobsIndex, got)
	}
	if sub := snap.JobSubmission("default", "web", 0); sub == nil || sub.Source != "first" {
		t.Errorf("version 0's source: %+v, want the one it was registered from", sub)
	}
}

// TestDeleteEvals_LeavesAJobWithNothingElseDead: deleting the evals of a
// job that could not be placed (its registration's eval and the blocked
// one) leaves it dead, as Nomad's DeleteEval does (setJobStatuses with
// evalDelete); it used to stay pending, waiting for evals that were gone.
func TestDeleteEvals_LeavesAJobWithNothingElseDead(t *testing.T) {
	s := rig(t, placer) // no node: the job's eval blocks
	evalID := registerJob(t, s, servertest.Job("web", sdk.JobTypeService, 1, 100, 64))
	e := servertest.WaitForEval(t, s, evalID)
	servertest.WaitForEval(t, s, e.BlockedEval, sdk.EvalStatusBlocked)
	if st := s.Store().Snapshot().Job("default", "web").Status; st != sdk.JobStatusPending {
		t.Fatalf("setup: job %s, want pending (a blocked eval)", st)
	}
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEvals([]string{evalID, e.BlockedEval}); err != nil {
		t.Fatal(err)
	}
	if st := s.Store().Snapshot().Job("default", "web").Status; st != sdk.JobStatusDead {
		t.Fatalf("job %s after its evals were deleted, want dead", st)
	}
}

// TestEvaluateJob_ForceRescheduleSkipsGroupsThatDoNotReschedule: a forced
// reschedule marks the failed allocations of groups that reschedule, not
// those of a group whose rescheduling is disabled, as Nomad's
// Job.Evaluate (it used to mark them all).
func TestEvaluateJob_ForceRescheduleSkipsGroupsThatDoNotReschedule(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	job := servertest.Job("web", sdk.JobTypeBatch, 1, 100, 64)
	off := servertest.Job("web", sdk.JobTypeBatch, 1, 100, 64).TaskGroups[0]
	off.Name = "off"
	off.ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: 0, Unlimited: false}
	job.TaskGroups = append(job.TaskGroups, off)
	servertest.WaitForEval(t, s, registerJob(t, s, job))
	var failed []server.AllocUpdate
	group := map[string]string{}
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
		failed = append(failed, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusFailed})
		group[a.ID] = a.TaskGroup
	}
	if len(failed) != 2 {
		t.Fatalf("setup: %d allocations, want one per group", len(failed))
	}
	if _, err := s.UpdateAllocsFromClient(failed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EvaluateJobOpts("default", "web", server.EvaluateOptions{ForceReschedule: true}); err != nil {
		t.Fatal(err)
	}
	snap := s.Store().Snapshot()
	for id, g := range group {
		marked := snap.Alloc(id).DesiredTransition.ShouldForceReschedule()
		if marked != (g == "g") {
			t.Errorf("group %s's failed allocation marked for a forced reschedule: %v", g, marked)
		}
	}
}

// TestStopAlloc_PurgedJob: an allocation of a purged job can still be
// stopped, as in Nomad, whose Alloc.Stop makes the eval from the
// allocation's copy of the job: it used to be a 404 ("job not found").
// The eval finds no job and stops what is left of it.
func TestStopAlloc_PurgedJob(t *testing.T) {
	s := coreServer(t)
	job := servertest.Job("web", sdk.JobTypeService, 2, 100, 64)
	job.Priority = 70
	servertest.WaitForEval(t, s, registerJob(t, s, job))
	allocs := s.Store().Snapshot().AllocsByJob("default", "web")
	if len(allocs) != 2 {
		t.Fatalf("%d allocations placed, want 2", len(allocs))
	}
	// Paused, the purge's eval does not run: the allocations stay live.
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: true}); err != nil {
		t.Fatal(err)
	}
	purge, _, err := s.DeregisterJob("default", "web", true)
	if err != nil {
		t.Fatal(err)
	}
	if s.Store().Snapshot().Job("default", "web") != nil {
		t.Fatal("the job survived its purge")
	}
	stop, _, err := s.StopAlloc(allocs[0].ID)
	if err != nil {
		t.Fatalf("stopping an allocation of a purged job: %v", err)
	}
	e := eval(s, stop)
	if e == nil || e.TriggeredBy != sdk.EvalTriggerAllocStop || e.JobID != "web" || e.Type != sdk.JobTypeService ||
		e.Priority != 70 || e.JobModifyIndex != allocs[0].Job.JobModifyIndex {
		t.Fatalf("eval = %+v, want alloc-stop for web's copy (service, priority 70, job modify index %d)", e, allocs[0].Job.JobModifyIndex)
	}
	if a := s.Store().Snapshot().Alloc(allocs[0].ID); a.DesiredTransition.Migrate == nil || !*a.DesiredTransition.Migrate {
		t.Errorf("allocation not marked for migration: %+v", a.DesiredTransition)
	}
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{}); err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, purge)
	servertest.WaitForEval(t, s, stop)
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
		if a.DesiredStatus != sdk.AllocDesiredStatusStop {
			t.Errorf("allocation %s of the purged job is %s, want stop", a.ID, a.DesiredStatus)
		}
	}
	if _, _, err := s.StopAlloc("no-such-alloc"); !errors.Is(err, server.ErrNotFound) {
		t.Errorf("stopping a missing allocation: %v, want not found", err)
	}
}
