package stack

import (
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// checkIndex summarises a group's cached node checks once every node's is
// known: the positions that passed, and, per reason the others failed
// for, how many failed it before each position. A walk then visits only
// the nodes that passed and accounts for the ones it skipped in bulk,
// with the same result and the same metric as visiting them one by one.
// With spreads or affinities Nomad ranks up to max(count, 100) nodes per
// placement, so a cluster where half the nodes fail a constraint would
// otherwise spend half its time re-filtering them.
type checkIndex struct {
	n      int
	passed []int32
	// reasons are the distinct (class, reason) failures; before[r][p] is
	// how many nodes at positions < p failed with reasons[r].
	reasons []tallyEntry
	before  [][]int32
}

func newCheckIndex(nodes []*sdk.Node, checks []nodeCheck) *checkIndex {
	x := &checkIndex{n: len(nodes)}
	for pos, c := range checks {
		if c.passed {
			x.passed = append(x.passed, int32(pos))
			continue
		}
		r := slices.IndexFunc(x.reasons, func(e tallyEntry) bool { return e.class == nodes[pos].NodeClass && e.reason == c.reason })
		if r < 0 {
			r = len(x.reasons)
			x.reasons = append(x.reasons, tallyEntry{class: nodes[pos].NodeClass, reason: c.reason})
			x.before = append(x.before, make([]int32, len(nodes)+1))
		}
		x.before[r][pos+1] = 1
	}
	for _, b := range x.before {
		for p := 1; p < len(b); p++ {
			b[p] += b[p-1]
		}
	}
	return x
}

// failedIn counts the failures of reason r at positions [from, from+count)
// of the circular node list.
func (x *checkIndex) failedIn(r, from, count int) int {
	b := x.before[r]
	end := from + count
	if end <= x.n {
		return int(b[end] - b[from])
	}
	return int(b[x.n]-b[from]) + int(b[end-x.n])
}

// walkIndexed is walk over the nodes that passed their checks.
func (s *Stack) walkIndexed(g *group, m *sdk.AllocMetric, opts Options, offset *int, limit int) *Option {
	x := g.index
	n := x.n
	start := *offset % n
	first, _ := slices.BinarySearch(x.passed, int32(start))
	ch := choice{bufs: &s.bufs}
	seen := 0
	visited := n // every node, unless the limit stops the walk early
	for k := 0; k < len(x.passed) && seen < limit; k++ {
		pos := int(x.passed[(first+k)%len(x.passed)])
		node := s.nodes[pos]
		info := s.nodeInfo(pos)
		if s.feasible(g, node, pos, true, info.change) {
			if c, ok := s.rank(g, node, pos, true, info, opts, true); ok && ch.offer(c) {
				seen++
			}
		}
		if seen == limit {
			visited = (pos-start+n)%n + 1
		}
	}
	return s.endIndexedWalk(x, m, &ch, seen, limit, start, visited, offset)
}

// endIndexedWalk ends a walk over the index x that started at position
// start and covered visited positions: the nodes that failed their checks
// in the stretch are tallied, the offset moves past it, and the choice is
// settled.
func (s *Stack) endIndexedWalk(x *checkIndex, m *sdk.AllocMetric, ch *choice, seen, limit, start, visited int, offset *int) *Option {
	m.NodesEvaluated += visited
	for r, e := range x.reasons {
		if c := x.failedIn(r, start, visited); c > 0 {
			s.tally.addN(e.class, e.reason, false, c)
		}
	}
	*offset = (start + visited) % x.n
	return ch.settle(seen, limit, &s.options)
}
