package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

type evalListCommand struct{ *meta }

func (c *evalListCommand) Synopsis() string { return "List evaluations" }

func (c *evalListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover eval list [options]

  Lists evaluations, oldest first.
` + apiOptions + `

List options:
` + jsonOption + `
  -job=ID          Only evaluations of this job.
  -status=S        Only evaluations with this status (pending, blocked,
                   complete, failed, canceled).
  -filter=EXPR     Only evaluations matching a filter expression, such as
                   'TriggeredBy == "node-update"'.
  -per-page=N      At most N evaluations; prints the next page's token.
  -page-token=T    Start at the page with this token.
  -verbose         Show full IDs.`)
}

func (c *evalListCommand) Run(args []string) int {
	fs := c.flags("eval list", true)
	job := fs.String("job", "", "")
	status := fs.String("status", "", "")
	filter := fs.String("filter", "", "")
	perPage := fs.Int("per-page", 0, "")
	token := fs.String("page-token", "", "")
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	q := url.Values{}
	for k, v := range map[string]string{"job": *job, "status": *status, "filter": *filter, "next_token": *token} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *perPage > 0 {
		q.Set("per_page", fmt.Sprint(*perPage))
	}
	var evals []*sdk.Evaluation
	meta, err := cl.Get(bg, "/v1/evaluations?"+q.Encode(), &evals)
	if err != nil {
		return c.errorf("listing evaluations: %v", err)
	}
	if c.json {
		return c.printJSON(evals)
	}
	if len(evals) == 0 {
		c.ui.Output("No evals found")
		return exitOK
	}
	id := shortID
	if *verbose {
		id = func(s string) string { return s }
	}
	rows := [][]string{{"ID", "Priority", "Triggered By", "Job ID", "Namespace", "Node ID", "Status", "Placement Failures"}}
	for _, e := range evals {
		rows = append(rows, []string{id(e.ID), fmt.Sprint(e.Priority), e.TriggeredBy, e.JobID, e.Namespace,
			id(e.NodeID), e.Status, fmt.Sprint(len(e.FailedTGAllocs) > 0)})
	}
	c.table(rows)
	if meta.NextToken != "" {
		c.ui.Output(fmt.Sprintf("\nResults have been paginated. To get the next page run:\n\ndrover eval list -page-token %s", meta.NextToken))
	}
	return exitOK
}

type evalStatusCommand struct{ *meta }

func (c *evalStatusCommand) Synopsis() string {
	return "Display evaluation status and placement failures"
}

func (c *evalStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover eval status [options] <eval-id>

  Shows an evaluation (its ID or a unique prefix): its status, what
  triggered it, the evaluations it is chained to (previous, next, blocked),
  the phases it went through (queued, scheduling, applying, ...) and its
  placement failures.
` + apiOptions + `

Status options:
` + jsonOption + `
  -monitor         Follow the evaluation until it ends, as job run does.
  -verbose         Show full IDs and the related evaluations.`)
}

func (c *evalStatusCommand) Run(args []string) int {
	fs := c.flags("eval status", true)
	mon := fs.Bool("monitor", false, "")
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <eval-id>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id, err := resolve(cl, "/v1/evaluations", fs.Arg(0))
	if err != nil {
		return c.errorf("finding evaluation %q: %v", fs.Arg(0), err)
	}
	if *mon {
		return newMonitor(c.meta, cl).monitor(id)
	}
	var e httpapi.EvalResponse
	if _, err := cl.Get(bg, "/v1/evaluation/"+url.PathEscape(id)+"?related=true", &e); err != nil {
		return c.errorf("reading evaluation: %v", err)
	}
	if c.json {
		return c.printJSON(&e)
	}
	short := shortID
	if *verbose {
		short = func(s string) string { return s }
	}
	c.kv("ID", short(e.ID), "Create Time", formatTime(e.CreateTime), "Modify Time", formatTime(e.ModifyTime),
		"Status", e.Status, "Status Description", e.StatusDescription, "Type", e.Type, "TriggeredBy", e.TriggeredBy,
		"Job ID", e.JobID, "Namespace", e.Namespace, "Node ID", short(e.NodeID), "Priority", fmt.Sprint(e.Priority),
		"Previous Eval", short(e.PreviousEval), "Next Eval", short(e.NextEval), "Blocked Eval", short(e.BlockedEval),
		"Placement Failures", fmt.Sprint(len(e.FailedTGAllocs) > 0))
	if len(e.History) > 0 {
		phases := make([]string, len(e.History))
		for i, h := range e.History {
			phases[i] = h.Phase
		}
		c.ui.Output("\nPhases = " + strings.Join(phases, " -> "))
	}
	if len(e.QueuedAllocations) > 0 {
		var parts []string
		for _, g := range sortedKeys(e.QueuedAllocations) {
			parts = append(parts, fmt.Sprintf("%s=%d", g, e.QueuedAllocations[g]))
		}
		c.ui.Output("Queued = " + strings.Join(parts, ", "))
	}
	if *verbose && len(e.RelatedEvals) > 0 {
		c.ui.Output("\nRelated Evaluations")
		rows := [][]string{{"ID", "Priority", "Triggered By", "Node ID", "Status", "Description"}}
		for _, r := range e.RelatedEvals {
			rows = append(rows, []string{r.ID, fmt.Sprint(r.Priority), r.TriggeredBy, r.NodeID, r.Status, r.StatusDescription})
		}
		c.table(rows)
	}
	if len(e.FailedTGAllocs) > 0 {
		c.ui.Output("\nFailed Placements")
		c.ui.Output(placementFailures(e.FailedTGAllocs, ""))
		if e.BlockedEval != "" {
			c.ui.Output(fmt.Sprintf("\nEvaluation %q waiting for additional capacity to place remainder", short(e.BlockedEval)))
		}
	}
	return exitOK
}
