package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

type nodeStatusCommand struct{ *meta }

func (c *nodeStatusCommand) Synopsis() string { return "Display status information about nodes" }

func (c *nodeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node status [options] [node-id]

  Without a node, lists all nodes; with one, shows it.

Options:

  -address=ADDR  Agent address.
  -json          Print the API's JSON.
`)
}

func (c *nodeStatusCommand) Run(args []string) int {
	fs := c.flags("node status", true)
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	if fs.NArg() == 1 {
		var n sdk.Node
		if _, err := cl.Get(bg, "/v1/node/"+url.PathEscape(fs.Arg(0)), &n); err != nil {
			return c.errorf("reading node: %v", err)
		}
		if c.json {
			return c.printJSON(&n)
		}
		cap := n.Capacity()
		c.table([][]string{
			{"ID", "= " + n.ID}, {"Name", "= " + n.Name}, {"Datacenter", "= " + n.Datacenter},
			{"Node Pool", "= " + n.NodePool}, {"Class", "= " + n.NodeClass}, {"Status", "= " + n.Status},
			{"Eligibility", "= " + n.SchedulingEligibility},
			{"CPU", fmt.Sprintf("= %d MHz", cap.CPU)}, {"Memory", fmt.Sprintf("= %d MiB", cap.MemoryMB)},
		})
		return exitOK
	}
	var nodes []*httpapi.NodeListStub
	if _, err := cl.Get(bg, "/v1/nodes", &nodes); err != nil {
		return c.errorf("listing nodes: %v", err)
	}
	if c.json {
		return c.printJSON(nodes)
	}
	if len(nodes) == 0 {
		c.ui.Output("No nodes registered")
		return exitOK
	}
	rows := [][]string{{"ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"}}
	for _, n := range nodes {
		rows = append(rows, []string{shortID(n.ID), n.NodePool, n.Datacenter, n.Name, n.NodeClass,
			fmt.Sprint(n.Drain), n.SchedulingEligibility, n.Status})
	}
	c.table(rows)
	return exitOK
}
