// Package conclude holds what every scheduler does around its placements:
// retrying a partially committed plan, creating blocked evals that carry
// class eligibility, and writing the eval's outcome, as Nomad's evaluation
// lifecycle and schedulers do it.
//
//	err := conclude.Retry(conclude.MaxServiceAttempts, func() (bool, bool, error) {
//		plan := ... // reconcile and place
//		res, err := ctx.Planner.SubmitPlan(plan)
//		if err != nil { return false, false, err }
//		full, _, _ := res.FullCommit(plan)
//		return full && res.RefreshIndex == 0, conclude.Progress(res), nil
//	})
//	if errors.Is(err, conclude.ErrMaxAttempts) {
//		// create a max-plan-attempts blocked eval and fail the eval
//	}
package conclude

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

// Plan attempts (Nomad's): how many times in a row a scheduler may submit a
// plan that makes no progress before it gives up.
const (
	MaxServiceAttempts  = 5
	MaxBatchAttempts    = 2
	MaxSystemAttempts   = 5
	MaxSysBatchAttempts = 2
)

// Eval status descriptions.
const (
	BlockedFailedPlacements = "created to place remaining allocations"
	BlockedMaxPlans         = "created due to placement conflicts"
)

// FailedMaxAttempts is the status description of an eval that failed
// because limit plans in a row made no progress (Retry's ErrMaxAttempts),
// worded as Nomad's: it is shown to operators, unlike the error.
func FailedMaxAttempts(limit int) string { return fmt.Sprintf("maximum attempts reached (%d)", limit) }

// ErrMaxAttempts is returned by Retry when every attempt failed to commit.
var ErrMaxAttempts = errors.New("conclude: maximum attempts reached")

// Retry calls pass until it is done, at most limit times in a row without
// progress (an attempt that committed something resets the count).
func Retry(limit int, pass func() (done, progress bool, err error)) error {
	for attempts := 0; attempts < limit; {
		done, progress, err := pass()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if progress {
			attempts = 0
		} else {
			attempts++
		}
	}
	return fmt.Errorf("%w (%d)", ErrMaxAttempts, limit)
}

// Progress reports whether a plan result committed anything.
func Progress(r *sdk.PlanResult) bool {
	return r != nil && (len(r.NodeUpdate) != 0 || len(r.NodeAllocation) != 0 ||
		r.Deployment != nil || len(r.DeploymentUpdates) != 0)
}

// Blocked creates (through the planner) the blocked eval that follows eval:
// trigger queued-allocs, or max-plan-attempts when planFailure is set. It
// carries the classes the job was eligible on, unless feasibility escaped
// class caching. The caller records the returned eval's ID in eval's
// BlockedEval when it updates eval.
func Blocked(ctx *sdk.Context, eval *sdk.Evaluation, elig *feasible.Eligibility, failed map[string]*sdk.AllocMetric, planFailure bool) (*sdk.Evaluation, error) {
	escaped := elig != nil && elig.Escaped()
	var classes map[string]bool
	if elig != nil && !escaped {
		classes = elig.Classes()
	}
	b := eval.CreateBlockedEval(ctx.NewID(), classes, escaped, "", failed, planFailure)
	b.StatusDescription = BlockedFailedPlacements
	if planFailure {
		b.StatusDescription = BlockedMaxPlans
	}
	if err := ctx.Planner.CreateEval(b); err != nil {
		return nil, fmt.Errorf("conclude: create blocked eval: %w", err)
	}
	return b, nil
}

// Outcome is how an evaluation ended.
type Outcome struct {
	// Status is the eval's final status (sdk.EvalStatusComplete, or
	// sdk.EvalStatusFailed), Description why, for people.
	Status      string
	Description string
	// Next is the follow-up eval the scheduler created (a rolling update's
	// next step), Blocked the blocked eval that waits for capacity.
	Next    *sdk.Evaluation
	Blocked *sdk.Evaluation
	// Failed explains, per task group, what could not be placed
	// (FailedTGAllocs); Queued counts it (QueuedAllocations).
	Failed map[string]*sdk.AllocMetric
	Queued map[string]int
	// DeploymentID is the deployment the eval's placements joined
	// (reconcile.Result.ActiveDeployment): the eval's DeploymentID, which
	// `drover job run` follows once the eval ends. Left empty, the
	// deployment still rolls, but nothing tells the user who submitted the
	// job about it.
	DeploymentID string
}

