package main

import (
	"fmt"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type agentInfoCommand struct{ *meta }

func (c *agentInfoCommand) Synopsis() string {
	return "Display status information about the local agent"
}

func (c *agentInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover agent-info [options]

  Displays the statistics of the agent -address names (GET
  /v1/agent/self), as nomad agent-info does: a section per subsystem
  (blocked_evals, broker, nomad, raft, runtime), sorted, each with its
  "key = value" lines. With ACLs, the token needs agent:read.
` + noNamespaceOptions + `

Agent info options:
` + formatOptions)
}

func (c *agentInfoCommand) Run(args []string) int {
	fs := c.flags("agent-info", true)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	var self httpapi.AgentSelf
	if _, err := cl.Get(bg, "/v1/agent/self", &self); err != nil {
		return c.errorf("querying agent info: %v", err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &self); printed {
		return code
	}
	for _, section := range sortedKeys(self.Stats) {
		c.ui.Output(section)
		stats := self.Stats[section]
		for _, k := range sortedKeys(stats) {
			c.ui.Output(fmt.Sprintf("  %s = %v", k, stats[k]))
		}
	}
	return exitOK
}
