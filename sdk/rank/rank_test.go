package rank

import (
	"math"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

func TestFit(t *testing.T) {
	capacity := sdk.Usage{CPU: 1000, MemoryMB: 1000}
	empty, half, full := sdk.Usage{}, sdk.Usage{CPU: 500, MemoryMB: 500}, capacity
	if !(Fit("binpack", empty, capacity) < Fit("binpack", half, capacity) && Fit("binpack", half, capacity) < Fit("binpack", full, capacity)) {
		t.Fatal("binpack does not prefer fuller nodes")
	}
	if !(Fit("spread", empty, capacity) > Fit("spread", half, capacity) && Fit("spread", half, capacity) > Fit("spread", full, capacity)) {
		t.Fatal("spread does not prefer emptier nodes")
	}
	if got := Fit("binpack", full, capacity); math.Abs(got-1) > 1e-9 {
		t.Fatalf("a full node scores %v, want 1", got)
	}
	if got := Fit("binpack", empty, sdk.Usage{}); got != 0 {
		t.Fatalf("a node without capacity scores %v", got)
	}
}

// TestPow10 holds pow10 to math.Exp's 10^x: within 2e-15 relative over
// [-1, 1], where free fractions live, within 1e-12 out to the edge of the
// range it computes itself (both round x·ln 10, so they part as x
// grows), and equal past it, where it hands over to math.Exp.
func TestPow10(t *testing.T) {
	want := func(x float64) float64 { return math.Exp(x * math.Ln10) }
	check := func(x, tol float64) {
		t.Helper()
		if got, w := pow10(x), want(x); math.Abs(got-w) > tol*w {
			t.Fatalf("pow10(%v) = %v, want %v", x, got, w)
		}
	}
	for i := 0; i <= 200_000; i++ {
		check(-1+2*float64(i)/200_000, 2e-15)
	}
	for i := 0; i <= 6_000; i++ {
		check(-300+600*float64(i)/6_000, 1e-12)
	}
	for _, x := range []float64{math.Nextafter(1, 0), 1e-300, -1e-300} {
		check(x, 2e-15)
	}
	// Just inside the range pow10 computes itself (|x·log2 10| < 1000).
	edge := 1000 / (math.Log2E * math.Ln10)
	for _, x := range []float64{math.Nextafter(edge, 0), -math.Nextafter(edge, 0)} {
		check(x, 1e-12)
	}
	// Outside it, math.Exp's own answer.
	for _, x := range []float64{math.Nextafter(edge, 400), -math.Nextafter(edge, 400), 400, -400, 1e300, -1e300,
		math.Inf(1), math.Inf(-1)} {
		if got, w := pow10(x), want(x); got != w {
			t.Errorf("pow10(%v) = %v, want math.Exp's %v", x, got, w)
		}
	}
	if got := pow10(math.NaN()); !math.IsNaN(got) {
		t.Errorf("pow10(NaN) = %v", got)
	}
	if pow10(0) != 1 || pow10(1) != 10 {
		t.Errorf("pow10(0), pow10(1) = %v, %v; want 1, 10", pow10(0), pow10(1))
	}
}

func TestJobAntiAffinity(t *testing.T) {
	if JobAntiAffinity(0, 10) != 0 || JobAntiAffinity(1, 10) != -0.2 || JobAntiAffinity(2, 0) != -3 {
		t.Fatal("anti-affinity penalty is not -(collisions+1)/count")
	}
}

func TestAffinities(t *testing.T) {
	job := &sdk.Job{Affinities: []*sdk.Affinity{{LTarget: "${meta.rack}", RTarget: "r1", Operand: "=", Weight: 50}}}
	tg := &sdk.TaskGroup{Affinities: []*sdk.Affinity{{LTarget: "${meta.ssd}", RTarget: "true", Operand: "=", Weight: -50}}}
	a := NewAffinities(job, tg)
	ch := feasible.NewChecker()
	node := func(rack, ssd string) *sdk.Node {
		n := &sdk.Node{Meta: map[string]string{"rack": rack, "ssd": ssd}}
		n.ComputeClass()
		return n
	}
	for _, tc := range []struct {
		rack, ssd string
		want      float64
		ok        bool
	}{{"r1", "false", 0.5, true}, {"r1", "true", 0, false}, {"r2", "true", -0.5, true}} {
		if got, ok := a.Score(ch, node(tc.rack, tc.ssd)); got != tc.want || ok != tc.ok {
			t.Errorf("rack %s ssd %s: %v %v, want %v", tc.rack, tc.ssd, got, ok, tc.want)
		}
	}
}

func TestSpread(t *testing.T) {
	rack := func(v string) *sdk.Node { return &sdk.Node{Meta: map[string]string{"rack": v}} }
	t.Run("even spread prefers the least used value", func(t *testing.T) {
		tg := &sdk.TaskGroup{Name: "g", Count: 6, Spreads: []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 100}}}
		s := NewSpread(nil, nil, tg)
		if got, _ := s.Score(rack("r1")); got != 0 {
			t.Fatalf("nothing placed: %v", got)
		}
		s.Add(rack("r1"), 2)
		s.Add(rack("r2"), 1)
		r1, _ := s.Score(rack("r1"))
		r2, _ := s.Score(rack("r2"))
		r3, _ := s.Score(rack("r3"))
		if !(r3 >= r2 && r2 > r1) {
			t.Fatalf("scores r1 %v r2 %v r3 %v", r1, r2, r3)
		}
		if none, _ := s.Score(&sdk.Node{}); none != -1 {
			t.Fatalf("a node without the attribute scores %v", none)
		}
	})
	// Nomad's evenSpreadScoreBoost (scheduler/spread.go): above the least
	// used value (min-cur)/min, the least used value (max-min)/min, -1 when
	// all are even, 1 for an unused value.
	t.Run("even spread scores as Nomad's evenSpreadScoreBoost", func(t *testing.T) {
		tg := &sdk.TaskGroup{Name: "g", Count: 12, Spreads: []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 50}}}
		s := NewSpread(nil, nil, tg)
		score := func(v string) float64 { got, _ := s.Score(rack(v)); return got }
		s.Add(rack("r1"), 3)
		s.Add(rack("r2"), 2)
		if r1, r2, r9 := score("r1"), score("r2"), score("r9"); r1 != -0.5 || r2 != 0.5 || r9 != 1 {
			t.Fatalf("counts 3, 2: r1 %v r2 %v unused %v, want -0.5 0.5 1", r1, r2, r9)
		}
		s.Add(rack("r2"), -1)
		if r1, r2, r9 := score("r1"), score("r2"), score("r9"); r1 != -2 || r2 != 2 || r9 != 1 {
			t.Fatalf("counts 3, 1: r1 %v r2 %v unused %v, want -2 2 1", r1, r2, r9)
		}
		s.Add(rack("r2"), 2)
		if r1, r2 := score("r1"), score("r2"); r1 != -1 || r2 != -1 {
			t.Fatalf("counts 3, 3: r1 %v r2 %v, want -1 -1", r1, r2)
		}
	})
	t.Run("targets rank by deficit, the rest share *", func(t *testing.T) {
		tg := &sdk.TaskGroup{Name: "g", Count: 10, Spreads: []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 100,
			SpreadTarget: []*sdk.SpreadTarget{{Value: "r1", Percent: 70}}}}}
		s := NewSpread(nil, nil, tg)
		s.Add(rack("r1"), 6)
		r1, _ := s.Score(rack("r1"))    // deficit 1
		other, _ := s.Score(rack("r9")) // "*" has 3 to go: clamped to 1
		s.Add(rack("r1"), 1)
		full, _ := s.Score(rack("r1"))
		if r1 != 1 || other != 1 || full != 0 {
			t.Fatalf("r1 %v other %v full %v", r1, other, full)
		}
	})
}
