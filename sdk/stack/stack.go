package stack

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/preempt"
	"github.com/drover-sched/drover/sdk/rank"
)

// Config configures a Stack.
type Config struct {
	// Batch ranks two nodes per placement (the power of two choices)
	// instead of log2 of the node count.
	Batch bool
	// System places on one given node at a time (SelectOn) and scores fit
	// only, as Nomad's system stack does.
	System bool
	// Preempt lets every selection evict lower-priority allocations
	// (system jobs); otherwise a caller asks for it per selection
	// (Options.Preempt).
	Preempt bool
	// Algorithm is the fit algorithm, sdk.SchedulerAlgorithmBinpack or
	// sdk.SchedulerAlgorithmSpread.
	Algorithm string
	// MemoryOversubscription grants tasks their memory_max.
	MemoryOversubscription bool
}

// ConfigFor returns the stack configuration for a job type under the
// cluster's scheduler configuration.
func ConfigFor(jobType string, sc *sdk.SchedulerConfiguration) Config {
	c := Config{
		Batch:     jobType == sdk.JobTypeBatch,
		System:    jobType == sdk.JobTypeSystem || jobType == sdk.JobTypeSysBatch,
		Algorithm: sc.EffectiveAlgorithm(),
	}
	if sc != nil {
		c.MemoryOversubscription = sc.MemoryOversubscriptionEnabled
	}
	c.Preempt = c.System && sc.PreemptionEnabled(jobType)
	return c
}

// Options tune one selection.
type Options struct {
	// Job overrides the stack's job (a placement that must run an older
	// version, such as a non-canary during a canary deployment).
	Job *sdk.Job
	// Preferred is tried alone first (sticky or migrating ephemeral disk).
	Preferred *sdk.Node
	// PenaltyNodes are nodes a rescheduled allocation failed on.
	PenaltyNodes map[string]bool
	// Preempt allows evicting lower-priority allocations.
	Preempt bool
}

// Option is the node a selection chose.
type Option struct {
	Node *sdk.Node
	// Resources is what the allocation holds there (ports, cores and
	// devices assigned). It may be shared between options: do not modify.
	Resources *sdk.AllocatedResources
	// Preempted are the allocations to evict.
	Preempted []*sdk.Allocation
	// Score is the normalized score.
	Score float64
}

// Limits of the selection (Nomad's).
const (
	// skipThreshold: options scoring at or below it are set aside, up to
	// maxSkip of them, while better ones may come.
	skipThreshold = 0.0
	maxSkip       = 3
)

// Stack selects nodes for placements: a chain of feasibility checks
// (cached per computed node class), fit, and scoring, over a shuffled node
// list it walks round-robin across selections, ranking a limited number of
// feasible nodes each time and keeping the best. It reads the state through
// a Plan, so each selection sees the placements made before it.
type Stack struct {
	ctx     *sdk.Context
	plan    *Plan
	job     *sdk.Job
	cfg     Config
	checker *feasible.Checker
	elig    map[*sdk.Job]*feasible.Eligibility
	groups  map[*sdk.TaskGroup]*group

	nodes  []*sdk.Node
	offset int
	byDC   map[string]int
	// info caches, per position in nodes, what does not change during the
	// evaluation: what the state says the node holds, and its capacity.
	info []nodeInfo

	ports  feasible.PortSet
	scores scoreTracker
}

// nodeInfo is what the stack caches about one node.
type nodeInfo struct {
	known    bool
	used     sdk.Usage
	capacity sdk.Usage
}

// New returns a stack placing job through plan.
func New(ctx *sdk.Context, plan *Plan, job *sdk.Job, cfg Config) *Stack {
	return &Stack{
		ctx: ctx, plan: plan, job: job, cfg: cfg, checker: feasible.NewChecker(),
		elig: map[*sdk.Job]*feasible.Eligibility{}, groups: map[*sdk.TaskGroup]*group{},
	}
}

