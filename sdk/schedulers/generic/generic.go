// Package generic is the scheduler for service and batch jobs: it
// reconciles a job's allocations with its task groups, places what is
// missing on feasible nodes by best-fit bin packing, and stops what is not
// wanted.
package generic

import (
	"fmt"
	"math"
	"slices"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

// MaxPlanAttempts bounds how often a partially rejected plan is retried.
const (
	maxServiceAttempts = 5
	maxBatchAttempts   = 2
)

// Scheduler schedules service (Batch false) or batch jobs.
type Scheduler struct {
	Batch bool
}

var _ sdk.Scheduler = (*Scheduler)(nil)

// Process implements sdk.Scheduler.
func (s *Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	attempts := maxServiceAttempts
	if s.Batch {
		attempts = maxBatchAttempts
	}
	var st *evalState
	for i := 0; i < attempts; i++ {
		st = newEvalState(ctx, eval)
		plan := st.computePlan()
		if plan.IsNoOp() {
			return st.finish(sdk.EvalStatusComplete, "")
		}
		result, err := ctx.Planner.SubmitPlan(plan)
		if err != nil {
			return fmt.Errorf("generic: submit plan: %w", err)
		}
		if full, _, _ := result.FullCommit(plan); full && result.RefreshIndex == 0 {
			return st.finish(sdk.EvalStatusComplete, "")
		}
		// Part of the plan was rejected; the state has been refreshed: retry.
	}
	return st.finishMaxAttempts()
}

// evalState is one pass over one evaluation.
type evalState struct {
	ctx     *sdk.Context
	eval    *sdk.Evaluation
	job     *sdk.Job
	checker *feasible.Checker
	plan    *sdk.Plan
	// planned is usage added to nodes by this plan.
	planned map[string]sdk.Usage
	queued  map[string]int
	failed  map[string]*sdk.AllocMetric
	classOK map[string]bool
}

func newEvalState(ctx *sdk.Context, eval *sdk.Evaluation) *evalState {
	job := ctx.State.Job(eval.Namespace, eval.JobID)
	return &evalState{
		ctx: ctx, eval: eval, job: job, checker: feasible.NewChecker(),
		plan:    &sdk.Plan{EvalID: eval.ID, Priority: eval.Priority, Job: job, SnapshotIndex: ctx.State.Index()},
		planned: map[string]sdk.Usage{}, queued: map[string]int{},
		failed: map[string]*sdk.AllocMetric{}, classOK: map[string]bool{},
	}
}

func (st *evalState) computePlan() *sdk.Plan {
	allocs := st.ctx.State.AllocsByJob(st.eval.Namespace, st.eval.JobID)
	if st.job.Stopped() {
		for _, a := range allocs {
			if !a.TerminalStatus() {
				st.plan.AppendStoppedAlloc(a, "alloc not needed due to job update", "")
			}
		}
		return st.plan
	}
	st.plan.AllAtOnce = st.job.AllAtOnce
	byGroup := map[string]map[int]*sdk.Allocation{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		tg := st.job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			st.plan.AppendStoppedAlloc(a, "alloc not needed due to job update", "")
			continue
		}
		if byGroup[tg.Name] == nil {
			byGroup[tg.Name] = map[int]*sdk.Allocation{}
		}
		idx := a.Index()
		if _, dup := byGroup[tg.Name][idx]; dup || idx < 0 || idx >= tg.Count {
			st.plan.AppendStoppedAlloc(a, "alloc not needed due to job update", "")
			continue
		}
		byGroup[tg.Name][idx] = a
	}
	nodes := st.candidateNodes()
	for _, tg := range st.job.TaskGroups {
		st.queued[tg.Name] = 0
		for idx := 0; idx < tg.Count; idx++ {
			if _, ok := byGroup[tg.Name][idx]; ok {
				continue
			}
			st.place(tg, idx, nodes)
		}
	}
	return st.plan
}

// candidateNodes returns ready nodes in the job's datacenters and pool.
func (st *evalState) candidateNodes() []*sdk.Node {
	var out []*sdk.Node
	for _, n := range st.ctx.State.Nodes() {
		if !n.Ready() || !feasible.DatacenterMatches(st.job.Datacenters, n.Datacenter) || !feasible.PoolMatches(st.job.NodePool, n.NodePool) {
			continue
		}
		out = append(out, n)
	}
	return out
}

