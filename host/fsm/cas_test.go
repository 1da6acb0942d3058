package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

func casJob(cpu int) *sdk.Job {
	return &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1,
			Tasks: []*sdk.Task{{Name: "t", Driver: "docker", Resources: &sdk.Resources{CPU: cpu, MemoryMB: 64}}}}}}
}

// A registration that enforces an index is checked when its entry
// applies: of two built on the same version, the second changes nothing.
func TestJobRegister_EnforcedIndexIsCheckedOnApply(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	for _, tc := range []struct {
		index uint64
		cpu   int
		enf   uint64
		want  error
	}{
		{1, 100, 5, ErrConflict}, // the job does not exist: only 0 matches
		{2, 100, 0, nil},         // created at index 2
		{3, 200, 0, ErrConflict}, // it exists now
		{4, 200, 2, nil},         // built on index 2: applies, job modify index 4
		{5, 300, 2, ErrConflict}, // also built on index 2: refused
		{6, 300, 4, nil},
	} {
		err := f.ApplyDecoded(tc.index, &JobRegisterRequest{Job: casJob(tc.cpu), EnforceIndex: true, JobModifyIndex: tc.enf,
			Eval: &sdk.Evaluation{ID: "e" + string(rune('0'+tc.index)), Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending}})
		if !errors.Is(err, tc.want) {
			t.Fatalf("index %d enforcing %d: err = %v, want %v", tc.index, tc.enf, err, tc.want)
		}
		snap := store.Snapshot()
		if evalApplied := snap.Eval("e"+string(rune('0'+tc.index))) != nil; evalApplied != (tc.want == nil) {
			t.Fatalf("index %d: eval stored = %v with err %v", tc.index, evalApplied, err)
		}
	}
	j := store.Snapshot().Job("default", "web")
	if j.JobModifyIndex != 6 || j.Version != 2 || j.TaskGroups[0].Tasks[0].Resources.CPU != 300 {
		t.Fatalf("job = modify index %d, version %d, cpu %d; want 6, 2, 300",
			j.JobModifyIndex, j.Version, j.TaskGroups[0].Tasks[0].Resources.CPU)
	}
}

// A failed deployment's auto-revert does not undo a version registered
// after the one the deployment rolled out.
func TestDeploymentFailure_RevertsOnlyTheVersionItRolledOut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		newer   bool
		wantCPU int
	}{{"current", false, 100}, {"superseded", true, 300}} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := state.NewStore()
			f := New(store, nil, zerolog.Nop())
			apply := func(i uint64, msg msgp.Unmarshaler) {
				t.Helper()
				if err := f.ApplyDecoded(i, msg); err != nil {
					t.Fatal(err)
				}
			}
			apply(1, &JobRegisterRequest{Job: casJob(100), Submission: &state.JobSubmission{Source: "cpu = 100"}}) // version 0, stable below
			apply(2, &JobStabilityRequest{Namespace: "default", JobID: "web", Version: 0, Stable: true})
			apply(3, &JobRegisterRequest{Job: casJob(200), Submission: &state.JobSubmission{Source: "cpu = 200"}}) // version 1, rolled out by d1
			d := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: 1, JobCreateIndex: 1,
				Status: sdk.DeploymentStatusRunning, TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 1}}}
			apply(4, &ApplyPlanResultsRequest{Job: store.Snapshot().Job("default", "web"), EvalID: "e1", Deployment: d})
			if tc.newer {
				apply(5, &JobRegisterRequest{Job: casJob(300)}) // version 2, the operator's
			}
			revert := store.Snapshot().JobVersion("default", "web", 0).Copy()
			apply(6, &DeploymentStatusUpdateRequest{Job: revert, UpdatedAt: 1,
				Update: &sdk.DeploymentStatusUpdate{DeploymentID: "d1", Status: sdk.DeploymentStatusFailed,
					StatusDescription: "Failed due to unhealthy allocations - rolling back to job version 0"}})
			snap := store.Snapshot()
			if got := snap.Job("default", "web").TaskGroups[0].Tasks[0].Resources.CPU; got != tc.wantCPU {
				t.Fatalf("job cpu after the failure = %d, want %d", got, tc.wantCPU)
			}
			if snap.Deployment("d1").Status != sdk.DeploymentStatusFailed {
				t.Fatalf("deployment %s, want failed", snap.Deployment("d1").Status)
			}
			if got, rolled := snap.Deployment("d1").StatusDescription, !tc.newer; strings.Contains(got, "rolling back") != rolled {
				t.Fatalf("description %q for a rollback that %s", got, map[bool]string{true: "happened", false: "did not happen"}[rolled])
			}
			// The version the rollback makes (2) keeps version 0's source.
			sub := snap.JobSubmission("default", "web", 2)
			if rolled := !tc.newer; rolled != (sub != nil) || rolled && (sub.Source != "cpu = 100" || sub.JobModifyIndex != 6) {
				t.Fatalf("version 2's submission after a rollback that %s: %+v",
					map[bool]string{true: "happened", false: "did not happen"}[rolled], sub)
			}
		})
	}
}

