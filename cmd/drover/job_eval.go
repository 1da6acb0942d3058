package main

import (
	"net/url"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type jobEvalCommand struct{ *meta }

func (c *jobEvalCommand) Synopsis() string { return "Force an evaluation of a job" }

func (c *jobEvalCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job eval [options] <job>

  Creates a new evaluation of a job (its ID or a unique prefix) and
  monitors it: the scheduler reconciles the job with the cluster as it is
  now, for instance to place a system job's allocation stopped by hand or
  to retry placements after nodes were added.

  Exit codes: 0 when everything was placed, 2 when some allocations could
  not be placed, 1 on error.
` + apiOptions + `

Eval options:

  -force-reschedule  Reschedule failed allocations now, even those whose
                     reschedule policy would wait or has run out.
  -detach            Return after creating the evaluation, printing its ID.`)
}

func (c *jobEvalCommand) Run(args []string) int {
	fs := c.flags("job eval", false)
	force := fs.Bool("force-reschedule", false, "")
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	var req httpapi.JobEvaluateRequest
	req.EvalOptions.ForceReschedule = *force
	var resp httpapi.JobRegisterResponse
	if _, err := cl.Put(bg, "/v1/job/"+url.PathEscape(job.ID)+"/evaluate", &req, &resp); err != nil {
		return c.errorf("evaluating job %q: %v", job.ID, err)
	}
	return c.follow(cl, resp.EvalID, *detach)
}
