package main

import (
	"fmt"
	"net/http"
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
	id := idFormat(*verbose)
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
	short := idFormat(*verbose)
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

type evalDeleteCommand struct{ *meta }

func (c *evalDeleteCommand) Synopsis() string { return "Delete evaluations by ID or using a filter" }

func (c *evalDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover eval delete [options] [<eval-id>]

  Deletes an evaluation (its ID or a unique prefix), or, without one, the
  evaluations of every namespace that -filter matches (DELETE
  /v1/evaluations), as nomad eval delete. It deletes the evaluations only,
  not their allocations. With ACLs, it needs a management token.

  Use it only in an outage, to clear a backlog of evaluations the
  schedulers cannot work through. The eval broker must be paused first,
  and resumed after:

    drover operator scheduler set-config -pause-eval-broker=true
    drover operator scheduler set-config -pause-eval-broker=false
` + noNamespaceOptions + `

Eval delete options:

  -filter=EXPR     Delete the evaluations this filter expression matches,
                   such as 'Status == "pending"' (check it with eval list
                   -filter first).
  -yes             Do not ask for confirmation before deleting by filter
                   (deleting one evaluation by its ID never asks).`)
}

func (c *evalDeleteCommand) Run(args []string) int {
	fs := c.flags("eval delete", false)
	filter := fs.String("filter", "", "")
	yes := fs.Bool("yes", false, "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	switch n := fs.NArg(); {
	case (*filter == "") == (n == 0):
		c.ui.Error("Error validating command args and flags: evaluation ID or filter flag required")
		return exitError
	case n > 1:
		c.ui.Error(fmt.Sprintf("Error validating command args and flags: expected 1 argument, got %d", n))
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	// The server refuses too while the broker runs; asking first gives the
	// commands to run before anything is counted or asked.
	var conf httpapi.SchedulerConfigurationResponse
	if _, err := cl.Get(bg, "/v1/operator/scheduler/configuration", &conf); err != nil {
		return c.errorf("querying scheduler configuration: %v", err)
	}
	if !conf.SchedulerConfig.PauseEvalBroker {
		c.ui.Error("Eval broker is not paused")
		c.ui.Output(`To delete evaluations you must first pause the eval broker by running "drover operator scheduler set-config -pause-eval-broker=true"`)
		c.ui.Output(`After the deletion is complete, unpause the eval broker by running "drover operator scheduler set-config -pause-eval-broker=false"`)
		return exitError
	}
	req := map[string]any{"Filter": *filter}
	if fs.NArg() == 1 {
		// An evaluation's ID prefix is resolved in every namespace, as
		// the deletion takes none.
		cl.Namespace = "*"
		id, err := resolve(cl, "/v1/evaluations", fs.Arg(0))
		cl.Namespace = ""
		if err != nil {
			return c.deleteDone(0, fmt.Errorf("finding evaluation %q: %w", fs.Arg(0), err))
		}
		req = map[string]any{"EvalIDs": []string{id}}
	} else if !*yes {
		var count httpapi.EvalCountResponse
		if _, err := cl.Get(bg, "/v1/evaluations/count?namespace=*&filter="+url.QueryEscape(*filter), &count); err != nil {
			return c.deleteDone(0, err)
		}
		if code, ok := c.confirm(fmt.Sprintf("Are you sure you want to delete %d evals? [y/N]", count.Count), "Cancelling eval deletion"); !ok {
			c.ui.Output("No evaluations were deleted")
			return code
		}
	}
	var resp httpapi.EvalDeleteResponse
	if _, err := cl.Do(bg, http.MethodDelete, "/v1/evaluations", req, &resp); err != nil {
		return c.deleteDone(0, err)
	}
	return c.deleteDone(resp.Count, nil)
}

// deleteDone prints what eval delete did, as Nomad's: the error if any,
// then how many evaluations were deleted.
func (c *evalDeleteCommand) deleteDone(n int, err error) int {
	if err != nil {
		c.ui.Error(fmt.Sprintf("Error deleting evaluations: %v", err))
	}
	switch {
	case n == 1:
		c.ui.Output("Successfully deleted 1 evaluation")
	case n > 1:
		c.ui.Output(fmt.Sprintf("Successfully deleted %d evaluations", n))
	case err == nil:
		c.ui.Output("No evaluations were deleted")
	}
	if err != nil {
		return exitError
	}
	return exitOK
}

// confirm asks question and reads the answer as Nomad's eval delete does:
// only an exact "y" goes on; an empty answer or one starting with n
// cancels (printing cancelled, exit 0), any other answer cancels with
// exit 1.
func (m *meta) confirm(question, cancelled string) (code int, ok bool) {
	answer, err := m.ui.Ask(question)
	if err != nil {
		m.ui.Error(fmt.Sprintf("Failed to parse answer: %v", err))
		return exitError, false
	}
	lower := strings.ToLower(answer)
	switch {
	case answer == "y":
		m.ui.Output("")
		return exitOK, true
	case answer == "" || lower[0] == 'n':
		m.ui.Output(cancelled)
		m.ui.Output("")
		return exitOK, false
	case lower[0] == 'y':
		m.ui.Output("For confirmation, an exact 'y' is required.")
		m.ui.Output("")
		return exitOK, false
	}
	m.ui.Output("No confirmation detected. For confirmation, an exact 'y' is required.")
	m.ui.Output("")
	return exitError, false
}