// SetStatus writes the eval's outcome through the planner.
func SetStatus(ctx *sdk.Context, eval *sdk.Evaluation, o Outcome) error {
	e := eval.Copy()
	e.Status = o.Status
	e.StatusDescription = o.Description
	e.DeploymentID = o.DeploymentID
	e.FailedTGAllocs = o.Failed
	e.SnapshotIndex = ctx.State.Index()
	if o.Next != nil {
		e.NextEval = o.Next.ID
	}
	if o.Blocked != nil {
		e.BlockedEval = o.Blocked.ID
	}
	if o.Queued != nil {
		e.QueuedAllocations = o.Queued
	}
	if err := ctx.Planner.UpdateEval(e); err != nil {
		return fmt.Errorf("conclude: update eval: %w", err)
	}
	return nil
}

// Reblock puts a blocked eval that still cannot place everything back in
// the blocked tracker, with what this pass learned.
func Reblock(ctx *sdk.Context, eval *sdk.Evaluation, elig *feasible.Eligibility, failed map[string]*sdk.AllocMetric, queued map[string]int) error {
	e := eval.Copy()
	e.FailedTGAllocs = failed
	e.QueuedAllocations = queued
	e.SnapshotIndex = ctx.State.Index()
	if elig != nil {
		e.EscapedComputedClass = elig.Escaped()
		e.ClassEligibility = elig.Classes()
	}
	if err := ctx.Planner.ReblockEval(e); err != nil {
		return fmt.Errorf("conclude: reblock eval: %w", err)
	}
	return nil
}

// OtherType fails eval, saying why, when its job is of none of types, the
// job types the scheduler schedules, and reports whether it did. Any job
// may name any plugin (scheduler = "NAME"), whatever its type: a system
// job scheduled as a service job would get one allocation, not one per
// node, and a batch job scheduled as a service job would have its
// finished allocations replaced. A stopped or purged job is not refused:
// stopping what it runs is the same for every type.
func OtherType(ctx *sdk.Context, eval *sdk.Evaluation, types ...string) (bool, error) {
	job := ctx.State.Job(eval.Namespace, eval.JobID)
	if job.Stopped() || slices.Contains(types, job.Type) {
		return false, nil
	}
	return true, SetStatus(ctx, eval, Outcome{Status: sdk.EvalStatusFailed,
		Description: fmt.Sprintf("scheduler schedules %s jobs, not %s job %q: name one that schedules %s jobs, or none for the agent's default",
			strings.Join(types, " and "), job.Type, job.ID, job.Type)})
}

// Unhandled fails an eval whose trigger the scheduler does not know.
func Unhandled(ctx *sdk.Context, eval *sdk.Evaluation) error {
	return SetStatus(ctx, eval, Outcome{Status: sdk.EvalStatusFailed,
		Description: fmt.Sprintf("scheduler cannot handle '%s' evaluation reason", eval.TriggeredBy)})
}

// AdjustQueued decrements queued per task group for every new allocation
// (placed lists them) the plan result committed.
func AdjustQueued(r *sdk.PlanResult, placed []*sdk.Allocation, queued map[string]int) {
	if r == nil {
		return
	}
	var committed map[string]bool // nil: all of them (a whole commit)
	if !r.Whole {
		committed = map[string]bool{}
		for _, as := range r.NodeAllocation {
			for _, a := range as {
				committed[a.ID] = true
			}
		}
	}
	for _, a := range placed {
		if committed != nil && !committed[a.ID] {
			continue
		}
		if _, ok := queued[a.TaskGroup]; ok {
			queued[a.TaskGroup]--
		}
	}
}