// SetNodes sets the nodes selections walk, in the order given (shuffle them
// first for service and batch jobs), and their count per datacenter.
func (s *Stack) SetNodes(nodes []*sdk.Node, byDC map[string]int) {
	s.nodes, s.byDC, s.offset = nodes, byDC, 0
	s.info = make([]nodeInfo, len(nodes))
	for _, g := range s.groups {
		g.feasible = make([]bool, len(nodes))
	}
}

// Nodes returns the nodes set.
func (s *Stack) Nodes() []*sdk.Node { return s.nodes }

// Checker returns the stack's constraint checker.
func (s *Stack) Checker() *feasible.Checker { return s.checker }

// Eligibility returns what the stack learned about computed node classes
// for the stack's job (for blocked evals).
func (s *Stack) Eligibility() *feasible.Eligibility { return s.eligibility(s.job) }

func (s *Stack) eligibility(job *sdk.Job) *feasible.Eligibility {
	e := s.elig[job]
	if e == nil {
		e = feasible.NewEligibility(job)
		s.elig[job] = e
	}
	return e
}

// group is what the stack derived from one task group.
type group struct {
	job    *sdk.Job
	tg     *sdk.TaskGroup
	checks *feasible.GroupChecks
	elig   *feasible.Eligibility
	// base is the group's need without the CPU its reserved cores cost
	// (that depends on the node).
	base  sdk.Usage
	cores int
	// special groups need ports, cores or devices assigned per node.
	special   bool
	resources *sdk.AllocatedResources
	// jobDistinctHosts and groupDistinctHosts: at most one allocation of
	// the job (of the group) per node.
	jobDistinctHosts, groupDistinctHosts bool
	distinct                             []*feasible.DistinctProperty
	affinity                             *rank.Affinities
	spread                               *rank.Spread
	limit                                int
	prio                                 int
	// feasible caches, per position in the stack's nodes, that the node
	// passed the node checks (which cannot change during the evaluation).
	feasible []bool
}

func (s *Stack) group(job *sdk.Job, tg *sdk.TaskGroup) *group {
	if g := s.groups[tg]; g != nil {
		return g
	}
	g := &group{job: job, tg: tg, checks: feasible.NewGroupChecks(job, tg), elig: s.eligibility(job), prio: job.Priority,
		feasible: make([]bool, len(s.nodes))}
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		g.cores += t.Resources.Cores
		if t.Resources.Cores == 0 {
			g.base.CPU += int64(t.Resources.CPU)
		}
		g.base.MemoryMB += int64(t.Resources.MemoryMB)
		if len(t.Resources.Networks) > 0 || len(t.Resources.Devices) > 0 {
			g.special = true
		}
	}
	g.base.Cores = int64(g.cores)
	if tg.EphemeralDisk != nil {
		g.base.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	if g.cores > 0 || (len(tg.Networks) > 0 && len(tg.Networks[0].ReservedPorts)+len(tg.Networks[0].DynamicPorts) > 0) {
		g.special = true
	}
	if !g.special {
		g.resources = s.baseResources(tg)
	}
	g.jobDistinctHosts = feasible.DistinctHostsEnabled(job.Constraints)
	g.groupDistinctHosts = feasible.DistinctHostsEnabled(tg.Constraints)
	for _, c := range job.Constraints {
		if c.Operand == sdk.ConstraintDistinctProperty {
			g.distinct = append(g.distinct, s.watch(feasible.NewDistinctProperty(s.plan.State(), job, c, "")))
		}
	}
	for _, c := range tg.Constraints {
		if c.Operand == sdk.ConstraintDistinctProperty {
			g.distinct = append(g.distinct, s.watch(feasible.NewDistinctProperty(s.plan.State(), job, c, tg.Name)))
		}
	}
	if !s.cfg.System {
		g.affinity = rank.NewAffinities(job, tg)
		if sp := rank.NewSpread(s.plan.State(), job, tg); sp != nil {
			g.spread = sp
			s.plan.Replay(spreadWatcher{sp, tg.Name})
			s.plan.Watch(spreadWatcher{sp, tg.Name})
		}
		g.limit = RankLimit(len(s.nodes), s.cfg.Batch, tg.Count, g.affinity.Any() || g.spread != nil)
	}
	s.groups[tg] = g
	return g
}

