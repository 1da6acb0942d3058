package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
                     (in process).
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
                     Rounds}).
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
	dirs := map[string]string{"wasm": "plugins", "goplugin": "goplugins", "native": ""}
	defaultDir, ok := dirs[*runtimeName]
	switch {
	case !ok:
		return c.errorf("-runtime must be wasm, native or goplugin, not %q", *runtimeName)
	case *compareDir != "" && *runtimeName == "native":
		return c.errorf("-compare-plugin-dir compares two builds of the wasm or goplugin plugins; -runtime is native")
	}
	dirA := *pluginDir
	if dirA == "" && defaultDir != "" {
		d, err := besideBinary(defaultDir)
		if err != nil {
			return c.errorf("%v", err)
		}
		dirA = d
	}
	load := func(dir string) (*bench.Plugins, error) {
		switch *runtimeName {
		case "wasm":
			wcfg := wasm.DefaultConfig()
			wcfg.EnforceDeadline = *deadlines
			return bench.WasmPlugins(ctx, dir, wcfg, zerolog.Nop())
		case "goplugin":
			return bench.GopluginPlugins(ctx, dir, goplugin.DefaultConfig(), zerolog.Nop())
		}
		return bench.NativePlugins(zerolog.Nop()), nil
	}
	plugins, err := load(dirA)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer plugins.Close(ctx)
	plugins.Fresh = *fresh
	cfg.Runtime = *runtimeName
	if *runtimeName == "wasm" && !*deadlines {
		cfg.Runtime = "wasm, deadlines not enforced"
	}
	if *fresh {
		cfg.Runtime += ", fresh instances"
	}
	var rows any
	if *compareDir != "" {
		other, err := load(*compareDir)
		if err != nil {
			return c.errorf("%v", err)
		}
		defer other.Close(ctx)
		other.Fresh = *fresh
		fmt.Fprintf(c.out, "# A: %s\n# B: %s\n", dirA, *compareDir)
		rows, err = bench.Compare(ctx, cfg, plugins.Plugin, other.Plugin, c.out)
		if err != nil {
			return c.errorf("%v", err)
		}
	} else {
		cfg.Plugins = plugins.Plugin
		rows, err = bench.Run(ctx, cfg, c.out)
		if err != nil {
			return c.errorf("%v", err)
		}
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rows, "", "  ")
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
