package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

type nodeDrainCommand struct{ *meta }

func (c *nodeDrainCommand) Synopsis() string { return "Toggle drain mode on a node" }

func (c *nodeDrainCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node drain [options] <node-id>

  Starts (-enable) or cancels (-disable) the drain of a node (its ID or a
  unique prefix). A draining node is ineligible for new allocations; the
  leader migrates its service allocations elsewhere, at most the group's
  migrate.max_parallel at a time, lets batch allocations finish, moves
  system allocations last, and, at the deadline, migrates whatever is left.
  The node stays ineligible after the drain completes.

  With -enable the command then monitors the drain, as Nomad's does: the
  allocations marked for migration and their status changes, until the
  drain is over and the allocations it moves have stopped. Ctrl-C stops
  the monitoring, not the drain.
` + apiOptions + `

Drain options:

  -enable            Start draining.
  -disable           Cancel the drain.
  -monitor           Only monitor the node's drain.
  -detach            Return once the drain is set, without monitoring.
  -yes               Accepted for Nomad's scripts; nothing is asked.
  -deadline=DUR      Migrate everything left after DUR (default 1h).
  -no-deadline       Never force the remaining allocations off.
  -force             Migrate everything at once.
  -ignore-system     Leave system and sysbatch allocations running.
  -keep-ineligible   With -disable: leave the node ineligible.`)
}

func (c *nodeDrainCommand) Run(args []string) int {
	fs := c.flags("node drain", false)
	enable := fs.Bool("enable", false, "")
	disable := fs.Bool("disable", false, "")
	deadline := fs.Duration("deadline", time.Hour, "")
	noDeadline := fs.Bool("no-deadline", false, "")
	force := fs.Bool("force", false, "")
	ignoreSystem := fs.Bool("ignore-system", false, "")
	keepIneligible := fs.Bool("keep-ineligible", false, "")
	monitorOnly := fs.Bool("monitor", false, "")
	detach := fs.Bool("detach", false, "")
	fs.Bool("yes", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <node-id>") {
		return exitError
	}
	if n := btoi(*enable) + btoi(*disable) + btoi(*monitorOnly); n != 1 {
		c.ui.Error("Give exactly one of -enable, -disable and -monitor")
		return exitError
	}
	if *monitorOnly && *detach {
		c.ui.Error("-monitor and -detach contradict each other")
		return exitError
	}
	if *force && *noDeadline {
		c.ui.Error("-force and -no-deadline contradict each other")
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
	if *monitorOnly {
		return c.monitorDrain(cl, id)
	}
	req := &httpapi.NodeDrainRequest{NodeID: id, MarkEligible: *disable && !*keepIneligible}
	if *enable {
		spec := &httpapi.DrainSpec{Deadline: *deadline, IgnoreSystemJobs: *ignoreSystem}
		switch {
		case *force:
			spec.Deadline = -1
		case *noDeadline:
			spec.Deadline = 0
		}
		req.DrainSpec = spec
	}
	if _, err := cl.Put(bg, "/v1/node/"+url.PathEscape(id)+"/drain", req, nil); err != nil {
		return c.errorf("updating the drain of node %s: %v", shortID(id), err)
	}
	if !*enable {
		c.ui.Output(fmt.Sprintf("Node %q drain strategy unset", shortID(id)))
		return exitOK
	}
	c.ui.Output(fmt.Sprintf("Node %q drain strategy set", shortID(id)))
	if *detach {
		return exitOK
	}
	return c.monitorDrain(cl, id)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// monitorDrain follows a node's drain until it is over and the allocations
// it moves (marked for migration or stopped) have stopped on the node.
func (c *nodeDrainCommand) monitorDrain(cl *client.Client, nodeID string) int {
	say := func(format string, args ...any) {
		c.ui.Output(fmt.Sprintf("%s: %s", c.clock().Format(time.RFC3339), fmt.Sprintf(format, args...)))
	}
	say("Ctrl-C to stop monitoring: will not cancel the node drain")
	seen := map[string]*sdk.Allocation{}
	var index uint64
	over := false
	for {
		var allocs []*sdk.Allocation
		// A short wait: the drain's end changes the node, not the
		// allocations this query waits on.
		meta, err := cl.Get(bg, fmt.Sprintf("/v1/node/%s/allocations?index=%d&wait=1s", url.PathEscape(nodeID), index), &allocs)
		if err != nil {
			return c.errorf("reading the allocations of node %s: %v", shortID(nodeID), err)
		}
		index = meta.Index
		moving := 0
		for _, a := range allocs {
			old := seen[a.ID]
			seen[a.ID] = a
			if a.DesiredTransition.ShouldMigrate() && (old == nil || !old.DesiredTransition.ShouldMigrate()) {
				say("Alloc %q marked for migration", shortID(a.ID))
			}
			if old != nil && old.ClientStatus != a.ClientStatus {
				say("Alloc %q status %q -> %q", shortID(a.ID), old.ClientStatus, a.ClientStatus)
			}
			if (a.DesiredTransition.ShouldMigrate() || a.DesiredStatus != sdk.AllocDesiredStatusRun) && !a.ClientTerminalStatus() {
				moving++
			}
		}
		if !over {
			var n sdk.Node
			if _, err := cl.Get(bg, "/v1/node/"+url.PathEscape(nodeID), &n); err != nil {
				return c.errorf("reading node %s: %v", shortID(nodeID), err)
			}
			if n.DrainStrategy == nil {
				over = true
				if st, _ := n.LastDrain["Status"].(string); st == "canceled" {
					say("Drain canceled for node %q", shortID(nodeID))
					return exitOK
				}
				say("Drain complete for node %q", shortID(nodeID))
			}
		}
		if over && moving == 0 {
			say("All allocations on node %q have stopped", shortID(nodeID))
			return exitOK
		}
	}
}

type jobScaleCommand struct{ *meta }

func (c *jobScaleCommand) Synopsis() string { return "Change the count of a job's task group" }

func (c *jobScaleCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job scale [options] <job> [<group>] <count>

  Sets the count of a task group (the group may be left out when the job
  has one) and monitors the job-scaling evaluation. A group with a scaling
  block must stay within its min and max.

  Exit codes: 0 when everything was placed, 2 when some allocations could
  not be placed, 1 on error.
` + apiOptions + `

Scale options:

  -detach   Return after submitting, printing the evaluation ID.`)
}

