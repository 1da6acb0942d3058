package stack

import (
	"encoding/binary"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// rankIndex lets a walk rank only the nodes that can matter to it. With
// spreads or affinities Nomad ranks up to max(count, 100) feasible nodes per
// placement, so a group of 1,000 ranks every feasible node for every
// placement: O(placements × nodes), and ranking a node in full (fit cache,
// scores, the metric's best five) is most of the scheduler's time.
//
// Under the conditions of rankable, a node's normalized score is
//
//	(partial + spread) / (1 + k + 1)   or   partial / (1 + k)
//
// where partial (fit, job anti-affinity and affinity, summed as nodeScores
// sums them) and k (how many of the last two count) depend only on the
// node and the plan's change there, and spread (and whether it counts)
// only on the node's tuple of spread values, its class, and the group's
// counts. The index caches partial and k per node until the plan changes
// the node, and computes spread once per class per selection, so scoring a
// node costs a few reads and one division.
//
// A selection then replays the walk on those scores alone: the same nodes
// in the same order, the same limit and the same set-aside non-positive
// options, and the same metric counts. It picks out the nodes the walk's
// outcome depends on: those that enter the metric's best five when offered
// (the best always does, see walkRanked) and those set aside. Only these
// are ranked in full, in walk order, by the same code as the walk: any
// other node's offer would change nothing.
type rankIndex struct {
	// entries are per position of checkIndex.passed.
	entries []rankEntry
	// classes are the distinct tuples of spread value IDs (one empty
	// class without spreads); scores is their score in this selection.
	classes [][]int32
	scores  []classScore
	// picks is the walk's list of nodes to rank in full (positions).
	picks []int32
}

// rankEntry is what a node scores apart from its spread.
type rankEntry struct {
	valid   bool
	version uint32 // of the plan's change on the node
	fits    bool
	k       uint8 // counted scores besides fit and spread
	class   int32
	aff     float64 // affinity, constant
	partial float64
}

type classScore struct {
	spread  float64
	counted bool
}

// rankable reports whether the index reproduces the walk for g: nothing
// but the node's own state and its spread values may enter its score, and
// ranking a node must have no effect beyond the scores. So: no preemption
// (victims depend on the node's allocations), no reschedule penalty (per
// selection), no ports, cores or devices (assigned per node from the
// context's random source), no distinct_hosts or distinct_property (they
// filter by counts the walk would read), and pure spreads (see
// rank.Spread.Pure). Without spreads or affinities the walk ranks a few
// nodes and needs no index.
func (s *Stack) rankable(g *group, opts Options) bool {
	if s.walkOnly || s.cfg.System || s.cfg.Preempt || opts.Preempt || len(opts.PenaltyNodes) > 0 {
		return false
	}
	if g.special || g.jobDistinctHosts || g.groupDistinctHosts || len(g.distinct) > 0 {
		return false
	}
	if g.spread != nil {
		return g.spread.Pure()
	}
	return g.affinity.Any()
}

func (s *Stack) newRankIndex(g *group) *rankIndex {
	x := g.index
	ri := &rankIndex{entries: make([]rankEntry, len(x.passed))}
	keys := map[string]int32{}
	var key []byte
	for i, p := range x.passed {
		pos := int(p)
		n := s.nodes[pos]
		e := &ri.entries[i]
		if g.affinity.Any() {
			e.aff, _ = g.affinity.Score(s.checker, n)
		}
		if g.spread == nil {
			continue
		}
		ids := g.spreadIDs[pos]
		if ids == nil {
			ids = g.spread.Values(n, nil)
			g.spreadIDs[pos] = ids
		}
		key = key[:0]
		for _, id := range ids {
			key = binary.LittleEndian.AppendUint32(key, uint32(id))
		}
		c, ok := keys[string(key)]
		if !ok {
			c = int32(len(ri.classes))
			keys[string(key)] = c
			ri.classes = append(ri.classes, ids)
		}
		e.class = c
	}
	if len(ri.classes) == 0 {
		ri.classes = [][]int32{nil}
	}
	ri.scores = make([]classScore, len(ri.classes))
	return ri
}

// refresh recomputes e for the node at pos as the plan leaves it, through
// the fit cache that rank reads.
func (s *Stack) refresh(g *group, e *rankEntry, pos int, info *nodeInfo) {
	fc := g.fits[pos]
	if !fc.valid || fc.version != info.change.version {
		fc = s.fit(g, s.nodes[pos], info)
		g.fits[pos] = fc
	}
	e.valid, e.version, e.fits = true, info.change.version, fc.fits
	// As nodeScores.add sums them: fit, then the counted ones in order.
	sum, k := fc.fit, uint8(0)
	if fc.anti != 0 {
		sum += fc.anti
		k++
	}
	if e.aff != 0 {
		sum += e.aff
		k++
	}
	e.partial, e.k = sum, k
}

// walkRanked is walkIndexed through the rank index.
func (s *Stack) walkRanked(g *group, m *sdk.AllocMetric, opts Options, offset *int, limit int) *Option {
	x, ri := g.index, g.ranked
	n := x.n
	start := *offset % n
	first, _ := slices.BinarySearch(x.passed, int32(start))
	if g.spread != nil {
		for c, ids := range ri.classes {
			sp, counted := g.spread.ScoreValues(ids)
			ri.scores[c] = classScore{spread: sp, counted: counted}
		}
	}

	// The walk on scores alone. top holds the scores of the metric's best
	// five as scoreTracker holds them: a node enters when there are fewer
	// than five or it beats the worst.
	var top [MaxRetainedScores]float64
	nTop, worst := 0, 0
	nSkipped, seen := 0, 0
	visited := n
	picks := ri.picks[:0]
	np := len(x.passed)
	for k := 0; k < np && seen < limit; k++ {
		i := first + k
		if i >= np {
			i -= np
		}
		pos := int(x.passed[i])
		info := &s.info[pos]
		if !info.known {
			node := s.nodes[pos]
			*info = nodeInfo{known: true, used: s.plan.state.NodeUsage(node.ID), capacity: node.Capacity(),
				change: s.plan.track(node.ID)}
		}
		e := &ri.entries[i]
		if !e.valid || e.version != info.change.version {
			s.refresh(g, e, pos, info)
		}
		if !e.fits {
			s.tally.exhausted(s.nodes[pos], g.fits[pos].dim)
			continue
		}
		cs := ri.scores[e.class]
		sum, cnt := e.partial, int(e.k)+1
		if cs.counted {
			sum += cs.spread
			cnt++
		}
		score := sum / float64(cnt)
		pick := false
		switch {
		case nTop < MaxRetainedScores:
			top[nTop] = score
			nTop++
			pick = true
			if nTop == MaxRetainedScores {
				worst = lowest(&top)
			}
		case score > top[worst]:
			top[worst] = score
			worst = lowest(&top)
			pick = true
		}
		if nSkipped < maxSkip && score <= skipThreshold {
			nSkipped++
			pick = true
		} else {
			seen++
		}
		if pick {
			picks = append(picks, int32(pos))
		}
		if seen == limit {
			visited = (pos-start+n)%n + 1
		}
	}
	ri.picks = picks

	// The picked nodes ranked in full, in walk order. The walk's best is
	// among them: the first node it counts (does not set aside) with the
	// best score enters the best five, since before it only set-aside
	// nodes (at most maxSkip < MaxRetainedScores) score as well. The
	// set-aside ones are the first non-positive picks, as in the walk.
	var best candidate
	var skipped [maxSkip]candidate
	nSet := 0
	for _, p := range picks {
		pos := int(p)
		c, ok := s.rank(g, s.nodes[pos], pos, true, &s.info[pos], opts)
		if !ok {
			continue
		}
		if nSet < maxSkip && c.score <= skipThreshold {
			skipped[nSet] = c
			nSet++
			continue
		}
		if best.node == nil || c.score > best.score {
			best = c
		}
	}
	for i := 0; i < nSet && seen < limit; i++ {
		seen++
		if best.node == nil || skipped[i].score > best.score {
			best = skipped[i]
		}
	}

	m.NodesEvaluated += visited
	for r, e := range x.reasons {
		if c := x.failedIn(r, start, visited); c > 0 {
			s.tally.addN(e.class, e.reason, false, c)
		}
	}
	*offset = (start + visited) % n
	if best.node == nil {
		return nil
	}
	return &Option{Node: best.node, Resources: best.resources, Preempted: best.preempted, Score: best.score}
}

// lowest is the index of the lowest score, the first of equals (as
// scoreTracker.findWorst picks it).
func lowest(top *[MaxRetainedScores]float64) int {
	w := 0
	for i := 1; i < len(top); i++ {
		if top[i] < top[w] {
			w = i
		}
	}
	return w
}
