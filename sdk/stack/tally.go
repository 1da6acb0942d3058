package stack

import "github.com/drover-sched/drover/sdk"

// tally counts filtered and exhausted nodes during one selection, and
// writes the counts into the selection's metric at the end: a selection
// that filters hundreds of nodes then updates each metric map once per
// distinct (class, reason) rather than once per node. Distinct entries are
// few (node classes times failing checks), so a list beats a map.
type tally struct {
	entries []tallyEntry
	// last is the entry added to last: consecutive nodes mostly fail alike.
	last int
}

type tallyEntry struct {
	class, reason string
	exhausted     bool
	n             int
}

func (t *tally) reset() { t.entries, t.last = t.entries[:0], 0 }

func (t *tally) filtered(n *sdk.Node, reason string) { t.add(n.NodeClass, reason, false) }
func (t *tally) exhausted(n *sdk.Node, dim string)   { t.add(n.NodeClass, dim, true) }

func (t *tally) add(class, reason string, exhausted bool) { t.addN(class, reason, exhausted, 1) }

func (t *tally) addN(class, reason string, exhausted bool, n int) {
	if t.last < len(t.entries) {
		if e := &t.entries[t.last]; e.exhausted == exhausted && e.reason == reason && e.class == class {
			e.n += n
			return
		}
	}
	for i := range t.entries {
		e := &t.entries[i]
		if e.exhausted == exhausted && e.reason == reason && e.class == class {
			e.n += n
			t.last = i
			return
		}
	}
	t.last = len(t.entries)
	t.entries = append(t.entries, tallyEntry{class: class, reason: reason, exhausted: exhausted, n: n})
}

// flush adds the counts to m, as sdk.AllocMetric's FilterNode and
// ExhaustedNode would have one node at a time.
func (t *tally) flush(m *sdk.AllocMetric) {
	for _, e := range t.entries {
		if e.exhausted {
			m.NodesExhausted += e.n
			if e.class != "" {
				m.ClassExhausted = addCount(m.ClassExhausted, e.class, e.n)
			}
			if e.reason != "" {
				m.DimensionExhausted = addCount(m.DimensionExhausted, e.reason, e.n)
			}
			continue
		}
		m.NodesFiltered += e.n
		if e.class != "" {
			m.ClassFiltered = addCount(m.ClassFiltered, e.class, e.n)
		}
		if e.reason != "" {
			m.ConstraintFiltered = addCount(m.ConstraintFiltered, e.reason, e.n)
		}
	}
	t.entries = t.entries[:0]
}

func addCount(m map[string]int, k string, n int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k] += n
	return m
}
