package stack

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/internal/chunk"
	"github.com/drover-sched/drover/sdk/rank"
)

// MaxRetainedScores is how many of the best-scoring nodes a placement's
// metric describes (Nomad keeps five).
const MaxRetainedScores = 5

// scorer identifies a scorer by a small number, so that a node's scores are
// kept in a fixed array on the stack: ranking a node allocates nothing and
// writes nothing outside the ranking unless the node is among the best.
type scorer uint8

const (
	scoreBinpack scorer = iota
	scoreAntiAffinity
	scorePenalty
	scoreAffinity
	scoreSpread
	scorePreemption
	scoreDevices
	maxScorers
)

var scorerNames = [maxScorers]string{
	scoreBinpack:      rank.ScorerBinpack,
	scoreAntiAffinity: rank.ScorerJobAntiAffinity,
	scorePenalty:      rank.ScorerReschedulePenalty,
	scoreAffinity:     rank.ScorerAffinity,
	scoreSpread:       rank.ScorerSpread,
	scorePreemption:   rank.ScorerPreemption,
	scoreDevices:      rank.ScorerDevices,
}

// nodeScores are the scores one node got.
type nodeScores struct {
	values [maxScorers]float64
	// recorded marks the scorers shown in the metric; counted those that
	// enter the mean (Nomad records some zero scores without averaging
	// them in).
	recorded, counted uint8
	sum               float64
	n                 int
	norm              float64
}

// add records a scorer's value.
func (s *nodeScores) add(id scorer, v float64, counted bool) {
	s.values[id] = v
	s.recorded |= 1 << id
	if counted {
		s.counted |= 1 << id
		s.sum += v
		s.n++
	}
}

// normalize returns the mean of the counted scores.
func (s *nodeScores) normalize() float64 {
	if s.n > 0 {
		s.norm = s.sum / float64(s.n)
	}
	return s.norm
}

// retained is a node among the best of a selection.
type retained struct {
	pos    int32 // the node's position in the walked node list
	scores nodeScores
}

// scoreTracker keeps the best-scoring nodes of one selection.
type scoreTracker struct {
	// metas, ptrs and scores are where metaData's results come from.
	metas  chunk.Chunks[sdk.NodeScoreMeta]
	ptrs   chunk.Chunks[*sdk.NodeScoreMeta]
	scores chunk.Chunks[sdk.NodeScore]
	nodes  []*sdk.Node
	top    [MaxRetainedScores]retained
	nTop   int
	// worst is the index of the lowest retained score once five are kept.
	worst int
}

// reset starts a selection over nodes.
func (t *scoreTracker) reset(nodes []*sdk.Node) { t.nodes, t.nTop = nodes, 0 }

// offer retains the node at pos if it is among the best so far.
func (t *scoreTracker) offer(pos int, s *nodeScores) {
	if t.nTop < MaxRetainedScores {
		t.top[t.nTop] = retained{pos: int32(pos), scores: *s}
		t.nTop++
		if t.nTop == MaxRetainedScores {
			t.findWorst()
		}
		return
	}
	if s.norm > t.top[t.worst].scores.norm {
		t.top[t.worst] = retained{pos: int32(pos), scores: *s}
		t.findWorst()
	}
}

func (t *scoreTracker) findWorst() {
	t.worst = 0
	for i := 1; i < t.nTop; i++ {
		if t.top[i].scores.norm < t.top[t.worst].scores.norm {
			t.worst = i
		}
	}
}

// metaData returns the retained nodes' scores, best first, as Nomad reports
// them in AllocMetric.ScoreMetaData.
func (t *scoreTracker) metaData() []*sdk.NodeScoreMeta {
	if t.nTop == 0 {
		return nil
	}
	top := t.top[:t.nTop]
	// Insertion sort by normalized score, descending: at most five.
	for i := 1; i < len(top); i++ {
		for j := i; j > 0 && top[j].scores.norm > top[j-1].scores.norm; j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
	metas := t.metas.Take(len(top))
	out := t.ptrs.Take(len(top))
	total := 0
	for i := range top {
		for id := scorer(0); id < maxScorers; id++ {
			if top[i].scores.recorded&(1<<id) != 0 {
				total++
			}
		}
	}
	all := sdk.NodeScores(t.scores.Take(total)[:0])
	for i := range top {
		r := &top[i]
		from := len(all)
		for id := scorer(0); id < maxScorers; id++ {
			if r.scores.recorded&(1<<id) != 0 {
				all = append(all, sdk.NodeScore{Name: scorerNames[id], Score: r.scores.values[id]})
			}
		}
		metas[i] = sdk.NodeScoreMeta{NodeID: t.nodes[r.pos].ID, Scores: all[from:len(all):len(all)], NormScore: r.scores.norm}
		out[i] = &metas[i]
	}
	return out
}
