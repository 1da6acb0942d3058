// Package collector is a minimal core scheduler: it asks for evaluations
// in its mirror and garbage-collects every terminal one (ABI 1.1).
package collector

import (
	"errors"

	"github.com/drover-sched/drover/sdk"
)

// Scheduler collects terminal evals.
type Scheduler struct{}

// Process implements sdk.Scheduler.
func (Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	es, ok := ctx.State.(sdk.EvalState)
	if !ok {
		return errors.New("collector: the state mirrors no evaluations")
	}
	c, ok := ctx.Planner.(sdk.Collector)
	if !ok {
		return errors.New("collector: the planner offers no garbage collection")
	}
	req := &sdk.GCRequest{}
	for _, e := range es.Evals() {
		if e.TerminalStatus() && e.ID != eval.ID {
			req.Evals = append(req.Evals, e.ID)
		}
	}
	if !req.Empty() {
		if err := c.GarbageCollect(req); err != nil {
			return err
		}
	}
	done := eval.Copy()
	done.Status = sdk.EvalStatusComplete
	return ctx.Planner.UpdateEval(done)
}
