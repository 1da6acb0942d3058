package main

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/sdk"
)

type jobStatusCommand struct {
	*meta
	// id shows an ID: shortened, or whole with -verbose.
	id func(string) string
}

func (c *jobStatusCommand) Synopsis() string { return "Display status information about a job" }

func (c *jobStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job status [options] [job]

  Without a job, lists the jobs. With one (its ID or a unique prefix), shows
  it: its summary per group, placement failures of its latest evaluation,
  and its allocations. A periodic or parameterized job shows instead its
  next launch (periodic) and the jobs it launched, with their statuses.
` + apiOptions + `

Status options:
` + jsonOption + `
  -evals           Also list the job's evaluations.
  -all-allocs      Also list the allocations of earlier instances of the
                   job (purged and registered again), as Nomad's does.
  -short           Show the job's details alone.
  -verbose         Show full IDs.`)
}

// JobStatus is what job status -json prints for one job.
type JobStatus struct {
	Job         *sdk.Job
	Summary     *server.Summary
	Allocations []*sdk.AllocationListStub
	Evaluations []*sdk.Evaluation
	// LatestDeployment is the job's newest deployment, if it has one.
	LatestDeployment *sdk.Deployment `json:",omitempty"`
	// Children are the jobs a periodic or parameterized job launched.
	Children []*httpapi.JobListStub `json:",omitempty"`
}

func (c *jobStatusCommand) Run(args []string) int {
	fs := c.flags("job status", true)
	evals := fs.Bool("evals", false, "")
	allAllocs := fs.Bool("all-allocs", false, "")
	short := fs.Bool("short", false, "")
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 1, "at most one argument: [job]") {
		return exitError
	}
	c.id = shortID
	if *verbose {
		c.id = func(id string) string { return id }
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
		rows := [][]string{{"ID", "Type", "Priority", "Status", "Scheduler", "Submit Date"}}
		for _, j := range jobs {
			rows = append(rows, []string{j.ID, j.Type, fmt.Sprint(j.Priority), statusString(j.Status, j.Stop), j.Scheduler, formatTime(j.SubmitTime)})
		}
		c.table(rows)
		return exitOK
	}
	job, err := readJob(cl, fs.Arg(0))
	if err != nil {
		return c.errorf("reading job %q: %v", fs.Arg(0), err)
	}
	st := JobStatus{Job: job}
	id := url.PathEscape(job.ID)
	if _, err := cl.Get(bg, "/v1/job/"+id+"/summary", &st.Summary); err != nil {
		return c.errorf("reading the job's summary: %v", err)
	}
	if _, err := cl.Get(bg, "/v1/job/"+id+"/allocations"+allParam(*allAllocs), &st.Allocations); err != nil {
		return c.errorf("reading the job's allocations: %v", err)
	}
	if _, err := cl.Get(bg, "/v1/job/"+id+"/evaluations", &st.Evaluations); err != nil {
		return c.errorf("reading the job's evaluations: %v", err)
	}
	if _, err := cl.Get(bg, "/v1/job/"+id+"/deployment", &st.LatestDeployment); err != nil {
		return c.errorf("reading the job's latest deployment: %v", err)
	}
	if launcher(job) {
		var jobs []*httpapi.JobListStub
		if _, err := cl.Get(bg, "/v1/jobs?prefix="+url.QueryEscape(job.ID+"/"), &jobs); err != nil {
			return c.errorf("listing the job's children: %v", err)
		}
		for _, child := range jobs {
			if child.ParentID == job.ID && child.Namespace == job.Namespace {
				st.Children = append(st.Children, child)
			}
		}
	}
	if c.json {
		return c.printJSON(&st)
	}
	c.printStatus(&st, *evals, *short)
	return exitOK
}

// statusString is a job's status as Nomad's CLI shows it: a job stopped
// by the user says so ("dead (stopped)"), unlike one that finished.
func statusString(status string, stop bool) string {
	if stop {
		return status + " (stopped)"
	}
	return status
}

func (c *jobStatusCommand) printStatus(st *JobStatus, evals, short bool) {
	j := st.Job
	info := []string{"ID", j.ID, "Name", j.Name, "Submit Date", formatTime(j.SubmitTime), "Type", j.Type,
		"Priority", fmt.Sprint(j.Priority), "Datacenters", strings.Join(j.Datacenters, ","),
		"Namespace", j.Namespace, "Node Pool", j.NodePool, "Scheduler", j.SchedulerName(),
		"Status", statusString(j.Status, j.Stop), "Version", fmt.Sprint(j.Version), "Periodic", fmt.Sprint(j.IsPeriodic()),
		"Parameterized", fmt.Sprint(j.IsParameterized())}
	if j.IsPeriodic() && !j.IsParameterized() {
		// A periodic parameterized job launches nothing: its dispatched
		// jobs do, each on the schedule (Nomad's job status shows none).
		info = append(info, "Next Periodic Launch", nextPeriodicLaunch(j, c.clock()))
	}
	c.kv(info...)
	if short {
		return
	}
	if launcher(j) {
		c.printChildren(st)
		return
	}

	c.ui.Output("\nSummary")
	rows := [][]string{{"Task Group", "Queued", "Starting", "Running", "Failed", "Complete", "Lost", "Unknown"}}
	for _, tg := range j.TaskGroups {
		s := st.Summary.Summary[tg.Name]
		if s == nil {
			s = &server.TaskGroupSummary{}
		}
		rows = append(rows, []string{tg.Name, fmt.Sprint(s.Queued), fmt.Sprint(s.Starting), fmt.Sprint(s.Running),
			fmt.Sprint(s.Failed), fmt.Sprint(s.Complete), fmt.Sprint(s.Lost), fmt.Sprint(s.Unknown)})
	}
	c.table(rows)

	// Placement failures of the latest evaluation that had any, and the
	// blocked evaluation that waits for capacity.
	sort.Slice(st.Evaluations, func(a, b int) bool { return st.Evaluations[a].CreateIndex > st.Evaluations[b].CreateIndex })
	for _, e := range st.Evaluations {
		if e.Status == sdk.EvalStatusBlocked {
			c.ui.Output(fmt.Sprintf("\nPlacement Failure (evaluation %q waits for capacity)", c.id(e.ID)))
			c.ui.Output(placementFailures(e.FailedTGAllocs, ""))
			break
		}
		if e.TerminalStatus() && len(e.FailedTGAllocs) == 0 {
			break
		}
	}

	if d := st.LatestDeployment; d != nil {
		c.ui.Output("\nLatest Deployment")
		c.kv("ID", c.id(d.ID), "Status", d.Status, "Description", d.StatusDescription)
		c.ui.Output("\nDeployed")
		c.table(deployedRows(d))
	}

	if evals {
		c.ui.Output("\nEvaluations")
		rows := [][]string{{"ID", "Priority", "Triggered By", "Status", "Placement Failures"}}
		for _, e := range st.Evaluations {
			rows = append(rows, []string{c.id(e.ID), fmt.Sprint(e.Priority), e.TriggeredBy, e.Status,
				fmt.Sprint(len(e.FailedTGAllocs) > 0)})
		}
		c.table(rows)
	}

	c.ui.Output("\nAllocations")
	if len(st.Allocations) == 0 {
		c.ui.Output("No allocations placed")
		return
	}
	c.table(allocRows(st.Allocations, c.id))
}

// launcher reports whether a job runs only through the jobs it launches:
// a periodic job (enabled or not, and a job dispatched from a periodic
// parameterized job) or a parameterized one, not a launched child.
func launcher(j *sdk.Job) bool { return j.IsPeriodic() || j.IsParameterized() }

// nextPeriodicLaunch describes when a periodic job launches next.
func nextPeriodicLaunch(j *sdk.Job, now time.Time) string {
	switch {
	case j.Stop:
		return "none (job stopped)"
	case !j.Periodic.Enabled:
		// Nomad's CLI shows the schedule's next time, which never comes.
		return "none (launches disabled)"
	}
	at, err := server.NextLaunch(j.Periodic, now)
	switch {
	case err != nil:
		return "unknown: " + err.Error()
	case at.IsZero():
		return "none (no further launch)"
	}
	return fmt.Sprintf("%s (in %s)", at.Local().Format(time.RFC3339), at.Sub(now).Round(time.Second))
}

// printChildren shows, for a periodic or parameterized job, how many of
// the jobs it launched are pending, running and dead, and lists them,
// newest first, as Nomad's job status does.
func (c *jobStatusCommand) printChildren(st *JobStatus) {
	j := st.Job
	title, list := "Children Job Summary", "Previous Launched Jobs"
	if j.IsParameterized() {
		title, list = "Parameterized Job Summary", "Dispatched Jobs"
	}
	c.ui.Output("\n" + title)
	var ch server.ChildrenSummary
	if st.Summary != nil && st.Summary.Children != nil {
		ch = *st.Summary.Children
	}
	c.table([][]string{{"Pending", "Running", "Dead"}, {fmt.Sprint(ch.Pending), fmt.Sprint(ch.Running), fmt.Sprint(ch.Dead)}})

	c.ui.Output("\n" + list)
	if len(st.Children) == 0 {
		c.ui.Output("No jobs launched yet")
		return
	}
	children := slices.Clone(st.Children)
	sort.Slice(children, func(a, b int) bool { return children[a].SubmitTime > children[b].SubmitTime })
	rows := [][]string{{"ID", "Status", "Submit Date"}}
	for _, child := range children {
		rows = append(rows, []string{child.ID, child.Status, formatTime(child.SubmitTime)})
	}
	c.table(rows)
}
