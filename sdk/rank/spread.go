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
// spread).
//
// Values are interned: a node's values resolve once to small integers
// (Values), and scoring them (ScoreValues) reads integer-indexed counts, so
// a scheduler that caches a node's values scores it without a string
// lookup. Counts follow the plan through Add.
type Spread struct {
	attrs     []*spreadAttr
	sumWeight float64
	// lowest is the lowest targeted boost seen, given to values whose
	// desired count is zero (Nomad's lowestSpreadBoost).
	lowest float64
}

// MissingValue is the value ID of a node that lacks the spread attribute.
const MissingValue = -1

type spreadAttr struct {
	attribute string
	weight    float64
	// targets is nil for an even spread.
	targets map[string]bool
	desired map[string]float64
	ids     map[string]int32
	counts  []int
	// want is the desired count per value ID, NaN where the value has no
	// target (and no "*" remainder).
	want []float64
	// used counts values with at least one allocation; min and max are
	// over those, kept valid lazily (even spread).
	used     int
	min, max int
	dirty    bool
}

// NewSpread builds the spread scorer of tg in job, counting the job's live
// allocations of tg in state (nil: none): not those the servers stopped,
// even while their nodes still run them, as Nomad's spread (a property set)
// counts. It returns nil when no spread applies.
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
		a := &spreadAttr{attribute: sp.Attribute, weight: float64(sp.Weight), ids: map[string]int32{}, dirty: true}
		if len(sp.SpreadTarget) > 0 {
			total := float64(tg.Count)
			a.targets, a.desired = map[string]bool{}, map[string]float64{}
			sum := 0.0
			for _, t := range sp.SpreadTarget {
				d := float64(t.Percent) / 100 * total
				a.targets[t.Value] = true
				a.desired[t.Value] = d
				sum += d
			}
			if sum > 0 && sum < total {
				a.desired[feasible.OtherValue] = total - sum
			}
		}
		s.attrs = append(s.attrs, a)
		s.sumWeight += float64(sp.Weight)
	}
	if state != nil && job != nil {
		for _, al := range state.AllocsByJob(job.Namespace, job.ID) {
			if !al.TerminalStatus() && al.TaskGroup == tg.Name {
				if n := state.Node(al.NodeID); n != nil {
					s.Add(n, 1)
				}
			}
		}
	}
	return s
}

// Pure reports whether a node's score depends only on its values and the
// counts. It does not when a target wants no allocations at all: such a
// value scores the lowest boost scored so far, so its score depends on
// which nodes were scored before (Nomad's lowestSpreadBoost).
func (s *Spread) Pure() bool {
	for _, a := range s.attrs {
		for _, d := range a.desired {
			if d == 0 {
				return false
			}
		}
	}
	return true
}

// id returns the ID of a node's (bucketed) value, interning it.
func (a *spreadAttr) id(n *sdk.Node) int32 {
	v, ok := feasible.ResolveTarget(a.attribute, n)
	if !ok {
		return MissingValue
	}
	if a.targets != nil && !a.targets[v] {
		v = feasible.OtherValue
	}
	id, ok := a.ids[v]
	if !ok {
		id = int32(len(a.counts))
		a.ids[v] = id
		a.counts = append(a.counts, 0)
		want := math.NaN()
		if a.desired != nil {
			if d, ok := a.desired[v]; ok {
				want = d
			}
		}
		a.want = append(a.want, want)
	}
	return id
}

// Values appends to dst the node's value ID for each spread block, in
// order (MissingValue where the node lacks the attribute), and returns it.
func (s *Spread) Values(n *sdk.Node, dst []int32) []int32 {
	for _, a := range s.attrs {
		dst = append(dst, a.id(n))
	}
	return dst
}

// Add follows the plan: delta allocations of the group more (or fewer) on
// node. A count never drops below zero.
func (s *Spread) Add(n *sdk.Node, delta int) {
	for _, a := range s.attrs {
		id := a.id(n)
		if id == MissingValue {
			continue
		}
		before := a.counts[id]
		after := max(0, before+delta)
		a.counts[id] = after
		switch {
		case before == 0 && after > 0:
			a.used++
		case before > 0 && after == 0:
			a.used--
		}
		a.dirty = true
	}
}

// Score returns node's spread score; ok is false when it is zero (Nomad
// then records no score).
func (s *Spread) Score(n *sdk.Node) (float64, bool) {
	var buf [4]int32
	return s.ScoreValues(s.Values(n, buf[:0]))
}

// ScoreValues scores a node by its value IDs (from Values).
func (s *Spread) ScoreValues(ids []int32) (score float64, ok bool) {
	total := 0.0
	for i, a := range s.attrs {
		id := ids[i]
		if id == MissingValue {
			total--
			continue
		}
		if a.targets == nil {
			total += a.even(id)
			continue
		}
		desired := a.want[id]
		if math.IsNaN(desired) {
			total--
			continue
		}
		if desired == 0 {
			total += s.lowest
			continue
		}
		weight := 0.0
		if s.sumWeight > 0 {
			weight = a.weight / s.sumWeight
		}
		boost := deficitBoost(desired, a.counts[id]) * weight
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

// even is Nomad's even-spread boost for a node whose value has the ID
// (evenSpreadScoreBoost in scheduler/spread.go), not weighted by the
// spread's weight, as there: a value no allocation uses scores 1, one above
// the least used value (min-cur)/min, a least-used value -1 when all used
// values are even and else (max-min)/min. The last is not bounded by 1: with
// counts 3 and 1 the least used value scores 2, above an unused value, until
// it reaches half the most used one's count. Kept as Nomad has it, so that
// spreads weigh against the other scores as they do there. The counts are
// the allocations that stay: unlike Nomad v1.6.1, a value whose
// allocations the plan all stops counts as unused (Nomad keeps it at 0
// and scores every node -1), and a value's replacement counts once
// (Nomad's proposed counts can add a stopped one back).
func (a *spreadAttr) even(id int32) float64 {
	if a.used == 0 {
		return 0
	}
	if a.dirty {
		a.min, a.max = 0, 0
		for _, c := range a.counts {
			if c == 0 {
				continue
			}
			if a.min == 0 || c < a.min {
				a.min = c
			}
			if c > a.max {
				a.max = c
			}
		}
		a.dirty = false
	}
	cur := a.counts[id]
	switch {
	case cur != a.min:
		if a.min == 0 {
			return -1
		}
		return float64(a.min-cur) / float64(a.min)
	case a.min == a.max:
		return -1
	}
	return float64(a.max-a.min) / float64(a.min)
}

// Counts returns the count of each value of the i-th spread block (for
// tests and explanations).
func (s *Spread) Counts(i int) map[string]int {
	a := s.attrs[i]
	out := map[string]int{}
	for v, id := range a.ids {
		if a.counts[id] > 0 {
			out[v] = a.counts[id]
		}
	}
	return out
}