func (s *Stack) watch(d *feasible.DistinctProperty) *feasible.DistinctProperty {
	s.plan.Replay(d)
	s.plan.Watch(d)
	return d
}

type spreadWatcher struct {
	sp *rank.Spread
	tg string
}

func (w spreadWatcher) Add(n *sdk.Node, delta int) { w.sp.Add(n, delta) }
func (w spreadWatcher) Matches(tg string) bool     { return tg == w.tg }

// baseResources is what an allocation of tg holds when nothing is assigned
// per node.
func (s *Stack) baseResources(tg *sdk.TaskGroup) *sdk.AllocatedResources {
	r := &sdk.AllocatedResources{Tasks: make(map[string]*sdk.AllocatedTaskResources, len(tg.Tasks))}
	for _, t := range tg.Tasks {
		tr := &sdk.AllocatedTaskResources{}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(t.Resources.CPU)
			tr.Memory.MemoryMB = int64(t.Resources.MemoryMB)
			if s.cfg.MemoryOversubscription {
				tr.Memory.MemoryMaxMB = int64(t.Resources.MemoryMaxMB)
			}
		}
		r.Tasks[t.Name] = tr
	}
	if tg.EphemeralDisk != nil {
		r.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	return r
}

// Select picks the best node for an allocation of tg among the stack's
// nodes and explains the choice (or the failure) in the returned metric.
// It returns a nil option when no node fits.
func (s *Stack) Select(tg *sdk.TaskGroup, opts Options) (*Option, *sdk.AllocMetric) {
	job := s.job
	if opts.Job != nil {
		job = opts.Job
	}
	g := s.group(job, tg)
	m := s.newMetric(job)
	if opts.Preferred != nil {
		one := [1]*sdk.Node{opts.Preferred}
		off := 0
		if o := s.walk(g, m, opts, one[:], &off, 1, false); o != nil {
			return s.finish(m, o)
		}
		m = s.newMetric(job)
	}
	limit := g.limit
	if s.cfg.System {
		limit = len(s.nodes)
	}
	return s.finish(m, s.walk(g, m, opts, s.nodes, &s.offset, limit, true))
}

// SelectOn checks whether an allocation of tg fits on node alone: system
// jobs place per node, and an in-place update probes the allocation's own
// node (with the allocation itself stopped in the plan first).
func (s *Stack) SelectOn(node *sdk.Node, tg *sdk.TaskGroup, opts Options) (*Option, *sdk.AllocMetric) {
	job := s.job
	if opts.Job != nil {
		job = opts.Job
	}
	g := s.group(job, tg)
	m := s.newMetric(job)
	one := [1]*sdk.Node{node}
	off := 0
	return s.finish(m, s.walk(g, m, opts, one[:], &off, 1, false))
}

func (s *Stack) newMetric(job *sdk.Job) *sdk.AllocMetric {
	pool := job.NodePool
	if pool == "" {
		pool = sdk.DefaultNodePool
	}
	return &sdk.AllocMetric{NodesInPool: len(s.nodes), NodesAvailable: s.byDC, NodePool: pool}
}

func (s *Stack) finish(m *sdk.AllocMetric, o *Option) (*Option, *sdk.AllocMetric) {
	m.ScoreMetaData = s.scores.metaData()
	return o, m
}

// candidate is a node being ranked.
type candidate struct {
	node      *sdk.Node
	score     float64
	resources *sdk.AllocatedResources
	preempted []*sdk.Allocation
}

