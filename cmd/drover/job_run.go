package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type jobRunCommand struct{ *meta }

func (c *jobRunCommand) Synopsis() string { return "Run a new job or update an existing one" }

func (c *jobRunCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job run [options] <path>

  Submits the jobspec at path ("-" reads standard input) and monitors its
  evaluation until it ends: each status change, the allocations placed, and
  for allocations that could not be placed the reason and the blocked
  evaluation that waits for capacity. When everything was placed and the
  evaluation started a deployment (a service job's update), the deployment
  is followed too: its groups' placed, healthy and unhealthy counts, until
  it succeeds, fails, is paused, or its healthy canaries wait for
  "drover deployment promote".

  The jobspec is parsed and validated first; a problem is printed with its
  file, line and column, and nothing is submitted.

  Exit codes: 0 when everything was placed (and the deployment, if
  followed, did not fail), 2 when some allocations could not be placed (a
  blocked evaluation waits for capacity), 1 on error or a failed
  deployment.
` + apiOptions + `

Run options:

  -detach            Return after submitting, printing the evaluation ID
                     (neither the evaluation nor the deployment is
                     followed).
  -check-index=N     Register only if the job's modify index is still N
                     (0: only if the job is new), as printed by job plan.
  -eval-priority=N   Priority of the registration's evaluation (1 to 100).
  -preserve-counts   Keep the counts of groups the job already runs.
  -preserve-resources
                     Keep the resources of tasks the job already runs.
  -output            Print the job as API JSON instead of submitting it.` + jobFileOptions)
}

func (c *jobRunCommand) Run(args []string) int {
	fs := c.flags("job run", false)
	var jf jobFile
	jf.flags(fs)
	detach := fs.Bool("detach", false, "")
	checkIndex := fs.Int64("check-index", -1, "")
	evalPriority := fs.Int("eval-priority", 0, "")
	preserveCounts := fs.Bool("preserve-counts", false, "")
	preserveResources := fs.Bool("preserve-resources", false, "")
	output := fs.Bool("output", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <path>") {
		return exitError
	}
	p, job, ok := c.load(fs.Arg(0), &jf)
	if !ok {
		return exitError
	}
	if *output {
		return c.printJSON(map[string]any{"Job": p.Job})
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	req := &httpapi.JobRegisterRequest{Job: p.Job, Submission: jf.submission(p), PreserveCounts: *preserveCounts,
		PreserveResources: *preserveResources, EvalPriority: *evalPriority}
	if *checkIndex >= 0 {
		req.EnforceIndex, req.JobModifyIndex = true, uint64(*checkIndex)
	}
	resp, err := register(cl, req)
	if err != nil {
		return c.errorf("submitting job %q: %v", job.ID, err)
	}
	if resp.Warnings != "" {
		c.ui.Warn("Job Warnings:\n" + resp.Warnings + "\n")
	}
	if resp.EvalID == "" {
		kind := "periodic"
		if job.ParameterizedJob != nil {
			kind = "parameterized"
		}
		c.ui.Output(fmt.Sprintf("Job registration successful\nJob %q is %s: it is launched by its %s, not evaluated now.",
			job.ID, kind, map[string]string{"periodic": "schedule", "parameterized": "dispatches"}[kind]))
		if job.IsPeriodic() && !job.Periodic.Enabled {
			c.ui.Output("Its periodic launches are disabled (periodic { enabled = false }).")
		}
		return exitOK
	}
	if *detach {
		c.ui.Output("Job registration successful")
		c.ui.Output("Evaluation ID: " + resp.EvalID)
		return exitOK
	}
	mon := newMonitor(c.meta, cl)
	code := mon.monitor(resp.EvalID)
	switch {
	case mon.deployment == "":
	case code == exitOK:
		return mon.followDeployment(mon.deployment)
	case code == exitPlacement:
		c.ui.Output(fmt.Sprintf("    Deployment %q cannot complete before the remainder is placed: `drover deployment status %s` follows it",
			shortID(mon.deployment), shortID(mon.deployment)))
	}
	return code
}

type jobStopCommand struct{ *meta }

func (c *jobStopCommand) Synopsis() string { return "Stop a running job" }

func (c *jobStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job stop [options] <job>

  Stops a job (its ID or a unique prefix of it) and monitors the evaluation
  that stops its allocations. The job stays in the state, stopped, until it
  is garbage collected; -purge removes it at once.

  Exit codes: 0 on success, 1 on error.
` + apiOptions + `

Stop options:

  -purge             Remove the job from the state.
  -detach            Return after submitting, printing the evaluation ID.
  -eval-priority=N   Priority of the evaluation (1 to 100).
  -yes               Accepted for Nomad's scripts; nothing is asked.`)
}

func (c *jobStopCommand) Run(args []string) int {
	fs := c.flags("job stop", false)
	purge := fs.Bool("purge", false, "")
	detach := fs.Bool("detach", false, "")
	fs.Bool("yes", false, "")
	evalPriority := fs.Int("eval-priority", 0, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	q := url.Values{}
	if *purge {
		q.Set("purge", "true")
	}
	if *evalPriority != 0 {
		q.Set("eval_priority", fmt.Sprint(*evalPriority))
	}
	path := "/v1/job/" + url.PathEscape(job.ID)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var resp httpapi.JobDeregisterResponse
	if _, err := cl.Delete(bg, path, &resp); err != nil {
		return c.errorf("stopping job %q: %v", job.ID, err)
	}
	if resp.EvalID == "" || *detach {
		c.ui.Output("Evaluation ID: " + resp.EvalID)
		return exitOK
	}
	if code := newMonitor(c.meta, cl).monitor(resp.EvalID); code == exitError {
		return exitError
	}
	return exitOK
}
