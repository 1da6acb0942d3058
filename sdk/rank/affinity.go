package rank

import (
	"math"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

// Affinities scores nodes by a task group's affinities (the job's, the
// group's and its tasks'): the sum of the weights a node matches over the
// sum of absolute weights, in [-1, 1]. Scores are cached per computed node
// class unless an affinity names a unique property.
type Affinities struct {
	affinities []*sdk.Affinity
	sumWeight  float64
	escaped    bool
	byClass    map[string]float64
}

// NewAffinities collects the affinities that apply to tg in job.
func NewAffinities(job *sdk.Job, tg *sdk.TaskGroup) *Affinities {
	a := &Affinities{byClass: map[string]float64{}}
	add := func(as []*sdk.Affinity) {
		for _, af := range as {
			a.affinities = append(a.affinities, af)
			a.sumWeight += math.Abs(float64(af.Weight))
			c := sdk.Constraint{LTarget: af.LTarget, RTarget: af.RTarget, Operand: af.Operand}
			a.escaped = a.escaped || feasible.Escapes(&c)
		}
	}
	if job != nil {
		add(job.Affinities)
	}
	add(tg.Affinities)
	for _, t := range tg.Tasks {
		add(t.Affinities)
	}
	return a
}

// Any reports whether there are affinities to score.
func (a *Affinities) Any() bool { return len(a.affinities) > 0 && a.sumWeight > 0 }

// Score returns node's affinity score; ok is false when the node matches
// none (Nomad then records no score).
func (a *Affinities) Score(ch *feasible.Checker, n *sdk.Node) (score float64, ok bool) {
	if !a.Any() {
		return 0, false
	}
	if !a.escaped {
		if s, hit := a.byClass[n.ComputedClass]; hit {
			return s, s != 0
		}
	}
	total := 0.0
	for _, af := range a.affinities {
		if ch.Matches(af, n) {
			total += float64(af.Weight)
		}
	}
	s := total / a.sumWeight
	if !a.escaped {
		a.byClass[n.ComputedClass] = s
	}
	return s, s != 0
}