func (st *evalState) place(tg *sdk.TaskGroup, idx int, nodes []*sdk.Node) {
	need := sdk.GroupUsage(tg)
	metric := &sdk.AllocMetric{NodesInPool: len(nodes), NodesAvailable: map[string]int{}}
	var best *sdk.Node
	bestScore := math.Inf(-1)
	for _, n := range nodes {
		metric.NodesEvaluated++
		if check := st.infeasible(tg, n); check != "" {
			metric.FilterNode(n, check)
			st.classOK[n.ComputedClass] = st.classOK[n.ComputedClass] || false
			continue
		}
		st.classOK[n.ComputedClass] = true
		used := st.ctx.State.NodeUsage(n.ID)
		used.Add(st.planned[n.ID])
		used.Add(need)
		capacity := n.Capacity()
		if ok, dim := used.Fits(capacity); !ok {
			metric.ExhaustedNode(n, dim)
			continue
		}
		if score := binpackScore(used, capacity); score > bestScore {
			best, bestScore = n, score
		}
	}
	if best == nil {
		st.queued[tg.Name]++
		if prev := st.failed[tg.Name]; prev != nil {
			prev.CoalescedFailures++
		} else {
			st.failed[tg.Name] = metric
		}
		return
	}
	metric.Scores = map[string]float64{best.ID + ".binpack": bestScore}
	u := st.planned[best.ID]
	u.Add(need)
	st.planned[best.ID] = u
	st.plan.AppendAlloc(&sdk.Allocation{
		ID: st.ctx.NewID(), Namespace: st.job.Namespace, EvalID: st.eval.ID,
		Name: sdk.AllocName(st.job.ID, tg.Name, idx), NodeID: best.ID, NodeName: best.Name,
		JobID: st.job.ID, JobVersion: st.job.Version, TaskGroup: tg.Name,
		AllocatedResources: allocatedResources(tg), Metrics: metric,
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
	})
}

// infeasible returns the name of the first check node fails for tg, or "".
func (st *evalState) infeasible(tg *sdk.TaskGroup, n *sdk.Node) string {
	for _, c := range st.job.Constraints {
		if !st.checker.Meets(c, n) {
			return c.String()
		}
	}
	for _, c := range tg.Constraints {
		if !st.checker.Meets(c, n) {
			return c.String()
		}
	}
	for _, t := range tg.Tasks {
		if t.Driver != "" && !n.HasDriver(t.Driver) {
			return "missing drivers"
		}
		for _, c := range t.Constraints {
			if !st.checker.Meets(c, n) {
				return c.String()
			}
		}
	}
	return ""
}

// binpackScore is Nomad's best-fit score: higher when the node is fuller,
// from 0 (empty) to 18 (full), over CPU and memory.
func binpackScore(used, capacity sdk.Usage) float64 {
	if capacity.CPU <= 0 || capacity.MemoryMB <= 0 {
		return 0
	}
	freeCPU := 1 - float64(used.CPU)/float64(capacity.CPU)
	freeMem := 1 - float64(used.MemoryMB)/float64(capacity.MemoryMB)
	total := math.Pow(10, freeCPU) + math.Pow(10, freeMem)
	return math.Max(0, 20-total)
}

func allocatedResources(tg *sdk.TaskGroup) *sdk.AllocatedResources {
	ar := &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{}}
	for _, t := range tg.Tasks {
		tr := &sdk.AllocatedTaskResources{}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(t.Resources.CPU)
			tr.Memory.MemoryMB = int64(t.Resources.MemoryMB)
			tr.Memory.MemoryMaxMB = int64(t.Resources.MemoryMaxMB)
		}
		ar.Tasks[t.Name] = tr
	}
	if tg.EphemeralDisk != nil {
		ar.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	return ar
}

// finish writes the eval's outcome, creating a blocked eval when some
// allocations could not be placed.
func (st *evalState) finish(status, desc string) error {
	e := st.eval.Copy()
	e.Status = status
	e.StatusDescription = desc
	e.QueuedAllocations = st.queued
	e.SnapshotIndex = st.ctx.State.Index()
	if len(st.failed) > 0 {
		e.FailedTGAllocs = st.failed
		if st.eval.Status != sdk.EvalStatusBlocked {
			blocked := e.CreateBlockedEval(st.ctx.NewID(), st.classEligibility(), false, "", st.failed, false)
			if err := st.ctx.Planner.CreateEval(blocked); err != nil {
				return fmt.Errorf("generic: create blocked eval: %w", err)
			}
			e.BlockedEval = blocked.ID
		} else {
			// A blocked eval that still cannot place goes back to the tracker.
			re := st.eval.Copy()
			re.FailedTGAllocs = st.failed
			re.ClassEligibility = st.classEligibility()
			re.QueuedAllocations = st.queued
			return st.ctx.Planner.ReblockEval(re)
		}
	}
	return st.ctx.Planner.UpdateEval(e)
}

func (st *evalState) classEligibility() map[string]bool {
	m := make(map[string]bool, len(st.classOK))
	keys := make([]string, 0, len(st.classOK))
	for k := range st.classOK {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		m[k] = st.classOK[k]
	}
	return m
}

// finishMaxAttempts ends an eval whose plans kept being rejected: it is
// complete, and a max-plan-attempts blocked eval takes over.
func (st *evalState) finishMaxAttempts() error {
	e := st.eval.Copy()
	e.Status = sdk.EvalStatusComplete
	e.StatusDescription = "maximum attempts reached"
	blocked := e.CreateBlockedEval(st.ctx.NewID(), st.classEligibility(), false, "", nil, true)
	if err := st.ctx.Planner.CreateEval(blocked); err != nil {
		return fmt.Errorf("generic: create max-plan-attempts eval: %w", err)
	}
	e.BlockedEval = blocked.ID
	return st.ctx.Planner.UpdateEval(e)
}
