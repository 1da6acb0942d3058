package stack

import (
	"encoding/binary"
	"math"
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
// only on the node's class, its tuple of spread values, and the group's
// counts. Rounding aside, the score rises with partial within a class and
// a k, and rounding is monotone too: so the best partial of a class and a
// k bounds the score of all its nodes.
//
// A selection replays the walk on these scores (same nodes in the same
// order, the same limit, the same set-aside non-positive options, offset
// and metric counts) and picks out the nodes the outcome depends on: those
// that enter the metric's best five when offered (the best always does,
// see walkRanked) and those set aside. Only these are ranked in full, in
// walk order, by the walk's code: any other node's offer changes nothing.
// The replay does not visit the nodes in between: per class, a tree over
// its nodes in walk order keeps the best and worst partial per k of every
// range, so the next node that would enter the best five (or be set
// aside) is found by descending the classes' trees; counts of fitting and
// exhausted nodes in between come from prefix sums. A selection then costs
// one descent per class and one per node that enters, and a placement
// updates the one node that received it (the plan lists the nodes it
// changes). With many classes (a spread on a unique attribute) descents
// would cost more than the walk: the replay then visits every node, still
// without ranking it in full.
//
// TestRankIndex_EqualsWalk checks that selections through the index and
// the walk are identical: node, score, resources and metric.
type rankIndex struct {
	// entries are per position of checkIndex.passed, which is also the
	// walk order (from the offset, around).
	entries []rankEntry
	// classes are the distinct tuples of spread value IDs (one empty class
	// without spreads); scores is their spread score in this selection.
	classes [][]int32
	scores  []classScore
	// members are each class's entries in order, trees their partials;
	// slot is an entry's place among its class's members.
	members [][]int32
	trees   []classTree
	slot    []int32
	// fitting counts the entries that fit; exhausted those that do not,
	// per node class and dimension (keys).
	fitting   fenwick
	exhausted []fenwick
	keys      []tallyEntry
	// byChange finds an entry from the plan's record of its node; logged
	// is how much of the plan's change list the entries reflect.
	byChange map[*nodeChange]int32
	logged   int
	// scan says there are too many classes for descents to pay.
	scan bool
	// next is, per class, the first walk step from which it may hold an
	// entry the replay looks for (see replay.next).
	next []int
	// picks is the walk's list of nodes to rank in full (positions).
	picks []int32
}

// maxTreeClasses is the most classes for which the replay descends trees
// rather than visiting every node.
const maxTreeClasses = 64

// maxK bounds rankEntry.k: job anti-affinity and affinity.
const maxK = 2

// rankEntry is what a node scores apart from its spread.
type rankEntry struct {
	version uint32 // of the plan's change on the node
	fits    bool
	k       uint8 // counted scores besides fit and spread
	class   int32
	key     int32 // index in keys when it does not fit
	aff     float64
	partial float64
}

type classScore struct {
	spread  float64
	counted bool
}

// score is the normalized score of a node of class c with partial and k,
// computed as nodeScores computes it.
func (ri *rankIndex) score(c int32, partial float64, k int) float64 {
	cs := &ri.scores[c]
	sum, cnt := partial, k+1
	if cs.counted {
		sum += cs.spread
		cnt++
	}
	return sum / float64(cnt)
}

// rankable reports whether the index reproduces the walk for g: nothing
// but the node's own state and its spread values may enter its score, and
// ranking a node must have no effect beyond the scores. So: no preemption
// (victims depend on the node's allocations), no reschedule penalty (per
// selection), no ports, cores or devices (assigned per node from the
// context's random source), no distinct_hosts, distinct_property or CSI
// volumes (they filter by counts the walk would read), and pure spreads (see
// rank.Spread.Pure). Without spreads or affinities the walk ranks a few
// nodes and needs no index.
func (s *Stack) rankable(g *group, opts Options) bool {
	if s.walkOnly || s.cfg.System || s.cfg.Preempt || opts.Preempt || len(opts.PenaltyNodes) > 0 {
		return false
	}
	if g.special || g.jobDistinctHosts || g.groupDistinctHosts || len(g.distinct) > 0 || g.csi != nil {
		return false
	}
	if g.spread != nil {
		return g.spread.Pure()
	}
	return g.affinity.Any()
}

func (s *Stack) newRankIndex(g *group) *rankIndex {
	x := g.index
	np := len(x.passed)
	ri := &rankIndex{entries: make([]rankEntry, np), slot: make([]int32, np), fitting: make(fenwick, np+1),
		byChange: make(map[*nodeChange]int32, np), logged: len(s.plan.changed)}
	keys := map[string]int32{}
	var key []byte
	for i, p := range x.passed {
		pos := int(p)
		n := s.nodes[pos]
		info := s.nodeInfo(pos)
		ri.byChange[info.change] = int32(i)
		e := &ri.entries[i]
		e.key = -1
		if g.affinity.Any() {
			e.aff, _ = g.affinity.Score(s.checker, n)
		}
		if g.spread != nil {
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
				ri.members = append(ri.members, nil)
			}
			e.class = c
		}
		if len(ri.members) == 0 {
			ri.classes, ri.members = [][]int32{nil}, [][]int32{nil}
		}
		ri.slot[i] = int32(len(ri.members[e.class]))
		ri.members[e.class] = append(ri.members[e.class], int32(i))
	}
	if np == 0 {
		ri.classes, ri.members = [][]int32{nil}, [][]int32{nil}
	}
	ri.scores = make([]classScore, len(ri.classes))
	ri.scan = len(ri.classes) > maxTreeClasses
	if !ri.scan {
		ri.trees = make([]classTree, len(ri.classes))
		ri.next = make([]int, len(ri.classes))
		for c, m := range ri.members {
			ri.trees[c] = newClassTree(len(m))
		}
	}
	for i := range ri.entries {
		s.refresh(g, ri, i, true)
	}
	return ri
}

