// Package empty is a scheduler that marks its eval complete and does
// nothing else.
package empty

import "github.com/drover-sched/drover/sdk"

// Scheduler completes every eval.
type Scheduler struct{}

// Process implements sdk.Scheduler.
func (Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	e := eval.Copy()
	e.Status = sdk.EvalStatusComplete
	return ctx.Planner.UpdateEval(e)
}
