package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rt "github.com/drover-sched/drover/runtime"
)

// fakePeer answers every run with evals of a fixed wall time, and logs
// its turns in order.
type fakePeer struct {
	order *[]string
	eval  time.Duration
}

func (fakePeer) Label() string { return "fake peer" }

func (p fakePeer) Run(_ context.Context, _ Config, sc Scenario, nodes int) (RunResult, error) {
	*p.order = append(*p.order, "peer")
	rr := RunResult{Scenario: sc.Name, Nodes: nodes}
	for range sc.Jobs {
		rr.Evals = append(rr.Evals, EvalResult{Wall: p.eval, Placed: nodes, Status: "complete"})
		rr.Total += p.eval
		rr.Placed += nodes
	}
	return rr, nil
}

// logged wraps a side's plugins so that each run (one Plugins call per
// run) is logged under name.
func logged(order *[]string, name string, plugins func(string) (*rt.Plugin, error)) func(string) (*rt.Plugin, error) {
	return func(jobType string) (*rt.Plugin, error) {
		*order = append(*order, name)
		return plugins(jobType)
	}
}

// TestSideBySide_RoundsAndRatios: the participants take turns (the first
// of a round moves one place each round), a side runs twice in its turn
// (the second counts, as the peer's does), and each ratio is the median
// of the ratios of a round's two runs, native's over each other side's
// among them.
func TestSideBySide_RoundsAndRatios(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Runs, cfg.Scenarios, cfg.Runtime = []int{20}, 3, []string{"system-1"}, ""
	native := NativePlugins(cfg.Log)
	defer native.Close(context.Background())
	var order []string
	// A system eval on 20 nodes places 20 in 10 s: 2 placements/s, far
	// slower than any real run.
	peer := fakePeer{order: &order, eval: 10 * time.Second}
	sides := []Side{{"native", logged(&order, "native", native.Plugin)}, {"other", logged(&order, "other", native.Plugin)}}
	var out strings.Builder
	rows, err := SideBySide(context.Background(), cfg, peer, sides, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"peer", "native", "native", "other", "other",
		"native", "native", "other", "other", "peer",
		"other", "other", "peer", "native", "native"}
	if !slices.Equal(order, want) {
		t.Fatalf("turns %v, want %v", order, want)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	row := rows[0]
	if row.Rounds != 3 || row.Peer.PlacementsPerSec != 2 || row.Peer.Placed != 20 || len(row.Sides) != 2 || row.Sides[1].Placed != 20 {
		t.Fatalf("row %+v", row)
	}
	var names []string
	for _, r := range row.Ratios {
		names = append(names, r.Of+"/"+r.Over)
		if !(r.Min <= r.Median && r.Median <= r.Max) || r.Min <= 0 {
			t.Errorf("%s/%s: median %v outside [%v, %v]", r.Of, r.Over, r.Median, r.Min, r.Max)
		}
	}
	if want := []string{"native/peer", "other/peer", "native/other"}; !slices.Equal(names, want) {
		t.Fatalf("ratios %v, want %v", names, want)
	}
	// Against a peer at 2 placements/s, a side's ratio is its rate over 2.
	if got, want := row.Ratios[0].Median, row.Sides[0].PlacementsPerSec/2; got < want*0.999 || got > want*1.001 {
		t.Errorf("native/peer median %v, want %v (the median run's rate over the peer's)", got, want)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "(native, other)") || !strings.Contains(lines[1], "# peer: fake peer") ||
		!strings.HasPrefix(lines[4], "system-1") || strings.Contains(lines[4], "DIFFERENT") ||
		!strings.Contains(lines[3], "native/other") || strings.HasSuffix(lines[3], " ") {
		t.Fatalf("report:\n%s", out.String())
	}
}

func TestSideBySide_RefusesWhatItCannotCompare(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Runs, cfg.Scenarios = []int{20}, 1, []string{"system-1"}
	var order []string
	native := NativePlugins(cfg.Log)
	defer native.Close(context.Background())
	for _, tc := range []struct {
		name  string
		peer  Peer
		sides []Side
	}{
		{"no side", fakePeer{order: &order}, nil},
		{"no peer", nil, []Side{{"native", native.Plugin}}},
		{"a side without plugins", fakePeer{order: &order}, []Side{{"native", native.Plugin}, {"wasm", nil}}},
		{"two sides of one name", fakePeer{order: &order}, []Side{{"native", native.Plugin}, {"native", native.Plugin}}},
		{"a side without a name", fakePeer{order: &order}, []Side{{"", native.Plugin}}},
	} {
		if _, err := SideBySide(context.Background(), cfg, tc.peer, tc.sides, nil); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", tc.name, err)
		}
	}
	// A peer that places nothing has no rate to compare.
	_, err := SideBySide(context.Background(), cfg, nothingPeer{}, []Side{{"native", native.Plugin}}, nil)
	if err == nil || !strings.Contains(err.Error(), "placed nothing") {
		t.Fatalf("a run placing nothing: %v", err)
	}
}

// nothingPeer runs every scenario in a second without placing anything.
type nothingPeer struct{}

func (nothingPeer) Label() string { return "nothing" }
func (nothingPeer) Run(_ context.Context, _ Config, sc Scenario, nodes int) (RunResult, error) {
	return RunResult{Scenario: sc.Name, Nodes: nodes, Total: time.Second,
		Evals: []EvalResult{{Wall: time.Second, Failed: 1, Status: "complete"}}}, nil
}