// refresh recomputes entry i from its node as the plan leaves it, through
// the fit cache that rank reads, and updates the index's sums and trees.
func (s *Stack) refresh(g *group, ri *rankIndex, i int, first bool) {
	pos := int(g.index.passed[i])
	info := &s.info[pos]
	e := &ri.entries[i]
	if !first && e.version == info.change.version {
		return
	}
	fc := g.fits[pos]
	if !fc.valid || fc.version != info.change.version {
		fc = s.fit(g, s.nodes[pos], info)
		g.fits[pos] = fc
	}
	if !first {
		if e.fits {
			ri.fitting.add(i, -1)
		} else {
			ri.exhausted[e.key].add(i, -1)
		}
	}
	e.version, e.fits, e.key = info.change.version, fc.fits, -1
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
	if e.fits {
		ri.fitting.add(i, 1)
	} else {
		class := s.nodes[pos].NodeClass
		e.key = int32(slices.IndexFunc(ri.keys, func(t tallyEntry) bool { return t.class == class && t.reason == fc.dim }))
		if e.key < 0 {
			e.key = int32(len(ri.keys))
			ri.keys = append(ri.keys, tallyEntry{class: class, reason: fc.dim, exhausted: true})
			ri.exhausted = append(ri.exhausted, make(fenwick, len(ri.entries)+1))
		}
		ri.exhausted[e.key].add(i, 1)
	}
	if !ri.scan {
		ri.trees[e.class].set(int(ri.slot[i]), e.fits, e.k, e.partial)
	}
}

