// Command ghostnode is a scheduler plugin that places on a node that does
// not exist, and passes the planner's refusal on.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "ghostnode"}, sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		job := ctx.State.Job(eval.Namespace, eval.JobID)
		plan := &sdk.Plan{EvalID: eval.ID, Job: job, Priority: eval.Priority}
		plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
			TaskGroup: job.TaskGroups[0].Name, Name: sdk.AllocName(job.ID, job.TaskGroups[0].Name, 0), NodeID: "ghost-node",
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending})
		_, err := ctx.Planner.SubmitPlan(plan)
		return err
	}))
}

func main() { plugin.Serve() }