func (c *jobScaleCommand) Run(args []string) int {
	fs := c.flags("job scale", false)
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 2, 3, "<job> [<group>] <count>") {
		return exitError
	}
	count, err := strconv.ParseInt(fs.Arg(fs.NArg()-1), 10, 64)
	if err != nil || count < 0 {
		return c.errorf("count %q is not a non-negative whole number", fs.Arg(fs.NArg()-1))
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	group := ""
	if fs.NArg() == 3 {
		group = fs.Arg(1)
	} else {
		if len(job.TaskGroups) != 1 {
			return c.errorf("job %q has %d groups: name the one to scale", job.ID, len(job.TaskGroups))
		}
		group = job.TaskGroups[0].Name
	}
	req := &httpapi.JobScaleRequest{Count: &count, Target: map[string]string{"Job": job.ID, "Group": group},
		Message: "submitted using the Drover CLI"}
	var resp httpapi.JobRegisterResponse
	if _, err := cl.Put(bg, "/v1/job/"+url.PathEscape(job.ID)+"/scale", req, &resp); err != nil {
		return c.errorf("scaling job %q: %v", job.ID, err)
	}
	return c.follow(cl, resp.EvalID, *detach)
}

type jobScalingEventsCommand struct{ *meta }

func (c *jobScalingEventsCommand) Synopsis() string {
	return "Display the recent scaling events of a job"
}

func (c *jobScalingEventsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job scaling-events [options] <job>

  Lists the job's recent scaling events, newest first: the count changes
  (job scale, an autoscaler) and what an autoscaler reported without one.
  At most 20 are kept per task group.
` + apiOptions + `

Scaling events options:
` + jsonOption + `
  -verbose         Show whether each event is an error, its message and
                   its evaluation.`)
}

func (c *jobScalingEventsCommand) Run(args []string) int {
	fs := c.flags("job scaling-events", true)
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	var st httpapi.JobScaleStatusResponse
	if _, err := cl.Get(bg, "/v1/job/"+url.PathEscape(job.ID)+"/scale", &st); err != nil {
		return c.errorf("reading the job's scale status: %v", err)
	}
	type row struct {
		group string
		*state.ScalingEvent
	}
	var events []row
	for g, ts := range st.TaskGroups {
		for _, e := range ts.Events {
			events = append(events, row{g, e})
		}
	}
	sort.SliceStable(events, func(i, k int) bool { return events[i].Time > events[k].Time })
	if c.json {
		return c.printJSON(&st)
	}
	if len(events) == 0 {
		c.ui.Output(fmt.Sprintf("No events found for job %q", job.ID))
		return exitOK
	}
	head := []string{"Task Group", "Count", "PrevCount", "Date"}
	if *verbose {
		head = append(head, "Error", "Message", "Eval ID")
	}
	rows := [][]string{head}
	for _, e := range events {
		count := ""
		if e.Count != nil {
			count = fmt.Sprint(*e.Count)
		}
		r := []string{e.group, count, fmt.Sprint(e.PreviousCount), formatTime(e.Time)}
		if *verbose {
			evalID := ""
			if e.EvalID != nil {
				evalID = shortID(*e.EvalID)
			}
			r = append(r, fmt.Sprint(e.Error), e.Message, evalID)
		}
		rows = append(rows, r)
	}
	c.table(rows)
	return exitOK
}

type scalingPolicyListCommand struct{ *meta }

func (c *scalingPolicyListCommand) Synopsis() string { return "List the scaling policies" }

func (c *scalingPolicyListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover scaling policy list [options]

  Lists the scaling policies of the namespace's jobs: their task groups'
  scaling blocks, which an autoscaler reads.
` + apiOptions + `

Policy list options:
` + jsonOption + `
  -job <id>        Only the policies of this job.
  -type <type>     Only the policies whose type starts with this.
  -verbose         Show full IDs.`)
}

