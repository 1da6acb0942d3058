package main

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

type nodeStatusCommand struct{ *meta }

func (c *nodeStatusCommand) Synopsis() string { return "Display status information about nodes" }

func (c *nodeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node status [options] [node-id]

  Without a node, lists the nodes. With one (its ID or a unique prefix),
  shows it: its status, eligibility, capacity and what its allocations use,
  and its allocations.
` + apiOptions + `

Status options:
` + jsonOption + `
  -filter=EXPR     Only nodes matching a filter expression, such as
                   'Datacenter == "dc1"'.
  -verbose         Show full IDs and the node's attributes.
  -allocs          With the list, count each node's running allocations.
  -quiet           With the list, print only the nodes' IDs.`)
}

func (c *nodeStatusCommand) Run(args []string) int {
	fs := c.flags("node status", true)
	filter := fs.String("filter", "", "")
	verbose := fs.Bool("verbose", false, "")
	withAllocs := fs.Bool("allocs", false, "")
	quiet := fs.Bool("quiet", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 1, "at most one argument: [node-id]") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	short := idFormat(*verbose)
	if fs.NArg() == 0 {
		path := "/v1/nodes"
		if *filter != "" {
			path += "?filter=" + url.QueryEscape(*filter)
		}
		var nodes []*httpapi.NodeListStub
		if _, err := cl.Get(bg, path, &nodes); err != nil {
			return c.errorf("listing nodes: %v", err)
		}
		if c.json {
			return c.printJSON(nodes)
		}
		if len(nodes) == 0 {
			c.ui.Output("No nodes registered")
			return exitOK
		}
		if *quiet {
			for _, n := range nodes {
				c.ui.Output(n.ID)
			}
			return exitOK
		}
		rows := [][]string{{"ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"}}
		var running map[string]int
		if *withAllocs {
			rows[0] = append(rows[0], "Running Allocs")
			if running, err = runningAllocsByNode(cl); err != nil {
				return c.errorf("listing allocations: %v", err)
			}
		}
		for _, n := range nodes {
			row := []string{short(n.ID), n.NodePool, n.Datacenter, n.Name, orNone(n.NodeClass),
				fmt.Sprint(n.Drain), n.SchedulingEligibility, n.Status}
			if *withAllocs {
				row = append(row, fmt.Sprint(running[n.ID]))
			}
			rows = append(rows, row)
		}
		c.table(rows)
		return exitOK
	}
	id, err := resolve(cl, "/v1/nodes", fs.Arg(0))
	if err != nil {
		return c.errorf("finding node %q: %v", fs.Arg(0), err)
	}
	var n sdk.Node
	if _, err := cl.Get(bg, "/v1/node/"+url.PathEscape(id), &n); err != nil {
		return c.errorf("reading node: %v", err)
	}
	var allocs []*sdk.Allocation
	if _, err := cl.Get(bg, "/v1/node/"+url.PathEscape(id)+"/allocations", &allocs); err != nil {
		return c.errorf("reading the node's allocations: %v", err)
	}
	if c.json {
		return c.printJSON(&n)
	}
	capacity := n.Capacity()
	var used sdk.Usage
	var live []*sdk.Allocation
	for _, a := range allocs {
		if !a.TerminalStatus() {
			used.Add(a.Usage())
			live = append(live, a)
		}
	}
	drivers := make([]string, 0, len(n.Drivers))
	for name, d := range n.Drivers {
		if d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	sort.Strings(drivers)
	c.kv("ID", short(n.ID), "Name", n.Name, "Class", orNone(n.NodeClass), "DC", n.Datacenter, "Node Pool", n.NodePool,
		"Drain", fmt.Sprint(n.DrainStrategy != nil), "Eligibility", n.SchedulingEligibility, "Status", n.Status,
		"Drivers", strings.Join(drivers, ","))
	c.ui.Output("\nAllocated Resources")
	c.table([][]string{{"CPU", "Memory", "Disk"},
		{fmt.Sprintf("%d/%d MHz", used.CPU, capacity.CPU), fmt.Sprintf("%d MiB/%d MiB", used.MemoryMB, capacity.MemoryMB),
			fmt.Sprintf("%d MiB/%d MiB", used.DiskMB, capacity.DiskMB)}})
	c.ui.Output("\nAllocations")
	if len(live) == 0 {
		c.ui.Output("No allocations placed")
	} else {
		sort.Slice(live, func(i, j int) bool { return live[i].Name < live[j].Name })
		rows := [][]string{{"ID", "Job ID", "Task Group", "Version", "Desired", "Status", "Name"}}
		for _, a := range live {
			rows = append(rows, []string{short(a.ID), a.JobID, a.TaskGroup, fmt.Sprint(a.JobVersion), a.DesiredStatus, a.ClientStatus, a.Name})
		}
		c.table(rows)
	}
	if *verbose {
		c.ui.Output("\nAttributes")
		pairs := make([]string, 0, 2*len(n.Attributes))
		for _, k := range sortedKeys(n.Attributes) {
			pairs = append(pairs, k, n.Attributes[k])
		}
		c.kv(pairs...)
	}
	return exitOK
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

type nodeEligibilityCommand struct{ *meta }

func (c *nodeEligibilityCommand) Synopsis() string { return "Toggle scheduling eligibility for a node" }

func (c *nodeEligibilityCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node eligibility [options] <node-id>

  Makes a node (its ID or a unique prefix) eligible or ineligible for new
  allocations. An ineligible node keeps what runs on it; schedulers place
  nothing new there.
` + apiOptions + `

Eligibility options:

  -enable          Make the node eligible.
  -disable         Make the node ineligible.`)
}

func (c *nodeEligibilityCommand) Run(args []string) int {
	fs := c.flags("node eligibility", false)
	enable := fs.Bool("enable", false, "")
	disable := fs.Bool("disable", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <node-id>") {
		return exitError
	}
	if *enable == *disable {
		c.ui.Error("Give exactly one of -enable and -disable")
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id, err := resolve(cl, "/v1/nodes", fs.Arg(0))
	if err != nil {
		return c.errorf("finding node %q: %v", fs.Arg(0), err)
	}
	req := &httpapi.NodeEligibilityRequest{NodeID: id, Eligibility: sdk.NodeSchedulingEligible}
	if *disable {
		req.Eligibility = sdk.NodeSchedulingIneligible
	}
	if _, err := cl.Put(bg, "/v1/node/"+url.PathEscape(id)+"/eligibility", req, nil); err != nil {
		return c.errorf("updating node %s: %v", shortID(id), err)
	}
	what := "eligible"
	if *disable {
		what = "ineligible"
	}
	c.ui.Output(fmt.Sprintf("Node %q scheduling eligibility set: %s for scheduling", shortID(id), what))
	return exitOK
}

// runningAllocsByNode counts the running allocations of every namespace on
// each node, as Nomad's node status -allocs shows them.
func runningAllocsByNode(cl *client.Client) (map[string]int, error) {
	var allocs []*sdk.AllocationListStub
	filter := url.QueryEscape(`ClientStatus == "running"`)
	if _, err := cl.Get(bg, "/v1/allocations?namespace=*&task_states=false&filter="+filter, &allocs); err != nil {
		return nil, err
	}
	running := map[string]int{}
	for _, a := range allocs {
		running[a.NodeID]++
	}
	return running, nil
}
