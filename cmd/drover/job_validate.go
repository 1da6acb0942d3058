package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
)

type jobValidateCommand struct{ *meta }

func (c *jobValidateCommand) Synopsis() string { return "Check a jobspec for problems" }

func (c *jobValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job validate [options] <path>

  Parses and validates the jobspec at path ("-" reads standard input) as
  the server would, and prints every problem with its file, line and
  column. When an agent is reachable it also checks that a scheduler plugin
  would run the job; when none is, that check is skipped with a notice.

  Exit codes: 0 when the job is valid, 1 otherwise.
` + apiOptions + jobFileOptions)
}

func (c *jobValidateCommand) Run(args []string) int {
	fs := c.flags("job validate", false)
	var jf jobFile
	jf.flags(fs)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <path>") {
		return exitError
	}
	p, _, ok := c.load(fs.Arg(0), &jf)
	if !ok {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var resp httpapi.JobValidateResponse
	_, err = cl.Put(bg, "/v1/validate/job", &httpapi.JobValidateRequest{Job: p.Job}, &resp)
	var apiErr *client.APIError
	switch {
	case errors.As(err, &apiErr):
		return c.errorf("validating with the agent: %v", err)
	case err != nil:
		fmt.Fprintf(os.Stderr, "Notice: the agent at %s cannot be reached; the scheduler plugin was not checked.\n", cl.Address())
	case len(resp.ValidationErrors) > 0:
		c.ui.Error("Job validation errors:")
		for _, e := range resp.ValidationErrors {
			c.ui.Error("  * " + e)
		}
		return exitError
	}
	if resp.Warnings != "" {
		c.ui.Warn("Job Warnings:\n" + resp.Warnings + "\n")
	}
	c.ui.Output("Job validation successful")
	return exitOK
}
