package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/sdk/abi"
)

type pluginListCommand struct{ *meta }

func (c *pluginListCommand) Synopsis() string { return "List the agent's scheduler plugins" }

func (c *pluginListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover plugin list [options]

  Lists the scheduler plugins the agent runs: name, the job types each
  serves, its runtime (wasm, goplugin, native) and its ABI version. Then
  the plugin files the agent refused (they failed to load, their plugin
  refused its configuration, or they declare a name or job type another
  file serves), and why: a refused replacement leaves the running version
  of its plugin in place. With -json, the plugins only (the refused
  files: GET /v1/plugins/refused).
` + noNamespaceOptions + `
  -json            Print the API's JSON.`)
}

func (c *pluginListCommand) Run(args []string) int {
	fs := c.flags("plugin list", true)
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var plugins []*httpapi.PluginStub
	if _, err := cl.Get(bg, "/v1/plugins/schedulers", &plugins); err != nil {
		return c.errorf("listing plugins: %v", err)
	}
	if c.json {
		return c.printJSON(plugins)
	}
	var refused []*httpapi.RefusedPlugin
	if _, err := cl.Get(bg, "/v1/plugins/refused", &refused); err != nil {
		return c.errorf("listing refused plugin files: %v", err)
	}
	rows := [][]string{{"Name", "Types", "Runtime", "ABI", "Version"}}
	for _, p := range plugins {
		rows = append(rows, []string{p.Name, strings.Join(p.Types, ","), p.Runtime, p.ABIVersion, p.PluginVersion})
	}
	c.table(rows)
	if len(refused) > 0 {
		c.ui.Output("\nRefused plugin files (a running version of the plugin, if any, stays):")
		for _, f := range refused {
			c.ui.Output(fmt.Sprintf("  %s (%s): %s", f.Path, f.Time.UTC().Format(time.RFC3339), f.Error))
		}
		c.ui.Output("The agent would not start again with these files as they are: fix, put back or remove them first.")
	}
	return exitOK
}

type pluginInspectCommand struct{ *meta }

func (c *pluginInspectCommand) Synopsis() string { return "Show one scheduler plugin of the agent" }

func (c *pluginInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover plugin inspect [options] NAME

  Shows a scheduler plugin the agent runs: its runtime, ABI version, file,
  configuration, limits, and what its pool has done (evals, failures,
  recycled instances, full and delta state syncs).
` + noNamespaceOptions + `
  -json            Print the API's JSON.`)
}

func (c *pluginInspectCommand) Run(args []string) int {
	fs := c.flags("plugin inspect", true)
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	if fs.NArg() != 1 {
		c.ui.Error("This command takes one argument: the plugin's name")
		c.ui.Error(c.Help())
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var p httpapi.PluginStub
	if _, err := cl.Get(bg, "/v1/plugin/scheduler/"+url.PathEscape(fs.Arg(0)), &p); err != nil {
		return c.errorf("inspecting plugin %q: %v", fs.Arg(0), err)
	}
	if c.json {
		return c.printJSON(&p)
	}
	deadline := "not enforced"
	if p.EnforceDeadline {
		deadline = "enforced"
	}
	memory := "-"
	if p.MemoryMB > 0 {
		memory = fmt.Sprintf("%d MiB", p.MemoryMB)
	}
	rows := [][]string{
		{"Name", p.Name}, {"Types", strings.Join(p.Types, ",")}, {"Runtime", p.Runtime},
		{"ABI", p.ABIVersion}, {"Version", p.PluginVersion}, {"Path", p.Path},
		{"Mirrors evals", fmt.Sprint(p.MirrorEvals)},
		{"Memory limit", memory}, {"Timeout", time.Duration(p.TimeoutNanos).String() + " (" + deadline + ")"},
		{"Evals", fmt.Sprint(p.Stats.Evals)}, {"Failures", fmt.Sprint(p.Stats.Failures)},
		{"Recycled", fmt.Sprint(p.Stats.Recycled)},
		{"Syncs", fmt.Sprintf("%d full, %d delta", p.Stats.FullSyncs, p.Stats.DeltaSyncs)},
	}
	keys := make([]string, 0, len(p.Config))
	for k := range p.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rows = append(rows, []string{"Config " + k, p.Config[k]})
	}
	if p.ReloadError != "" {
		rows = append(rows, []string{"Reload refused", p.ReloadError +
			" (this version still runs, but the agent would not start again with the file as it is)"})
	}
	c.table(rows)
	return exitOK
}

type pluginValidateCommand struct{ *meta }

func (c *pluginValidateCommand) Synopsis() string {
	return "Check that a file is a loadable scheduler plugin"
}

