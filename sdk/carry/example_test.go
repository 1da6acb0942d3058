package carry_test

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// leastLoaded is a whole service and batch scheduler whose only policy of
// its own is its PickFunc: each allocation goes to the feasible node left
// with the most free memory. What to stop, replace, update in place or
// place, deployments, canaries, follow-up evals and failures are the SDK's.
type leastLoaded struct{}

func (leastLoaded) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	st, ns, id := ctx.State, eval.Namespace, eval.JobID
	var pass *carry.Pass
	var elig *feasible.Eligibility
	var blocked *sdk.Evaluation
	err := conclude.Retry(conclude.MaxServiceAttempts, func() (bool, bool, error) {
		job, allocs := st.Job(ns, id), st.AllocsByJob(ns, id)
		plan := stack.NewPlan(st, eval, job)
		elig = feasible.NewEligibility(job)
		in := reconcile.Input{Job: job, Namespace: ns, JobID: id, Allocs: allocs, Tainted: reconcile.TaintedNodes(st, allocs),
			EvalID: eval.ID, EvalPriority: eval.Priority, Now: ctx.Now, NewID: ctx.NewID}
		for _, a := range reconcile.StillRunningOnDownNodes(in.Tainted, allocs) {
			plan.Stop(a, reconcile.AllocLost, sdk.AllocClientStatusLost, "")
		}
		if in.Batch = job != nil && job.Type == sdk.JobTypeBatch; !in.Batch {
			in.Deployment = st.LatestDeployment(ns, id) // batch jobs roll out without deployments
		}
		var pick carry.PickFunc
		if !job.Stopped() {
			stk := stack.New(ctx, plan, job, stack.ConfigFor(job.Type, st.SchedulerConfig()))
			in.Update = stk.UpdateFunc(eval.ID) // in-place updates as the built-in schedulers decide them
			ready, _, _ := stack.ReadyNodes(st, job)
			checker := feasible.NewChecker()
			pick = func(pl carry.Placement) (*stack.Option, *sdk.AllocMetric) {
				m := &sdk.AllocMetric{}
				checks := feasible.NewGroupChecks(pl.Job, pl.Group)
				var best *stack.Option
				var bestFree int64 = -1
				for _, n := range ready {
					m.NodesEvaluated++
					if why := elig.Check(checker, checks, n); why != "" {
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
		}
		pass = carry.Out(carry.Input{Ctx: ctx, Eval: eval, Plan: plan, Result: reconcile.Compute(in),
			Deployment: in.Deployment, Pick: pick})
		var err error
		if blocked, err = pass.Block(elig, blocked); err != nil {
			return false, false, err
		}
		return pass.Submit()
	})
	return pass.Conclude(err, conclude.MaxServiceAttempts, blocked, elig, pass.DeploymentID)
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
