// Command giantplan is a scheduler plugin that submits a plan of 50,000
// placements (about 12 MiB encoded: over gRPC's default message limit and
// over the host's plan size limit).
package main

import (
	"fmt"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "giantplan"}, sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		job := ctx.State.Job(eval.Namespace, eval.JobID)
		node := ctx.State.Nodes()[0]
		plan := &sdk.Plan{EvalID: eval.ID, Job: job, Priority: eval.Priority}
		pad := strings.Repeat("x", 150)
		for i := 0; i < 50_000; i++ {
			plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID,
				TaskGroup: job.TaskGroups[0].Name, Name: fmt.Sprintf("%s[%d]", pad, i), NodeID: node.ID})
		}
		_, err := ctx.Planner.SubmitPlan(plan)
		return err
	}))
}

func main() { plugin.Serve() }
