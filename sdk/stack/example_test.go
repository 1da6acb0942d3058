package stack_test

import (
	"fmt"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// A scheduler that picks nodes itself (here: the one with the most free
// memory) gives each placement the ports its group asks for with Assign; a
// node whose static port is taken cannot take another allocation.
func ExampleStack_Assign() {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("big", 4000, 8192), sdktest.Node("small", 4000, 2048))
	web := sdktest.Job("web", 3)
	web.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}}
	h.UpsertJob(web)
	state := mirror.New()
	if err := state.Apply(h.FullSync(false)); err != nil {
		fmt.Println(err)
		return
	}
	job := state.Job("default", "web")
	tg := job.TaskGroups[0]
	eval := h.RegisterEval(job)
	ctx := sdk.NewContext(state, nil, nil, time.Unix(0, 0), nil, eval.ID)
	plan := stack.NewPlan(state, eval, job)
	st := stack.New(ctx, plan, job, stack.ConfigFor(job.Type, state.SchedulerConfig()))
	for i := range tg.Count {
		name := sdk.AllocName(job.ID, tg.Name, i)
		var best *sdk.Node
		var held *sdk.AllocatedResources
		var bestFree int64 = -1
		var why string
		for _, n := range state.Nodes() {
			free := n.Capacity().MemoryMB - plan.Used(n.ID).MemoryMB
			if free <= bestFree {
				continue
			}
			r, dim := st.Assign(tg, n)
			if r == nil {
				why = dim
				continue
			}
			best, held, bestFree = n, r, free
		}
		if best == nil {
			fmt.Println(name, "not placed:", why)
			continue
		}
		a := plan.NewAllocation()
		*a = sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID, TaskGroup: tg.Name, Name: name,
			NodeID: best.ID, AllocatedResources: held, DesiredStatus: sdk.AllocDesiredStatusRun}
		plan.Place(a)
		fmt.Println(name, "on", best.ID, "port", held.Shared.Ports[0].Value)
	}
	// Output:
	// web.web[0] on big port 8080
	// web.web[1] on small port 8080
	// web.web[2] not placed: network: reserved port collision http=8080
}
