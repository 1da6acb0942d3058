// Package carry carries out what the reconciler decided for a service or
// batch job (a reconcile.Result) in a plan (a stack.Plan): it stops,
// annotates and updates in place what the result says, sets the plan's
// deployment and deployment updates, replaces allocations destructively
// (keeping the old one when its replacement finds no room), places new
// allocations in the deployment they join, runs the version already
// deployed where canaries await promotion, and explains per task group
// what could not be placed (Out). Then it submits the plan, creating the
// follow-up evals its stops name first (Pass.Submit).
//
// A policy that only chooses among the nodes where a placement fits needs
// no more than Scheduler: a ChooseFunc, and the SDK does the rest, the
// pass below included.
//
// Only the choice of a node is the scheduler's own: a PickFunc, called for
// each placement Out tries, in turn. The built-in generic scheduler picks with the
// stack's ranking (stack.Stack.Select, whose signature a PickFunc shares);
// examples/plugins/zones picks by zone balance. A plugin with its own
// placement policy writes the PickFunc and reuses the rest with Process;
// what Process does, for a plugin that would change more of it:
//
//	err := conclude.Retry(conclude.MaxServiceAttempts, func() (bool, bool, error) {
//		plan := stack.NewPlan(ctx.State, eval, job)
//		st := stack.New(ctx, plan, job, stack.ConfigFor(job.Type, ctx.State.SchedulerConfig()))
//		// lost allocations on down nodes: see reconcile.StillRunningOnDownNodes
//		res := reconcile.Compute(reconcile.Input{..., Deployment: latest, Update: st.UpdateFunc(eval.ID)})
//		pass = carry.Out(carry.Input{Ctx: ctx, Eval: eval, Plan: plan, Result: res, Deployment: latest,
//			Pick: func(pl carry.Placement) (*stack.Option, *sdk.AllocMetric) {
//				// choose a node for pl.Group of pl.Job; st.Assign gives it
//				// its ports, cores and devices there
//			}})
//		// what found no node waits in a blocked eval (one per eval)
//		if blocked, err = pass.Block(st.Eligibility(), blocked); err != nil {
//			return false, false, err
//		}
//		return pass.Submit()
//	})
//	// the eval's outcome: complete, reblocked, or failed after too many
//	// attempts, with what could not be placed and the queued counts
//	return pass.Conclude(err, conclude.MaxServiceAttempts, blocked, st.Eligibility(), pass.DeploymentID)
//
// Block and Conclude end an eval as the built-in generic scheduler does;
// a plugin that wants another ending writes its own with package conclude.
//
// Out decides nothing itself: every choice in it is the reconciler's (what
// to place, stop or update, which deployment, which version) or Nomad's
// generic scheduler's (a destructive update stops the old allocation
// before its replacement is picked, so that the replacement may take its
// room; once a group could not be placed, its further placements in the
// pass are counted, not tried).
package carry