func (c *scalingPolicyListCommand) Run(args []string) int {
	fs := c.flags("scaling policy list", true)
	job := fs.String("job", "", "")
	typ := fs.String("type", "", "")
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	q := url.Values{}
	if *job != "" {
		q.Set("job", *job)
	}
	if *typ != "" {
		q.Set("type", *typ)
	}
	var ps []*httpapi.ScalingPolicyListStub
	if _, err := cl.Get(bg, "/v1/scaling/policies?"+q.Encode(), &ps); err != nil {
		return c.errorf("listing scaling policies: %v", err)
	}
	if c.json {
		return c.printJSON(ps)
	}
	if len(ps) == 0 {
		c.ui.Output("No policies found")
		return exitOK
	}
	short := idFormat(*verbose)
	sort.SliceStable(ps, func(i, k int) bool { return policyTarget(ps[i].Target) < policyTarget(ps[k].Target) })
	rows := [][]string{{"ID", "Enabled", "Type", "Target"}}
	for _, p := range ps {
		rows = append(rows, []string{short(p.ID), fmt.Sprint(p.Enabled), p.Type, policyTarget(p.Target)})
	}
	c.table(rows)
	return exitOK
}

type scalingPolicyInfoCommand struct{ *meta }

func (c *scalingPolicyInfoCommand) Synopsis() string { return "Display a scaling policy" }

func (c *scalingPolicyInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover scaling policy info [options] <policy-id>

  Shows a scaling policy, found by its ID or a prefix of it: its target,
  bounds and policy document.
` + apiOptions + `

Policy info options:
` + jsonOption + `
  -verbose         Show the full ID.`)
}

func (c *scalingPolicyInfoCommand) Run(args []string) int {
	fs := c.flags("scaling policy info", true)
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <policy-id>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id, err := resolve(cl, "/v1/scaling/policies", fs.Arg(0))
	if err != nil {
		return c.errorf("finding scaling policy %q: %v", fs.Arg(0), err)
	}
	var p sdk.ScalingPolicy
	if _, err := cl.Get(bg, "/v1/scaling/policy/"+url.PathEscape(id), &p); err != nil {
		return c.errorf("reading scaling policy: %v", err)
	}
	if c.json {
		return c.printJSON(&p)
	}
	if !*verbose {
		id = shortID(id)
	}
	c.kv("ID", id, "Enabled", fmt.Sprint(p.Enabled), "Target", policyTarget(p.Target),
		"Min", fmt.Sprint(p.Min), "Max", fmt.Sprint(p.Max))
	doc := "<empty>"
	if len(p.Policy) > 0 {
		b, err := json.MarshalIndent(p.Policy, "", "    ")
		if err != nil {
			return c.errorf("encode the policy: %v", err)
		}
		doc = string(b)
	}
	c.ui.Output("\nPolicy:\n" + doc)
	return exitOK
}

// policyTarget prints a policy's target as Nomad's CLI does:
// "Namespace:default,Job:web,Group:frontend", then any other keys.
func policyTarget(t map[string]string) string {
	var out []string
	for _, k := range []string{"Namespace", "Job", "Group"} {
		if v, ok := t[k]; ok {
			out = append(out, k+":"+v)
		}
	}
	var other []string
	for k, v := range t {
		if k != "Namespace" && k != "Job" && k != "Group" {
			other = append(other, k+":"+v)
		}
	}
	sort.Strings(other)
	return strings.Join(append(out, other...), ",")
}
