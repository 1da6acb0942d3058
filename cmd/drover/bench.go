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
  -json=FILE         Also write the rows as JSON.
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
	var plugins *bench.Plugins
	switch *runtimeName {
	case "native":
		plugins = bench.NativePlugins(zerolog.Nop())
	case "wasm":
		dir := *pluginDir
		if dir == "" {
			d, err := besideBinary("plugins")
			if err != nil {
				return c.errorf("%v", err)
			}
			dir = d
		}
		wcfg := wasm.DefaultConfig()
		wcfg.EnforceDeadline = *deadlines
		p, err := bench.WasmPlugins(ctx, dir, wcfg, zerolog.Nop())
		if err != nil {
			return c.errorf("%v", err)
		}
		plugins = p
	case "goplugin":
		dir := *pluginDir
		if dir == "" {
			d, err := besideBinary("goplugins")
			if err != nil {
				return c.errorf("%v", err)
			}
			dir = d
		}
		p, err := bench.GopluginPlugins(ctx, dir, goplugin.DefaultConfig(), zerolog.Nop())
		if err != nil {
			return c.errorf("%v", err)
		}
		plugins = p
	default:
		return c.errorf("-runtime must be wasm, native or goplugin, not %q", *runtimeName)
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
	cfg.Plugins = plugins.Plugin
	rows, err := bench.Run(ctx, cfg, c.out)
	if err != nil {
		return c.errorf("%v", err)
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
