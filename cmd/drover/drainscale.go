package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
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
` + apiOptions + `

Drain options:

  -enable            Start draining.
  -disable           Cancel the drain.
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
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <node-id>") {
		return exitError
	}
	if *enable == *disable {
		c.ui.Error("Give exactly one of -enable and -disable")
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
	if *enable {
		c.ui.Output(fmt.Sprintf("Node %q drain strategy set", shortID(id)))
	} else {
		c.ui.Output(fmt.Sprintf("Node %q drain strategy unset", shortID(id)))
	}
	return exitOK
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
	req := &httpapi.JobScaleRequest{Count: &count, Target: map[string]string{"Job": job.ID, "Group": group}}
	var resp httpapi.JobRegisterResponse
	if _, err := cl.Put(bg, "/v1/job/"+url.PathEscape(job.ID)+"/scale", req, &resp); err != nil {
		return c.errorf("scaling job %q: %v", job.ID, err)
	}
	return c.follow(cl, resp.EvalID, *detach)
}
