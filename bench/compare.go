package bench

import (
	"context"
	"fmt"
	"io"

	rt "github.com/drover-sched/drover/runtime"
)

// Pair is a scenario's line in a paired comparison of two plugin sets.
type Pair struct {
	A, B Row
	// Ratio is B's median placements/s over A's: above 1, B is faster.
	Ratio float64
	// BFaster is the number of rounds, of Rounds, in which B's run took
	// less time than A's run of the same round.
	BFaster, Rounds int
}

// Compare runs every (size, scenario) pair cfg.Runs times with each of two
// plugin sets, a and b (cfg.Plugins is not used), in rounds: one run with
// each, A first in even rounds and B first in odd ones. This machine's
// speed drifts by tens of percent over minutes; two sets measured in turn,
// run by run, in one process see the same drift, so that their ratio
// holds where two separate invocations' would not. Each side's row is
// summarised as Run's are; header and lines are written to out as they
// complete (out may be nil).
func Compare(ctx context.Context, cfg Config, a, b func(jobType string) (*rt.Plugin, error), out io.Writer) ([]Pair, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("%w: Compare needs two plugin sets", ErrInvalidConfig)
	}
	cfg.Plugins = a
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if out == nil {
		out = io.Discard
	}
	writeHeader(out, cfg)
	fmt.Fprintf(out, "%-22s %6s %5s %7s %11s %11s %10s %10s %6s %8s\n",
		"scenario", "nodes", "evals", "placed", "A_total_ms", "B_total_ms", "A_plc/s", "B_plc/s", "B/A", "B_faster")
	scens, _ := cfg.scenarios()
	sides := [2]func(string) (*rt.Plugin, error){a, b}
	var pairs []Pair
	for _, n := range cfg.Nodes {
		for _, sc := range scens {
			var runs [2][]RunResult
			for r := 0; r < cfg.Runs; r++ {
				for k := range 2 {
					side := k ^ r%2 // A, B in even rounds; B, A in odd ones
					c := cfg
					c.Plugins = sides[side]
					rr, err := runOne(ctx, c, sc, n)
					if err != nil {
						return pairs, fmt.Errorf("bench: %s at %d nodes (%c): %w", sc.Name, n, "AB"[side], err)
					}
					runs[side] = append(runs[side], rr)
				}
			}
			p := Pair{A: summarize(sc, n, runs[0]), B: summarize(sc, n, runs[1]), Rounds: cfg.Runs}
			if p.A.PlacementsPerSec > 0 {
				p.Ratio = p.B.PlacementsPerSec / p.A.PlacementsPerSec
			}
			for r := range cfg.Runs {
				if runs[1][r].Total < runs[0][r].Total {
					p.BFaster++
				}
			}
			pairs = append(pairs, p)
			fmt.Fprintf(out, "%-22s %6d %5d %7d %11.1f %11.1f %10.0f %10.0f %6.2f %8s%s\n",
				sc.Name, n, p.A.Evals, p.A.Placed, p.A.TotalMS, p.B.TotalMS, p.A.PlacementsPerSec, p.B.PlacementsPerSec,
				p.Ratio, fmt.Sprintf("%d/%d", p.BFaster, p.Rounds), p.differs())
		}
	}
	return pairs, nil
}

// differs says, for the report's line, how B's outcome differs from A's
// (what was placed, what failed, how the evals ended): a ratio between
// builds that do not schedule alike compares different work.
func (p Pair) differs() string {
	if p.A.Placed == p.B.Placed && p.A.Failed == p.B.Failed && p.A.Status == p.B.Status {
		return ""
	}
	return fmt.Sprintf("  DIFFERENT OUTCOMES: placed %d/%d, failed %d/%d, status %s/%s",
		p.A.Placed, p.B.Placed, p.A.Failed, p.B.Failed, p.A.Status, p.B.Status)
}
