package stack

import (
	"math"
	"slices"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/internal/chunk"
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
	// WideLimit is how many feasible nodes a placement whose group has
	// affinities or spreads ranks at least (the scheduler configuration's
	// NodeLimitForFeasibilityChecks; 0: DefaultWideLimit).
	WideLimit int
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
		c.WideLimit = int(min(sc.NodeLimitForFeasibilityChecks, math.MaxInt32))
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
	// AllocName is the name of the allocation being placed ("job.group[2]"):
	// a per_alloc CSI volume request names its volume by its index.
	AllocName string
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
	// lastGroup is the group last looked up: a system job's selections
	// come one node at a time for one group.
	lastGroup *group
	// one is the node list of a selection on one node (SelectOn, a
	// preferred node), reused: a list on the stack escapes to the heap.
	one [1]*sdk.Node

	nodes  []*sdk.Node
	offset int
	byDC   map[string]int
	// info caches, per position in nodes, what does not change during the
	// evaluation: what the state says the node holds, and its capacity.
	info []nodeInfo

	ports feasible.PortIndex
	bufs  bufPool
	// proposed is rank's scratch for a node's proposed allocations.
	proposed []*sdk.Allocation
	scores   scoreTracker
	tally    tally
	// metrics and options are where each selection's results come from.
	metrics chunk.Chunks[sdk.AllocMetric]
	options chunk.Chunks[Option]
	// csiPlugins is the health of the CSI plugins across the nodes,
	// gathered by the first selection that needs it (csiPlugin).
	csiPlugins map[string]*sdk.CSIPlugin
	// walkOnly turns the rank index off, so that a test can compare it
	// with the walk it replaces.
	walkOnly bool
}

// nodeInfo is what the stack caches about one node (by its position in
// the node list) for the evaluation: what the state says it holds, its
// capacity, and the plan's record of it.
type nodeInfo struct {
	known    bool
	used     sdk.Usage
	capacity sdk.Usage
	change   *nodeChange
}

// New returns a stack placing job through plan.
func New(ctx *sdk.Context, plan *Plan, job *sdk.Job, cfg Config) *Stack {
	return &Stack{
		ctx: ctx, plan: plan, job: job, cfg: cfg, checker: feasible.NewChecker(),
		elig: map[*sdk.Job]*feasible.Eligibility{}, groups: map[*sdk.TaskGroup]*group{},
	}
}

// Expect tells the stack how many selections are coming, so that the plan
// makes room at once for the nodes they will visit (the plan keeps a record
// of every node a selection visits) rather than growing as they go. It is
// a hint: selections may be more or fewer.
func (s *Stack) Expect(selections int) {
	s.plan.reservePlacements(min(len(s.nodes), selections))
	if s.cfg.System {
		s.plan.reserve(min(len(s.nodes), selections))
		return
	}
	s.plan.reserve(min(len(s.nodes), selections*RankLimit(len(s.nodes), s.cfg.Batch, 0, false)))
}

// SetNodes sets the nodes selections walk, in the order given (shuffle them
// first for service and batch jobs), and their count per datacenter.
func (s *Stack) SetNodes(nodes []*sdk.Node, byDC map[string]int) {
	s.nodes, s.byDC, s.offset = nodes, byDC, 0
	infoPool.put(s.info)
	s.info = infoPool.get(len(nodes))
	for _, g := range s.groups {
		g.resetCaches(len(nodes))
	}
}

