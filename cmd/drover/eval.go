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

  Lists evaluations.

Options:

  -address=ADDR  Agent address.
  -json          Print the API's JSON.
  -job=ID        Only evaluations of this job.
  -status=S      Only evaluations with this status.
`)
}

func (c *evalListCommand) Run(args []string) int {
	fs := c.flags("eval list", true)
	job := fs.String("job", "", "")
	status := fs.String("status", "", "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	q := url.Values{}
	if *job != "" {
		q.Set("job", *job)
	}
	if *status != "" {
		q.Set("status", *status)
	}
	var evals []*sdk.Evaluation
	if _, err := cl.Get(bg, "/v1/evaluations?"+q.Encode(), &evals); err != nil {
		return c.errorf("listing evaluations: %v", err)
	}
	if c.json {
		return c.printJSON(evals)
	}
	if len(evals) == 0 {
		c.ui.Output("No evals found")
		return exitOK
	}
	rows := [][]string{{"ID", "Priority", "Triggered By", "Job ID", "Status", "Placement Failures"}}
	for _, e := range evals {
		rows = append(rows, []string{shortID(e.ID), fmt.Sprint(e.Priority), e.TriggeredBy, e.JobID, e.Status,
			fmt.Sprint(len(e.FailedTGAllocs) > 0)})
	}
	c.table(rows)
	return exitOK
}

type evalStatusCommand struct{ *meta }

func (c *evalStatusCommand) Synopsis() string {
	return "Display evaluation status and placement failures"
}

func (c *evalStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover eval status [options] <eval-id>

  Shows an evaluation: its status, what triggered it, the evaluations it is
  chained to, its phases (queued, scheduling, applying, ...) and placement
  failures.

Options:

  -address=ADDR  Agent address.
  -json          Print the API's JSON.
`)
}

func (c *evalStatusCommand) Run(args []string) int {
	fs := c.flags("eval status", true)
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	if fs.NArg() != 1 {
		c.ui.Error("This command takes one argument: <eval-id>")
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var e httpapi.EvalResponse
	if _, err := cl.Get(bg, "/v1/evaluation/"+url.PathEscape(fs.Arg(0)), &e); err != nil {
		return c.errorf("reading evaluation: %v", err)
	}
	if c.json {
		return c.printJSON(&e)
	}
	c.table([][]string{
		{"ID", "= " + e.ID}, {"Status", "= " + e.Status}, {"Status Description", "= " + e.StatusDescription},
		{"Type", "= " + e.Type}, {"TriggeredBy", "= " + e.TriggeredBy}, {"Job ID", "= " + e.JobID},
		{"Priority", fmt.Sprintf("= %d", e.Priority)}, {"Previous Eval", "= " + e.PreviousEval},
		{"Next Eval", "= " + e.NextEval}, {"Blocked Eval", "= " + e.BlockedEval},
		{"Placement Failures", fmt.Sprintf("= %v", len(e.FailedTGAllocs) > 0)},
	})
	if len(e.History) > 0 {
		var phases []string
		for _, h := range e.History {
			phases = append(phases, h.Phase)
		}
		c.ui.Output("\nPhases = " + strings.Join(phases, " -> "))
	}
	for g, m := range e.FailedTGAllocs {
		c.ui.Output(fmt.Sprintf("\nTask Group %q (failed to place %d allocation(s)):", g, m.CoalescedFailures+1))
		c.ui.Output("  " + strings.Join(explainMetric(m), "\n  "))
	}
	return exitOK
}
