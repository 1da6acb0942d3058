package bench

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	rt "github.com/drover-sched/drover/runtime"
)

// Compare alternates the two sets run by run, A first in even rounds, and
// reports each side's medians, the ratio and the paired count.
func TestCompare_AlternatesTheSetsRunByRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Runs, cfg.Scenarios = []int{40}, 3, []string{"batch-10x100", "system-1"}
	plugins := NativePlugins(cfg.Log)
	defer plugins.Close(context.Background())
	var order []string
	side := func(name string) func(string) (*rt.Plugin, error) {
		return func(jobType string) (*rt.Plugin, error) {
			order = append(order, name)
			return plugins.Plugin(jobType)
		}
	}
	var out bytes.Buffer
	pairs, err := Compare(context.Background(), cfg, side("A"), side("B"), &out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A", "B", "B", "A", "A", "B"}
	if got := order[:6]; !slices.Equal(got, want) {
		t.Fatalf("first scenario ran %v, want %v", got, want)
	}
	if len(order) != 12 {
		t.Fatalf("%d runs, want 12", len(order))
	}
	if len(pairs) != 2 {
		t.Fatalf("%d pairs, want 2", len(pairs))
	}
	for _, p := range pairs {
		if p.A.Scenario != p.B.Scenario || p.A.Placed != p.B.Placed || p.A.Placed == 0 {
			t.Errorf("pair %+v: sides differ or placed nothing", p)
		}
		if p.Rounds != 3 || p.BFaster < 0 || p.BFaster > 3 {
			t.Errorf("%s: B faster in %d of %d rounds", p.A.Scenario, p.BFaster, p.Rounds)
		}
		if want := p.B.PlacementsPerSec / p.A.PlacementsPerSec; p.Ratio != want {
			t.Errorf("%s: ratio %v, want %v", p.A.Scenario, p.Ratio, want)
		}
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[1], "scenario") {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestCompare_NeedsTwoSets(t *testing.T) {
	cfg := DefaultConfig()
	plugins := NativePlugins(cfg.Log)
	if _, err := Compare(context.Background(), cfg, plugins.Plugin, nil, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
}

func TestPair_DiffersNamesADifferentOutcome(t *testing.T) {
	same := Pair{A: Row{Placed: 10, Status: "complete:1"}, B: Row{Placed: 10, Status: "complete:1"}}
	if d := same.differs(); d != "" {
		t.Fatalf("same outcomes reported as %q", d)
	}
	other := same
	other.B.Placed, other.B.Failed = 8, 2
	if d := other.differs(); !strings.Contains(d, "placed 10/8, failed 0/2") {
		t.Fatalf("different outcomes reported as %q", d)
	}
}
