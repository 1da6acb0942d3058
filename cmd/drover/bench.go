package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/bench"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/rs/zerolog"
)

type benchSchedulerCommand struct{ *meta }

func (c *benchSchedulerCommand) Synopsis() string {
	return "Benchmark the built-in schedulers on the Nomad peer's scenarios"
}

func (c *benchSchedulerCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover bench scheduler [options]

  Runs the built-in schedulers on the scenarios of the Nomad peer benchmark
  (same node shape, job shape, scenario names and columns) and prints one
  line per scenario and cluster size: medians over the runs.

  Each eval is timed from its hand-over to the plugin runtime (state
  delta, scheduler, plan submission) to the plugin's return, with the plan
  applied to the state store through the FSM. Node registration and each
  run's first (full) state sync are not timed. As in an agent, each
  plugin's instance serves every run, warm from the ones before.

Options:

  -nodes=1000,5000   Cluster sizes.
  -runs=3            Runs per scenario and size (medians are reported).
  -scenarios=a,b     Scenarios (default: all): service-10x100,
                     service-1x1000, service-1x1000-spread, batch-10x100,
                     batch-1x1000, system-1, system-5, sysbatch-1.
  -runtime=wasm      wasm (the built-in .wasm plugins), goplugin (the
                     built-in plugins as go-plugin executables) or native
                     (in process). With -peer, a comma-separated list
                     (default: wasm,goplugin,native).
  -peer=PATH         Run the Nomad peer (../shared/peers/nomad's
                     nomadbench, or a program with its flags and -json
                     output) side by side with the runtimes, in -runs
                     rounds in which each takes one turn, the order turning
                     each round; in its turn each runs the scenario twice
                     (the peer in its own process) and the second run is
                     timed. One line per scenario: the medians of
                     placements/s and of the ratios taken within each
                     round (each runtime's over the peer's, native's over
                     each other runtime's), with their lowest and highest.
  -plugin-dir=DIR    Where the plugins are (default: plugins/ beside the
                     drover binary for wasm, goplugins/ for goplugin).
  -compare-plugin-dir=DIR
                     Also load the plugins of DIR (B; -plugin-dir's are A)
                     and alternate the two sets run by run in this one
                     process, A first in even rounds: one line per
                     scenario with both sides' medians, B's placements/s
                     over A's, and in how many rounds B's run was faster
                     (flagged when the two placed or ended differently).
                     For comparing two builds of the plugins (wasm or
                     goplugin): the machine's drift between separate
                     invocations is often larger than the difference.
  -deadlines=true    Wasm: let a deadline interrupt the guest (interrupt
                     checks added to the module at load), as the agent
                     does by default; false runs the guest without them,
                     as limits { enforce_deadline = false } does.
  -node-cpu=4000 -node-mem=8192 -task-cpu=100 -task-mem=128 -racks=25
                     Node and task shape.
  -fresh-instances   Start a new plugin instance (a new process for
                     goplugin) for every run: the first evals of a cold
                     instance, not those of an agent's warm one.
  -ports             Give each group one dynamic port.
  -verify            Re-check each plan as the host's applier does.
  -json=FILE         Also write the rows as JSON (with -compare-plugin-dir,
                     the pairs, one per scenario: {A, B, Ratio, BFaster,
                     Rounds}; with -peer, one per scenario: {Peer, Names,
                     Sides, Ratios, Rounds}).
`)
}

func (c *benchSchedulerCommand) Run(args []string) int {
	cfg := bench.DefaultConfig()
	cfg.Runs = 3
	fs := c.flags("bench scheduler", false)
	nodes := fs.String("nodes", "1000,5000", "")
	scenarios := fs.String("scenarios", "", "")
	runtimeName := fs.String("runtime", "wasm", "")
	pluginDir := fs.String("plugin-dir", "", "")
	compareDir := fs.String("compare-plugin-dir", "", "")
	peerPath := fs.String("peer", "", "")
	deadlines := fs.Bool("deadlines", true, "")
	fresh := fs.Bool("fresh-instances", false, "")
	jsonOut := fs.String("json", "", "")
	fs.IntVar(&cfg.Runs, "runs", cfg.Runs, "")
	fs.IntVar(&cfg.NodeCPU, "node-cpu", cfg.NodeCPU, "")
	fs.IntVar(&cfg.NodeMem, "node-mem", cfg.NodeMem, "")
	fs.IntVar(&cfg.TaskCPU, "task-cpu", cfg.TaskCPU, "")
	fs.IntVar(&cfg.TaskMem, "task-mem", cfg.TaskMem, "")
	fs.IntVar(&cfg.Racks, "racks", cfg.Racks, "")
	fs.BoolVar(&cfg.Ports, "ports", false, "")
	fs.BoolVar(&cfg.Verify, "verify", false, "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	cfg.Nodes = nil
	for _, s := range strings.Split(*nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return c.errorf("bad -nodes value %q", s)
		}
		cfg.Nodes = append(cfg.Nodes, n)
	}
	if *scenarios != "" {
		for _, s := range strings.Split(*scenarios, ",") {
			cfg.Scenarios = append(cfg.Scenarios, strings.TrimSpace(s))
		}
	}
	ctx := context.Background()
	runtimeSet := false
	fs.Visit(func(f *flag.Flag) { runtimeSet = runtimeSet || f.Name == "runtime" })
	if *peerPath != "" && !runtimeSet {
		*runtimeName = "wasm,goplugin,native"
	}
	runtimes := strings.Split(*runtimeName, ",")
	dirs := map[string]string{"wasm": "plugins", "goplugin": "goplugins", "native": ""}
	for i, r := range runtimes {
		runtimes[i] = strings.TrimSpace(r)
		if _, ok := dirs[runtimes[i]]; !ok {
			return c.errorf("-runtime must be wasm, native or goplugin, not %q", runtimes[i])
		}
		if slices.Contains(runtimes[:i], runtimes[i]) {
			return c.errorf("-runtime lists %s twice", runtimes[i])
		}
	}
	switch {
	case len(runtimes) > 1 && *peerPath == "":
		return c.errorf("-runtime lists several runtimes only with -peer")
	case len(runtimes) > 1 && *pluginDir != "":
		return c.errorf("-plugin-dir names the plugins of one runtime, and the runtimes are %s (with -peer the default is all three); "+
			"name one with -runtime, or let each load from beside the drover binary", strings.Join(runtimes, ","))
	case *peerPath != "" && *compareDir != "":
		return c.errorf("-peer and -compare-plugin-dir are two different comparisons; use one")
	case *compareDir != "" && runtimes[0] == "native":
		return c.errorf("-compare-plugin-dir compares two builds of the wasm or goplugin plugins; -runtime is native")
	}
	dirOf := func(runtimeName string) (string, error) {
		if *pluginDir != "" || dirs[runtimeName] == "" {
			return *pluginDir, nil
		}
		return besideBinary(dirs[runtimeName])
	}
	load := func(runtimeName, dir string) (*bench.Plugins, error) {
		var p *bench.Plugins
		var err error
		switch runtimeName {
		case "wasm":
			wcfg := wasm.DefaultConfig()
			wcfg.EnforceDeadline = *deadlines
			p, err = bench.WasmPlugins(ctx, dir, wcfg, zerolog.Nop())
		case "goplugin":
			p, err = bench.GopluginPlugins(ctx, dir, goplugin.DefaultConfig(), zerolog.Nop())
		default:
			p = bench.NativePlugins(zerolog.Nop())
		}
		if p != nil {
			p.Fresh = *fresh
		}
		return p, err
	}
	var sides []bench.Side
	for _, r := range runtimes {
		dir, err := dirOf(r)
		if err != nil {
			return c.errorf("%v", err)
		}
		plugins, err := load(r, dir)
		if err != nil {
			return c.errorf("%v", err)
		}
		defer plugins.Close(ctx)
		sides = append(sides, bench.Side{Name: r, Plugins: plugins.Plugin})
	}
	cfg.Runtime = strings.Join(runtimes, ", ")
	switch {
	case !*deadlines && len(runtimes) == 1 && runtimes[0] == "wasm":
		cfg.Runtime += ", deadlines not enforced"
	case !*deadlines && slices.Contains(runtimes, "wasm"):
		cfg.Runtime += "; wasm deadlines not enforced"
	}
	if *fresh {
		cfg.Runtime += ", fresh instances"
	}
	var rows any
	var err error
	switch {
	case *peerPath != "":
		rows, err = bench.SideBySide(ctx, cfg, &bench.PeerCommand{Path: *peerPath}, sides, c.out)
	case *compareDir != "":
		other, lerr := load(runtimes[0], *compareDir)
		if lerr != nil {
			return c.errorf("%v", lerr)
		}
		defer other.Close(ctx)
		dirA, _ := dirOf(runtimes[0])
		fmt.Fprintf(c.out, "# A: %s\n# B: %s\n", dirA, *compareDir)
		rows, err = bench.Compare(ctx, cfg, sides[0].Plugins, other.Plugin, c.out)
	default:
		cfg.Plugins = sides[0].Plugins
		rows, err = bench.Run(ctx, cfg, c.out)
	}
	if err != nil {
		return c.errorf("%v", err)
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return c.errorf("encode %s: %v", *jsonOut, err)
		}
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return c.errorf("write %s: %v", *jsonOut, err)
		}
	}
	return exitOK
}

// besideBinary returns the directory dir beside the (symlink-resolved)
// drover binary.
func besideBinary(dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the drover binary: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Join(filepath.Dir(exe), dir), nil
}