func (g *group) resetCaches(n int) {
	g.release()
	g.feasible = checkPool.get(n)
	g.fits = fitPool.get(n)
	if g.spread != nil {
		g.spreadIDs = spreadPool.get(n)
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
	// (that depends on the node). When a task has a lifecycle, phases holds
	// the same by when tasks run, and base only the disk.
	base   sdk.Usage
	phases *sdk.TaskPhases
	cores  int
	// lifecycles are the group's task lifecycles, as its placements hold
	// them (sdk.AllocatedResources.TaskLifecycles).
	lifecycles map[string]*sdk.TaskLifecycle
	// special groups need ports, cores or devices assigned per node.
	special   bool
	resources *sdk.AllocatedResources
	// jobDistinctHosts and groupDistinctHosts: at most one allocation of
	// the job (of the group) per node, an allocation the servers stopped
	// counting until its node reports it finished (Plan.JobCount). Never
	// set for system jobs.
	jobDistinctHosts, groupDistinctHosts bool
	distinct                             []*feasible.DistinctProperty
	// csi is the group's CSI volume requests, nil without any.
	csi *csiGroup
	// ports are the static host ports the group asks for (the ones a
	// preempting placement may take from lower-priority allocations).
	ports []staticPort
	// devices are the group's device requests, in task order.
	devices  []*sdk.RequestedDevice
	affinity *rank.Affinities
	spread   *rank.Spread
	limit    int
	prio     int
	// feasible caches, per position in the stack's nodes, the outcome of
	// the node checks, which cannot change during the evaluation.
	feasible []nodeCheck
	// fits caches, per position, the fit and the scores that depend only
	// on the node and the plan's change there, until that changes.
	fits []fitCache
	// spreadIDs caches, per position, the node's spread value IDs.
	spreadIDs [][]int32
	// known counts the positions whose checks are cached; once all are,
	// index lets walks skip the nodes that failed them.
	known int
	index *checkIndex
	// ranked scores the nodes that passed their checks for walks that
	// need not rank them all (see rankIndex).
	ranked *rankIndex
}

// nodeCheck is the cached outcome of a node's checks: passed, or the
// reason to report when the node is seen again ("computed class
// ineligible" when the class decided, the check's own reason when the
// checks escaped class caching, as Nomad reports it).
type nodeCheck struct {
	known  bool
	passed bool
	reason string
}

// fitCache is a node's fit for a group at one version of the plan's
// change on the node.
type fitCache struct {
	valid   bool
	version uint32
	fits    bool
	dim     string
	fit     float64
	anti    float64
}

func (s *Stack) group(job *sdk.Job, tg *sdk.TaskGroup) *group {
	if g := s.lastGroup; g != nil && g.tg == tg {
		return g
	}
	if g := s.groups[tg]; g != nil {
		s.lastGroup = g
		return g
	}
	// Preemption is by the job's current priority, also for a placement
	// of an older version (the host judges it so).
	g := &group{job: job, tg: tg, checks: feasible.NewGroupChecks(job, tg), elig: s.eligibility(job), prio: s.job.Priority}
	g.lifecycles = sdk.TaskLifecycles(tg)
	if g.lifecycles != nil {
		g.phases = &sdk.TaskPhases{}
	}
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		g.cores += t.Resources.Cores
		u := sdk.Usage{MemoryMB: int64(t.Resources.MemoryMB), Cores: int64(t.Resources.Cores)}
		if t.Resources.Cores == 0 {
			u.CPU = int64(t.Resources.CPU)
		}
		if g.phases != nil {
			g.phases.Add(t.Lifecycle, u)
		} else {
			g.base.Add(u)
		}
		if len(t.Resources.Networks) > 0 || len(t.Resources.Devices) > 0 {
			g.special = true
		}
	}
	if tg.EphemeralDisk != nil {
		g.base.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	if g.cores > 0 || (len(tg.Networks) > 0 && len(tg.Networks[0].ReservedPorts)+len(tg.Networks[0].DynamicPorts) > 0) {
		g.special = true
	}
	g.ports = staticPorts(tg)
	g.csi = newCSIGroup(tg)
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			g.devices = append(g.devices, t.Resources.Devices...)
		}
	}
	if !g.special {
		g.resources = s.baseResources(g)
	}
	// Nomad's system stack has no distinct_hosts check (system jobs place
	// each group's allocations on every node): every group places on every
	// node, and a node still running a stopped allocation of the job takes
	// its successor.
	if !s.cfg.System {
		g.jobDistinctHosts = feasible.DistinctHostsEnabled(job.Constraints)
		g.groupDistinctHosts = feasible.DistinctHostsEnabled(tg.Constraints)
	}
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
		g.limit = rankLimit(len(s.nodes), s.cfg.Batch, tg.Count, g.affinity.Any() || g.spread != nil, s.cfg.WideLimit)
	}
	g.resetCaches(len(s.nodes))
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

