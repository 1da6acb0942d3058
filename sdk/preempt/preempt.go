// Package preempt chooses which lower-priority allocations to evict from a
// node so that a higher-priority placement fits.
//
// Only allocations of other jobs whose priority is at least MinPriorityDelta
// below the placing job's are candidates (the host's plan applier enforces
// the same rule). Among them, the lowest priorities go first; within a
// priority, allocations whose resources best match what the placement asks
// for, less what the victims chosen so far free, go first (Nomad's
// choice), so that few allocations are evicted, and a group already
// losing as many allocations as its migrate max_parallel is passed over
// while another will do (MaxParallelPenalty); finally any allocation the
// placement turns out not to need is given back. A placement that asks for
// static host ports also evicts every candidate holding one of them
// (ForPorts), and one that asks for devices evicts holders of matching
// instances (ForDevices), before any is chosen for resources.
//
//	victims := preempt.Select(capacity, usedWithPlacement, ask, preempt.Candidates(prio, job, proposed), plan.PreemptedOf)
//	if victims == nil {
//		// even evicting every candidate would not make room
//	}
package preempt

import (
	"math"
	"slices"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

// MinPriorityDelta is how much higher the placing job's priority must be
// than a preempted allocation's job priority.
const MinPriorityDelta = 10

// Priority returns the priority of the job an allocation runs.
func Priority(a *sdk.Allocation) int {
	if a.Job != nil {
		return a.Job.Priority
	}
	return sdk.JobDefaultPriority
}

// Candidates returns the allocations of proposed that a job of priority
// prio may preempt: of another job, at least MinPriorityDelta lower, and
// not finished on their node. That includes one already told to stop or
// evict whose node still runs it: it holds its room until the node
// reports it finished, and preempting it again costs nothing (the host
// leaves it as it is), as Nomad's preemptor takes it again.
func Candidates(prio int, job sdk.NamespacedID, proposed []*sdk.Allocation) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, a := range proposed {
		if a.ClientTerminalStatus() || (a.JobID == job.ID && a.Namespace == job.Namespace) {
			continue
		}
		if prio-Priority(a) >= MinPriorityDelta {
			out = append(out, a)
		}
	}
	return out
}

// Group names a job's task group.
type Group struct {
	Namespace, JobID, TaskGroup string
}

// GroupOf is a's group.
func GroupOf(a *sdk.Allocation) Group { return Group{a.Namespace, a.JobID, a.TaskGroup} }

// MaxParallelPenalty is added to a candidate's distance for each
// allocation of its group, this one included, preempted beyond its
// group's migrate max_parallel (Nomad's), so that evictions spread over
// groups rather than take down more of one than it lets migrate at once.
const MaxParallelPenalty = 50.0

// Select returns the allocations to evict from candidates so that used (what
// the node would hold with the new placement, which asks for ask) fits
// capacity, or nil when no choice makes it fit. Each victim is the one
// closest to what the placement asks for less what the victims before it
// free, as Nomad's preemptor measures it: not to what the node lacks,
// which would take several small allocations where one the placement's
// size does. candidates must already satisfy the priority rule
// (see Candidates). Those already stopping are taken first, whatever their
// priority: evicting them disturbs nothing that still would run (Nomad's
// preemptor may pass over them for a running allocation). The result is
// ordered so: those already stopping, then by priority, lowest first.
// planned, if not nil, says how many allocations of a group the plan
// preempts already: with those chosen here, they weigh against taking
// more of a group than its migrate max_parallel (MaxParallelPenalty).
func Select(capacity, used, ask sdk.Usage, candidates []*sdk.Allocation, planned func(Group) int) []*sdk.Allocation {
	if ok, _ := used.Fits(capacity); ok {
		return nil
	}
	pool := slices.Clone(candidates)
	slices.SortStableFunc(pool, func(a, b *sdk.Allocation) int { return order(a) - order(b) })
	var chosen []*sdk.Allocation
	taken := map[Group]int{}
	for len(pool) > 0 {
		if ok, _ := used.Fits(capacity); ok {
			break
		}
		// Take, among the first left in that order (the same priority, and
		// stopping or not), the allocation closest to what is still asked.
		first := order(pool[0])
		best, bestDist := -1, math.Inf(1)
		for i, a := range pool {
			if order(a) != first {
				break
			}
			d := distance(ask, a.Usage())
			if mp := maxParallel(a); mp > 0 {
				g := GroupOf(a)
				n := taken[g]
				if planned != nil {
					n += planned(g)
				}
				if n >= mp {
					d += float64(n+1-mp) * MaxParallelPenalty
				}
			}
			if d < bestDist {
				best, bestDist = i, d
			}
		}
		a := pool[best]
		pool = append(pool[:best], pool[best+1:]...)
		chosen = append(chosen, a)
		taken[GroupOf(a)]++
		used.Sub(a.Usage())
		ask.Sub(a.Usage())
	}
	if ok, _ := used.Fits(capacity); !ok {
		return nil
	}
	// Give back what is not needed, highest priority first (where Nomad
	// keeps the shortest run of its choice, farthest from the ask first,
	// that makes room, which may keep one that is not needed).
	for i := len(chosen) - 1; i >= 0; i-- {
		u := used
		u.Add(chosen[i].Usage())
		if ok, _ := u.Fits(capacity); ok {
			used = u
			chosen = append(chosen[:i], chosen[i+1:]...)
		}
	}
	return chosen
}

