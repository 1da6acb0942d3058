package main

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/drover-sched/drover/sdk"
)

type jobAllocsCommand struct{ *meta }

func (c *jobAllocsCommand) Synopsis() string { return "List a job's allocations" }

func (c *jobAllocsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job allocs [options] <job>

  Lists the allocations of a job (its ID or a unique prefix), stopped ones
  included, as Nomad's does; with -all also those of earlier instances of
  the job (purged and registered again).
` + apiOptions + `

Allocs options:
` + jsonOption + `
  -all             Also list the allocations of earlier instances of the
                   job.`)
}

func (c *jobAllocsCommand) Run(args []string) int {
	fs := c.flags("job allocs", true)
	all := fs.Bool("all", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	var allocs []*sdk.AllocationListStub
	if _, err := cl.Get(bg, "/v1/job/"+url.PathEscape(job.ID)+"/allocations"+allParam(*all), &allocs); err != nil {
		return c.errorf("reading the job's allocations: %v", err)
	}
	if c.json {
		return c.printJSON(allocs)
	}
	if len(allocs) == 0 {
		c.ui.Output("No allocations placed")
		return exitOK
	}
	c.table(allocRows(allocs, shortID))
	return exitOK
}

// allParam is the query that asks for every instance's allocations.
func allParam(all bool) string {
	if all {
		return "?all=true"
	}
	return ""
}

// allocRows tabulates allocations by name, showing IDs with id.
func allocRows(allocs []*sdk.AllocationListStub, id func(string) string) [][]string {
	allocs = append([]*sdk.AllocationListStub(nil), allocs...)
	sort.Slice(allocs, func(a, b int) bool { return allocs[a].Name < allocs[b].Name })
	rows := [][]string{{"ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Name", "Created"}}
	for _, a := range allocs {
		rows = append(rows, []string{id(a.ID), id(a.NodeID), a.TaskGroup, fmt.Sprint(a.JobVersion),
			a.DesiredStatus, a.ClientStatus, a.Name, formatTime(a.CreateTime)})
	}
	return rows
}

type jobDeploymentsCommand struct{ *meta }

func (c *jobDeploymentsCommand) Synopsis() string { return "List a job's deployments" }

func (c *jobDeploymentsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job deployments [options] <job>

  Lists the deployments of a job (its ID or a unique prefix), newest first.
` + apiOptions + `

Deployments options:
` + jsonOption + `
  -latest          Only the latest deployment.`)
}

func (c *jobDeploymentsCommand) Run(args []string) int {
	fs := c.flags("job deployments", true)
	latest := fs.Bool("latest", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	var ds []*sdk.Deployment
	if _, err := cl.Get(bg, "/v1/job/"+url.PathEscape(job.ID)+"/deployments", &ds); err != nil {
		return c.errorf("reading the job's deployments: %v", err)
	}
	sort.Slice(ds, func(i, k int) bool { return ds[i].CreateIndex > ds[k].CreateIndex })
	if *latest && len(ds) > 1 {
		ds = ds[:1]
	}
	if c.json {
		return c.printJSON(ds)
	}
	if len(ds) == 0 {
		c.ui.Output(fmt.Sprintf("No deployments found for job %q", job.ID))
		return exitOK
	}
	rows := [][]string{{"ID", "Job Version", "Status", "Description"}}
	for _, d := range ds {
		rows = append(rows, []string{shortID(d.ID), fmt.Sprint(d.JobVersion), d.Status, d.StatusDescription})
	}
	c.table(rows)
	return exitOK
}

// jobPromoteCommand promotes the canaries of a job's latest deployment.
type jobPromoteCommand struct{ *meta }

func (c *jobPromoteCommand) Synopsis() string {
	return "Promote the canaries of a job's latest deployment"
}

func (c *jobPromoteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job promote [options] <job>

  Promotes the canaries of the latest deployment of a job (its ID or a
  unique prefix), as drover deployment promote does with the deployment's
  ID, and monitors the evaluation that rolls out the rest.
` + apiOptions + `

Promote options:

  -group=NAME        Promote only this group's canaries; repeat for more.
  -detach            Return after promoting, printing the evaluation ID.`)
}

func (c *jobPromoteCommand) Run(args []string) int {
	fs := c.flags("job promote", false)
	detach := fs.Bool("detach", false, "")
	var groups groupsFlag
	fs.Var(&groups, "group", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	var d *sdk.Deployment
	if _, err := cl.Get(bg, "/v1/job/"+url.PathEscape(job.ID)+"/deployment", &d); err != nil {
		return c.errorf("reading the job's latest deployment: %v", err)
	}
	if d == nil {
		return c.errorf("job %q has no deployment to promote", job.ID)
	}
	return (&deploymentActionCommand{meta: c.meta, action: "promote"}).act(cl, d.ID, groups, *detach)
}

type systemGCCommand struct{ *meta }

func (c *systemGCCommand) Synopsis() string { return "Run the garbage collector now" }

func (c *systemGCCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover system gc [options]

  Has the core scheduler collect, now and whatever their age, the
  terminal evaluations, allocations, jobs and deployments and the down
  nodes that nothing refers to any more (Nomad's forced garbage
  collection). It prints nothing on success, as nomad system gc.
` + apiOptions)
}

func (c *systemGCCommand) Run(args []string) int {
	fs := c.flags("system gc", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	if _, err := cl.Put(bg, "/v1/system/gc", nil, nil); err != nil {
		return c.errorf("starting garbage collection: %v", err)
	}
	return exitOK
}

type systemReconcileSummariesCommand struct{ *meta }

func (c *systemReconcileSummariesCommand) Synopsis() string {
	return "Reconciles the summaries of all registered jobs"
}

func (c *systemReconcileSummariesCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover system reconcile summaries [options]

  Has the servers recount the summaries of every registered job (PUT
  /v1/system/reconcile/summaries). Drover counts a job's summary when it
  is read, so there is never anything to recount: the request succeeds at
  once. It prints nothing on success, as nomad system reconcile summaries.
  With ACLs, it needs a management token.
` + noNamespaceOptions)
}

func (c *systemReconcileSummariesCommand) Run(args []string) int {
	fs := c.flags("system reconcile summaries", false)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	if _, err := cl.Put(bg, "/v1/system/reconcile/summaries", nil, nil); err != nil {
		return c.errorf("running system summary reconciliation: %v", err)
	}
	return exitOK
}
