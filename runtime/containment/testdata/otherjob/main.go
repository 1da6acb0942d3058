// Command otherjob is a scheduler plugin that tries to stop every
// allocation of every other job.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "otherjob"}, sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		plan := &sdk.Plan{EvalID: eval.ID, Job: ctx.State.Job(eval.Namespace, eval.JobID), Priority: eval.Priority}
		for _, n := range ctx.State.Nodes() {
			for _, a := range ctx.State.AllocsByNode(n.ID) {
				if a.JobID != eval.JobID && !a.TerminalStatus() {
					plan.AppendStoppedAlloc(a, "stolen", "")
				}
			}
		}
		_, err := ctx.Planner.SubmitPlan(plan)
		return err
	}))
}

func main() { plugin.Serve() }
