package sdktest_test

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// firstFit places every missing allocation on the first node with room.
type firstFit struct{}

func (firstFit) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	job := ctx.State.Job(eval.Namespace, eval.JobID)
	plan := &sdk.Plan{EvalID: eval.ID, Job: job, Priority: eval.Priority}
	tg := job.TaskGroups[0]
	need := sdk.GroupUsage(tg)
	planned := map[string]sdk.Usage{}
	for i := len(ctx.State.AllocsByJob(job.Namespace, job.ID)); i < tg.Count; i++ {
		for _, n := range ctx.State.Nodes() {
			used := ctx.State.NodeUsage(n.ID)
			used.Add(planned[n.ID])
			used.Add(need)
			if ok, _ := used.Fits(n.Capacity()); !ok {
				continue
			}
			u := planned[n.ID]
			u.Add(need)
			planned[n.ID] = u
			plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID,
				TaskGroup: tg.Name, Name: sdk.AllocName(job.ID, tg.Name, i), NodeID: n.ID,
				AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
					"app": {Cpu: sdk.AllocatedCpuResources{CpuShares: int64(need.CPU)},
						Memory: sdk.AllocatedMemoryResources{MemoryMB: int64(need.MemoryMB)}}}},
				DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending})
			break
		}
	}
	if _, err := ctx.Planner.SubmitPlan(plan); err != nil {
		return err
	}
	done := eval.Copy()
	done.Status = sdk.EvalStatusComplete
	return ctx.Planner.UpdateEval(done)
}

// A scheduler runs against an in-memory cluster through the plugin ABI;
// the harness commits its plan and records what it did.
func ExampleHarness() {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 1000, 4096), sdktest.Node("n2", 4000, 4096))
	job := sdktest.Job("web", 3) // 500 MHz each
	h.UpsertJob(job)
	if err := h.Process(firstFit{}, h.RegisterEval(job)); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range h.AllocsByJob("default", "web") {
		fmt.Println(a.Name, "on", a.NodeID)
	}
	fmt.Println("eval:", h.Updated[0].Status)
	// Unordered output:
	// web.web[0] on n1
	// web.web[1] on n1
	// web.web[2] on n2
	// eval: complete
}

// RejectNodes makes the next plan commit only in part, as the host's plan
// applier does when a node filled up meanwhile: the scheduler sees a
// RefreshIndex and its state already refreshed.
func ExampleHarness_RejectNodes() {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 4096), sdktest.Node("n2", 4000, 4096))
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	h.RejectNodes("n1")
	_ = h.Process(firstFit{}, h.RegisterEval(job))
	res := h.Results[0]
	fmt.Println("rejected:", res.RejectedNodes, "refresh index set:", res.RefreshIndex > 0)
	// Output: rejected: [n1] refresh index set: true
}