// staticPort is a static host port a group asks for: on its host
// network's address, or, for a task's network, on the node's.
type staticPort struct {
	port    int
	network string
	task    bool
}

// staticPorts lists the static host ports tg's networks ask for, those
// that ignore collisions aside. Only the group's first network is
// assigned (see assign).
func staticPorts(tg *sdk.TaskGroup) []staticPort {
	var out []staticPort
	add := func(nw *sdk.NetworkResource, task bool) {
		for _, p := range nw.ReservedPorts {
			if !p.IgnoreCollision {
				out = append(out, staticPort{p.Value, p.HostNetwork, task})
			}
		}
	}
	if len(tg.Networks) > 0 {
		add(tg.Networks[0], false)
	}
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			for _, nw := range t.Resources.Networks {
				add(nw, true)
			}
		}
	}
	return out
}

// hostPorts returns the static ports the group asks for on n, each on the
// address it would be offered on there (see feasible.AssignPorts and
// feasible.AssignTaskPorts).
func (g *group) hostPorts(n *sdk.Node) []preempt.HostPort {
	out := make([]preempt.HostPort, len(g.ports))
	for i, p := range g.ports {
		var addr string
		if p.task {
			addr = feasible.NodeIP(n)
		} else {
			addr, _ = feasible.HostNetworkAddress(n, p.network)
		}
		out[i] = preempt.HostPort{Addr: addr, Port: p.port}
	}
	return out
}

