package verify

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
)

func invalidEval(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sdk.ErrInvalidEval, fmt.Sprintf(format, args...))
}

// EvalUpdate checks a plugin's update e of the eval it processes, proc (as
// the state holds it), and returns the eval to store. The update must end
// the eval (complete, failed or canceled), and its BlockedEval and NextEval
// may name only evals the plugin created while processing it: created maps
// their IDs to their status. The plugin sets only the outcome (status,
// failed and queued allocations, class eligibility, annotations, the eval
// chain and a deployment); the identity (job, type, priority, trigger,
// indexes) stays proc's.
func EvalUpdate(proc, e *sdk.Evaluation, created map[string]string) (*sdk.Evaluation, error) {
	if e.ID != proc.ID {
		return nil, invalidEval("a plugin may update only the eval it processes (%s), not %s", proc.ID, e.ID)
	}
	if err := sameJob(proc, e); err != nil {
		return nil, err
	}
	switch e.Status {
	case sdk.EvalStatusComplete, sdk.EvalStatusFailed, sdk.EvalStatusCanceled:
	default:
		return nil, invalidEval("eval %s may not be updated to status %q", e.ID, e.Status)
	}
	if e.BlockedEval != "" && created[e.BlockedEval] != sdk.EvalStatusBlocked {
		return nil, invalidEval("eval %s names %s as its blocked eval, but it did not create that blocked eval", e.ID, e.BlockedEval)
	}
	if e.NextEval != "" && created[e.NextEval] != sdk.EvalStatusPending {
		return nil, invalidEval("eval %s names %s as its next eval, but it did not create that pending eval", e.ID, e.NextEval)
	}
	return outcome(proc, e), nil
}

// MaxCreatedEvals bounds the evals one delivery of an eval may create. A
// scheduler creates a blocked eval and follow-ups, the latter batched by
// time window (the reconciler's), so a legitimate count stays far below;
// past it the plugin is flooding the state, and its eval fails.
const MaxCreatedEvals = 1000

// MayCreate checks that a delivery that already created created evals may
// create one more.
func MayCreate(created int) error {
	if created >= MaxCreatedEvals {
		return invalidEval("an eval may create at most %d evals", MaxCreatedEvals)
	}
	return nil
}

// NewEval checks an eval e that a plugin creates while processing proc
// and returns the eval to store. It must have a new ID, be for proc's job,
// be pending or blocked (a blocked one triggered by queued-allocs or
// max-plan-attempts), have a trigger and name proc as its PreviousEval. Its
// type, priority and job modify index are proc's; it points to no other
// eval yet.
func NewEval(proc, e *sdk.Evaluation) (*sdk.Evaluation, error) {
	if e.ID == "" || e.ID == proc.ID {
		return nil, invalidEval("a new eval needs a new ID")
	}
	if err := sameJob(proc, e); err != nil {
		return nil, err
	}
	switch e.Status {
	case sdk.EvalStatusPending:
	case sdk.EvalStatusBlocked:
		if e.TriggeredBy != sdk.EvalTriggerQueuedAllocs && e.TriggeredBy != sdk.EvalTriggerMaxPlans {
			return nil, invalidEval("a blocked eval is triggered by %s or %s, not %q", sdk.EvalTriggerQueuedAllocs, sdk.EvalTriggerMaxPlans, e.TriggeredBy)
		}
	default:
		return nil, invalidEval("a new eval must be pending or blocked, not %q", e.Status)
	}
	if e.TriggeredBy == "" {
		return nil, invalidEval("a new eval needs a trigger")
	}
	if e.PreviousEval != proc.ID {
		return nil, invalidEval("a follow-up eval must name %s as its PreviousEval", proc.ID)
	}
	c := e.Copy()
	c.Type, c.Priority, c.JobModifyIndex = proc.Type, proc.Priority, proc.JobModifyIndex
	c.NextEval, c.BlockedEval = "", ""
	c.CreateTime = 0
	return c, nil
}

// Recreated checks a new eval e, which a plugin processing proc created
// and which NewEval accepted, against stored, the eval the state
// already holds under e's ID. Schedulers draw IDs from the eval's seed, so
// a redelivery of an eval whose earlier attempt failed after creating a
// follow-up creates it again: stored is then that follow-up (it follows up
// proc, for the same job, with the same trigger), already there and done,
// and Recreated returns nil; the caller stores nothing. Any other eval
// under that ID refuses e.
func Recreated(proc, stored, e *sdk.Evaluation) error {
	if stored.PreviousEval == proc.ID && stored.Namespace == e.Namespace && stored.JobID == e.JobID && stored.TriggeredBy == e.TriggeredBy {
		return nil
	}
	return invalidEval("eval %s already exists", e.ID)
}

// Reblock checks a plugin's reblocking e of the eval it processes, proc,
// and returns the eval to store: blocked again, with e's outcome. stored is
// the eval as the state holds it now (nil if gone), which must still be
// blocked: a blocked eval that the blocked-evals tracker let out.
func Reblock(proc, stored, e *sdk.Evaluation) (*sdk.Evaluation, error) {
	if e.ID != proc.ID {
		return nil, invalidEval("a plugin may reblock only the eval it processes (%s), not %s", proc.ID, e.ID)
	}
	if err := sameJob(proc, e); err != nil {
		return nil, err
	}
	if stored == nil || stored.Status != sdk.EvalStatusBlocked {
		return nil, invalidEval("eval %s is not blocked and cannot be reblocked", e.ID)
	}
	c := outcome(proc, e)
	c.Status = sdk.EvalStatusBlocked
	c.NextEval, c.BlockedEval = "", ""
	return c, nil
}

// sameJob checks that e is for proc's job, and not over MaxEvalBytes.
func sameJob(proc, e *sdk.Evaluation) error {
	if e.Namespace != proc.Namespace || e.JobID != proc.JobID {
		return invalidEval("eval %s is for job %s/%s, not %s/%s", e.ID, e.Namespace, e.JobID, proc.Namespace, proc.JobID)
	}
	if n := e.Msgsize(); n > MaxEvalBytes {
		return invalidEval("eval %s takes %d bytes, over the limit of %d", e.ID, n, MaxEvalBytes)
	}
	return nil
}

// MaxEvalBytes bounds the size of an eval a plugin writes (its
// description, failed groups' metrics, queued counts, class eligibility):
// far above what a job's groups need, far below what would flood the state.
const MaxEvalBytes = 4 << 20

// outcome returns proc with what a plugin may set of it taken from e.
func outcome(proc, e *sdk.Evaluation) *sdk.Evaluation {
	c := proc.Copy()
	c.Status, c.StatusDescription = e.Status, e.StatusDescription
	c.FailedTGAllocs, c.QueuedAllocations = e.FailedTGAllocs, e.QueuedAllocations
	c.ClassEligibility, c.EscapedComputedClass = e.ClassEligibility, e.EscapedComputedClass
	c.QuotaLimitReached = e.QuotaLimitReached
	c.PlanAnnotations = e.PlanAnnotations
	c.NextEval, c.BlockedEval = e.NextEval, e.BlockedEval
	if e.DeploymentID != "" {
		c.DeploymentID = e.DeploymentID
	}
	return c
}