// walk visits nodes round-robin from *offset, at most once each, and
// returns the best of the first limit feasible, fitting nodes (Nomad's
// limit and max-score iterators: up to maxSkip options scoring at or below
// zero are set aside and used only if the nodes run out). cached says that
// nodes is the stack's node list, whose per-position caches apply.
func (s *Stack) walk(g *group, m *sdk.AllocMetric, opts Options, nodes []*sdk.Node, offset *int, limit int, cached bool) *Option {
	s.scores.reset(nodes)
	n := len(nodes)
	if n == 0 || limit <= 0 {
		return nil
	}
	var best candidate
	var skipped [maxSkip]candidate
	nSkipped, seen := 0, 0
	consider := func(c candidate) {
		seen++
		if best.node == nil || c.score > best.score {
			best = c
		}
	}
	for visited := 0; visited < n && seen < limit; visited++ {
		if *offset >= n {
			*offset = 0
		}
		pos := *offset
		node := nodes[pos]
		*offset++
		m.NodesEvaluated++
		var info *nodeInfo
		if cached {
			info = &s.info[pos]
			if !info.known {
				*info = nodeInfo{known: true, used: s.plan.state.NodeUsage(node.ID), capacity: node.Capacity()}
			}
		} else {
			info = &nodeInfo{used: s.plan.state.NodeUsage(node.ID), capacity: node.Capacity()}
		}
		delta, jobN, groupN := s.plan.node(node.ID, g.tg.Name)
		if !s.feasible(g, node, pos, cached, jobN, groupN, m) {
			continue
		}
		used := info.used
		used.Add(delta)
		c, ok := s.rank(g, node, pos, used, info.capacity, groupN, m, opts)
		if !ok {
			continue
		}
		if nSkipped < maxSkip && c.score <= skipThreshold {
			skipped[nSkipped] = c
			nSkipped++
			continue
		}
		consider(c)
	}
	for i := 0; i < nSkipped && seen < limit; i++ {
		consider(skipped[i])
	}
	if best.node == nil {
		return nil
	}
	return &Option{Node: best.node, Resources: best.resources, Preempted: best.preempted, Score: best.score}
}

// feasible runs the node checks, recording a filtered node in m. jobN and
// groupN are the job's and the group's allocations on the node.
func (s *Stack) feasible(g *group, n *sdk.Node, pos int, cached bool, jobN, groupN int, m *sdk.AllocMetric) bool {
	if !cached || !g.feasible[pos] {
		if reason := g.elig.Check(s.checker, g.checks, n); reason != "" {
			m.FilterNode(n, reason)
			return false
		}
		if cached {
			g.feasible[pos] = true
		}
	}
	if (g.jobDistinctHosts && jobN > 0) || (g.groupDistinctHosts && groupN > 0) {
		m.FilterNode(n, feasible.FilterDistinctHosts)
		return false
	}
	for _, d := range g.distinct {
		if reason := d.Check(n); reason != "" {
			m.FilterNode(n, reason)
			return false
		}
	}
	return true
}

// rank fits the group on n (which holds used before the placement) and
// scores it; ok is false when it does not fit (the node is recorded as
// exhausted in m).
func (s *Stack) rank(g *group, n *sdk.Node, pos int, used, capacity sdk.Usage, groupN int, m *sdk.AllocMetric, opts Options) (c candidate, ok bool) {
	c.node = n
	need := g.base
	if g.cores > 0 {
		need.CPU += int64(g.cores) * feasible.SharesPerCore(n)
	}
	used.Add(need)
	preemptOK := s.cfg.Preempt || opts.Preempt
	var proposed []*sdk.Allocation
	if g.special {
		proposed = s.plan.Proposed(n.ID)
		r, dim := s.assign(g, n, proposed)
		if r == nil {
			m.ExhaustedNode(n, dim)
			return c, false
		}
		c.resources = r
	} else {
		c.resources = g.resources
	}
	if fits, dim := used.Fits(capacity); !fits {
		if !preemptOK {
			m.ExhaustedNode(n, dim)
			return c, false
		}
		if proposed == nil {
			proposed = s.plan.Proposed(n.ID)
		}
		victims := preempt.Select(capacity, used, preempt.Candidates(g.prio, g.job.NamespacedID(), s.notPreempted(proposed)))
		if victims == nil {
			m.ExhaustedNode(n, dim)
			return c, false
		}
		for _, v := range victims {
			used.Sub(v.Usage())
		}
		c.preempted = victims
	}

	sc := s.scores.begin(pos)
	sc.add(scoreBinpack, rank.Fit(s.cfg.Algorithm, used, capacity), true)
	if !s.cfg.System {
		anti := rank.JobAntiAffinity(groupN, g.tg.Count)
		sc.add(scoreAntiAffinity, anti, anti != 0)
		pen := 0.0
		if opts.PenaltyNodes[n.ID] {
			pen = -1
		}
		sc.add(scorePenalty, pen, pen != 0)
		if g.affinity.Any() {
			if aff, has := g.affinity.Score(s.checker, n); has {
				sc.add(scoreAffinity, aff, true)
			}
		} else {
			sc.add(scoreAffinity, 0, false)
		}
		if g.spread != nil {
			if sp, has := g.spread.Score(n); has {
				sc.add(scoreSpread, sp, true)
			}
		}
	}
	if c.preempted != nil {
		sc.add(scorePreemption, preempt.Score(c.preempted), true)
	}
	c.score = sc.normalize()
	return c, true
}