// baseResources is what an allocation of tg holds when nothing is assigned
// per node.
func (s *Stack) baseResources(g *group) *sdk.AllocatedResources {
	tg := g.tg
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
	r.TaskLifecycles = g.lifecycles
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
	if g.csi != nil {
		s.csiResolve(g, opts.AllocName)
	}
	m := s.newMetric(job)
	if opts.Preferred != nil {
		s.one[0] = opts.Preferred
		off := 0
		if o := s.walk(g, m, opts, s.one[:], &off, 1, false); o != nil {
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
	if g.csi != nil {
		s.csiResolve(g, opts.AllocName)
	}
	m := s.newMetric(job)
	s.one[0] = node
	off := 0
	return s.finish(m, s.walk(g, m, opts, s.one[:], &off, 1, false))
}

func (s *Stack) newMetric(job *sdk.Job) *sdk.AllocMetric {
	pool := job.NodePool
	if pool == "" {
		pool = sdk.DefaultNodePool
	}
	m := s.metrics.One()
	m.NodesInPool, m.NodesAvailable, m.NodePool = len(s.nodes), s.byDC, pool
	return m
}

func (s *Stack) finish(m *sdk.AllocMetric, o *Option) (*Option, *sdk.AllocMetric) {
	m.ScoreMetaData = s.scores.metaData()
	if o != nil {
		s.plan.hint(o.Node)
	}
	return o, m
}

// candidate is a node being ranked.
type candidate struct {
	node      *sdk.Node
	score     float64
	resources *sdk.AllocatedResources
	preempted []*sdk.Allocation
	// buf holds resources when they were assigned on this node (a
	// special group's); the choice that keeps the candidate owns it.
	buf *assignBuf
}

// assignBuf is where assign writes what it hands out on one candidate
// node, reused from node to node: of all the nodes ranked for a
// placement, only the chosen one's resources are copied to the heap
// (choice.settle), so ranking a group with ports allocates nothing per
// node once the buffers have grown.
type assignBuf struct {
	res      sdk.AllocatedResources
	tasks    []sdk.AllocatedTaskResources
	offer    sdk.NetworkResource
	shared   [1]*sdk.NetworkResource
	mappings []sdk.PortMapping
}

// reset empties the buffer for another node and returns its resources.
func (b *assignBuf) reset() *sdk.AllocatedResources {
	if b.res.Tasks == nil {
		b.res.Tasks = map[string]*sdk.AllocatedTaskResources{}
	}
	clear(b.res.Tasks)
	b.res = sdk.AllocatedResources{Tasks: b.res.Tasks}
	b.shared[0] = &b.offer
	return &b.res
}

// task returns the buffer's i-th task resources, zeroed.
func (b *assignBuf) task(i int) *sdk.AllocatedTaskResources {
	for len(b.tasks) <= i {
		b.tasks = append(b.tasks, sdk.AllocatedTaskResources{})
	}
	b.tasks[i] = sdk.AllocatedTaskResources{}
	return &b.tasks[i]
}

// bufPool keeps the assignBufs no candidate holds.
type bufPool struct{ free []*assignBuf }

func (p *bufPool) get() *assignBuf {
	if k := len(p.free) - 1; k >= 0 {
		b := p.free[k]
		p.free = p.free[:k]
		return b
	}
	return &assignBuf{}
}

// put gives b back (nil is ignored).
func (p *bufPool) put(b *assignBuf) {
	if b != nil {
		p.free = append(p.free, b)
	}
}

// heapResources copies what assign wrote into a buffer to the heap, deep
// enough that the buffer's reuse changes nothing of it. What assign
// allocated afresh (task networks, devices, reserved cores) is shared.
func heapResources(r *sdk.AllocatedResources) *sdk.AllocatedResources {
	out := &sdk.AllocatedResources{Tasks: make(map[string]*sdk.AllocatedTaskResources, len(r.Tasks)),
		TaskLifecycles: r.TaskLifecycles, Shared: r.Shared}
	for name, t := range r.Tasks {
		c := *t
		out.Tasks[name] = &c
	}
	if len(r.Shared.Networks) > 0 {
		out.Shared.Networks = make([]*sdk.NetworkResource, len(r.Shared.Networks))
		for i, nw := range r.Shared.Networks {
			c := *nw
			c.ReservedPorts = cloneOrNil(nw.ReservedPorts)
			c.DynamicPorts = cloneOrNil(nw.DynamicPorts)
			out.Shared.Networks[i] = &c
		}
	}
	out.Shared.Ports = cloneOrNil(r.Shared.Ports)
	return out
}

// cloneOrNil copies s, nil when it is empty, as assign leaves a list it
// fills nothing into on the heap (a buffer's is empty, not nil).
func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// choice keeps a walk's best option as Nomad's limit and max-score
// iterators do: up to maxSkip options scoring at or below skipThreshold
// are set aside, to be used only if the walk runs out of nodes; the others
// compete for best.
type choice struct {
	best     candidate
	skipped  [maxSkip]candidate
	nSkipped int
	// bufs takes back the buffers of the candidates it drops.
	bufs *bufPool
}

// offer takes a ranked option and reports whether it counts toward the
// walk's limit (false: it was set aside).
func (ch *choice) offer(c candidate) bool {
	if ch.nSkipped < maxSkip && c.score <= skipThreshold {
		ch.skipped[ch.nSkipped] = c
		ch.nSkipped++
		return false
	}
	if ch.best.node == nil || c.score > ch.best.score {
		ch.bufs.put(ch.best.buf)
		ch.best = c
	} else {
		ch.bufs.put(c.buf)
	}
	return true
}

// settle ends the walk, seen options counted: the set-aside ones count, in
// order, while the limit allows. It returns the best option (from
// options), or nil.
func (ch *choice) settle(seen, limit int, options *chunk.Chunks[Option]) *Option {
	best := ch.best
	for i := 0; i < ch.nSkipped && seen < limit; i++ {
		seen++
		if best.node == nil || ch.skipped[i].score > best.score {
			best = ch.skipped[i]
		}
	}
	resources := best.resources
	if best.buf != nil {
		resources = heapResources(resources)
	}
	ch.bufs.put(ch.best.buf)
	for i := 0; i < ch.nSkipped; i++ {
		ch.bufs.put(ch.skipped[i].buf)
	}
	if best.node == nil {
		return nil
	}
	o := options.One()
	*o = Option{Node: best.node, Resources: resources, Preempted: best.preempted, Score: best.score}
	return o
}

// learn fills what the stack caches about node for the evaluation.
func (s *Stack) learn(info *nodeInfo, node *sdk.Node) {
	used, capacity, change := s.plan.learn(node)
	*info = nodeInfo{known: true, used: used, capacity: capacity, change: change}
}

// nodeInfo returns the stack's record of the node at pos, filling it in
// the first time.
func (s *Stack) nodeInfo(pos int) *nodeInfo {
	info := &s.info[pos]
	if !info.known {
		s.learn(info, s.nodes[pos])
	}
	return info
}

// walk visits nodes round-robin from *offset, at most once each, and
// returns the best of the first limit feasible, fitting nodes (Nomad's
// limit and max-score iterators: up to maxSkip options scoring at or below
// zero are set aside and used only if the nodes run out). cached says that
// nodes is the stack's node list, whose per-position caches apply.
//
// This is the scheduler's hot loop: a node already seen costs a few slice
// reads unless the plan changed it, and nothing is allocated per node.
func (s *Stack) walk(g *group, m *sdk.AllocMetric, opts Options, nodes []*sdk.Node, offset *int, limit int, cached bool) *Option {
	s.scores.reset(nodes)
	s.tally.reset()
	defer s.tally.flush(m)
	n := len(nodes)
	if n == 0 || limit <= 0 {
		return nil
	}
	if cached && g.known == n {
		if g.index == nil {
			g.index = newCheckIndex(nodes, g.feasible)
		}
		if s.rankable(g, opts) {
			if g.ranked == nil {
				g.ranked = s.newRankIndex(g)
			}
			return s.walkRanked(g, m, opts, offset, limit)
		}
		return s.walkIndexed(g, m, opts, offset, limit)
	}
	ch := choice{bufs: &s.bufs}
	seen := 0
	var one nodeInfo
	for visited := 0; visited < n && seen < limit; visited++ {
		if *offset >= n {
			*offset = 0
		}
		pos := *offset
		node := nodes[pos]
		*offset++
		m.NodesEvaluated++
		info := &one
		if cached {
			info = &s.info[pos]
		}
		if !info.known || !cached {
			s.learn(info, node)
		}
		if !s.feasible(g, node, pos, cached, info.change) {
			continue
		}
		if c, ok := s.rank(g, node, pos, cached, info, opts, n > 1); ok && ch.offer(c) {
			seen++
		}
	}
	return ch.settle(seen, limit, &s.options)
}

// Feasible returns why node n cannot take an allocation of group tg of job
// with the plan so far, or "" when it can: what Select filters a node for
// (the group's checks, recorded in the stack's class eligibility,
// distinct_hosts, distinct_property and CSI volumes), for a scheduler that
// chooses among nodes its own way. Room is not checked: see Plan.Used and
// Assign. A group with per_alloc CSI volumes needs FeasibleFor.
func (s *Stack) Feasible(job *sdk.Job, tg *sdk.TaskGroup, n *sdk.Node) string {
	return s.FeasibleFor(job, tg, "", n)
}

// FeasibleFor is Feasible for the allocation named allocName.
func (s *Stack) FeasibleFor(job *sdk.Job, tg *sdk.TaskGroup, allocName string, n *sdk.Node) string {
	g := s.group(job, tg)
	if reason := g.elig.Check(s.checker, g.checks, n); reason != "" {
		return reason
	}
	if (g.jobDistinctHosts && s.plan.JobCount(n.ID) > 0) || (g.groupDistinctHosts && s.plan.GroupCount(tg.Name, n.ID) > 0) {
		return feasible.FilterDistinctHosts
	}
	for _, d := range g.distinct {
		if reason := d.Check(n); reason != "" {
			return reason
		}
	}
	if g.csi != nil {
		s.csiResolve(g, allocName)
		return s.csiCheck(g, n)
	}
	return ""
}

// feasible runs the node checks, tallying a filtered node.
func (s *Stack) feasible(g *group, n *sdk.Node, pos int, cached bool, chg *nodeChange) bool {
	var nc nodeCheck
	if cached {
		nc = g.feasible[pos]
	}
	if !nc.known {
		reason := g.elig.Check(s.checker, g.checks, n)
		nc = nodeCheck{known: true, passed: reason == "", reason: reason}
		if cached {
			again := nc
			if reason != "" && g.elig.GroupStatus(g.tg.Name, n.ComputedClass) != feasible.ClassEscaped &&
				g.elig.JobStatus(n.ComputedClass) != feasible.ClassEscaped {
				again.reason = feasible.FilterClassIneligible
			}
			g.feasible[pos] = again
			g.known++
		}
	}
	if !nc.passed {
		s.tally.filtered(n, nc.reason)
		return false
	}
	if (g.jobDistinctHosts && chg.job > 0) || (g.groupDistinctHosts && chg.group(g.tg.Name) > 0) {
		s.tally.filtered(n, feasible.FilterDistinctHosts)
		return false
	}
	for _, d := range g.distinct {
		if reason := d.Check(n); reason != "" {
			s.tally.filtered(n, reason)
			return false
		}
	}
	if g.csi != nil {
		if reason := s.csiCheck(g, n); reason != "" {
			s.tally.filtered(n, reason)
			return false
		}
	}
	return true
}

// rank fits the group on n and scores it; ok is false when it does not fit
// (the node is tallied as exhausted).
// buffered says to assign into a buffer (assignBuf): the walk ranks more
// than one node.
func (s *Stack) rank(g *group, n *sdk.Node, pos int, cached bool, info *nodeInfo, opts Options, buffered bool) (c candidate, ok bool) {
	c.node = n
	c.resources = g.resources
	preemptOK := s.cfg.Preempt || opts.Preempt
	// The fit and the scores that depend only on the node are cached until
	// the plan changes the node; assignments and preemption are not.
	var fc fitCache
	if cached && !g.special {
		fc = g.fits[pos]
	}
	if !fc.valid || fc.version != info.change.version {
		fc = s.fit(g, n, info)
		if cached && !g.special {
			g.fits[pos] = fc
		}
	}
	var dev deviceAffinity
	// heldVictims hold static ports or device instances the group asks
	// for; they are evicted first, and the fit is judged without them.
	var heldVictims []*sdk.Allocation
	if g.special {
		s.proposed = s.plan.AppendProposed(s.proposed[:0], n.ID)
		proposed := s.proposed
		if buffered {
			c.buf = s.bufs.get()
		}
		r, dim := s.assign(g, n, proposed, &dev, c.buf)
		if r == nil && preemptOK && (len(g.ports) > 0 || len(g.devices) > 0) {
			candidates := preempt.Candidates(g.prio, g.job.NamespacedID(), without(proposed, s.plan.NodePreemptions[n.ID]))
			heldVictims = preempt.ForPorts(g.hostPorts(n), candidates)
			if len(g.devices) > 0 {
				heldVictims = append(heldVictims, preempt.ForDevices(s.checker, n, g.devices,
					without(proposed, heldVictims), without(candidates, heldVictims))...)
			}
			if heldVictims != nil {
				dev = deviceAffinity{}
				r, _ = s.assign(g, n, without(proposed, heldVictims), &dev, c.buf)
			}
		}
		if r == nil {
			s.tally.exhausted(n, dim)
			return s.drop(c)
		}
		c.resources = r
	}
	fit := fc.fit
	if heldVictims != nil {
		used, capacity := s.needOn(g, n, info)
		for _, v := range heldVictims {
			used.Sub(v.Usage())
		}
		if fc.fits, fc.dim = used.Fits(capacity); fc.fits {
			fit = rank.Fit(s.cfg.Algorithm, used, capacity)
			c.preempted = heldVictims
		}
	}
	if !fc.fits {
		if !preemptOK {
			s.tally.exhausted(n, fc.dim)
			return s.drop(c)
		}
		used, capacity := s.needOn(g, n, info)
		// What the placement asks of the node: all it adds to what the
		// node holds as the plan leaves it.
		ask := used
		ask.Sub(info.used)
		ask.Sub(info.change.delta)
		for _, v := range heldVictims {
			used.Sub(v.Usage())
		}
		candidates := preempt.Candidates(g.prio, g.job.NamespacedID(), without(without(s.plan.Proposed(n.ID), s.plan.NodePreemptions[n.ID]), heldVictims))
		victims := preempt.Select(capacity, used, ask, candidates, s.plan.PreemptedOf)
		if victims == nil {
			s.tally.exhausted(n, fc.dim)
			return s.drop(c)
		}
		for _, v := range victims {
			used.Sub(v.Usage())
		}
		c.preempted = append(heldVictims, victims...)
		// The fit is scored as the node will be once the victims are gone.
		// Nomad scores it with them still counted (over capacity), which
		// rates every node needing preemption nearly full.
		fit = rank.Fit(s.cfg.Algorithm, used, capacity)
	}

	var sc nodeScores
	sc.add(scoreBinpack, fit, true)
	if dev.weight != 0 {
		sc.add(scoreDevices, dev.matched/dev.weight, true)
	}
	if !s.cfg.System {
		sc.add(scoreAntiAffinity, fc.anti, fc.anti != 0)
		pen := 0.0
		if opts.PenaltyNodes != nil && opts.PenaltyNodes[n.ID] {
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
			var ids []int32
			if cached {
				if ids = g.spreadIDs[pos]; ids == nil {
					ids = g.spread.Values(n, nil)
					g.spreadIDs[pos] = ids
				}
			} else {
				ids = g.spread.Values(n, nil)
			}
			if sp, has := g.spread.ScoreValues(ids); has {
				sc.add(scoreSpread, sp, true)
			}
		}
	}
	if c.preempted != nil && !s.cfg.System {
		// Nomad's system stack scores fit only, preemption included: a
		// system placement has one node to choose from.
		sc.add(scorePreemption, preempt.Score(c.preempted), true)
	}
	c.score = sc.normalize()
	s.scores.offer(pos, &sc)
	return c, true
}

// drop ends rank for a candidate that does not fit, giving its buffer back.
func (s *Stack) drop(c candidate) (candidate, bool) {
	s.bufs.put(c.buf)
	c.buf = nil
	return c, false
}

// needOn is what n would hold with the placement, and its capacity.
func (s *Stack) needOn(g *group, n *sdk.Node, info *nodeInfo) (used, capacity sdk.Usage) {
	used = info.used
	used.Add(info.change.delta)
	used.Add(g.base)
	if g.phases == nil {
		if g.cores > 0 {
			used.CPU += int64(g.cores) * feasible.SharesPerCore(n)
		}
		return used, info.capacity
	}
	p := *g.phases
	if g.cores > 0 {
		spc := feasible.SharesPerCore(n)
		for _, u := range []*sdk.Usage{&p.Sidecars, &p.Prestart, &p.Main, &p.Poststop} {
			u.CPU += u.Cores * spc
		}
	}
	used.Add(p.Total())
	return used, info.capacity
}

// fit computes whether the group fits n as the plan leaves it, its fit
// score and its anti-affinity penalty.
func (s *Stack) fit(g *group, n *sdk.Node, info *nodeInfo) fitCache {
	used, capacity := s.needOn(g, n, info)
	fc := fitCache{valid: true, version: info.change.version}
	fc.fits, fc.dim = used.Fits(capacity)
	if fc.fits {
		fc.fit = rank.Fit(s.cfg.Algorithm, used, capacity)
	}
	if !s.cfg.System {
		fc.anti = rank.JobAntiAffinity(info.change.group(g.tg.Name), g.tg.Count)
	}
	return fc
}

// without returns allocs less those in drop (a new slice when drop is not
// empty): with a node's NodePreemptions, those the plan does not already
// preempt.
func without(allocs, drop []*sdk.Allocation) []*sdk.Allocation {
	if len(drop) == 0 {
		return allocs
	}
	out := make([]*sdk.Allocation, 0, len(allocs))
	for _, a := range allocs {
		gone := false
		for _, d := range drop {
			if d.ID == a.ID {
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

// Assign returns what an allocation of tg would hold on n after the plan,
// as Select assigns it: what the group asks for, with its ports, reserved
// cores and devices handed out among those the allocations n holds after
// the plan keep. It returns nil and the exhausted dimension as Nomad
// reports it ("network: reserved port collision http=8080", "cores",
// "devices: ...") when something is missing. It does not check that the
// quantities fit (see sdk.Usage.Fits). A scheduler that picks nodes its own
// way places with it, since the host refuses a placement without the ports
// its group asks for.
func (s *Stack) Assign(tg *sdk.TaskGroup, n *sdk.Node) (*sdk.AllocatedResources, string) {
	var dev deviceAffinity
	return s.assign(s.group(s.job, tg), n, s.plan.Proposed(n.ID), &dev, nil)
}

// deviceAffinity sums, over a placement's device requests, the weights of
// the affinities the chosen devices meet and of all their affinities: the
// node's "devices" score is their ratio (Nomad's), recorded only when some
// request has affinities.
type deviceAffinity struct {
	matched, weight float64
}

// assign hands out the group's ports, reserved cores and devices on n
// given what the proposed allocations hold, and sums the affinities of the
// devices chosen into dev. It returns nil and the exhausted dimension when
// something is missing.
func (s *Stack) assign(g *group, n *sdk.Node, proposed []*sdk.Allocation, dev *deviceAffinity, buf *assignBuf) (*sdk.AllocatedResources, string) {
	tg := g.tg
	var r *sdk.AllocatedResources
	if buf != nil {
		r = buf.reset()
	} else {
		r = &sdk.AllocatedResources{Tasks: make(map[string]*sdk.AllocatedTaskResources, len(tg.Tasks))}
	}
	r.TaskLifecycles = g.lifecycles
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
		if buf != nil {
			var reason string
			if buf.mappings, reason = feasible.AssignPortsInto(n, ports, tg.Networks[0], rng, &buf.offer, buf.mappings); reason != "" {
				return nil, reason
			}
			r.Shared.Networks, r.Shared.Ports = buf.shared[:], buf.mappings
		} else {
			offer, mappings, reason := feasible.AssignPorts(n, ports, tg.Networks[0], rng)
			if offer == nil {
				return nil, reason
			}
			r.Shared.Networks, r.Shared.Ports = []*sdk.NetworkResource{offer}, mappings
		}
	}
	// The devices of all tasks are assigned at once (g.devices, in task
	// order), when the first task asking for some comes, so that a request
	// finding no room can send an earlier one to another group.
	var devs []*sdk.AllocatedDeviceResource // those of this task and the next
	var scores []float64
	var cores map[uint16]bool
	for i, t := range tg.Tasks {
		var tr *sdk.AllocatedTaskResources
		if buf != nil {
			tr = buf.task(i)
		} else {
			tr = &sdk.AllocatedTaskResources{}
		}
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
			offer, reason := feasible.AssignTaskPorts(n, ports, nw, rng)
			if offer == nil {
				return nil, reason
			}
			tr.Networks = append(tr.Networks, offer)
		}
		for _, req := range res.Devices {
			if devs == nil {
				if devs, scores = feasible.NewDeviceAllocator(s.checker, n, proposed).AssignAll(g.devices); devs == nil {
					return nil, feasible.DimNoDevices
				}
			}
			d, score := devs[0], scores[0]
			devs, scores = devs[1:], scores[1:]
			tr.Devices = append(tr.Devices, d)
			w := 0.0
			for _, af := range req.Affinities {
				w += math.Abs(float64(af.Weight))
			}
			dev.matched += score * w // score is the matched weight over w
			dev.weight += w
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
