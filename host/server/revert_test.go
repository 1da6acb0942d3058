package server_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// TestRevertJob: reverting registers a kept version's spec as a new
// version and evaluates it; the check on the prior version, the current
// version and a version not kept are refused.
func TestRevertJob(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	for i, count := range []int{2, 4} { // versions 0 and 1, each with its source
		id, _, err := s.RegisterJobOpts(servertest.Job("web", sdk.JobTypeService, count, 100, 64),
			server.RegisterOptions{Submission: &state.JobSubmission{Source: fmt.Sprintf("v%d", i), Format: "hcl2"}})
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, id)
	}

	prior := uint64(0)
	if _, _, err := s.RevertJob("default", "web", 0, &prior); !errors.Is(err, server.ErrConflict) {
		t.Fatalf("revert with a stale prior version: %v", err)
	}
	if _, _, err := s.RevertJob("default", "web", 1, nil); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("revert to the current version: %v", err)
	}
	if _, _, err := s.RevertJob("default", "web", 7, nil); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("revert to a version never kept: %v", err)
	}
	if _, _, err := s.RevertJob("default", "nope", 0, nil); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("revert of an unknown job: %v", err)
	}

	prior = 1
	evalID, _, err := s.RevertJob("default", "web", 0, &prior)
	if err != nil {
		t.Fatal(err)
	}
	if e := servertest.WaitForEval(t, s, evalID); e.Status != sdk.EvalStatusComplete || e.TriggeredBy != sdk.EvalTriggerJobRegister {
		t.Fatalf("revert eval %+v", e)
	}
	j := s.Store().Snapshot().Job("default", "web")
	if j.Version != 2 || j.TaskGroups[0].Count != 2 || j.Stop {
		t.Fatalf("reverted job: version %d count %d stop %v", j.Version, j.TaskGroups[0].Count, j.Stop)
	}
	// The new version keeps the source of the version it reverted to.
	if sub := s.Store().Snapshot().JobSubmission("default", "web", 2); sub == nil || sub.Source != "v0" || sub.JobModifyIndex != j.JobModifyIndex {
		t.Fatalf("reverted version's submission: %+v", sub)
	}
}

// TestRevertJob_ToAStoppedVersionStopsTheJob: a revert registers the
// version as it was, Stop included, as Nomad's Job.Revert does (it used to
// clear Stop, as an auto-revert does, and so started a job the user had
// reverted to stopped). Stable is not copied: the new version is not
// stable until its own deployment succeeds.
func TestRevertJob_ToAStoppedVersionStopsTheJob(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	// Version 0 runs, version 1 stops it, version 2 runs it again.
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", sdk.JobTypeService, 2, 100, 64)))
	stopID, _, err := s.DeregisterJob("default", "web", false)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, stopID)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", sdk.JobTypeService, 2, 100, 64)))
	if _, err := s.SetJobStability("default", "web", 1, true); err != nil {
		t.Fatal(err)
	}

	evalID, _, err := s.RevertJob("default", "web", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	snap := s.Store().Snapshot()
	j := snap.Job("default", "web")
	if j.Version != 3 || !j.Stop || j.Stable {
		t.Fatalf("reverted to stopped version 1: version %d stop %v stable %v, want version 3 stopped, not stable", j.Version, j.Stop, j.Stable)
	}
	for _, a := range snap.AllocsByJob("default", "web") {
		if a.DesiredStatus == sdk.AllocDesiredStatusRun {
			t.Errorf("allocation %s still runs after the revert to a stopped version", a.Name)
		}
	}
}
