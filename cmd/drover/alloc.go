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

type allocStatusCommand struct{ *meta }

func (c *allocStatusCommand) Synopsis() string { return "Display allocation status information" }

func (c *allocStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc status [options] <alloc-id>

  Shows an allocation (its ID or a unique prefix): where it runs, what the
  server wants of it and what its node reports, the resources it holds and,
  with -verbose, how its node was chosen.
` + apiOptions + `

Status options:
` + jsonOption + `
  -verbose         Show full IDs and placement metrics.`)
}

func (c *allocStatusCommand) Run(args []string) int {
	fs := c.flags("alloc status", true)
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <alloc-id>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id, err := resolve(cl, "/v1/allocations", fs.Arg(0))
	if err != nil {
		return c.errorf("finding allocation %q: %v", fs.Arg(0), err)
	}
	var a sdk.Allocation
	if _, err := cl.Get(bg, "/v1/allocation/"+url.PathEscape(id), &a); err != nil {
		return c.errorf("reading allocation: %v", err)
	}
	if c.json {
		return c.printJSON(&a)
	}
	short := idFormat(*verbose)
	c.kv("ID", short(a.ID), "Eval ID", short(a.EvalID), "Name", a.Name, "Node ID", short(a.NodeID), "Node Name", a.NodeName,
		"Job ID", a.JobID, "Job Version", fmt.Sprint(a.JobVersion), "Client Status", a.ClientStatus,
		"Client Description", a.ClientDescription, "Desired Status", a.DesiredStatus,
		"Desired Description", a.DesiredDescription, "Created", formatTime(a.CreateTime),
		"Modified", formatTime(a.ModifyTime), "Deployment ID", short(a.DeploymentID),
		"Previous Allocation", short(a.PreviousAllocation), "Next Allocation", short(a.NextAllocation))
	if r := a.AllocatedResources; r != nil {
		c.ui.Output("\nAllocated Resources")
		rows := [][]string{{"Task", "CPU", "Memory", "Cores"}}
		for _, t := range sortedKeys(r.Tasks) {
			tr := r.Tasks[t]
			rows = append(rows, []string{t, fmt.Sprintf("%d MHz", tr.Cpu.CpuShares), fmt.Sprintf("%d MiB", tr.Memory.MemoryMB),
				fmt.Sprint(len(tr.Cpu.ReservedCores))})
		}
		c.table(rows)
		c.ui.Output(fmt.Sprintf("Disk = %d MiB", r.Shared.DiskMB))
	}
	c.allocVolumes(cl, &a, *verbose)
	if len(a.TaskStates) > 0 {
		c.ui.Output("\nTask States")
		rows := [][]string{{"Task", "State", "Failed", "Restarts"}}
		for _, t := range sortedKeys(a.TaskStates) {
			s := a.TaskStates[t]
			rows = append(rows, []string{t, fmt.Sprint(orDash(s["State"])), fmt.Sprint(orDash(s["Failed"])), fmt.Sprint(orDash(s["Restarts"]))})
		}
		c.table(rows)
		for _, t := range sortedKeys(a.TaskStates) {
			if rows := eventRows(a.TaskStates[t]); len(rows) > 1 {
				c.ui.Output(fmt.Sprintf("\nTask %q is %q\nRecent Events:", t, fmt.Sprint(orDash(a.TaskStates[t]["State"]))))
				c.table(rows)
			}
		}
	}
	if *verbose && a.Metrics != nil {
		m := a.Metrics
		c.ui.Output("\nPlacement Metrics")
		c.kv("Nodes Evaluated", fmt.Sprint(m.NodesEvaluated), "Nodes Filtered", fmt.Sprint(m.NodesFiltered),
			"Nodes Exhausted", fmt.Sprint(m.NodesExhausted), "Nodes In Pool", fmt.Sprint(m.NodesInPool))
		if len(m.ScoreMetaData) > 0 {
			c.table(scoreRows(m.ScoreMetaData))
		}
	}
	return exitOK
}

// allocVolumes prints the CSI volumes the allocation's group mounts (a
// per_alloc one by the allocation's index), as Nomad's alloc status
// does; with verbose, each volume's plugin and whether it is schedulable,
// read from the volume.
func (c *allocStatusCommand) allocVolumes(cl *client.Client, a *sdk.Allocation, verbose bool) {
	if a.Job == nil {
		return
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return
	}
	reqs := sdk.CSIVolumeRequests(tg, a.Name)
	if len(reqs) == 0 {
		return
	}
	rows := [][]string{{"Name", "ID", "Read Only"}}
	if verbose {
		rows[0] = append(rows[0], "Plugin", "Provider", "Schedulable", "Claimed")
	}
	for _, r := range reqs {
		row := []string{r.Name, r.Source, fmt.Sprint(r.ReadOnly)}
		if verbose {
			var vol httpapi.CSIVolume
			cl.Namespace = a.Namespace
			if _, err := cl.Get(bg, volumePath(r.Source), &vol); err != nil {
				row = append(row, "-", "-", "-", fmt.Sprintf("(%v)", err))
			} else {
				_, claimed := vol.ReadAllocs[a.ID]
				if _, w := vol.WriteAllocs[a.ID]; w {
					claimed = true
				}
				row = append(row, vol.PluginID, vol.Provider, fmt.Sprint(vol.Schedulable), fmt.Sprint(claimed))
			}
		}
		rows = append(rows, row)
	}
	c.ui.Output("\nCSI Volumes")
	c.table(rows)
}

// scoreRows tabulates the top nodes' scores as Nomad's alloc status does:
// a column per scorer, then the final score.
func scoreRows(top []*sdk.NodeScoreMeta) [][]string {
	seen := map[string]bool{}
	var scorers []string
	for _, s := range top {
		for _, sc := range s.Scores {
			if !seen[sc.Name] {
				seen[sc.Name] = true
				scorers = append(scorers, sc.Name)
			}
		}
	}
	sort.Strings(scorers)
	rows := [][]string{append(append([]string{"Node"}, scorers...), "final score")}
	for _, s := range top {
		row := []string{s.NodeID}
		for _, name := range scorers {
			v, _ := s.Scores.Get(name)
			row = append(row, fmt.Sprintf("%.3g", v))
		}
		rows = append(rows, append(row, fmt.Sprintf("%.3g", s.NormScore)))
	}
	return rows
}

// eventRows tabulates a task state's events as Nomad's alloc status does:
// newest first, with the time, type and description.
func eventRows(st sdk.Opaque) [][]string {
	events, _ := st["Events"].([]any)
	rows := [][]string{{"Time", "Type", "Description"}}
	for i := len(events) - 1; i >= 0; i-- {
		e, ok := events[i].(map[string]any)
		if !ok {
			continue
		}
		at := "-"
		if ns, ok := e["Time"].(float64); ok {
			at = formatTime(int64(ns))
		}
		rows = append(rows, []string{at, fmt.Sprint(orDash(e["Type"])), fmt.Sprint(orDash(e["DisplayMessage"]))})
	}
	return rows
}

func orDash(v any) any {
	if v == nil {
		return "-"
	}
	return v
}

type allocStopCommand struct{ *meta }

func (c *allocStopCommand) Synopsis() string { return "Stop and reschedule a running allocation" }

func (c *allocStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc stop [options] <alloc-id>

  Stops an allocation (its ID or a unique prefix) and has the scheduler
  place a replacement: the allocation is marked to migrate and an alloc-stop
  evaluation is created, which this command monitors. As in Nomad, an
  allocation of a system or sysbatch job is stopped without a replacement;
  the job's next evaluation (drover job eval, a job update or a node
  change) places one again on the node.

  Exit codes: 0 on success, 2 when the replacement could not be placed, 1
  on error.
` + apiOptions + `

Stop options:

  -detach          Return after submitting, printing the evaluation ID.`)
}

func (c *allocStopCommand) Run(args []string) int {
	fs := c.flags("alloc stop", false)
	detach := fs.Bool("detach", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <alloc-id>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id, err := resolve(cl, "/v1/allocations", fs.Arg(0))
	if err != nil {
		return c.errorf("finding allocation %q: %v", fs.Arg(0), err)
	}
	var resp httpapi.AllocStopResponse
	if _, err := cl.Put(bg, "/v1/allocation/"+url.PathEscape(id)+"/stop", nil, &resp); err != nil {
		return c.errorf("stopping allocation: %v", err)
	}
	return c.follow(cl, resp.EvalID, *detach)
}
