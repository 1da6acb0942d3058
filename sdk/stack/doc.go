// Package stack selects nodes for placements, as Nomad's generic and
// system stacks do, over a plan that keeps its own per-node accounting.
//
// A scheduler builds one Plan per attempt at an evaluation and one Stack
// over it:
//
//	plan := stack.NewPlan(ctx.State, eval, job)
//	st := stack.New(ctx, plan, job, stack.ConfigFor(job.Type, ctx.State.SchedulerConfig()))
//	nodes, _, byDC := stack.ReadyNodes(ctx.State, job)
//	stack.Shuffle(nodes, ctx.Rand()) // service and batch: seeded from the eval
//	st.SetNodes(nodes, byDC)
//	st.Expect(len(placements))
//	for _, tg := range placements {
//		option, metric := st.Select(tg, stack.Options{})
//		// option == nil: metric says why (FailedTGAllocs); otherwise place
//		// an allocation on option.Node with option.Resources through
//		// plan.Place (and plan.Preempt for option.Preempted).
//	}
//	st.Release()
//	ctx.Planner.SubmitPlan(plan.Plan)
//
// Select walks the nodes round-robin from where the last selection stopped
// and ranks up to Nomad's limit of feasible nodes (RankLimit); SelectOn
// ranks one given node (system jobs, in-place updates). Feasibility is
// cached per computed node class and per node, fit per node until the plan
// changes that node, and nodes that failed their checks are skipped in
// bulk; every change to the plan goes through Plan's methods so that usage,
// job counts, spread and distinct_property counts stay exact. With spreads
// or affinities, where Nomad's limit makes every selection rank about every
// feasible node, a rank index finds the few nodes that decide the
// selection and ranks only those, with the same outcome (rankindex.go).
//
// A scheduler that chooses nodes its own way (see examples/plugins/zones)
// still builds on a Plan and a Stack: Plan.Used, JobCount and GroupCount
// say what a node holds after the plan, Stack.Assign hands out the ports,
// reserved cores and devices of a placement on the node it chose (the host
// refuses a placement without its ports), and Stack.UpdateFunc decides the
// reconciler's in-place updates. Package sdk/carry carries out the
// reconciler's result in the Plan, asking the scheduler only for each
// placement's node (its PickFunc has Select's signature).
package stack
