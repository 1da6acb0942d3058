package carry

import (
	"errors"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/feasible"
)

// Block creates the blocked eval that waits for capacity for what this
// pass could not place (Failed), as Nomad's generic scheduler does before
// it submits the plan. It creates none for an eval that is itself blocked
// (Conclude reblocks it instead), none when prior is set (the blocked eval
// an earlier pass of the eval created), and none when the reconciler's
// follow-up evals will try again later (a delayed reschedule), unless the
// eval is one of those. elig is the eligibility the pass's feasibility
// checks recorded. It returns the blocked eval the eval is to name: prior,
// the new one, or nil.
func (p *Pass) Block(elig *feasible.Eligibility, prior *sdk.Evaluation) (*sdk.Evaluation, error) {
	eval := p.in.Eval
	delayInstead := len(p.in.Result.FollowupEvals) > 0 && eval.WaitUntil.IsZero()
	if prior != nil || eval.Status == sdk.EvalStatusBlocked || len(p.Failed) == 0 || delayInstead {
		return prior, nil
	}
	return conclude.Blocked(p.in.Ctx, eval, elig, p.Failed, false)
}

// Conclude writes the outcome of an evaluation whose passes conclude.Retry
// ran, p being the last: retried is what Retry returned, limit its
// attempts, blocked what Block returned, elig the eligibility the pass's
// feasibility checks recorded and deploymentID the deployment the eval
// names (usually DeploymentID). As Nomad's generic scheduler:
//   - when no plan committed in limit attempts (conclude.ErrMaxAttempts),
//     the eval fails and a max-plan-attempts blocked eval retries it,
//     both carrying what could not be placed and the queued counts;
//   - a blocked eval that still cannot place everything is reblocked;
//   - otherwise the eval completes, naming blocked.
//
// Any other error from Retry is returned as it is.
func (p *Pass) Conclude(retried error, limit int, blocked *sdk.Evaluation, elig *feasible.Eligibility, deploymentID string) error {
	ctx, eval := p.in.Ctx, p.in.Eval
	switch {
	case errors.Is(retried, conclude.ErrMaxAttempts):
		b, err := conclude.Blocked(ctx, eval, elig, p.Failed, true)
		if err != nil {
			return err
		}
		return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusFailed, Description: conclude.FailedMaxAttempts(limit),
			Blocked: b, Failed: p.Failed, Queued: p.Queued, DeploymentID: deploymentID})
	case retried != nil:
		return retried
	case eval.Status == sdk.EvalStatusBlocked && len(p.Failed) != 0:
		return conclude.Reblock(ctx, eval, elig, p.Failed, p.Queued)
	}
	return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusComplete, Blocked: blocked,
		Failed: p.Failed, Queued: p.Queued, DeploymentID: deploymentID})
}
