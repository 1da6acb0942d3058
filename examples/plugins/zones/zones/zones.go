// Package zones is a zone-balancing scheduler: it spreads every task group
// of a job evenly over the cluster's failure zones, then packs tightly
// within the chosen zone. The zone of a node is a node attribute or meta
// key named by the plugin's configuration (zone_attribute, default
// "meta.zone"); nodes without it form the zone "".
//
// It is an example of a scheduler built with Drover's SDK outside the
// Drover tree's built-ins: it reads the state mirror, reuses the SDK's
// feasibility checks and eval conclusions, and writes only through the
// planner.
package zones

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/feasible"
)

// ConfigZoneAttribute names the node attribute ("attr.X" or "X") or meta
// key ("meta.X") that holds a node's zone.
const ConfigZoneAttribute = "zone_attribute"

// DefaultZoneAttribute is used when the configuration names none.
const DefaultZoneAttribute = "meta.zone"

// Scheduler balances allocations over zones. Its zero value is ready.
type Scheduler struct{}

var _ sdk.Scheduler = Scheduler{}

// Process implements sdk.Scheduler.
func (Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	p := &pass{ctx: ctx, eval: eval, attr: ctx.Config[ConfigZoneAttribute]}
	if p.attr == "" {
		p.attr = DefaultZoneAttribute
	}
	err := conclude.Retry(conclude.MaxServiceAttempts, func() (bool, bool, error) {
		plan := p.compute()
		if plan.IsNoOp() {
			return true, false, nil
		}
		res, err := ctx.Planner.SubmitPlan(plan)
		if err != nil {
			return false, false, err
		}
		full, _, _ := res.FullCommit(plan)
		return full && res.RefreshIndex == 0, conclude.Progress(res), nil
	})
	switch {
	case err == nil:
	case errors.Is(err, conclude.ErrMaxAttempts):
		b, berr := conclude.Blocked(ctx, eval, p.elig, nil, true)
		if berr != nil {
			return berr
		}
		return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusComplete,
			Description: "maximum attempts reached", Blocked: b})
	default:
		return err
	}
	out := conclude.Outcome{Status: sdk.EvalStatusComplete, Queued: p.queued}
	if len(p.failed) == 0 {
		return conclude.SetStatus(ctx, eval, out)
	}
	if eval.Status == sdk.EvalStatusBlocked {
		return conclude.Reblock(ctx, eval, p.elig, p.failed, p.queued)
	}
	b, err := conclude.Blocked(ctx, eval, p.elig, p.failed, false)
	if err != nil {
		return err
	}
	out.Blocked, out.Failed = b, p.failed
	return conclude.SetStatus(ctx, eval, out)
}

// pass computes one plan from the current state.
type pass struct {
	ctx  *sdk.Context
	eval *sdk.Evaluation
	attr string

	elig    *feasible.Eligibility
	checker *feasible.Checker
	plan    *sdk.Plan
	planned map[string]sdk.Usage // usage this plan adds, by node
	queued  map[string]int
	failed  map[string]*sdk.AllocMetric
}

// zoneOf returns a node's zone.
func (p *pass) zoneOf(n *sdk.Node) string {
	if k, ok := strings.CutPrefix(p.attr, "meta."); ok {
		return n.Meta[k]
	}
	return n.Attributes[strings.TrimPrefix(p.attr, "attr.")]
}

func (p *pass) compute() *sdk.Plan {
	st := p.ctx.State
	job := st.Job(p.eval.Namespace, p.eval.JobID)
	p.plan = &sdk.Plan{EvalID: p.eval.ID, Priority: p.eval.Priority, Job: job, SnapshotIndex: st.Index()}
	p.planned, p.queued, p.failed = map[string]sdk.Usage{}, map[string]int{}, map[string]*sdk.AllocMetric{}
	allocs := st.AllocsByJob(p.eval.Namespace, p.eval.JobID)
	if job.Stopped() {
		for _, a := range allocs {
			if !a.TerminalStatus() {
				p.plan.AppendStoppedAlloc(a, "alloc not needed due to job update", "")
			}
		}
		return p.plan
	}
	p.plan.AllAtOnce = job.AllAtOnce
	p.elig, p.checker = feasible.NewEligibility(job), feasible.NewChecker()
	for _, tg := range job.TaskGroups {
		p.placeGroup(job, tg, allocs)
	}
	// Stop what belongs to groups the job no longer has.
	for _, a := range allocs {
		if !a.TerminalStatus() && job.LookupTaskGroup(a.TaskGroup) == nil {
			p.plan.AppendStoppedAlloc(a, "alloc not needed due to job update", "")
		}
	}
	return p.plan
}

