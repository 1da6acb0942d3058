package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/jobdiff"
	"github.com/drover-sched/drover/sdk"
)

type jobPlanCommand struct{ *meta }

func (c *jobPlanCommand) Synopsis() string { return "Dry-run a job update to see what it would do" }

func (c *jobPlanCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job plan [options] <path>

  Runs the job's real scheduler plugin on the cluster's current state,
  without committing anything, and shows what registering the jobspec at
  path would do: the difference from the running version, what each group
  would place, update, stop or ignore, which allocations of lower-priority
  jobs it would preempt, and what could not be placed and why. It prints
  the job modify index to pass to job run -check-index, so the run
  happens only if nobody changed the job since.

  Exit codes, as Nomad's job plan: 0 when no allocations would be created
  or destroyed, 1 when some would, 255 on error.
` + apiOptions + `

Plan options:

  -diff=false        Do not show the job difference.
  -verbose           Show unchanged fields around the changes too.` + jobFileOptions)
}

func (c *jobPlanCommand) Run(args []string) int {
	fs := c.flags("job plan", false)
	var jf jobFile
	jf.flags(fs)
	diff := fs.Bool("diff", true, "")
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <path>") {
		return exitPlanError
	}
	p, job, ok := c.load(fs.Arg(0), &jf)
	if !ok {
		return exitPlanError
	}
	cl, err := c.client()
	if err != nil {
		c.errorf("%v", err)
		return exitPlanError
	}
	var resp httpapi.JobPlanResponse
	req := &httpapi.JobPlanRequest{Job: p.Job, Diff: true}
	if _, err := cl.Put(bg, "/v1/job/"+url.PathEscape(job.ID)+"/plan", req, &resp); err != nil {
		c.errorf("planning job %q: %v", job.ID, err)
		return exitPlanError
	}
	if *diff && resp.Diff != nil {
		c.ui.Output(renderJobDiff(resp.Diff, *verbose))
		c.ui.Output("")
	}
	c.ui.Output("Scheduler dry-run:")
	changes := planChanges(resp.Annotations)
	switch {
	case len(resp.FailedTGAllocs) > 0:
		c.ui.Output("- WARNING: Failed to place all allocations.")
		c.ui.Output(placementFailures(resp.FailedTGAllocs, "  "))
		for _, e := range resp.CreatedEvals {
			if e.Status == sdk.EvalStatusBlocked {
				c.ui.Output(fmt.Sprintf("\n  A blocked evaluation would wait for capacity to place the remainder (%s).", e.TriggeredBy))
				break
			}
		}
	case job.IsPeriodic() || job.IsParameterized():
		c.ui.Output("- The job is a template: it is not placed until it is launched.")
	default:
		c.ui.Output("- All tasks successfully allocated.")
	}
	if resp.Warnings != "" {
		c.ui.Warn("\nJob Warnings:\n" + resp.Warnings + "\n")
	}
	if resp.Annotations != nil && len(resp.Annotations.PreemptedAllocs) > 0 {
		c.ui.Output("\nPreemptions:\n")
		c.table(preemptionRows(resp.Annotations.PreemptedAllocs, *verbose))
	}
	if !resp.NextPeriodicLaunch.IsZero() {
		c.ui.Output(fmt.Sprintf("- If submitted now, the next periodic launch would be at %s.", resp.NextPeriodicLaunch.Format("2006-01-02T15:04:05Z07:00")))
	}
	c.ui.Output(fmt.Sprintf(`
Job Modify Index: %d
To submit the job with version verification run:

drover job run -check-index %d %s

When running the job with the check-index flag, the job will only be run if
the job modify index given matches the server-side version. If the index has
changed, another user has modified the job and the plan's results are
potentially invalid.`, resp.JobModifyIndex, resp.JobModifyIndex, fs.Arg(0)))
	if changes {
		return exitPlanChanges
	}
	return exitOK
}

// preemptionRows lists the allocations a plan would preempt, as Nomad's
// plan does: one row each when there are at most ten (or with -verbose),
// otherwise a count per job.
func preemptionRows(allocs []*sdk.AllocationListStub, verbose bool) [][]string {
	if len(allocs) <= 10 || verbose {
		rows := [][]string{{"Alloc ID", "Job ID", "Task Group", "Node ID"}}
		for _, a := range allocs {
			rows = append(rows, []string{a.ID, a.JobID, a.TaskGroup, shortID(a.NodeID)})
		}
		return rows
	}
	type key struct{ ns, job string }
	counts := map[key]int{}
	var order []key
	for _, a := range allocs {
		k := key{a.Namespace, a.JobID}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	rows := [][]string{{"Job ID", "Namespace", "Preemptions"}}
	for _, k := range order {
		rows = append(rows, []string{k.job, k.ns, fmt.Sprint(counts[k])})
	}
	return rows
}

// planChanges reports whether a plan creates or destroys allocations.
func planChanges(a *sdk.PlanAnnotations) bool {
	if a == nil {
		return false
	}
	for _, u := range a.DesiredTGUpdates {
		if u.Place+u.Stop+u.DestructiveUpdate+u.Migrate+u.Canary+u.Preemptions > 0 {
			return true
		}
	}
	return false
}

// diffMark is how a line of a diff starts.
func diffMark(typ string) string {
	switch typ {
	case jobdiff.TypeAdded:
		return "+"
	case jobdiff.TypeDeleted:
		return "-"
	case jobdiff.TypeEdited:
		return "+/-"
	}
	return ""
}

// renderJobDiff renders a job diff as Nomad's plan does. As there, the
// fields and blocks of a job, group or task are shown when it is edited:
// one added or deleted whole is a line of its own unless verbose.
func renderJobDiff(d *jobdiff.JobDiff, verbose bool) string {
	var b strings.Builder
	expand := func(typ string) bool { return verbose || typ == jobdiff.TypeEdited }
	fmt.Fprintf(&b, "%s Job: %q", diffMark(d.Type), d.ID)
	if expand(d.Type) {
		renderFields(&b, d.Fields, "", verbose)
		renderObjects(&b, d.Objects, "", verbose)
	}
	for _, tg := range d.TaskGroups {
		fmt.Fprintf(&b, "\n%s Task Group: %q", diffMark(tg.Type), tg.Name)
		if len(tg.Updates) > 0 {
			keys := sortedKeys(tg.Updates)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = fmt.Sprintf("%d %s", tg.Updates[k], k)
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
		}
		if expand(tg.Type) {
			renderFields(&b, tg.Fields, "  ", verbose)
			renderObjects(&b, tg.Objects, "  ", verbose)
		}
		for _, t := range tg.Tasks {
			fmt.Fprintf(&b, "\n  %s Task: %q", diffMark(t.Type), t.Name)
			if len(t.Annotations) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(t.Annotations, ", "))
			}
			if expand(t.Type) {
				renderFields(&b, t.Fields, "    ", verbose)
				renderObjects(&b, t.Objects, "    ", verbose)
			}
		}
	}
	return strings.TrimLeft(b.String(), " ")
}

func renderFields(b *strings.Builder, fields []*jobdiff.FieldDiff, indent string, verbose bool) {
	for _, f := range fields {
		switch f.Type {
		case jobdiff.TypeAdded:
			fmt.Fprintf(b, "\n%s  + %s: %q", indent, f.Name, f.New)
		case jobdiff.TypeDeleted:
			fmt.Fprintf(b, "\n%s  - %s: %q", indent, f.Name, f.Old)
		case jobdiff.TypeEdited:
			fmt.Fprintf(b, "\n%s  +/- %s: %q => %q", indent, f.Name, f.Old, f.New)
		default:
			if verbose {
				fmt.Fprintf(b, "\n%s      %s: %q", indent, f.Name, f.New)
			}
		}
	}
}

func renderObjects(b *strings.Builder, objects []*jobdiff.ObjectDiff, indent string, verbose bool) {
	for _, o := range objects {
		if o.Type == jobdiff.TypeNone && !verbose {
			continue
		}
		fmt.Fprintf(b, "\n%s  %s %s {", indent, diffMark(o.Type), o.Name)
		renderFields(b, o.Fields, indent+"  ", verbose)
		renderObjects(b, o.Objects, indent+"  ", verbose)
		fmt.Fprintf(b, "\n%s  }", indent)
	}
}
