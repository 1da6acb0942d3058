// Package zones is a zone-balancing scheduler: it spreads every task group
// of a job evenly over the cluster's failure zones, then packs tightly
// within the chosen zone. The zone of a node is a node attribute or meta
// key named by the plugin's configuration (zone_attribute, default
// "meta.zone"); nodes without it form the zone "". The plugin checks its
// configuration when the agent loads it (CheckConfig), so that a typo
// stops the load rather than putting every node in the zone "".
//
// It is an example of a scheduler built with Drover's SDK outside the
// Drover tree's built-ins: it reads the state mirror, lets the SDK's
// reconciler decide what the job needs and sdk/carry carry it out in the
// plan (as the built-in service scheduler does: new versions rolled out in
// place or by replacement within a deployment, canaries, scaling, lost and
// failed allocations replaced), chooses nodes itself (pick, its
// carry.PickFunc) with the SDK's feasibility checks, ends the eval with
// the SDK's conclusions, and writes only through the planner.
package zones

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/stack"
)

// ConfigZoneAttribute names the node attribute ("attr.X" or "X") or meta
// key ("meta.X") that holds a node's zone.
const ConfigZoneAttribute = "zone_attribute"

// DefaultZoneAttribute is used when the configuration names none.
const DefaultZoneAttribute = "meta.zone"

// Scheduler balances allocations over zones. Its zero value is ready.
type Scheduler struct{}

var (
	_ sdk.Scheduler     = Scheduler{}
	_ sdk.ConfigChecker = Scheduler{}
)

// CheckConfig implements sdk.ConfigChecker: the agent asks it when it
// loads the plugin, and refuses the load with its error. zones takes
// zone_attribute alone, which, when set, must name a node attribute
// ("attr.X" or "X") or meta key ("meta.X").
func (Scheduler) CheckConfig(config map[string]string) error {
	if err := sdk.CheckConfigKeys(config, ConfigZoneAttribute); err != nil {
		return err
	}
	_, err := zoneAttribute(config)
	return err
}

// zoneAttribute returns the attribute or meta key the configuration
// names, DefaultZoneAttribute when it names none, or why the name it
// holds names nothing a node has.
func zoneAttribute(config map[string]string) (string, error) {
	v, ok := config[ConfigZoneAttribute]
	if !ok {
		return DefaultZoneAttribute, nil
	}
	bad := func(why string, args ...any) (string, error) {
		return "", fmt.Errorf("%s = %q: %s", ConfigZoneAttribute, v, fmt.Sprintf(why, args...))
	}
	if v == "" {
		return bad(`empty: name a node attribute ("attr.X" or "X") or meta key ("meta.X"), or leave it out for %q`, DefaultZoneAttribute)
	}
	if inner, ok := strings.CutPrefix(v, "${"); ok && strings.HasSuffix(inner, "}") {
		return bad("write the name without ${ }: %q", strings.TrimSuffix(inner, "}"))
	}
	if strings.HasPrefix(v, "node.") {
		return bad(`zones reads node attributes ("attr.X" or "X") and meta keys ("meta.X"), not the node's own fields`)
	}
	name := v
	if rest, ok := strings.CutPrefix(v, "meta."); ok {
		name = rest
	} else if rest, ok := strings.CutPrefix(v, "attr."); ok {
		name = rest
	}
	if name == "" {
		return bad("names no key after the prefix")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return bad("%q cannot be part of an attribute or meta key (letters, digits, '_', '-' and '.')", r)
		}
	}
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return bad("a name's dotted parts cannot be empty")
	}
	return v, nil
}