func (c *pluginValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover plugin validate [options] PATH

  Loads a scheduler plugin file the way the agent would, without an agent:
  a ".wasm" module in wazero, any other executable as a go-plugin binary.
  It reports the plugin's name, job types, version and ABI version (and a
  module's exports), or what is wrong. A plugin of ABI 1.7 or later is
  asked, as the agent asks it, whether it accepts its configuration: the
  -config pairs, or none (what the agent hands a plugin that no plugin
  block configures); one that refuses it does not load. Exit code 0 when
  the plugin loads, 1 when it does not.

Options:

  -config KEY=VALUE       A key of the plugin's configuration, as in the
                          config map of its plugin block (repeatable).
  -runtime=wasm|goplugin  Override the runtime picked from the file name.
  -json                   Print the result as JSON.
`)
}

// PluginValidation is what plugin validate reports.
type PluginValidation struct {
	Path, Runtime                   string
	Valid                           bool
	Error                           string `json:",omitempty"`
	Name, PluginVersion, ABIVersion string `json:",omitempty"`
	Types, Exports                  []string
	MirrorEvals                     bool
	// Config is the configuration checked; ConfigChecked says the plugin
	// was asked about it (ABI 1.7), and ConfigRefused that it refused it
	// (Error says why).
	Config        map[string]string `json:",omitempty"`
	ConfigChecked bool
	ConfigRefused bool `json:",omitempty"`
	// declaresCheck says the plugin declares an ABI with configuration
	// checks (1.7), whether or not it serves one.
	declaresCheck bool
}

func (c *pluginValidateCommand) Run(args []string) int {
	fs := c.flags("plugin validate", true)
	runtimeName := fs.String("runtime", "", "")
	var pairs stringList
	fs.Var(&pairs, "config", "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	if fs.NArg() != 1 {
		c.ui.Error("This command takes one argument: the plugin file")
		c.ui.Error(c.Help())
		return exitError
	}
	config := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			c.ui.Error(fmt.Sprintf("-config %q is not KEY=VALUE", p))
			return exitError
		}
		config[k] = v
	}
	v := validatePlugin(fs.Arg(0), *runtimeName, config)
	if c.json {
		c.printJSON(v)
	} else if v.Valid {
		checked := fmt.Sprintf("not checked (the plugin declares ABI %s; plugins check it from 1.7)", v.ABIVersion)
		switch {
		case v.ConfigChecked:
			checked = "accepted"
		case v.declaresCheck:
			checked = "not checked (the plugin serves no configuration check)"
		}
		rows := [][]string{
			{"Path", v.Path}, {"Runtime", v.Runtime}, {"Name", v.Name}, {"Types", strings.Join(v.Types, ",")},
			{"Version", v.PluginVersion}, {"ABI", v.ABIVersion}, {"Mirrors evals", fmt.Sprint(v.MirrorEvals)},
			{"Exports", strings.Join(v.Exports, ",")}, {"Configuration", checked},
		}
		for _, k := range sortedKeys(v.Config) {
			rows = append(rows, []string{"Config " + k, v.Config[k]})
		}
		c.table(rows)
		c.ui.Output(fmt.Sprintf("\n%s is a valid Drover scheduler plugin (ABI %s; this host speaks %s).", v.Path, v.ABIVersion, abi.Current))
	} else if v.ConfigRefused {
		c.ui.Error(fmt.Sprintf("%s refuses this configuration:\n  %s", v.Path, v.Error))
	} else {
		c.ui.Error(fmt.Sprintf("%s is not a loadable Drover scheduler plugin:\n  %s", v.Path, v.Error))
	}
	if !v.Valid {
		return exitError
	}
	return exitOK
}

// validatePlugin loads the plugin at path, asks it about config as the
// agent would, and reports what it is.
func validatePlugin(path, runtimeName string, config map[string]string) *PluginValidation {
	v := &PluginValidation{Path: path, Runtime: runtimeName, Config: config}
	if v.Runtime == "" {
		v.Runtime = agent.RuntimeGoPlugin
		if strings.HasSuffix(path, ".wasm") {
			v.Runtime = agent.RuntimeWasm
		}
	}
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	var factory runtime.Factory
	switch v.Runtime {
	case agent.RuntimeWasm:
		m, err := wasm.LoadFile(ctx, path, wasm.DefaultConfig())
		if err != nil {
			v.Error = err.Error()
			return v
		}
		factory, v.Exports = m, m.Exports()
		sort.Strings(v.Exports)
	case agent.RuntimeGoPlugin:
		gcfg := goplugin.DefaultConfig()
		gcfg.MemoryLimitBytes = agent.DefaultPluginMemoryMB << 20 // bounds the configuration check, as in an agent
		f, err := goplugin.Load(ctx, path, gcfg)
		if err != nil {
			v.Error = err.Error()
			return v
		}
		factory = f
	default:
		v.Error = fmt.Sprintf("unknown runtime %q (wasm or goplugin)", v.Runtime)
		return v
	}
	defer factory.Close(ctx)
	info := factory.Info()
	v.Name, v.Types, v.PluginVersion, v.MirrorEvals = info.Name, info.Types, info.PluginVersion, info.MirrorEvals
	v.ABIVersion = abi.Version(info.ABI).String()
	v.declaresCheck = abi.Version(info.ABI).ChecksConfig()
	cctx, cancel := context.WithTimeout(ctx, server.DefaultPluginTimeout)
	defer cancel()
	asked, err := runtime.CheckConfig(cctx, factory, config)
	if err != nil {
		v.Error, v.ConfigRefused = err.Error(), errors.Is(err, runtime.ErrConfigRefused)
		return v
	}
	v.Valid, v.ConfigChecked = true, asked
	return v
}
