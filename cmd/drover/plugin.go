package main

import (
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type pluginListCommand struct{ *meta }

func (c *pluginListCommand) Synopsis() string { return "List the agent's scheduler plugins" }

func (c *pluginListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover plugin list [options]

  Lists the scheduler plugins the agent runs: name, the job types each
  serves, its runtime (wasm, goplugin, native) and its ABI version.

Options:

  -address=ADDR  Agent address.
  -json          Print the API's JSON.
`)
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
	rows := [][]string{{"Name", "Types", "Runtime", "ABI", "Version"}}
	for _, p := range plugins {
		rows = append(rows, []string{p.Name, strings.Join(p.Types, ","), p.Runtime, p.ABIVersion, p.PluginVersion})
	}
	c.table(rows)
	return exitOK
}
