package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
	"github.com/mattn/go-isatty"
)

type jobRestartCommand struct {
	*meta
	cl        *client.Client
	jobID     string
	batchWait time.Duration
	waitAsk   bool
	onError   string
	yes       bool
	verbose   bool
}

func (c *jobRestartCommand) Synopsis() string { return "Restart or reschedule allocations for a job" }

func (c *jobRestartCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job restart -reschedule [options] <job>

  Reschedules the running allocations of a job (its ID or a unique
  prefix), as nomad job restart -reschedule does: batch after batch, each
  allocation is stopped (PUT /v1/allocation/:id/stop) so the scheduler
  places a replacement, which may go to another node, and the command waits
  until every replacement of a batch runs before the next. A replacement
  the scheduler cannot place ends the wait with its placement failures.
  The group is not changed, so no deployment is made and update blocks do
  not apply; a job with an active deployment is not touched.

  Nomad restarts tasks in place without -reschedule, through its clients'
  API, which Drover's nodes do not serve: -reschedule is required.

  With ACLs, the token needs alloc-lifecycle and read-job in the job's
  namespace.
` + apiOptions + `

Restart options:

  -reschedule      Stop the allocations so they are placed again (required).
  -batch-size=N    Allocations per batch, or N% of those to restart,
                   rounded up (default 1).
  -batch-wait=D    Time to wait between batches (default 0), or "ask" to
                   ask before each batch whether to go on (a terminal only,
                   unless -yes), answering y, n or a new wait.
  -group=NAME      Only the allocations of this group; may be repeated.
  -on-error=ask|fail
                   After a batch with errors: ask whether to go on (the
                   default; a terminal only, unless -yes) or stop.
  -yes             Answer yes: go on after errors that may not happen
                   again, and do not ask between batches.
  -verbose         Show full IDs, the allocations skipped and the states
                   of the replacements.`)
}

// batchSizeValue is -batch-size: a number, or a percentage.
var batchSizeValue = regexp.MustCompile(`^(\d+)%?$`)

// errPlacement is a replacement that could not be placed: it will fail
// for the next batch too.
type errPlacement struct{ msg string }

func (e *errPlacement) Error() string { return e.msg }

func (c *jobRestartCommand) Run(args []string) int {
	fs := c.flags("job restart", false)
	reschedule := fs.Bool("reschedule", false, "")
	batchSize := fs.String("batch-size", "1", "")
	batchWait := fs.String("batch-wait", "0s", "")
	var groups, tasks []string
	fs.Func("group", "", func(s string) error { groups = append(groups, s); return nil })
	fs.Func("task", "", func(s string) error { tasks = append(tasks, s); return nil })
	allTasks := fs.Bool("all-tasks", false, "")
	noDelay := fs.Bool("no-shutdown-delay", false, "")
	fs.StringVar(&c.onError, "on-error", "ask", "")
	fs.BoolVar(&c.yes, "yes", false, "")
	fs.BoolVar(&c.verbose, "verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	c.jobID = strings.TrimSpace(fs.Arg(0))
	// What Drover cannot do first: then the options' values.
	switch {
	case *allTasks && len(tasks) > 0:
		c.ui.Error("The -all-tasks option cannot be used with -task")
		return exitError
	case *reschedule && len(tasks) > 0:
		c.ui.Error("The -reschedule option cannot be used with -task")
		return exitError
	case !*reschedule:
		c.ui.Error("Error: Drover cannot restart tasks in place: its nodes serve no client API (/v1/client/allocation/:id/restart). " +
			"Use -reschedule to stop the allocations and have them replaced.")
		return exitError
	case *noDelay:
		c.ui.Error("Error: -no-shutdown-delay is not supported: Drover has no shutdown delays to skip")
		return exitError
	}
	m := batchSizeValue.FindStringSubmatch(*batchSize)
	if m == nil {
		c.ui.Error(fmt.Sprintf("Invalid -batch-size value %q: batch size must be an integer or a percentage", *batchSize))
		return exitError
	}
	size, err := strconv.Atoi(m[1])
	if err != nil || size == 0 {
		c.ui.Error(fmt.Sprintf("Invalid -batch-size value %q: number value must be greater than zero", *batchSize))
		return exitError
	}
	percent := strings.HasSuffix(*batchSize, "%")
	if strings.EqualFold(*batchWait, "ask") {
		if !c.interactive() && !c.yes {
			c.ui.Error(`Invalid -batch-wait value "ask": "ask" cannot be used when terminal is not interactive`)
			return exitError
		}
		c.waitAsk = true
	} else if c.batchWait, err = time.ParseDuration(*batchWait); err != nil {
		c.ui.Error(fmt.Sprintf("Invalid -batch-wait value %q: %v", *batchWait, err))
		return exitError
	}
	switch c.onError {
	case "ask":
		if !c.interactive() && !c.yes {
			c.ui.Error(`Invalid -on-error value "ask": "ask" cannot be used when terminal is not interactive (use -on-error=fail or -yes)`)
			return exitError
		}
	case "fail":
	default:
		c.ui.Error(fmt.Sprintf(`Invalid -on-error value %q: valid options are "ask" and "fail"`, c.onError))
		return exitError
	}

	cl, job, ok := c.clientAndJob(c.jobID)
	if !ok {
		return exitError
	}
	c.cl, c.jobID = cl, job.ID
	cl.Namespace = job.Namespace
	var stubs []*sdk.AllocationListStub
	if _, err := cl.Get(bg, "/v1/job/"+url.PathEscape(c.jobID)+"/allocations", &stubs); err != nil {
		return c.errorf("retrieving allocations for job %q: %v", c.jobID, err)
	}
	allocs := c.filter(stubs, groups)
	if len(allocs) == 0 {
		c.ui.Output("No allocations to restart")
		return exitOK
	}
	if percent {
		size = (len(allocs)*size + 99) / 100
	}
	c.say("Restarting %d %s", len(allocs), plural(len(allocs), "allocation"))

	var all []error
	canceled := false
	for start := 0; start < len(allocs); start += size {
		if err := c.noActiveDeployment(); err != nil {
			all = append(all, err)
			break
		}
		batch := allocs[start:min(start+size, len(allocs))]
		if size > 1 {
			c.say("Restarting %s batch of %d allocations", ordinal(start/size+1), len(batch))
		}
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for i, a := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.reschedule(a); err != nil {
					errs[i] = fmt.Errorf("Error restarting allocation %q: %w", c.id(a.ID), err)
				}
			}()
		}
		wg.Wait()
		batchErr := errors.Join(errs...)
		if batchErr != nil {
			for _, e := range errs {
				if e != nil {
					all = append(all, e)
				}
			}
		}
		if start+size >= len(allocs) {
			break
		}
		if batchErr != nil {
			if c.onError == "fail" {
				c.say("Stopping job restart due to error")
				break
			}
			if c.yes && !recoverable(errs) {
				c.say("Stopping job restart due to unrecoverable error")
				break
			}
		}
		if !c.yes && (c.waitAsk || c.onError == "ask" && batchErr != nil) {
			if batchErr != nil {
				c.ui.Warn(fmt.Sprintf("==> %s: %s", c.now3339(), formatErrors(errs)))
			}
			if !c.proceed(batchErr != nil, recoverable(errs)) {
				c.say("Job restart canceled")
				canceled = true
				break
			}
		}
		if c.batchWait > 0 {
			c.say("Waiting %s before restarting the next batch", c.batchWait)
			time.Sleep(c.batchWait)
		}
	}
	if len(all) > 0 {
		if !canceled {
			c.say("Job restart finished with errors")
		}
		c.ui.Error("\n" + formatErrors(all))
		return exitError
	}
	if !canceled {
		c.say("Job restart finished")
		c.ui.Output("\nJob restarted successfully!")
	}
	return exitOK
}

// interactive reports whether both standard input and output are
// terminals, where a person can answer.
func (c *jobRestartCommand) interactive() bool {
	return c.in == nil && isatty.IsTerminal(os.Stdin.Fd()) && c.outIsTerminal()
}

func (c *jobRestartCommand) now3339() string { return c.clock().Format(time.RFC3339) }

// say prints a step of the restart, as Nomad's "==> time: ..." lines.
func (c *jobRestartCommand) say(format string, a ...any) {
	c.ui.Output(fmt.Sprintf("==> %s: %s", c.now3339(), fmt.Sprintf(format, a...)))
}

// detail prints what happens to one allocation.
func (c *jobRestartCommand) detail(format string, a ...any) {
	c.ui.Output(fmt.Sprintf("    %s: %s", c.now3339(), fmt.Sprintf(format, a...)))
}

func (c *jobRestartCommand) id(id string) string {
	if c.verbose {
		return id
	}
	return shortID(id)
}

// filter keeps the allocations to restart: running or meant to run, of
// the groups asked for (all when none).
func (c *jobRestartCommand) filter(stubs []*sdk.AllocationListStub, groups []string) []*sdk.AllocationListStub {
	var out []*sdk.AllocationListStub
	for _, a := range stubs {
		switch {
		case a.ClientStatus != sdk.AllocClientStatusRunning && a.DesiredStatus != sdk.AllocDesiredStatusRun:
			if c.verbose {
				c.detail("Skipping allocation %q because desired status is %q and client status is %q", c.id(a.ID), a.DesiredStatus, a.ClientStatus)
			}
		case len(groups) > 0 && !contains(groups, a.TaskGroup):
			if c.verbose {
				c.detail("Skipping allocation %q because it doesn't have any of requested groups", c.id(a.ID))
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// noActiveDeployment refuses to go on while the job has a deployment
// running, which the restart would interfere with.
func (c *jobRestartCommand) noActiveDeployment() error {
	var ds []*sdk.Deployment
	if _, err := c.cl.Get(bg, "/v1/job/"+url.PathEscape(c.jobID)+"/deployments?all=true", &ds); err != nil {
		return fmt.Errorf("Error retrieving deployments for job %q: %v", c.jobID, err)
	}
	for _, d := range ds {
		switch d.Status {
		case sdk.DeploymentStatusFailed, sdk.DeploymentStatusSuccessful, sdk.DeploymentStatusCancelled:
		default:
			return fmt.Errorf("Deployment %q is %q", c.id(d.ID), d.Status)
		}
	}
	return nil
}

// reschedule stops an allocation and waits until its replacement runs, or
// until an evaluation after the stop is blocked with placement failures
// for its group.
func (c *jobRestartCommand) reschedule(a *sdk.AllocationListStub) error {
	c.detail("Rescheduling allocation %q for group %q", c.id(a.ID), a.TaskGroup)
	var resp httpapi.AllocStopResponse
	if _, err := c.cl.Put(bg, "/v1/allocation/"+url.PathEscape(a.ID)+"/stop", nil, &resp); err != nil {
		return fmt.Errorf("Failed to stop allocation: %w", err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	done := make(chan error, 2)
	go func() { done <- c.watchPlacementFailures(ctx, a, resp.Index) }()
	go func() { done <- c.watchReplacement(ctx, a) }()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			c.detail("Still waiting for allocation %q to be replaced", c.id(a.ID))
		case err := <-done:
			return err
		}
	}
}

// blockingWait is how long one blocking query of the watches waits.
const blockingWait = "5m"

// watchPlacementFailures returns an error when an evaluation of the job
// made at or after index is blocked with placement failures for a's
// group.
func (c *jobRestartCommand) watchPlacementFailures(ctx context.Context, a *sdk.AllocationListStub, index uint64) error {
	wait := index
	for ctx.Err() == nil {
		var evals []*sdk.Evaluation
		meta, err := c.cl.Get(ctx, fmt.Sprintf("/v1/job/%s/evaluations?index=%d&wait=%s", url.PathEscape(a.JobID), wait, blockingWait), &evals)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("Failed to retrieve evaluations for job %q: %w", a.JobID, err)
		}
		for _, e := range evals {
			if e.CreateIndex < index || e.Status != sdk.EvalStatusBlocked {
				continue
			}
			if f := e.FailedTGAllocs[a.TaskGroup]; f != nil {
				return &errPlacement{fmt.Sprintf("Evaluation %q has placement failures for group %q:\n%s",
					c.id(e.ID), a.TaskGroup, placementFailures(map[string]*sdk.AllocMetric{a.TaskGroup: f}, "    "))}
			}
		}
		wait = max(meta.Index, wait)
	}
	return nil
}

// watchReplacement follows a's replacements (NextAllocation, which may be
// replaced in turn) until one runs.
func (c *jobRestartCommand) watchReplacement(ctx context.Context, a *sdk.AllocationListStub) error {
	cur, wait := a.ID, uint64(0)
	for ctx.Err() == nil {
		var al sdk.Allocation
		meta, err := c.cl.Get(ctx, fmt.Sprintf("/v1/allocation/%s?index=%d&wait=%s", url.PathEscape(cur), wait, blockingWait), &al)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("Failed to retrieve allocation %q: %w", c.id(cur), err)
		}
		if al.NextAllocation != "" {
			c.detail("Allocation %q replaced by %q, waiting for %q to start running", c.id(al.ID), c.id(al.NextAllocation), c.id(al.NextAllocation))
			cur, wait = al.NextAllocation, 0
			continue
		}
		if al.ClientStatus == sdk.AllocClientStatusRunning && al.ID != a.ID {
			c.detail("Allocation %q is %q", c.id(al.ID), al.ClientStatus)
			return nil
		}
		if c.verbose {
			c.detail("Allocation %q is %q", c.id(al.ID), al.ClientStatus)
		}
		wait = meta.Index
	}
	return nil
}

// recoverable reports whether none of errs will happen again for the next
// batch: a placement failure or a refused permission will.
func recoverable(errs []error) bool {
	for _, err := range errs {
		var p *errPlacement
		var api *client.APIError
		if errors.As(err, &p) || errors.As(err, &api) && api.Status == 403 {
			return false
		}
	}
	return true
}

// formatErrors lists errors as Nomad's job restart does.
func formatErrors(errs []error) string {
	var points []string
	for _, e := range errs {
		if e != nil {
			points = append(points, "* "+strings.TrimSpace(e.Error()))
		}
	}
	return fmt.Sprintf("%d %s occurred while restarting job:\n%s", len(points), plural(len(points), "error"), strings.Join(points, "\n"))
}

// proceed asks whether to go on with the next batch; after errors the
// answer defaults to no. With -batch-wait=ask a duration answers yes and
// becomes the wait between the remaining batches.
func (c *jobRestartCommand) proceed(failed, recoverable bool) bool {
	question, options := "Proceed with the next batch?", "Y/n"
	if failed {
		question, options = "Ignore the errors above and proceed with the next batch?", "y/N"
		if !recoverable {
			question = "The errors above are likely to happen again.\nIgnore them anyway and proceed with the next batch?"
		}
	}
	if c.waitAsk {
		options += "/<wait duration>"
	}
	for {
		answer, err := c.ui.Ask(fmt.Sprintf("==> %s: %s [%s]", c.now3339(), question, options))
		if err != nil {
			return false
		}
		switch a := strings.ToLower(strings.TrimSpace(answer)); a {
		case "":
			return !failed
		case "y", "yes":
			return true
		case "n", "no":
			return false
		default:
			if d, err := time.ParseDuration(a); err == nil && c.waitAsk {
				c.waitAsk, c.batchWait = false, d
				c.say("Proceeding restarts with new wait time of %s", d)
				return true
			}
			c.ui.Output(fmt.Sprintf("%sInvalid answer %q", strings.Repeat(" ", 31), answer))
		}
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// ordinal is 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}
