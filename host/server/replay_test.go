package server_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// TestRedelivery_RecreatedFollowUpIsAccepted: a scheduler draws its IDs
// from the eval's seed, so when an attempt fails after creating a
// follow-up eval, the redelivery creates the same eval again. The host
// takes that as done, and the eval completes naming it. An eval of that
// ID from another eval is still refused.
func TestRedelivery_RecreatedFollowUpIsAccepted(t *testing.T) {
	var attempts atomic.Int32
	var first atomic.Value
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		id := "follow-web"
		if e.JobID == "other" {
			// Another eval (of another job) reusing the follow-up's ID.
			err := ctx.Planner.CreateEval(&sdk.Evaluation{ID: id, Namespace: e.Namespace, JobID: e.JobID,
				TriggeredBy: sdk.EvalTriggerRetryFailedAlloc, Status: sdk.EvalStatusPending, PreviousEval: e.ID})
			if err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("reusing another eval's follow-up ID: %v", err)
			}
			done := *e
			done.Status = sdk.EvalStatusComplete
			return ctx.Planner.UpdateEval(&done)
		}
		first.CompareAndSwap(nil, e.ID)
		if e.ID != first.Load() {
			done := *e
			done.Status = sdk.EvalStatusComplete
			return ctx.Planner.UpdateEval(&done)
		}
		follow := &sdk.Evaluation{ID: id, Namespace: e.Namespace, JobID: e.JobID,
			TriggeredBy: sdk.EvalTriggerRetryFailedAlloc, Status: sdk.EvalStatusPending, PreviousEval: e.ID,
			WaitUntil: ctx.Now.Add(24 * time.Hour)}
		if err := ctx.Planner.CreateEval(follow); err != nil {
			return err
		}
		if attempts.Add(1) == 1 {
			return errors.New("the first attempt fails after creating its follow-up")
		}
		done := *e
		done.Status, done.NextEval = sdk.EvalStatusComplete, follow.ID
		return ctx.Planner.UpdateEval(&done)
	})
	evalID := registerJob(t, s, servertest.Job("web", sdk.JobTypeService, 1, 100, 64))
	e := servertest.WaitForEval(t, s, evalID)
	if e.Status != sdk.EvalStatusComplete || e.NextEval != "follow-web" || attempts.Load() != 2 {
		t.Fatalf("eval %s after %d attempts, next %q", e.Status, attempts.Load(), e.NextEval)
	}
	if f := s.Store().Snapshot().Eval("follow-web"); f == nil || f.PreviousEval != evalID {
		t.Fatalf("follow-up %+v", f)
	}
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("other", sdk.JobTypeService, 1, 100, 64)))
}
