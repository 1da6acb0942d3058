package feasible_test

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// A scheduler that picks nodes itself honours distinct_hosts by skipping
// the nodes where the plan already holds an allocation of the job.
func ExampleDistinctHostsEnabled() {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 4096), sdktest.Node("n2", 4000, 4096))
	job := sdktest.Job("web", 3)
	job.Constraints = []*sdk.Constraint{{Operand: sdk.ConstraintDistinctHosts}}
	h.UpsertJob(job)
	state := mirror.New()
	if err := state.Apply(h.FullSync(false)); err != nil {
		fmt.Println(err)
		return
	}
	job = state.Job("default", "web")
	tg := job.TaskGroups[0]
	plan := stack.NewPlan(state, h.RegisterEval(job), job)
	jobDistinct := feasible.DistinctHostsEnabled(job.Constraints)
	groupDistinct := feasible.DistinctHostsEnabled(tg.Constraints)
	for i := range tg.Count {
		name := sdk.AllocName(job.ID, tg.Name, i)
		var node *sdk.Node
		for _, n := range state.Nodes() {
			if (jobDistinct && plan.JobCount(n.ID) > 0) || (groupDistinct && plan.GroupCount(tg.Name, n.ID) > 0) {
				continue // feasible.FilterDistinctHosts
			}
			node = n
			break
		}
		if node == nil {
			fmt.Println(name, "cannot be placed: no distinct host left")
			continue
		}
		a := plan.NewAllocation()
		*a = sdk.Allocation{ID: fmt.Sprint("a", i), Namespace: job.Namespace, JobID: job.ID, TaskGroup: tg.Name,
			Name: name, NodeID: node.ID, AllocatedResources: sdk.RequestedResources(tg),
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending}
		plan.Place(a)
		fmt.Println(name, "on", node.ID)
	}
	// Output:
	// web.web[0] on n1
	// web.web[1] on n2
	// web.web[2] cannot be placed: no distinct host left
}