// walkRanked is walkIndexed through the rank index.
func (s *Stack) walkRanked(g *group, m *sdk.AllocMetric, opts Options, offset *int, limit int) *Option {
	x, ri := g.index, g.ranked
	n := x.n
	np := len(x.passed)
	for _, c := range s.plan.changed[ri.logged:] {
		if i, ok := ri.byChange[c]; ok {
			s.refresh(g, ri, int(i), false)
		}
	}
	ri.logged = len(s.plan.changed)
	if g.spread != nil {
		for c, ids := range ri.classes {
			sp, counted := g.spread.ScoreValues(ids)
			ri.scores[c] = classScore{spread: sp, counted: counted}
		}
	}
	start := *offset % n
	first, _ := slices.BinarySearch(x.passed, int32(start))
	if first == np {
		first = 0
	}

	// The walk on scores alone, from entry first around: w counts the
	// entries passed. top holds the scores of the metric's best five as
	// scoreTracker holds them: a node enters when there are fewer than five
	// or it beats the worst.
	r := replay{ri: ri, first: first}
	for c := range ri.next {
		ri.next[c] = -1
	}
	nSkipped, seen := 0, 0
	visited := n
	picks := ri.picks[:0]
	for w := 0; w < np && seen < limit; {
		// The entries before the next one that would enter the best five
		// or be set aside: the fitting ones only count towards the limit.
		next := r.next(w, nSkipped < maxSkip)
		if f := r.count(ri.fitting, w, next); seen+f >= limit && f > 0 {
			last := r.kth(w, limit-seen)
			s.tallyExhausted(ri, &r, w, last+1)
			seen = limit
			visited = (int(x.passed[r.entry(last)])-start+n)%n + 1
			break
		} else {
			seen += f
		}
		s.tallyExhausted(ri, &r, w, next)
		if next == np {
			break
		}
		i := r.entry(next)
		e := &ri.entries[i]
		w = next + 1
		if !e.fits { // scanning
			s.tally.exhausted(s.nodes[x.passed[i]], g.fits[x.passed[i]].dim)
			continue
		}
		score := ri.score(e.class, e.partial, int(e.k))
		pick := r.offer(score)
		if nSkipped < maxSkip && score <= skipThreshold {
			nSkipped++
			pick = true
		} else {
			seen++
		}
		pos := int(x.passed[i])
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
	ch := choice{bufs: &s.bufs}
	for _, p := range picks {
		pos := int(p)
		if c, ok := s.rank(g, s.nodes[pos], pos, true, &s.info[pos], opts, true); ok {
			ch.offer(c) // the replay counted seen already
		}
	}
	return s.endIndexedWalk(x, m, &ch, seen, limit, start, visited, offset)
}

// tallyExhausted tallies the entries in [w, end) of the walk that do not
// fit.
func (s *Stack) tallyExhausted(ri *rankIndex, r *replay, w, end int) {
	for k, t := range ri.keys {
		if c := r.count(ri.exhausted[k], w, end); c > 0 {
			s.tally.addN(t.class, t.reason, true, c)
		}
	}
}

// replay is one selection's walk over the index: the best five's scores
// so far, and the walk's start among the entries.
type replay struct {
	ri          *rankIndex
	first       int
	top         [MaxRetainedScores]float64
	nTop, worst int
	// what next looks for
	thr    float64
	nonpos bool
}

// entry is the entry at w steps into the walk.
func (r *replay) entry(w int) int {
	i := r.first + w
	if np := len(r.ri.entries); i >= np {
		i -= np
	}
	return i
}

// offer enters score in the best five, as scoreTracker.offer would, and
// reports whether it entered.
func (r *replay) offer(score float64) bool {
	switch {
	case r.nTop < MaxRetainedScores:
		r.top[r.nTop] = score
		r.nTop++
		if r.nTop == MaxRetainedScores {
			r.worst = lowest(&r.top)
		}
		return true
	case score > r.top[r.worst]:
		r.top[r.worst] = score
		r.worst = lowest(&r.top)
		return true
	}
	return false
}

// count counts what f counts over the entries [w, end) of the walk.
func (r *replay) count(f fenwick, w, end int) int {
	if end <= w {
		return 0
	}
	a, b := r.entry(w), r.entry(end-1)+1
	if a < b {
		return f.sum(b) - f.sum(a)
	}
	return f.sum(len(r.ri.entries)) - f.sum(a) + f.sum(b)
}

// kth returns the walk step of the k-th fitting entry from step w (k >= 1,
// and there are that many before the walk's end).
func (r *replay) kth(w, k int) int {
	f := r.ri.fitting
	np := len(r.ri.entries)
	a := r.entry(w)
	if rest := f.sum(np) - f.sum(a); k > rest {
		i := f.find(k - rest)
		return i + np - r.first
	}
	i := f.find(f.sum(a) + k)
	return (i - r.first + np) % np
}

// next returns the first walk step at or after w whose entry would enter
// the best five or (nonpos) be set aside, or the number of entries. When
// scanning, it is w.
//
// While the best five are not five, that is the next entry that fits.
// Then what the replay looks for only shrinks (the worst of the best five
// only rises, and setting aside stops), so a class's first step found
// before stays a bound: a class is searched again only once the walk has
// passed its step.
func (r *replay) next(w int, nonpos bool) int {
	ri := r.ri
	np := len(ri.entries)
	if ri.scan || w >= np {
		return w
	}
	if r.nTop < MaxRetainedScores {
		if r.count(ri.fitting, w, np) == 0 {
			return np
		}
		return r.kth(w, 1)
	}
	r.thr, r.nonpos = r.top[r.worst], nonpos
	best := np
	for c, step := range ri.next {
		if step < w {
			step = r.firstOf(int32(c), w)
			ri.next[c] = step
		}
		best = min(best, step)
	}
	return best
}

// firstOf returns the first walk step at or after w whose entry, of class
// c, next looks for, or the number of entries.
func (r *replay) firstOf(c int32, w int) int {
	ri := r.ri
	np := len(ri.entries)
	t := &ri.trees[c]
	if !r.hit(c, t, 1) {
		return np
	}
	mem := ri.members[c]
	a := r.entry(w)
	// The class's members at entries [a, np), then [0, first) (or
	// [a, first) when the walk has wrapped).
	var j int
	if a >= r.first {
		lo, _ := slices.BinarySearch(mem, int32(a))
		if j = t.first(r, c, 1, 0, t.size, lo, len(mem)); j < 0 {
			hi, _ := slices.BinarySearch(mem, int32(r.first))
			j = t.first(r, c, 1, 0, t.size, 0, hi)
		}
	} else {
		lo, _ := slices.BinarySearch(mem, int32(a))
		hi, _ := slices.BinarySearch(mem, int32(r.first))
		j = t.first(r, c, 1, 0, t.size, lo, hi)
	}
	if j < 0 {
		return np
	}
	return (int(mem[j]) - r.first + np) % np
}

// hit reports whether tree node v of class c holds an entry next looks
// for: one that scores above the worst of the best five or, if wanted, at
// or below zero.
func (r *replay) hit(c int32, t *classTree, v int) bool {
	hi, lo := &t.hi[v], &t.lo[v]
	for k := 0; k <= maxK; k++ {
		if math.IsInf(hi[k], -1) {
			continue
		}
		if r.ri.score(c, hi[k], k) > r.thr {
			return true
		}
		if r.nonpos && r.ri.score(c, lo[k], k) <= skipThreshold {
			return true
		}
	}
	return false
}

// classTree keeps, over a class's members, the highest and lowest partial
// per k of those that fit, for every power-of-two range (a segment tree;
// node 1 is the root, leaves start at size).
type classTree struct {
	size   int
	hi, lo [][maxK + 1]float64
}

var (
	noHi = [maxK + 1]float64{math.Inf(-1), math.Inf(-1), math.Inf(-1)}
	noLo = [maxK + 1]float64{math.Inf(1), math.Inf(1), math.Inf(1)}
)

func newClassTree(m int) classTree {
	size := 1
	for size < m {
		size *= 2
	}
	t := classTree{size: size, hi: make([][maxK + 1]float64, 2*size), lo: make([][maxK + 1]float64, 2*size)}
	for v := range t.hi {
		t.hi[v], t.lo[v] = noHi, noLo
	}
	return t
}

// set sets member j's partial (fits: else it holds none).
func (t *classTree) set(j int, fits bool, k uint8, partial float64) {
	v := t.size + j
	t.hi[v], t.lo[v] = noHi, noLo
	if fits {
		t.hi[v][k], t.lo[v][k] = partial, partial
	}
	for v >>= 1; v >= 1; v >>= 1 {
		l, r := 2*v, 2*v+1
		for k := range t.hi[v] {
			t.hi[v][k] = max(t.hi[l][k], t.hi[r][k])
			t.lo[v][k] = min(t.lo[l][k], t.lo[r][k])
		}
	}
}

// first returns the first member in [a, b) under node v (covering
// [vl, vr)) that r looks for, or -1.
func (t *classTree) first(r *replay, c int32, v, vl, vr, a, b int) int {
	if vr <= a || b <= vl || !r.hit(c, t, v) {
		return -1
	}
	if vr-vl == 1 {
		return vl
	}
	mid := (vl + vr) / 2
	if j := t.first(r, c, 2*v, vl, mid, a, b); j >= 0 {
		return j
	}
	return t.first(r, c, 2*v+1, mid, vr, a, b)
}

// fenwick counts over entries: sum(i) is the count in [0, i).
type fenwick []int32

func (f fenwick) add(i, d int) {
	for i++; i < len(f); i += i & -i {
		f[i] += int32(d)
	}
}

func (f fenwick) sum(i int) int {
	s := 0
	for ; i > 0; i -= i & -i {
		s += int(f[i])
	}
	return s
}

// find returns the entry of the k-th count (k >= 1): the least i with
// sum(i+1) >= k.
func (f fenwick) find(k int) int {
	i := 0
	step := 1
	for step*2 < len(f) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if j := i + step; j < len(f) && int(f[j]) < k {
			i = j
			k -= int(f[j])
		}
	}
	return i
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
