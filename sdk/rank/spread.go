package rank

import (
	"math"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

// Spread scores nodes by a task group's spread blocks (the job's and the
// group's). For a spread with targets, a node scores by its value's deficit
// (desired count less allocations there, clamped to [-1, 1]; see
// deficitBoost), weighted by the spread's share of all spread weights;
// values no target names share the remainder ("*"), or score -1 when
// targets cover 100%. For a spread without targets, a node scores by how
// far its value's count is below the least-used value's (Nomad's even
// spread). Counts follow the plan through Add; scoring a node is O(spread
// blocks).
type Spread struct {
	attrs     []*spreadAttr
	sumWeight float64
	// lowest is the lowest targeted boost seen, given to values whose
	// desired count is zero (Nomad's lowestSpreadBoost).
	lowest float64
}

type spreadAttr struct {
	counts  *feasible.PropertyCounts
	weight  float64
	desired map[string]float64
	// min and max of counts over used values, for the even spread; kept
	// valid lazily.
	min, max int
	dirty    bool
}

// NewSpread builds the spread scorer of tg in job, counting the job's live
// allocations of tg in state. It returns nil when no spread applies.
func NewSpread(state sdk.State, job *sdk.Job, tg *sdk.TaskGroup) *Spread {
	var spreads []*sdk.Spread
	if job != nil {
		spreads = append(spreads, job.Spreads...)
	}
	spreads = append(spreads, tg.Spreads...)
	if len(spreads) == 0 {
		return nil
	}
	s := &Spread{lowest: -1}
	for _, sp := range spreads {
		var targets []string
		a := &spreadAttr{weight: float64(sp.Weight), dirty: true}
		total := float64(tg.Count)
		sum := 0.0
		if len(sp.SpreadTarget) > 0 {
			a.desired = map[string]float64{}
			for _, t := range sp.SpreadTarget {
				targets = append(targets, t.Value)
				d := float64(t.Percent) / 100 * total
				a.desired[t.Value] = d
				sum += d
			}
			if sum > 0 && sum < total {
				a.desired[feasible.OtherValue] = total - sum
			}
		}
		a.counts = feasible.NewPropertyCounts(state, job, sp.Attribute, tg.Name, targets)
		s.attrs = append(s.attrs, a)
		s.sumWeight += float64(sp.Weight)
	}
	return s
}

// Add follows the plan: delta allocations of the group more (or fewer) on
// node.
func (s *Spread) Add(n *sdk.Node, delta int) {
	for _, a := range s.attrs {
		a.counts.Add(n, delta)
		a.dirty = true
	}
}

// Score returns node's spread score; ok is false when it is zero (Nomad
// then records no score).
func (s *Spread) Score(n *sdk.Node) (score float64, ok bool) {
	total := 0.0
	for _, a := range s.attrs {
		v, has := a.counts.Value(n)
		if !has {
			total -= 1
			continue
		}
		if a.desired == nil {
			total += a.even(v)
			continue
		}
		desired, found := a.desired[v]
		if !found {
			if desired, found = a.desired[feasible.OtherValue]; !found {
				total -= 1
				continue
			}
		}
		if desired == 0 {
			total += s.lowest
			continue
		}
		weight := 0.0
		if s.sumWeight > 0 {
			weight = a.weight / s.sumWeight
		}
		boost := deficitBoost(desired, a.counts.Count(v)) * weight
		total += boost
		if boost < s.lowest {
			s.lowest = boost
		}
	}
	return total, total != 0
}

// deficitBoost scores a value whose target is desired allocations and
// that holds used: its deficit (desired - used), clamped to [-1, 1]. Nomad
// scores the relative deficit after the placement, (desired-used-1)/desired,
// which penalises overshooting a large target only slightly (1/desired),
// so that job anti-affinity can push a value one past its target and
// another one short; ranking values by their absolute deficit (the largest
// remainder method) keeps every value within one allocation of its target
// whenever capacity allows.
func deficitBoost(desired float64, used int) float64 {
	return math.Max(-1, math.Min(1, desired-float64(used)))
}

// even is Nomad's even-spread boost for a node whose value is v.
func (a *spreadAttr) even(v string) float64 {
	counts := a.counts.Counts()
	if len(counts) == 0 {
		return 0
	}
	if a.dirty {
		a.min, a.max = 0, 0
		for _, c := range counts {
			if a.min == 0 || c < a.min {
				a.min = c
			}
			if c > a.max {
				a.max = c
			}
		}
		a.dirty = false
	}
	cur := counts[v]
	switch {
	case cur != a.min:
		if a.min == 0 {
			return -1
		}
		return float64(a.min-cur) / float64(a.min)
	case a.min == a.max:
		return -1
	}
	return float64(a.max-cur) / float64(a.max)
}

// Counts exposes the counts of the i-th spread attribute (tests, metrics).
func (s *Spread) Counts(i int) map[string]int { return s.attrs[i].counts.Counts() }
