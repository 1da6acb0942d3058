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

type deploymentListCommand struct{ *meta }

func (c *deploymentListCommand) Synopsis() string { return "List deployments" }

func (c *deploymentListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment list [options]

  Lists deployments, newest first.
` + apiOptions + jsonOption)
}

func (c *deploymentListCommand) Run(args []string) int {
	fs := c.flags("deployment list", true)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var ds []*sdk.Deployment
	if _, err := cl.Get(bg, "/v1/deployments", &ds); err != nil {
		return c.errorf("listing deployments: %v", err)
	}
	if c.json {
		return c.printJSON(ds)
	}
	if len(ds) == 0 {
		c.ui.Output("No deployments found")
		return exitOK
	}
	sort.Slice(ds, func(i, k int) bool { return ds[i].CreateIndex > ds[k].CreateIndex })
	rows := [][]string{{"ID", "Job ID", "Job Version", "Status", "Description"}}
	for _, d := range ds {
		rows = append(rows, []string{shortID(d.ID), d.JobID, fmt.Sprint(d.JobVersion), d.Status, d.StatusDescription})
	}
	c.table(rows)
	return exitOK
}

type deploymentStatusCommand struct{ *meta }

func (c *deploymentStatusCommand) Synopsis() string { return "Display the status of a deployment" }

func (c *deploymentStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment status [options] <deployment-id>

  Shows a deployment (its ID or a unique prefix): status and, per task
  group, canaries, placed, healthy and unhealthy allocations. With
  -monitor it then follows the deployment, as job run does, until it
  succeeds (exit 0), fails (exit 1), is cancelled or paused, or its
  healthy canaries wait for a promotion (exit 0).
` + apiOptions + `

Status options:
` + jsonOption + `
  -monitor         Follow the deployment until it is over.`)
}

func (c *deploymentStatusCommand) Run(args []string) int {
	fs := c.flags("deployment status", true)
	follow := fs.Bool("monitor", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <deployment-id>") {
		return exitError
	}
	if *follow && c.json {
		return c.errorf("-monitor cannot be combined with -json")
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id, err := resolve(cl, "/v1/deployments", fs.Arg(0))
	if err != nil {
		return c.errorf("finding deployment %q: %v", fs.Arg(0), err)
	}
	var d sdk.Deployment
	if _, err := cl.Get(bg, "/v1/deployment/"+url.PathEscape(id), &d); err != nil {
		return c.errorf("reading deployment: %v", err)
	}
	if c.json {
		return c.printJSON(&d)
	}
	c.kv("ID", d.ID, "Job ID", d.JobID, "Job Version", fmt.Sprint(d.JobVersion), "Status", d.Status,
		"Description", d.StatusDescription)
	c.ui.Output("\nDeployed")
	c.table(deployedRows(&d))
	if *follow {
		c.ui.Output("")
		return newMonitor(c.meta, cl).followDeployment(d.ID)
	}
	return exitOK
}

// deployedRows tabulates a deployment's groups: canaries, placed, healthy
// and unhealthy allocations.
func deployedRows(d *sdk.Deployment) [][]string {
	rows := [][]string{{"Task Group", "Promoted", "Desired", "Canaries", "Placed", "Healthy", "Unhealthy"}}
	for _, g := range sortedKeys(d.TaskGroups) {
		st := d.TaskGroups[g]
		rows = append(rows, []string{g, fmt.Sprint(st.Promoted), fmt.Sprint(st.DesiredTotal), fmt.Sprint(st.DesiredCanaries),
			fmt.Sprint(st.PlacedAllocs), fmt.Sprint(st.HealthyAllocs), fmt.Sprint(st.UnhealthyAllocs)})
	}
	return rows
}

// deploymentActionCommand is promote, fail, pause and resume: a write on a
// deployment that may create an evaluation, which it monitors.
type deploymentActionCommand struct {
	*meta
	action string
}

func (c *deploymentActionCommand) Synopsis() string {
	switch c.action {
	case "promote":
		return "Promote a deployment's canaries"
	case "fail":
		return "Fail a deployment (rolling back if its groups auto-revert)"
	case "pause":
		return "Pause a deployment"
	}
	return "Resume a paused deployment"
}

func (c *deploymentActionCommand) Help() string {
	extra := ""
	if c.action == "promote" {
		extra = `

Promote options:

  -group=NAME   Promote only this group (repeatable); default: every group
                with canaries. Every canary of a promoted group must be
                healthy.`
	}
	return strings.TrimSpace(fmt.Sprintf(`
Usage: drover deployment %s [options] <deployment-id>

  %s,
  and monitor the evaluation that follows, if any.
`, c.action, c.Synopsis()) + apiOptions + `
  -detach          Return after submitting, printing the evaluation ID.` + extra)
}

// groupsFlag collects repeated -group flags.
type groupsFlag []string

func (g *groupsFlag) String() string     { return strings.Join(*g, ",") }
func (g *groupsFlag) Set(v string) error { *g = append(*g, v); return nil }

func (c *deploymentActionCommand) Run(args []string) int {
	fs := c.flags("deployment "+c.action, false)
	detach := fs.Bool("detach", false, "")
	var groups groupsFlag
	if c.action == "promote" {
		fs.Var(&groups, "group", "")
	}
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <deployment-id>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id, err := resolve(cl, "/v1/deployments", fs.Arg(0))
	if err != nil {
		return c.errorf("finding deployment %q: %v", fs.Arg(0), err)
	}
	return c.act(cl, id, groups, *detach)
}

// act applies the command's action to deployment id and monitors the
// evaluation it creates, unless detached.
func (c *deploymentActionCommand) act(cl *client.Client, id string, groups []string, detach bool) int {
	var body any
	path := "/v1/deployment/" + c.action + "/" + url.PathEscape(id)
	switch c.action {
	case "promote":
		body = &httpapi.DeploymentPromoteRequest{DeploymentID: id, All: len(groups) == 0, Groups: groups}
	case "fail":
		body = &httpapi.DeploymentFailRequest{DeploymentID: id}
	case "pause", "resume":
		path = "/v1/deployment/pause/" + url.PathEscape(id)
		body = &httpapi.DeploymentPauseRequest{DeploymentID: id, Pause: c.action == "pause"}
	}
	var resp httpapi.DeploymentUpdateResponse
	if _, err := cl.Put(bg, path, body, &resp); err != nil {
		return c.errorf("%s deployment %s: %v", c.action, shortID(id), err)
	}
	c.ui.Output(fmt.Sprintf("Deployment %q %s", shortID(id), map[string]string{"promote": "promoted",
		"fail": "failed", "pause": "paused", "resume": "resumed"}[c.action]))
	if resp.EvalID == "" || detach {
		if resp.EvalID != "" {
			c.ui.Output("Evaluation ID: " + resp.EvalID)
		}
		return exitOK
	}
	return newMonitor(c.meta, cl).monitor(resp.EvalID)
}
