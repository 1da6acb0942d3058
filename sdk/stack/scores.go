package stack

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/rank"
)

// MaxRetainedScores is how many of the best-scoring nodes a placement's
// metric describes (Nomad keeps five).
const MaxRetainedScores = 5

// scorer identifies a scorer by a small number, so that a node's scores are
// kept without pointers (no allocation, no write barrier per candidate).
type scorer uint8

const (
	scoreBinpack scorer = iota
	scoreAntiAffinity
	scorePenalty
	scoreAffinity
	scoreSpread
	scorePreemption
	maxScorers
)

var scorerNames = [maxScorers]string{
	scoreBinpack:      rank.ScorerBinpack,
	scoreAntiAffinity: rank.ScorerJobAntiAffinity,
	scorePenalty:      rank.ScorerReschedulePenalty,
	scoreAffinity:     rank.ScorerAffinity,
	scoreSpread:       rank.ScorerSpread,
	scorePreemption:   rank.ScorerPreemption,
}

// scoreSet is the scores one node got.
type scoreSet struct {
	pos    int32 // the node's position in the walked node list
	ids    [maxScorers]scorer
	values [maxScorers]float64
	n      int
	sum    float64
	count  int
	norm   float64
}

// add records a scorer's value; counted says whether it enters the mean
// (Nomad records some zero scores without averaging them in).
func (s *scoreSet) add(id scorer, v float64, counted bool) {
	if s.n < int(maxScorers) {
		s.ids[s.n], s.values[s.n] = id, v
		s.n++
	}
	if counted {
		s.sum += v
		s.count++
	}
}

// normalize returns the mean of the counted scores.
func (s *scoreSet) normalize() float64 {
	if s.count > 0 {
		s.norm = s.sum / float64(s.count)
	}
	return s.norm
}

// scoreTracker keeps the best-scoring nodes of one selection.
type scoreTracker struct {
	nodes []*sdk.Node
	cur   scoreSet
	top   [MaxRetainedScores]scoreSet
	nTop  int
	open  bool
}

// reset starts a selection over nodes.
func (t *scoreTracker) reset(nodes []*sdk.Node) { t.nodes, t.nTop, t.open = nodes, 0, false }

// begin starts scoring the node at pos, retaining the previous one if it
// was among the best.
func (t *scoreTracker) begin(pos int) *scoreSet {
	t.flush()
	t.cur.pos, t.cur.n, t.cur.sum, t.cur.count, t.cur.norm = int32(pos), 0, 0, 0, 0
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
	// Three allocations in all: the metas, their pointers and their scores.
	metas := make([]sdk.NodeScoreMeta, len(top))
	out := make([]*sdk.NodeScoreMeta, len(top))
	total := 0
	for i := range top {
		total += top[i].n
	}
	all := make(sdk.NodeScores, total)
	for i := range top {
		s := &top[i]
		scores := all[:s.n:s.n]
		all = all[s.n:]
		for k := 0; k < s.n; k++ {
			scores[k] = sdk.NodeScore{Name: scorerNames[s.ids[k]], Score: s.values[k]}
		}
		metas[i] = sdk.NodeScoreMeta{NodeID: t.nodes[s.pos].ID, Scores: scores, NormScore: s.norm}
		out[i] = &metas[i]
	}
	return out
}
