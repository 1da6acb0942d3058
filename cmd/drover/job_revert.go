package main

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type jobRevertCommand struct{ *meta }

func (c *jobRevertCommand) Synopsis() string { return "Revert a job to an earlier version" }

func (c *jobRevertCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job revert [options] <job> <version>

  Registers a kept version of a job (its ID or a unique prefix) again: the
  job runs that version's spec as a new version. Then monitors the
  evaluation, as job run does. "drover job history" lists the kept
  versions.

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
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 2, 2, "two arguments: <job> <version>") {
		return exitError
	}
	version, err := strconv.ParseUint(strings.TrimPrefix(fs.Arg(1), "v"), 10, 64)
	if err != nil {
		return c.errorf("version %q is not a version number", fs.Arg(1))
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
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
