package carry

import (
	"fmt"
	"slices"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/stack"
)

// Candidate is a node a placement may go to: ready, in the job's
// datacenters and node pool, passing every check of the placement's group
// (constraints, drivers, volumes, distinct hosts and properties, ...), and
// with room for it beside what the plan already puts there.
type Candidate struct {
	Node *sdk.Node
	// Used is what the node holds with the plan so far, without the
	// placement; Capacity is what it offers.
	Used, Capacity sdk.Usage
	// JobCount and GroupCount are how many allocations of the job, and of
	// the placement's group, the node holds with the plan so far (what a
	// policy that spreads or packs a job reads).
	JobCount, GroupCount int
}

// ChooseFunc is a placement policy: it returns the index of the candidate
// a placement goes to, or -1 to leave it unplaced; any other index fails
// the eval. Candidates come in the state's node order, and there is at
// least one. It must not keep the slice, which is reused.
type ChooseFunc func(pl Placement, candidates []Candidate) int

// Scheduler is a whole service and batch scheduler whose only policy of
// its own is Choose, the choice of a node among the candidates: the
// reconciler decides what to stop, replace, update in place or place, with
// deployments, canaries, rescheduling and lost allocations; the SDK checks
// feasibility and room, gives the allocation its ports, reserved cores and
// devices on the node chosen (a node where they are taken is dropped and
// Choose asked again), explains every placement (Metrics) and failure, and
// ends the eval as the built-in schedulers do, with a blocked eval for
// what found no node.
//
// It neither ranks with the stack nor preempts: a policy that needs those
// writes a PickFunc and the pass around it (see the package example).
type Scheduler struct {
	Choose ChooseFunc
}

var _ sdk.Scheduler = Scheduler{}

// Process implements sdk.Scheduler.
func (s Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	return Process(ctx, eval, s.picker)
}

// NewPickFunc returns the PickFunc of one attempt at an eval: its plan, its
// stack (whose Feasible, Assign and Eligibility a PickFunc may use), and
// the ready nodes of the job's datacenters and node pool.
type NewPickFunc func(plan *stack.Plan, stk *stack.Stack, ready []*sdk.Node) PickFunc

// Process is a whole service or batch eval carried out as the built-in
// generic scheduler carries it out (the reconciler, lost allocations,
// Out, blocked evals, Submit with retries, Conclude), with the placement
// policy of the PickFunc newPick returns for each attempt. Scheduler is
// Process with a PickFunc built from a ChooseFunc. The eval of a job of
// another type (system, sysbatch), which may name the plugin all the
// same, fails, saying so, unless the job is stopped.
func Process(ctx *sdk.Context, eval *sdk.Evaluation, newPick NewPickFunc) error {
	if refused, err := conclude.OtherType(ctx, eval, sdk.JobTypeService, sdk.JobTypeBatch); refused || err != nil {
		return err
	}
	st, ns, id := ctx.State, eval.Namespace, eval.JobID
	var pass *Pass
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
		var pick PickFunc
		if !job.Stopped() {
			stk := stack.New(ctx, plan, job, stack.ConfigFor(job.Type, st.SchedulerConfig()))
			elig = stk.Eligibility() // what the picker's checks record, for the blocked eval
			in.Update = stk.UpdateFunc(eval.ID)
			ready, _, byDC := stack.ReadyNodes(st, job)
			pick = poolExplained(newPick(plan, stk, ready), job, len(ready), byDC)
		}
		pass = Out(Input{Ctx: ctx, Eval: eval, Plan: plan, Result: reconcile.Compute(in), Deployment: in.Deployment, Pick: pick})
		var err error
		if blocked, err = pass.Block(elig, blocked); err != nil {
			return false, false, err
		}
		return pass.Submit()
	})
	return pass.Conclude(err, conclude.MaxServiceAttempts, blocked, elig, pass.DeploymentID)
}

// poolExplained returns pick with the node pool its placements were chosen
// from set on each metric pick returns without it (NodePool, NodesInPool,
// NodesAvailable), as the stack's selections set it: the blocked-eval
// metrics per datacenter and the "no nodes are available" of `job run`
// read NodesAvailable, and a policy of the plugin's own should not have to
// know that.
func poolExplained(pick PickFunc, job *sdk.Job, inPool int, byDC map[string]int) PickFunc {
	pool := job.NodePool
	if pool == "" {
		pool = sdk.DefaultNodePool
	}
	return func(pl Placement) (*stack.Option, *sdk.AllocMetric) {
		o, m := pick(pl)
		if m != nil && m.NodePool == "" {
			m.NodePool, m.NodesInPool, m.NodesAvailable = pool, inPool, byDC
		}
		return o, m
	}
}

// picker is the PickFunc that offers Choose the candidates among ready.
func (s Scheduler) picker(plan *stack.Plan, stk *stack.Stack, ready []*sdk.Node) PickFunc {
	var cands []Candidate
	return func(pl Placement) (*stack.Option, *sdk.AllocMetric) {
		m := &sdk.AllocMetric{}
		need := sdk.GroupUsage(pl.Group)
		cands = cands[:0]
		for _, n := range ready {
			m.NodesEvaluated++
			if why := stk.FeasibleFor(pl.Job, pl.Group, pl.Name, n); why != "" {
				m.FilterNode(n, why)
				continue
			}
			used, capacity := plan.Used(n.ID), n.Capacity()
			with := used
			with.Add(need)
			if ok, dim := with.Fits(capacity); !ok {
				m.ExhaustedNode(n, dim)
				continue
			}
			cands = append(cands, Candidate{Node: n, Used: used, Capacity: capacity,
				JobCount: plan.JobCount(n.ID), GroupCount: plan.GroupCount(pl.Group.Name, n.ID)})
		}
		for len(cands) > 0 {
			i := s.Choose(pl, cands)
			if i == -1 {
				return nil, m
			}
			if i < 0 || i >= len(cands) {
				// A bug in the policy: leaving the placement unplaced
				// would read as a cluster without room. The SDK turns
				// the panic into the eval's failure.
				panic(fmt.Sprintf("carry: Choose returned %d for %d candidates: want the index of one, or -1 for none", i, len(cands)))
			}
			n := cands[i].Node
			held, dim := stk.Assign(pl.Group, n)
			if held != nil {
				return &stack.Option{Node: n, Resources: held}, m
			}
			m.ExhaustedNode(n, dim)
			cands = slices.Delete(cands, i, i+1)
		}
		return nil, m
	}
}