// Process implements sdk.Scheduler.
func (Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	attr, err := zoneAttribute(ctx.Config)
	if err != nil {
		// A host older than ABI 1.7 does not check the configuration at
		// load: the eval fails, saying what is wrong with it.
		return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusFailed, Description: "zones: config " + err.Error()})
	}
	if refused, err := conclude.OtherType(ctx, eval, sdk.JobTypeService, sdk.JobTypeBatch); refused || err != nil {
		return err
	}
	p := &pass{ctx: ctx, eval: eval, attr: attr}
	var blocked *sdk.Evaluation
	err = conclude.Retry(conclude.MaxServiceAttempts, func() (bool, bool, error) {
		p.compute()
		var err error
		if blocked, err = p.carried.Block(p.elig, blocked); err != nil {
			return false, false, err
		}
		return p.carried.Submit()
	})
	// The eval names the deployment, so that `drover job run` follows it.
	return p.carried.Conclude(err, conclude.MaxServiceAttempts, blocked, p.elig, p.carried.DeploymentID)
}

// pass computes one plan from the current state.
type pass struct {
	ctx  *sdk.Context
	eval *sdk.Evaluation
	attr string

	elig    *feasible.Eligibility
	checker *feasible.Checker
	plan    *stack.Plan
	stack   *stack.Stack
	groups  map[string]*group // by task group name, when there is something to place
	carried *carry.Pass
}

// zoneOf returns a node's zone.
func (p *pass) zoneOf(n *sdk.Node) string {
	if k, ok := strings.CutPrefix(p.attr, "meta."); ok {
		return n.Meta[k]
	}
	return n.Attributes[strings.TrimPrefix(p.attr, "attr.")]
}

// compute reconciles the job as the built-in service scheduler does (what
// to stop, replace, update in place or place, and the deployment that
// tracks it) and carries the result out in a plan, choosing the nodes for
// placements itself (pick).
func (p *pass) compute() {
	st := p.ctx.State
	ns, id := p.eval.Namespace, p.eval.JobID
	job := st.Job(ns, id)
	allocs := st.AllocsByJob(ns, id)
	plan := stack.NewPlan(st, p.eval, job)
	p.plan, p.stack, p.groups = plan, nil, nil
	p.elig, p.checker = feasible.NewEligibility(job), feasible.NewChecker()
	batch := job != nil && job.Type == sdk.JobTypeBatch
	var latest *sdk.Deployment
	if !batch {
		latest = st.LatestDeployment(ns, id) // batch jobs roll out without deployments
	}
	tainted := reconcile.TaintedNodes(st, allocs)
	for _, a := range reconcile.StillRunningOnDownNodes(tainted, allocs) {
		plan.Stop(a, reconcile.AllocLost, sdk.AllocClientStatusLost, "")
	}
	var update reconcile.UpdateFunc
	if !job.Stopped() {
		// The stack decides in-place updates and hands out ports, cores
		// and devices; zones picks the nodes.
		p.stack = stack.New(p.ctx, plan, job, stack.ConfigFor(job.Type, st.SchedulerConfig()))
		update = p.stack.UpdateFunc(p.eval.ID)
	}
	res := reconcile.Compute(reconcile.Input{
		Job: job, Namespace: ns, JobID: id, Batch: batch, Allocs: allocs, Tainted: tainted,
		Deployment: latest, EvalID: p.eval.ID, EvalPriority: p.eval.Priority,
		Now: p.ctx.Now, Update: update, NewID: p.ctx.NewID,
	})
	if len(res.Place)+len(res.Destructive) != 0 {
		p.groups = p.zones(job, allocs, res.Stop)
	}
	p.carried = carry.Out(carry.Input{Ctx: p.ctx, Eval: p.eval, Plan: plan, Result: res, Deployment: latest, Pick: p.pick})
}

// pick chooses the node of one placement (carry.PickFunc): replacements
// come first, each taking its old allocation's place in the zone counts.
func (p *pass) pick(pl carry.Placement) (*stack.Option, *sdk.AllocMetric) {
	g := p.groups[pl.TaskGroup.Name]
	if pl.Destructive {
		g.count[g.zoneOfAlloc[pl.Previous.ID]]--
	}
	node, zone, res, metric := p.fullest(g, pl.Group)
	if node == nil {
		if pl.Destructive {
			g.count[g.zoneOfAlloc[pl.Previous.ID]]++
		}
		return nil, metric
	}
	g.count[zone]++
	return &stack.Option{Node: node, Resources: res}, metric
}