// notPreempted drops allocations the plan already preempts.
func (s *Stack) notPreempted(allocs []*sdk.Allocation) []*sdk.Allocation {
	if len(s.plan.NodePreemptions) == 0 {
		return allocs
	}
	out := allocs[:0:0]
	for _, a := range allocs {
		gone := false
		for _, p := range s.plan.NodePreemptions[a.NodeID] {
			if p.ID == a.ID {
				gone = true
				break
			}
		}
		if !gone {
			out = append(out, a)
		}
	}
	return out
}

// assign hands out the group's ports, reserved cores and devices on n
// given what the proposed allocations hold. It returns nil and the
// exhausted dimension when something is missing.
func (s *Stack) assign(g *group, n *sdk.Node, proposed []*sdk.Allocation) (*sdk.AllocatedResources, string) {
	tg := g.tg
	r := &sdk.AllocatedResources{Tasks: make(map[string]*sdk.AllocatedTaskResources, len(tg.Tasks))}
	if tg.EphemeralDisk != nil {
		r.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	ports := &s.ports
	ports.Reset()
	if err := ports.AddNode(n); err != nil {
		return nil, feasible.DimInvalidPorts
	}
	for _, a := range proposed {
		if ports.AddAlloc(a) != 0 {
			return nil, feasible.DimPortCollision
		}
	}
	rng := s.ctx.Rand()
	if len(tg.Networks) > 0 {
		offer, mappings, reason := feasible.AssignPorts(n, ports, tg.Networks[0], rng)
		if offer == nil {
			return nil, reason
		}
		r.Shared.Networks = []*sdk.NetworkResource{offer}
		r.Shared.Ports = mappings
	}
	var devs *feasible.DeviceAllocator
	var cores map[uint16]bool
	for _, t := range tg.Tasks {
		tr := &sdk.AllocatedTaskResources{}
		r.Tasks[t.Name] = tr
		res := t.Resources
		if res == nil {
			continue
		}
		tr.Cpu.CpuShares = int64(res.CPU)
		tr.Memory.MemoryMB = int64(res.MemoryMB)
		if s.cfg.MemoryOversubscription {
			tr.Memory.MemoryMaxMB = int64(res.MemoryMaxMB)
		}
		for _, nw := range res.Networks {
			offer, _, reason := feasible.AssignPorts(n, ports, nw, rng)
			if offer == nil {
				return nil, reason
			}
			tr.Networks = append(tr.Networks, offer)
		}
		for _, req := range res.Devices {
			if devs == nil {
				devs = feasible.NewDeviceAllocator(s.checker, n, proposed)
			}
			d, _ := devs.Assign(req)
			if d == nil {
				return nil, "devices: no free instance of " + req.Name
			}
			tr.Devices = append(tr.Devices, d)
		}
		if res.Cores > 0 {
			if cores == nil {
				cores = feasible.UsedCores(proposed)
			}
			got := feasible.AssignCores(n, cores, res.Cores)
			if got == nil {
				return nil, "cores"
			}
			tr.Cpu.ReservedCores = got
			tr.Cpu.CpuShares = int64(res.Cores) * feasible.SharesPerCore(n)
		}
	}
	return r, ""
}
