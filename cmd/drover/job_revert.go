package main

import (
	"net/url"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type jobRevertCommand struct{ *meta }

func (c *jobRevertCommand) Synopsis() string { return "Revert a job to an earlier version" }

func (c *jobRevertCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job revert [options] <job> <version or tag>

  Registers a kept version of a job (its ID or a unique prefix), named by
  its number or its tag, again: the job runs that version's spec as a new
  version. Then monitors the evaluation, as job run does. "drover job
  history" lists the kept versions and their tags.

  Exit codes: 0 when everything was placed, 2 when some allocations could
  not be placed, 1 on error.
` + apiOptions + `

Revert options:

  -check-version=N   Revert only if the job is still at version N.
  -detach            Return after reverting, printing the evaluation ID.`)
}

func (c *jobRevertCommand) Run(args []string) int {
	fs := c.flags("job revert", false)
	check := fs.Int64("check-version", -1, "")
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 2, 2, "two arguments: <job> <version or tag>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	version, err := versionByNameOrNumber(cl, job.ID, fs.Arg(1))
	if err != nil {
		return c.errorf("%v", err)
	}
	req := &httpapi.JobRevertRequest{JobID: job.ID, JobVersion: version}
	if *check >= 0 {
		prior := uint64(*check)
		req.EnforcePriorVersion = &prior
	}
	var resp httpapi.JobRegisterResponse
	if _, err := cl.Put(bg, "/v1/job/"+url.PathEscape(job.ID)+"/revert", req, &resp); err != nil {
		return c.errorf("reverting job %q to version %d: %v", job.ID, version, err)
	}
	return c.follow(cl, resp.EvalID, *detach)
}
