package carry_test

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// leastLoaded is a whole service and batch scheduler whose only policy of
// its own is its PickFunc: each allocation goes to the feasible node left
// with the most free memory. What to stop, replace, update in place or
// place, deployments, canaries, follow-up evals and failures are the SDK's
// (carry.Process). (carry.Scheduler is shorter still for a policy that
// only chooses among the nodes where a placement fits; a PickFunc may rank
// with the stack, preempt, or explain its choice its own way.)
type leastLoaded struct{}

func (leastLoaded) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	return carry.Process(ctx, eval, func(plan *stack.Plan, stk *stack.Stack, ready []*sdk.Node) carry.PickFunc {
		return func(pl carry.Placement) (*stack.Option, *sdk.AllocMetric) {
			m := &sdk.AllocMetric{}
			var best *stack.Option
			var bestFree int64 = -1
			for _, n := range ready {
				m.NodesEvaluated++
				if why := stk.Feasible(pl.Job, pl.Group, n); why != "" {
					m.FilterNode(n, why)
					continue
				}
				used, capacity := plan.Used(n.ID), n.Capacity()
				used.Add(sdk.GroupUsage(pl.Group))
				if ok, dim := used.Fits(capacity); !ok {
					m.ExhaustedNode(n, dim)
					continue
				}
				if capacity.MemoryMB-used.MemoryMB <= bestFree {
					continue
				}
				held, dim := stk.Assign(pl.Group, n) // ports, reserved cores, devices
				if held == nil {
					m.ExhaustedNode(n, dim)
					continue
				}
				best, bestFree = &stack.Option{Node: n, Resources: held}, capacity.MemoryMB-used.MemoryMB
			}
			return best, m
		}
	})
}

// A scheduler with a placement policy of its own gets the job's lifecycle
// from the SDK: here a new version replaces every allocation, each
// replacement placed by the policy.
func Example() {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("x", 4000, 2048), sdktest.Node("y", 4000, 1600))
	job := sdktest.Job("web", 3) // 256 MB each
	h.UpsertJob(job)
	next := job.Copy()
	next.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"image": "nginx:1.28"}
	for _, j := range []*sdk.Job{job, next} {
		h.UpsertJob(j)
		if err := h.Process(leastLoaded{}, h.RegisterEval(j)); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, a := range h.AllocsByJob("default", "web") {
		if !a.TerminalStatus() {
			fmt.Println(a.Name, "on", a.NodeID, "runs version", a.JobVersion)
		}
	}
	// Unordered output:
	// web.web[0] on x runs version 1
	// web.web[1] on x runs version 1
	// web.web[2] on y runs version 1
}
