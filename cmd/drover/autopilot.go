package main

import (
	"fmt"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/nomad/api"
)

// autopilotConfigPath is where the autopilot configuration is read and
// written.
const autopilotConfigPath = "/v1/operator/autopilot/configuration"

// autopilotClient is the client for the autopilot commands, which act in
// no namespace.
func (m *meta) autopilotClient() (*client.Client, error) {
	cl, err := m.client()
	if err != nil {
		return nil, err
	}
	cl.Namespace = ""
	return cl, nil
}

type autopilotGetConfigCommand struct{ *meta }

func (c *autopilotGetConfigCommand) Synopsis() string {
	return "Display the current Autopilot configuration"
}

func (c *autopilotGetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator autopilot get-config [options]

  Displays the current Autopilot configuration (GET
  /v1/operator/autopilot/configuration), one "Name = value" line per
  setting as Nomad prints it.

  If ACLs are enabled, this command requires a token with the
  'operator:read' capability.
` + noNamespaceOptions + `

Get-config options:
` + jsonOption)
}

func (c *autopilotGetConfigCommand) Run(args []string) int {
	fs := c.flags("operator autopilot get-config", true)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.autopilotClient()
	if err != nil {
		return c.errorf("%v", err)
	}
	var conf api.AutopilotConfiguration
	if _, err := cl.Get(bg, autopilotConfigPath, &conf); err != nil {
		return c.errorf("reading the Autopilot configuration: %v", err)
	}
	if c.json {
		return c.printJSON(&conf)
	}
	// Nomad's lines, unaligned, so that what greps Nomad's output greps
	// Drover's.
	for _, l := range [][2]any{
		{"CleanupDeadServers", conf.CleanupDeadServers},
		{"LastContactThreshold", conf.LastContactThreshold},
		{"MaxTrailingLogs", conf.MaxTrailingLogs},
		{"MinQuorum", conf.MinQuorum},
		{"ServerStabilizationTime", conf.ServerStabilizationTime},
		{"EnableRedundancyZones", conf.EnableRedundancyZones},
		{"DisableUpgradeMigration", conf.DisableUpgradeMigration},
		{"EnableCustomUpgrades", conf.EnableCustomUpgrades},
	} {
		fmt.Fprintf(c.out, "%s = %v\n", l[0], l[1])
	}
	return exitOK
}
