package server_test

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// TestRevertJob: reverting registers a kept version's spec as a new
// version and evaluates it; the check on the prior version, the current
// version and a version not kept are refused.
func TestRevertJob(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	v0 := servertest.Job("web", sdk.JobTypeService, 2, 100, 64)
	servertest.WaitForEval(t, s, registerJob(t, s, v0))
	v1 := servertest.Job("web", sdk.JobTypeService, 4, 100, 64)
	servertest.WaitForEval(t, s, registerJob(t, s, v1))

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
}