func (p *pass) placeGroup(job *sdk.Job, tg *sdk.TaskGroup, allocs []*sdk.Allocation) {
	st := p.ctx.State
	checks := feasible.NewGroupChecks(job, tg)
	metric := &sdk.AllocMetric{NodesAvailable: map[string]int{}}
	byZone := map[string][]*sdk.Node{}
	for _, n := range st.Nodes() {
		if !n.Ready() || !feasible.DatacenterMatches(job.Datacenters, n.Datacenter) || !feasible.PoolMatches(job.NodePool, n.NodePool) {
			continue
		}
		metric.NodesInPool++
		metric.NodesEvaluated++
		if reason := p.elig.Check(p.checker, checks, n); reason != "" {
			metric.FilterNode(n, reason)
			continue
		}
		z := p.zoneOf(n)
		byZone[z] = append(byZone[z], n)
	}
	// Count the group's live allocations per zone and find missing indexes.
	count := map[string]int{}
	have := map[int]bool{}
	for _, a := range allocs {
		if a.TerminalStatus() || a.TaskGroup != tg.Name {
			continue
		}
		i := a.Index()
		if i < 0 || i >= tg.Count || have[i] {
			p.plan.AppendStoppedAlloc(a, "alloc not needed due to job update", "")
			continue
		}
		have[i] = true
		if n := st.Node(a.NodeID); n != nil {
			count[p.zoneOf(n)]++
		}
	}
	zones := make([]string, 0, len(byZone))
	for z := range byZone {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	need := sdk.GroupUsage(tg)
	p.queued[tg.Name] = 0
	for idx := 0; idx < tg.Count; idx++ {
		if have[idx] {
			continue
		}
		node, zone := p.pick(zones, byZone, count, need, metric)
		if node == nil {
			p.queued[tg.Name]++
			if prev := p.failed[tg.Name]; prev != nil {
				prev.CoalescedFailures++
			} else {
				p.failed[tg.Name] = metric
			}
			continue
		}
		count[zone]++
		u := p.planned[node.ID]
		u.Add(need)
		p.planned[node.ID] = u
		p.plan.AppendAlloc(&sdk.Allocation{
			ID: p.ctx.NewID(), Namespace: job.Namespace, EvalID: p.eval.ID, Name: sdk.AllocName(job.ID, tg.Name, idx),
			NodeID: node.ID, NodeName: node.Name, JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name,
			AllocatedResources: sdk.RequestedResources(tg), Metrics: metric,
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
		})
	}
}

// pick returns the fullest node that fits need in the least loaded zone
// that has room (zones in name order break ties).
func (p *pass) pick(zones []string, byZone map[string][]*sdk.Node, count map[string]int, need sdk.Usage, metric *sdk.AllocMetric) (*sdk.Node, string) {
	order := slices.Clone(zones)
	slices.SortStableFunc(order, func(a, b string) int { return count[a] - count[b] })
	for _, z := range order {
		var best *sdk.Node
		bestScore := math.Inf(-1)
		for _, n := range byZone[z] {
			used := p.ctx.State.NodeUsage(n.ID)
			used.Add(p.planned[n.ID])
			used.Add(need)
			capacity := n.Capacity()
			if ok, dim := used.Fits(capacity); !ok {
				metric.ExhaustedNode(n, dim)
				continue
			}
			// Best fit: the fuller the node after placing, the better.
			score := float64(used.CPU)/float64(max(capacity.CPU, 1)) + float64(used.MemoryMB)/float64(max(capacity.MemoryMB, 1))
			if score > bestScore {
				best, bestScore = n, score
			}
		}
		if best != nil {
			return best, z
		}
	}
	return nil, ""
}
