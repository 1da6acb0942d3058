// Command overcommit is a scheduler plugin that puts every allocation of
// its job on the first node, however small, and keeps trying.
package main

import (
	"errors"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "overcommit"}, sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		for attempt := 0; attempt < 3; attempt++ {
			job := ctx.State.Job(eval.Namespace, eval.JobID)
			node := ctx.State.Nodes()[0]
			plan := &sdk.Plan{EvalID: eval.ID, Job: job, Priority: eval.Priority}
			tg := job.TaskGroups[0]
			for i := 0; i < tg.Count; i++ {
				// Honest about what it holds (more than the group asks), so
				// the host's fit check, not its claim check, rejects it.
				res := sdk.RequestedResources(tg)
				for _, t := range res.Tasks {
					t.Cpu.CpuShares, t.Memory.MemoryMB = 100_000, 100_000
				}
				plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
					TaskGroup: tg.Name, Name: sdk.AllocName(job.ID, tg.Name, i), NodeID: node.ID,
					AllocatedResources: res, DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending})
			}
			res, err := ctx.Planner.SubmitPlan(plan)
			if err != nil {
				return err
			}
			if res.RefreshIndex == 0 {
				return ctx.Planner.UpdateEval(&sdk.Evaluation{ID: eval.ID, Namespace: eval.Namespace, JobID: eval.JobID, Status: sdk.EvalStatusComplete})
			}
		}
		return errors.New("overcommit: every plan was rejected")
	}))
}

func main() { plugin.Serve() }
