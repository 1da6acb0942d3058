package main

import (
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/sdk"
)

type jobRunCommand struct{ *meta }

func (c *jobRunCommand) Synopsis() string { return "Run a new job or update an existing one" }

func (c *jobRunCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job run [options] <path>

  Submits the jobspec at path and monitors its evaluation until it ends,
  printing each status change and the allocations placed or queued.

  Exit codes: 0 when everything was placed, 2 when some allocations could
  not be placed (a blocked evaluation waits for capacity), 1 on error.

Options:

  -address=ADDR  Agent address (default $DROVER_ADDR or http://127.0.0.1:4646).
  -detach        Return after submitting, printing the evaluation ID.
`)
}

func (c *jobRunCommand) Run(args []string) int {
	fs := c.flags("job run", false)
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	if fs.NArg() != 1 {
		c.ui.Error("This command takes one argument: <path>")
		return exitError
	}
	path := fs.Arg(0)
	src, err := os.ReadFile(path)
	if err != nil {
		return c.errorf("%v", err)
	}
	job, diags := jobspec.Parse(path, src)
	if diags.HasErrors() {
		c.ui.Error(jobspec.FormatDiagnostics(path, src, diags))
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var resp httpapi.JobRegisterResponse
	if _, err := cl.Put(bg, "/v1/jobs", &httpapi.JobRegisterRequest{Job: job}, &resp); err != nil {
		return c.errorf("submitting job: %v", err)
	}
	if resp.EvalID == "" {
		c.ui.Output(fmt.Sprintf("Job %q registered (periodic or parameterized: no evaluation)", job.ID))
		return exitOK
	}
	if *detach {
		c.ui.Output("Job registration successful")
		c.ui.Output("Evaluation ID: " + resp.EvalID)
		return exitOK
	}
	return newMonitor(c.meta, cl).monitor(resp.EvalID)
}

type jobStatusCommand struct{ *meta }

func (c *jobStatusCommand) Synopsis() string { return "Display status information about a job" }

func (c *jobStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job status [options] [job]

  Without a job, lists all jobs. With one, shows it with its allocations
  and evaluations.

Options:

  -address=ADDR  Agent address.
  -json          Print the API's JSON (the job, its allocations and evaluations).
`)
}

// JobStatus is what job status -json prints for one job.
type JobStatus struct {
	Job         *sdk.Job
	Allocations []*sdk.AllocationListStub
	Evaluations []*sdk.Evaluation
}

func (c *jobStatusCommand) Run(args []string) int {
	fs := c.flags("job status", true)
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	if fs.NArg() == 0 {
		var jobs []*httpapi.JobListStub
		if _, err := cl.Get(bg, "/v1/jobs", &jobs); err != nil {
			return c.errorf("listing jobs: %v", err)
		}
		if c.json {
			return c.printJSON(jobs)
		}
		if len(jobs) == 0 {
			c.ui.Output("No running jobs")
			return exitOK
		}
		rows := [][]string{{"ID", "Type", "Priority", "Status", "Scheduler"}}
		for _, j := range jobs {
			rows = append(rows, []string{j.ID, j.Type, fmt.Sprint(j.Priority), j.Status, j.Scheduler})
		}
		c.table(rows)
		return exitOK
	}
	id := url.PathEscape(fs.Arg(0))
	var st JobStatus
	if _, err := cl.Get(bg, "/v1/job/"+id, &st.Job); err != nil {
		return c.errorf("reading job: %v", err)
	}
	if _, err := cl.Get(bg, "/v1/job/"+id+"/allocations", &st.Allocations); err != nil {
		return c.errorf("reading allocations: %v", err)
	}
	if _, err := cl.Get(bg, "/v1/job/"+id+"/evaluations", &st.Evaluations); err != nil {
		return c.errorf("reading evaluations: %v", err)
	}
	if c.json {
		return c.printJSON(&st)
	}
	j := st.Job
	c.table([][]string{
		{"ID", "= " + j.ID}, {"Name", "= " + j.Name}, {"Type", "= " + j.Type},
		{"Priority", fmt.Sprintf("= %d", j.Priority)}, {"Datacenters", "= " + strings.Join(j.Datacenters, ",")},
		{"Node Pool", "= " + j.NodePool}, {"Scheduler", "= " + j.SchedulerName()}, {"Status", "= " + j.Status},
		{"Version", fmt.Sprintf("= %d", j.Version)},
	})
	c.ui.Output("\nAllocations")
	if len(st.Allocations) == 0 {
		c.ui.Output("No allocations placed")
	} else {
		sort.Slice(st.Allocations, func(i, k int) bool { return st.Allocations[i].Name < st.Allocations[k].Name })
		rows := [][]string{{"ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Name"}}
		for _, a := range st.Allocations {
			rows = append(rows, []string{shortID(a.ID), shortID(a.NodeID), a.TaskGroup, fmt.Sprint(a.JobVersion),
				a.DesiredStatus, a.ClientStatus, a.Name})
		}
		c.table(rows)
	}
	return exitOK
}

type jobStopCommand struct{ *meta }

func (c *jobStopCommand) Synopsis() string { return "Stop a running job" }

func (c *jobStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job stop [options] <job>

  Stops a job and monitors the evaluation that stops its allocations.

Options:

  -address=ADDR  Agent address.
  -purge         Remove the job from the state entirely.
  -detach        Return after submitting, printing the evaluation ID.
`)
}

func (c *jobStopCommand) Run(args []string) int {
	fs := c.flags("job stop", false)
	purge := fs.Bool("purge", false, "")
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	if fs.NArg() != 1 {
		c.ui.Error("This command takes one argument: <job>")
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	path := "/v1/job/" + url.PathEscape(fs.Arg(0))
	if *purge {
		path += "?purge=true"
	}
	var resp httpapi.JobDeregisterResponse
	if _, err := cl.Delete(bg, path, &resp); err != nil {
		return c.errorf("stopping job: %v", err)
	}
	if resp.EvalID == "" || *detach {
		c.ui.Output("Evaluation ID: " + resp.EvalID)
		return exitOK
	}
	return newMonitor(c.meta, cl).monitor(resp.EvalID)
}
