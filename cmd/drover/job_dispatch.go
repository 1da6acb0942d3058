package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
)

type jobDispatchCommand struct{ *meta }

func (c *jobDispatchCommand) Synopsis() string { return "Dispatch an instance of a parameterized job" }

func (c *jobDispatchCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job dispatch [options] <parameterized job> [input]

  Launches a child of a parameterized job (its ID or a unique prefix) and
  monitors the child's evaluation. The input file ("-" reads standard
  input) is the child's payload, at most 16 KiB; the job's parameterized
  block says whether one must, may or must not be given. -meta sets the
  child's metadata over the parent's: every meta_required key must be
  given, and no key outside meta_required and meta_optional.

  Exit codes: 0 when everything was placed, 2 when some allocations could
  not be placed, 1 on error.
` + apiOptions + `

Dispatch options:

  -meta key=value    Metadata of the child; repeat for more keys.
  -idempotency-token=TOKEN
                     While a job dispatched with this token exists, answer
                     it instead of dispatching another (safe retries).
  -id-prefix-template=PREFIX
                     Put PREFIX in the child's ID:
                     <job>/dispatch-PREFIX-<time>-<random>.
  -priority=N        The child's priority (1 to 100) instead of the job's.
  -detach            Return after dispatching, printing the IDs.`)
}

func (c *jobDispatchCommand) Run(args []string) int {
	fs := c.flags("job dispatch", false)
	var metaArgs stringList
	fs.Var(&metaArgs, "meta", "")
	token := fs.String("idempotency-token", "", "")
	prefix := fs.String("id-prefix-template", "", "")
	priority := fs.Int("priority", 0, "")
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 2, "one or two arguments: <parameterized job> [input]") {
		return exitError
	}
	meta := map[string]string{}
	for _, kv := range metaArgs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return c.errorf("-meta %q: want key=value", kv)
		}
		meta[k] = v
	}
	var payload []byte
	if fs.NArg() == 2 {
		var err error
		if payload, err = readPayload(fs.Arg(1)); err != nil {
			return c.errorf("reading the payload: %v", err)
		}
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	var resp httpapi.JobDispatchResponse
	req := &httpapi.JobDispatchRequest{Payload: payload, Meta: meta, IdempotencyToken: *token,
		IdPrefixTemplate: *prefix, Priority: *priority}
	if _, err := cl.Put(bg, "/v1/job/"+url.PathEscape(job.ID)+"/dispatch", req, &resp); err != nil {
		return c.errorf("dispatching job %q: %v", job.ID, err)
	}
	evalID := shortID(resp.EvalID)
	switch {
	case evalID != "":
	case job.IsPeriodic():
		evalID = "none (the dispatched job is periodic: it is launched on its schedule)"
	default:
		evalID = "none (a job dispatched with this idempotency token exists)"
	}
	c.kv("Dispatched Job ID", resp.DispatchedJobID, "Evaluation ID", evalID)
	if resp.EvalID == "" || *detach {
		return exitOK
	}
	c.ui.Output("")
	return newMonitor(c.meta, cl).monitor(resp.EvalID)
}

// readPayload reads a dispatch payload from a file or standard input ("-"),
// refusing more than the server takes before sending it.
func readPayload(path string) ([]byte, error) {
	r := io.Reader(os.Stdin)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, server.DispatchPayloadLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > server.DispatchPayloadLimit {
		return nil, fmt.Errorf("%s is over the payload limit of %d bytes", path, server.DispatchPayloadLimit)
	}
	return b, nil
}

type jobPeriodicForceCommand struct{ *meta }

func (c *jobPeriodicForceCommand) Synopsis() string { return "Launch a periodic job now" }

func (c *jobPeriodicForceCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job periodic force [options] <periodic job>

  Launches a child of a periodic job (its ID or a unique prefix) now,
  whatever its schedule and prohibit_overlap, and monitors the child's
  evaluation.

  Exit codes: 0 when everything was placed, 2 when some allocations could
  not be placed, 1 on error.
` + apiOptions + `

Force options:

  -detach            Return after launching, printing the evaluation ID.`)
}

func (c *jobPeriodicForceCommand) Run(args []string) int {
	fs := c.flags("job periodic force", false)
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <periodic job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	var resp httpapi.PeriodicForceResponse
	if _, err := cl.Put(bg, "/v1/job/"+url.PathEscape(job.ID)+"/periodic/force", nil, &resp); err != nil {
		return c.errorf("launching job %q: %v", job.ID, err)
	}
	return c.follow(cl, resp.EvalID, *detach)
}