// TestSideRow_PairsRunsByRound: a ratio is taken between the runs of one
// round, not between medians or other rounds' runs, and a round in which
// a side placed otherwise than the peer is named.
func TestSideRow_PairsRunsByRound(t *testing.T) {
	run := func(placed int, total time.Duration) RunResult {
		return RunResult{Placed: placed, Total: total, Evals: []EvalResult{{Wall: total, Placed: placed, Status: "complete"}}}
	}
	peer := []RunResult{run(10, time.Second), run(10, 2*time.Second), run(10, 4*time.Second)}
	side := []RunResult{run(10, time.Second), run(10, 4*time.Second), run(10, 2*time.Second)}
	row := sideRow(Scenarios[6], 10, []string{"wasm"}, [][]RunResult{peer, side})
	// Round by round the side's rate over the peer's is 1, 0.5 and 2;
	// the medians' ratio would be 1 with no spread.
	if r := row.Ratios[0]; r.Of != "wasm" || r.Over != "peer" || r.Median != 1 || r.Min != 0.5 || r.Max != 2 {
		t.Fatalf("ratio %+v, want median 1 in [0.5, 2]", r)
	}
	if row.Differs != "" {
		t.Fatalf("differs %q", row.Differs)
	}
	side[1] = run(9, 4*time.Second)
	row = sideRow(Scenarios[6], 10, []string{"wasm"}, [][]RunResult{peer, side})
	if want := "round 2: peer placed 10 failed 0, wasm placed 9 failed 0"; row.Differs != want {
		t.Fatalf("differs %q, want %q", row.Differs, want)
	}
	var out strings.Builder
	writeSideRow(&out, row)
	if !strings.Contains(out.String(), "DIFFERENT OUTCOMES: round 2") {
		t.Fatalf("line %q", out.String())
	}
}

// peerScript writes a shell script standing for nomadbench: it records
// its arguments in args, prints a header and writes body to the -json
// file, then exits with code.
func peerScript(t *testing.T, body string, code int) (path, args string) {
	t.Helper()
	dir := t.TempDir()
	path, args = filepath.Join(dir, "peer"), filepath.Join(dir, "args")
	script := `#!/bin/sh
echo "$@" > '` + args + `'
echo "# fake nomad | runs=2"
while [ $# -gt 0 ]; do
	if [ "$1" = "-json" ]; then out="$2"; fi
	shift
done
if [ -n '` + body + `' ]; then printf '%s' '` + body + `' > "$out"; fi
echo "peer trouble" >&2
exit ` + string(rune('0'+code)) + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, args
}

// TestPeerCommand_ReadsTheSecondRun: the program gets the scenario, the
// size, two runs and the shape, and its second run is the result.
func TestPeerCommand_ReadsTheSecondRun(t *testing.T) {
	body := `[{"scenario":"batch-10x100","nodes":50,"run":1,"node_setup_ns":5,"total_wall_ns":4000000,"total_placed":1000,` +
		`"evals":[{"wall_ns":3000000,"placed":600,"status":"complete"},{"wall_ns":1000000,"placed":400,"status":"complete","failed_tg_allocs":0}]},` +
		`{"scenario":"batch-10x100","nodes":50,"run":0,"total_wall_ns":9000000,"total_placed":1000,"evals":[]},` +
		`{"scenario":"batch-10x100","nodes":60,"run":1,"total_wall_ns":7000000,"total_placed":1000,"evals":[]}]`
	path, args := peerScript(t, body, 0)
	cfg := DefaultConfig()
	cfg.Ports, cfg.Racks = true, 7
	p := &PeerCommand{Path: path}
	if p.Label() != "peer" {
		t.Errorf("label before a run: %q", p.Label())
	}
	rr, err := p.Run(context.Background(), cfg, Scenarios[3], 50)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Total != 4*time.Millisecond || rr.Placed != 1000 || rr.Setup != 5 || len(rr.Evals) != 2 || rr.Evals[0].Placed != 600 ||
		rr.Evals[1].Status != "complete" {
		t.Fatalf("run %+v", rr)
	}
	if p.Label() != "fake nomad | runs=2" {
		t.Errorf("label %q", p.Label())
	}
	got, _ := os.ReadFile(args)
	for _, want := range []string{"-nodes 50 ", "-runs 2 ", "-scenarios batch-10x100 ", "-node-cpu 4000 ", "-task-mem 128 ", "-racks 7 ", "-ports"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("arguments %q lack %q", got, want)
		}
	}
}

func TestPeerCommand_Failures(t *testing.T) {
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"exit status", `[]`, 1, "peer trouble"},
		{"no results", ``, 0, "wrote no results"},
		{"undecodable results", `{not json`, 0, "results"},
		{"another scenario", `[{"scenario":"system-1","nodes":50,"run":1,"total_wall_ns":5,"total_placed":50}]`, 0, "no second run of batch-10x100 at 50 nodes"},
		{"one run only", `[{"scenario":"batch-10x100","nodes":50,"run":0,"total_wall_ns":5,"total_placed":50}]`, 0, "no second run"},
		{"no time", `[{"scenario":"batch-10x100","nodes":50,"run":1,"total_wall_ns":0,"total_placed":50}]`, 0, "took no time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := peerScript(t, tc.body, tc.code)
			_, err := (&PeerCommand{Path: path}).Run(context.Background(), cfg, Scenarios[3], 50)
			if !errors.Is(err, ErrPeer) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrPeer with %q", err, tc.want)
			}
		})
	}
}
