package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	rt "github.com/drover-sched/drover/runtime"
)

// Peer runs a scenario on another scheduler, for a side-by-side comparison
// (SideBySide).
type Peer interface {
	// Label describes the peer in the report's header.
	Label() string
	// Run runs sc once on a cluster of nodes nodes, shaped as cfg says,
	// and returns the timed run.
	Run(ctx context.Context, cfg Config, sc Scenario, nodes int) (RunResult, error)
}

// PeerCommand is a peer benchmark program with the flags and the per-run
// JSON of ../shared/peers/nomad's nomadbench: -nodes, -runs, -scenarios,
// the shape flags and -json FILE.
type PeerCommand struct {
	// Path is the program.
	Path string
	// label is the program's own header line, once it has run.
	label string
}

// ErrPeer: the peer program failed or answered what cannot be read.
var ErrPeer = errors.New("bench: peer")

// Label implements Peer: the program's header line (for nomadbench,
// "nomad v1.6.1 scheduler via Harness | go ... | runs=2") once it has run,
// else its file name.
func (p *PeerCommand) Label() string {
	if p.label != "" {
		return p.label
	}
	return filepath.Base(p.Path)
}

// peerRun is one run as a nomadbench -json file holds it.
type peerRun struct {
	Scenario    string        `json:"scenario"`
	Nodes       int           `json:"nodes"`
	Run         int           `json:"run"`
	NodeSetup   time.Duration `json:"node_setup_ns"`
	TotalWall   time.Duration `json:"total_wall_ns"`
	TotalPlaced int           `json:"total_placed"`
	Evals       []struct {
		Wall   time.Duration `json:"wall_ns"`
		Placed int           `json:"placed"`
		Status string        `json:"status"`
		Failed int           `json:"failed_tg_allocs"`
	} `json:"evals"`
}

