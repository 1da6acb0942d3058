package stack

import (
	"github.com/drover-sched/drover/sdk"
)

// MaxRetainedScores is how many of the best-scoring nodes a placement's
// metric describes (Nomad keeps five).
const MaxRetainedScores = 5

// maxScorers bounds the scorers one node gets.
const maxScorers = 8

// scoreSet is the scores one node got. It is a value with fixed arrays so
// that ranking a node allocates nothing.
type scoreSet struct {
	nodeID string
	names  [maxScorers]string
	values [maxScorers]float64
	n      int
	sum    float64
	count  int
	norm   float64
}

// add records a scorer's value; counted says whether it enters the mean
// (Nomad records some zero scores without averaging them in).
func (s *scoreSet) add(name string, v float64, counted bool) {
	if s.n < maxScorers {
		s.names[s.n], s.values[s.n] = name, v
		s.n++
	}
	if counted {
		s.sum += v
		s.count++
	}
}

// normalize returns the mean of the counted scores and retains the node
// among the best if it is one.
func (s *scoreSet) normalize() float64 {
	if s.count > 0 {
		s.norm = s.sum / float64(s.count)
	}
	return s.norm
}

// scoreTracker keeps the best-scoring nodes of one selection.
type scoreTracker struct {
	cur  scoreSet
	top  [MaxRetainedScores]scoreSet
	nTop int
	open bool
}

func (t *scoreTracker) reset() { t.nTop, t.open = 0, false }

// begin starts scoring a node, retaining the previous one if it was among
// the best.
func (t *scoreTracker) begin(nodeID string) *scoreSet {
	t.flush()
	t.cur = scoreSet{nodeID: nodeID}
	t.open = true
	return &t.cur
}

func (t *scoreTracker) flush() {
	if !t.open {
		return
	}
	t.open = false
	if t.nTop < MaxRetainedScores {
		t.top[t.nTop] = t.cur
		t.nTop++
		return
	}
	worst := 0
	for i := 1; i < t.nTop; i++ {
		if t.top[i].norm < t.top[worst].norm {
			worst = i
		}
	}
	if t.cur.norm > t.top[worst].norm {
		t.top[worst] = t.cur
	}
}

// metaData returns the retained nodes' scores, best first, as Nomad reports
// them in AllocMetric.ScoreMetaData.
func (t *scoreTracker) metaData() []*sdk.NodeScoreMeta {
	t.flush()
	if t.nTop == 0 {
		return nil
	}
	top := t.top[:t.nTop]
	// Insertion sort by normalized score, descending: at most five.
	for i := 1; i < len(top); i++ {
		for j := i; j > 0 && top[j].norm > top[j-1].norm; j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
	out := make([]*sdk.NodeScoreMeta, len(top))
	for i := range top {
		s := &top[i]
		scores := make(map[string]float64, s.n)
		for k := 0; k < s.n; k++ {
			scores[s.names[k]] = s.values[k]
		}
		out[i] = &sdk.NodeScoreMeta{NodeID: s.nodeID, Scores: scores, NormScore: s.norm}
	}
	return out
}