// TestApply_ConflictIsNotLoggedAsAnError: a check-and-set entry whose
// index no longer matches is an answer to its writer (registration
// retries it, `job run -check-index` and set-config -check-index report
// it), not a failure of the FSM: it is logged at debug level, where an
// entry that cannot be applied is an error.
func TestApply_ConflictIsNotLoggedAsAnError(t *testing.T) {
	store, _ := state.NewStore()
	var logs strings.Builder
	f := New(store, nil, zerolog.New(&logs).Level(zerolog.InfoLevel))
	conflict, err := Encode(JobRegisterRequestType, &JobRegisterRequest{Job: casJob(100), EnforceIndex: true, JobModifyIndex: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: conflict}); !errors.Is(res.(error), ErrConflict) {
		t.Fatalf("apply = %v, want a conflict", res)
	}
	if logs.Len() != 0 {
		t.Fatalf("a conflict was logged: %s", logs.String())
	}
	if res := f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte{0xff}}); res == nil {
		t.Fatal("an undecodable entry applied")
	}
	if !strings.Contains(logs.String(), `"level":"error"`) {
		t.Fatalf("an undecodable entry was not logged as an error: %q", logs.String())
	}
}

// A failure decided on an active deployment is refused once the deployment
// ended meanwhile (the watcher and an operator racing), health included:
// the entry changes nothing.
func TestDeploymentFailure_OfAnEndedDeploymentIsRefused(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	if err := f.ApplyDecoded(1, &JobRegisterRequest{Job: casJob(100)}); err != nil {
		t.Fatal(err)
	}
	d := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusSuccessful,
		StatusDescription: "Deployment completed successfully", TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 1}}}
	a := &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DeploymentID: "d1",
		DesiredStatus: "run", ClientStatus: "running"}
	if err := store.Write(2, func(tx *state.Txn) error {
		a.Job = tx.Job("default", "web")
		if err := tx.UpsertDeployment(d); err != nil {
			return err
		}
		return tx.UpsertAlloc(a)
	}); err != nil {
		t.Fatal(err)
	}
	no := false
	err := f.ApplyDecoded(3, &DeploymentStatusUpdateRequest{UpdatedAt: 1,
		Update: &sdk.DeploymentStatusUpdate{DeploymentID: "d1", Status: sdk.DeploymentStatusFailed,
			StatusDescription: sdk.DeploymentDescriptionFailedAllocations},
		Health: &AllocClientUpdateRequest{UpdatedAt: 1, Allocs: []*sdk.Allocation{{ID: "a1",
			DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &no}}}}})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	snap := store.Snapshot()
	if got := snap.Deployment("d1").Status; got != sdk.DeploymentStatusSuccessful {
		t.Fatalf("deployment %s, want it left successful", got)
	}
	if snap.Alloc("a1").DeploymentStatus != nil {
		t.Fatalf("health applied: %+v", snap.Alloc("a1").DeploymentStatus)
	}
}