// order is a's place among Select's candidates: those already stopping
// (told to stop or evict) first, then by priority.
func order(a *sdk.Allocation) int {
	if a.TerminalStatus() {
		return math.MinInt32 + Priority(a)
	}
	return Priority(a)
}

// maxParallel is the migrate max_parallel of a's group (0: none known).
func maxParallel(a *sdk.Allocation) int {
	if a.Job == nil {
		return 0
	}
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.Migrate != nil {
		return tg.Migrate.MaxParallel
	}
	return 0
}

// HostPort is a host port on one of a node's addresses.
type HostPort struct {
	Addr string
	Port int
}

// ForPorts returns the candidates that hold any of the host ports asked
// for, each on its address (a port held on another address of the node is
// no obstacle, as feasible.PortIndex counts ports): a placement that needs
// those ports must evict them all, whatever their priority among the
// candidates. It returns nil when none does.
func ForPorts(ports []HostPort, candidates []*sdk.Allocation) []*sdk.Allocation {
	if len(ports) == 0 {
		return nil
	}
	var out []*sdk.Allocation
	var held feasible.PortIndex
	for _, a := range candidates {
		held.Reset()
		held.AddAlloc(a)
		for _, p := range ports {
			if held.Has(p.Addr, p.Port) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// ForDevices returns the candidates to evict from node so that the device
// requests of reqs find enough free instances together (as
// feasible.DeviceAllocator.AssignAll gives them), given the allocations
// proposed there (the candidates among them). It stops as soon as they
// fit; until then it takes the requests greedily, in order, as Nomad's
// device preemption does: for the first one short of instances it
// considers each matching device group and the candidates holding its
// instances, lowest priority first (then most instances first), until
// enough are free, and takes the group whose victims have the lowest sum
// of distinct priorities. Where that order finds no victims (an earlier
// request took the group a later one needs, and another group it could
// have taken is held by candidates), it tries the requests' other orders,
// up to maxDeviceOrders requests, and answers with the first that does.
// It returns nil when nothing need be or can be evicted.
func ForDevices(ch *feasible.Checker, node *sdk.Node, reqs []*sdk.RequestedDevice, proposed, candidates []*sdk.Allocation) []*sdk.Allocation {
	if node.NodeResources == nil {
		return nil
	}
	victims := devicesInOrder(ch, node, reqs, proposed, candidates)
	if victims != nil || len(reqs) < 2 || len(reqs) > maxDeviceOrders {
		return victims
	}
	order, given := slices.Clone(reqs), true
	permute(order, 0, func() bool {
		if given { // the first order is the one just tried
			given = false
			return true
		}
		victims = devicesInOrder(ch, node, order, proposed, candidates)
		return victims == nil
	})
	return victims
}

// maxDeviceOrders bounds the requests whose other orders ForDevices tries
// (4! = 24 orders): a group asks for a few devices at most.
const maxDeviceOrders = 4

// permute calls try on each order of s[k:] (s itself first) while it
// returns true; it reports whether try kept returning true.
func permute(s []*sdk.RequestedDevice, k int, try func() bool) bool {
	if k == len(s) {
		return try()
	}
	for i := k; i < len(s); i++ {
		s[k], s[i] = s[i], s[k]
		more := permute(s, k+1, try)
		s[k], s[i] = s[i], s[k]
		if !more {
			return false
		}
	}
	return true
}

// devicesInOrder is ForDevices for the requests in the order given.
func devicesInOrder(ch *feasible.Checker, node *sdk.Node, reqs []*sdk.RequestedDevice, proposed, candidates []*sdk.Allocation) []*sdk.Allocation {
	var victims []*sdk.Allocation
	evicted := map[string]bool{}
retry:
	for range len(candidates) + 1 {
		devs := feasible.NewDeviceAllocator(ch, node, nil)
		for _, a := range proposed {
			if !evicted[a.ID] {
				devs.AddAlloc(a)
			}
		}
		if got, _ := devs.AssignAll(reqs); got != nil {
			return victims // the requests fit together without more victims
		}
		for _, req := range reqs {
			if d, _ := devs.Assign(req); d != nil {
				continue
			}
			more := deviceVictims(ch, node, req, devs, candidates, evicted)
			if more == nil {
				return nil
			}
			for _, a := range more {
				evicted[a.ID] = true
			}
			victims = append(victims, more...)
			continue retry // assign every request again without them
		}
		return victims
	}
	return nil
}

// deviceVictims chooses, for one request that found too few free
// instances, the candidates (not yet evicted) to evict.
func deviceVictims(ch *feasible.Checker, node *sdk.Node, req *sdk.RequestedDevice, devs *feasible.DeviceAllocator,
	candidates []*sdk.Allocation, evicted map[string]bool) []*sdk.Allocation {
	var best []*sdk.Allocation
	bestCost := math.MaxInt
	for _, d := range node.NodeResources.Devices {
		if !feasible.DeviceMatches(ch, d, req) {
			continue
		}
		instances := map[string]bool{}
		for _, inst := range d.Instances {
			if inst.Healthy {
				instances[inst.ID] = true
			}
		}
		type holder struct {
			a *sdk.Allocation
			n int
		}
		var holders []holder
		for _, a := range candidates {
			if evicted[a.ID] || a.ClientTerminalStatus() || a.AllocatedResources == nil {
				continue
			}
			n := 0
			for _, t := range a.AllocatedResources.Tasks {
				for _, ad := range t.Devices {
					if ad.Vendor != d.Vendor || ad.Type != d.Type || ad.Name != d.Name {
						continue
					}
					for _, id := range ad.DeviceIDs {
						if instances[id] {
							n++
						}
					}
				}
			}
			if n > 0 {
				holders = append(holders, holder{a, n})
			}
		}
		slices.SortStableFunc(holders, func(x, y holder) int {
			if px, py := Priority(x.a), Priority(y.a); px != py {
				return px - py
			}
			return y.n - x.n
		})
		free := devs.Free(d)
		var taken []holder
		for _, h := range holders {
			if uint64(free) >= req.Count {
				break
			}
			free += h.n
			taken = append(taken, h)
		}
		if uint64(free) < req.Count {
			continue
		}
		// Give back, highest priority first, what the request turns out
		// not to need (a later holder of more instances may have made an
		// earlier one unnecessary), as Nomad keeps only what the count
		// needs.
		for i := len(taken) - 1; i >= 0; i-- {
			if uint64(free-taken[i].n) >= req.Count {
				free -= taken[i].n
				taken = slices.Delete(taken, i, i+1)
			}
		}
		var chosen []*sdk.Allocation
		seen := map[int]bool{}
		cost := 0
		for _, h := range taken {
			chosen = append(chosen, h.a)
			if p := Priority(h.a); !seen[p] {
				seen[p] = true
				cost += p
			}
		}
		if len(chosen) > 0 && cost < bestCost {
			best, bestCost = chosen, cost
		}
	}
	return best
}

// distance is how far an allocation's resources are from what is still
// asked for, each dimension relative to the need, those no longer needed
// left out (Nomad's basic resource distance, with reserved cores).
func distance(need, have sdk.Usage) float64 {
	d := 0.0
	add := func(n, h int64) {
		if n > 0 {
			x := float64(n-h) / float64(n)
			d += x * x
		}
	}
	add(need.CPU, have.CPU)
	add(need.MemoryMB, have.MemoryMB)
	add(need.DiskMB, have.DiskMB)
	add(need.Cores, have.Cores)
	return math.Sqrt(d)
}

// Score is the preemption score of a node: lower when the evicted
// allocations have higher priorities (Nomad's logistic curve over the net
// priority, 0.5 at 2048).
func Score(victims []*sdk.Allocation) float64 {
	if len(victims) == 0 {
		return 0
	}
	sum, top := 0, 0
	for _, a := range victims {
		p := Priority(a)
		sum += p
		top = max(top, p)
	}
	if top == 0 {
		top = 1
	}
	net := float64(top) + float64(sum)/float64(top)
	const rate, origin = 0.0048, 2048.0
	return 1 / (1 + math.Exp(rate*(net-origin)))
}