// group is what placing a task group's allocations needs: its feasible
// nodes by zone, and how many of its live allocations each zone holds.
type group struct {
	zones       []string // in name order
	byZone      map[string][]*sdk.Node
	count       map[string]int
	zoneOfAlloc map[string]string
	// filtered is what filtering the nodes found, where each placement's
	// metric starts (a copy: its maps are only read from then on).
	filtered sdk.AllocMetric
}

// zones sorts the feasible nodes of each task group into zones and counts
// the group's live allocations there that are not stopped.
func (p *pass) zones(job *sdk.Job, allocs []*sdk.Allocation, stops []reconcile.Stop) map[string]*group {
	st := p.ctx.State
	ready, _, byDC := stack.ReadyNodes(st, job)
	stopped := map[string]bool{}
	for _, s := range stops {
		stopped[s.Alloc.ID] = true
	}
	out := map[string]*group{}
	for _, tg := range job.TaskGroups {
		g := &group{byZone: map[string][]*sdk.Node{}, count: map[string]int{}, zoneOfAlloc: map[string]string{},
			filtered: sdk.AllocMetric{NodesAvailable: byDC, NodesInPool: len(ready)}}
		checks := feasible.NewGroupChecks(job, tg)
		for _, n := range ready {
			g.filtered.NodesEvaluated++
			if reason := p.elig.Check(p.checker, checks, n); reason != "" {
				g.filtered.FilterNode(n, reason)
				continue
			}
			z := p.zoneOf(n)
			if _, ok := g.byZone[z]; !ok {
				g.zones = append(g.zones, z)
			}
			g.byZone[z] = append(g.byZone[z], n)
		}
		slices.Sort(g.zones)
		for _, a := range allocs {
			if a.TaskGroup != tg.Name || a.TerminalStatus() {
				continue
			}
			if n := st.Node(a.NodeID); n != nil {
				z := p.zoneOf(n)
				g.zoneOfAlloc[a.ID] = z
				if !stopped[a.ID] {
					g.count[z]++
				}
			}
		}
		out[tg.Name] = g
	}
	return out
}

// fullest returns the fullest node that fits an allocation of tg in the
// least loaded zone that has room (zones in name order break ties), what
// the allocation holds there (ports assigned), and the metric that
// explains the choice, or why there was none.
func (p *pass) fullest(g *group, tg *sdk.TaskGroup) (*sdk.Node, string, *sdk.AllocatedResources, *sdk.AllocMetric) {
	metric := g.filtered
	need := sdk.GroupUsage(tg)
	order := slices.Clone(g.zones)
	slices.SortStableFunc(order, func(a, b string) int { return g.count[a] - g.count[b] })
	for _, z := range order {
		var best *sdk.Node
		var bestRes *sdk.AllocatedResources
		bestScore := math.Inf(-1)
		for _, n := range g.byZone[z] {
			used := p.plan.Used(n.ID)
			used.Add(need)
			capacity := n.Capacity()
			if ok, dim := used.Fits(capacity); !ok {
				metric.ExhaustedNode(n, dim)
				continue
			}
			// Best fit: the fuller the node after placing, the better.
			score := float64(used.CPU)/float64(max(capacity.CPU, 1)) + float64(used.MemoryMB)/float64(max(capacity.MemoryMB, 1))
			if score <= bestScore {
				continue
			}
			res, dim := p.stack.Assign(tg, n)
			if res == nil {
				metric.ExhaustedNode(n, dim)
				continue
			}
			best, bestRes, bestScore = n, res, score
		}
		if best != nil {
			return best, z, bestRes, &metric
		}
	}
	return nil, "", nil, &metric
}