// Run implements Peer. The program runs the scenario twice in one
// process and the second run is returned: a peer started cold for each
// run would pay for the growth of its heap in every run, which a Drover
// runtime, warm in this process, does not.
func (p *PeerCommand) Run(ctx context.Context, cfg Config, sc Scenario, nodes int) (RunResult, error) {
	rr := RunResult{Scenario: sc.Name, Nodes: nodes}
	dir, err := os.MkdirTemp("", "drover-peer-")
	if err != nil {
		return rr, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "runs.json")
	args := []string{"-nodes", strconv.Itoa(nodes), "-runs", "2", "-scenarios", sc.Name,
		"-node-cpu", strconv.Itoa(cfg.NodeCPU), "-node-mem", strconv.Itoa(cfg.NodeMem),
		"-task-cpu", strconv.Itoa(cfg.TaskCPU), "-task-mem", strconv.Itoa(cfg.TaskMem),
		"-racks", strconv.Itoa(cfg.Racks), "-json", out}
	if cfg.Ports {
		args = append(args, "-ports")
	}
	cmd := exec.CommandContext(ctx, p.Path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return rr, fmt.Errorf("%w: %s %s: %w: %s", ErrPeer, p.Path, strings.Join(args, " "), err, lastLine(stderr.String()))
	}
	if line, _, _ := strings.Cut(stdout.String(), "\n"); strings.HasPrefix(line, "# ") {
		p.label = strings.TrimPrefix(line, "# ")
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return rr, fmt.Errorf("%w: %s wrote no results: %v", ErrPeer, p.Path, err)
	}
	var runs []peerRun
	if err := json.Unmarshal(data, &runs); err != nil {
		return rr, fmt.Errorf("%w: %s: results: %v", ErrPeer, p.Path, err)
	}
	last := -1
	for i, r := range runs {
		if r.Scenario == sc.Name && r.Nodes == nodes && r.Run >= 1 && (last < 0 || r.Run > runs[last].Run) {
			last = i
		}
	}
	if last < 0 {
		return rr, fmt.Errorf("%w: %s: no second run of %s at %d nodes in its results", ErrPeer, p.Path, sc.Name, nodes)
	}
	r := runs[last]
	if r.TotalWall <= 0 {
		return rr, fmt.Errorf("%w: %s: a run of %s took no time", ErrPeer, p.Path, sc.Name)
	}
	rr.Setup, rr.Total, rr.Placed = r.NodeSetup, r.TotalWall, r.TotalPlaced
	for _, e := range r.Evals {
		rr.Evals = append(rr.Evals, EvalResult{Wall: e.Wall, Placed: e.Placed, Failed: e.Failed, Status: e.Status})
	}
	return rr, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Side is one Drover runtime in a side-by-side comparison.
type Side struct {
	// Name labels the side's columns (wasm, goplugin, native).
	Name string
	// Plugins returns the plugin for a job type, as Config.Plugins.
	Plugins func(jobType string) (*rt.Plugin, error)
}

// Ratio is a ratio of placements/s taken within each round: its median
// over the rounds, the lowest and the highest.
type Ratio struct {
	Of, Over         string
	Median, Min, Max float64
}

// SideRow is a scenario's line in a side-by-side comparison.
type SideRow struct {
	Scenario      string
	Nodes, Rounds int
	// Peer and Sides summarise the rounds' runs as Run's rows do; Names
	// are the sides' names, in the order given.
	Peer  Row
	Names []string
	Sides []Row
	// Ratios are each side's placements/s over the peer's, then, when a
	// side is named native, native's over each other side's.
	Ratios []Ratio
	// Differs names the rounds in which a side placed or failed otherwise
	// than the peer ("" when none did): a ratio between schedulers that
	// did not place alike compares different work.
	Differs string
}

// SideBySide runs every (size, scenario) pair on the peer and on each side
// (cfg.Plugins is not used; cfg.Runtime names the sides in the header,
// their names when empty) in cfg.Runs rounds, and reports placements/s
// and their ratios taken round by round: the machine's speed drifts by
// tens of percent over minutes, so a ratio is only as good as the
// closeness in time of the two runs it compares. In a round each
// participant takes one turn, in an order that turns by one each round so
// that none always goes first. In its turn a participant runs the
// scenario twice and the second run counts, as the peer must in its own
// process (PeerCommand.Run): every counted run then follows a run of its
// own rather than the other participants' turns, which leave its caches
// cold and may have had its memory given back to the system. A counted
// run that placed nothing has no rate to compare, and is an error. Lines
// are written to out as they complete (out may be nil).
func SideBySide(ctx context.Context, cfg Config, peer Peer, sides []Side, out io.Writer) ([]SideRow, error) {
	if peer == nil || len(sides) == 0 {
		return nil, fmt.Errorf("%w: SideBySide needs a peer and at least one side", ErrInvalidConfig)
	}
	names := make([]string, len(sides))
	for i, s := range sides {
		switch {
		case s.Plugins == nil:
			return nil, fmt.Errorf("%w: side %q has no plugins", ErrInvalidConfig, s.Name)
		case s.Name == "" || slices.Contains(names[:i], s.Name):
			return nil, fmt.Errorf("%w: side names must be set and distinct, not %q", ErrInvalidConfig, s.Name)
		}
		names[i] = s.Name
	}
	cfg.Plugins = sides[0].Plugins
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if out == nil {
		out = io.Discard
	}
	scens, _ := cfg.scenarios()
	var rows []SideRow
	for _, n := range cfg.Nodes {
		for _, sc := range scens {
			runs := make([][]RunResult, len(sides)+1) // runs[0]: the peer's
			for r := 0; r < cfg.Runs; r++ {
				for k := range len(sides) + 1 {
					who := (k + r) % (len(sides) + 1)
					var rr RunResult
					var err error
					if who == 0 {
						rr, err = peer.Run(ctx, cfg, sc, n)
					} else {
						// As the peer's: a run untimed, then the one that
						// counts.
						c := cfg
						c.Plugins = sides[who-1].Plugins
						if _, err = runOne(ctx, c, sc, n); err == nil {
							rr, err = runOne(ctx, c, sc, n)
						}
					}
					if err == nil && (rr.Placed == 0 || rr.Total <= 0) {
						err = errors.New("the run placed nothing: no placement rate to compare")
					}
					if err != nil {
						return rows, fmt.Errorf("bench: %s at %d nodes (%s): %w", sc.Name, n, participant(names, who), err)
					}
					runs[who] = append(runs[who], rr)
				}
			}
			row := sideRow(sc, n, names, runs)
			if len(rows) == 0 {
				writeSideHeader(out, cfg, peer.Label(), row)
			}
			rows = append(rows, row)
			writeSideRow(out, row)
		}
	}
	return rows, nil
}

func participant(names []string, who int) string {
	if who == 0 {
		return "peer"
	}
	return names[who-1]
}

// failed counts the allocations a run's evals failed to place.
func failed(rr RunResult) int {
	n := 0
	for _, e := range rr.Evals {
		n += e.Failed
	}
	return n
}

// sideRow summarises the runs of one (size, scenario) pair; runs[0] are
// the peer's, runs[i] side i-1's, round by round.
func sideRow(sc Scenario, nodes int, names []string, runs [][]RunResult) SideRow {
	row := SideRow{Scenario: sc.Name, Nodes: nodes, Rounds: len(runs[0]), Peer: summarize(sc, nodes, runs[0]), Names: names}
	for i := range names {
		row.Sides = append(row.Sides, summarize(sc, nodes, runs[i+1]))
	}
	pps := func(rr RunResult) float64 { return float64(rr.Placed) / rr.Total.Seconds() }
	ratio := func(of, over string, a, b []RunResult) Ratio {
		var rs []float64
		for r := range a {
			rs = append(rs, pps(a[r])/pps(b[r]))
		}
		return Ratio{Of: of, Over: over, Median: median(rs), Min: slices.Min(rs), Max: slices.Max(rs)}
	}
	for i, name := range names {
		row.Ratios = append(row.Ratios, ratio(name, "peer", runs[i+1], runs[0]))
	}
	if nat := slices.Index(names, "native"); nat >= 0 {
		for i, name := range names {
			if i != nat {
				row.Ratios = append(row.Ratios, ratio("native", name, runs[nat+1], runs[i+1]))
			}
		}
	}
	var differs []string
	for r, p := range runs[0] {
		for i, name := range names {
			if s := runs[i+1][r]; s.Placed != p.Placed || failed(s) != failed(p) {
				differs = append(differs, fmt.Sprintf("round %d: peer placed %d failed %d, %s placed %d failed %d",
					r+1, p.Placed, failed(p), name, s.Placed, failed(s)))
			}
		}
	}
	row.Differs = strings.Join(differs, "; ")
	return row
}

// writeSideHeader writes the report's header, its columns those of row
// (every row has the same).
func writeSideHeader(out io.Writer, cfg Config, peer string, row SideRow) {
	c := cfg
	if c.Runtime == "" {
		c.Runtime = strings.Join(row.Names, ", ")
	}
	writeHeader(out, c)
	fmt.Fprintf(out, "# peer: %s\n", peer)
	fmt.Fprintf(out, "# placements/s are medians over the rounds; each ratio is taken within a round: median [lowest-highest]\n")
	line := fmt.Sprintf("%-22s %6s %6s %10s", "scenario", "nodes", "rounds", "peer")
	for _, n := range row.Names {
		line += fmt.Sprintf(" %10s", n)
	}
	for _, r := range row.Ratios {
		line += fmt.Sprintf(" %-19s", r.Of+"/"+r.Over)
	}
	fmt.Fprintln(out, strings.TrimRight(line, " "))
}

func writeSideRow(out io.Writer, row SideRow) {
	line := fmt.Sprintf("%-22s %6d %6d %10.0f", row.Scenario, row.Nodes, row.Rounds, row.Peer.PlacementsPerSec)
	for _, s := range row.Sides {
		line += fmt.Sprintf(" %10.0f", s.PlacementsPerSec)
	}
	for _, r := range row.Ratios {
		line += fmt.Sprintf(" %-19s", fmt.Sprintf("%.2f [%.2f-%.2f]", r.Median, r.Min, r.Max))
	}
	line = strings.TrimRight(line, " ")
	if row.Differs != "" {
		line += "  DIFFERENT OUTCOMES: " + row.Differs
	}
	fmt.Fprintln(out, line)
}
