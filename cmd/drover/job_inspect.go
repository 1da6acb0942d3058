package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

type jobInspectCommand struct{ *meta }

func (c *jobInspectCommand) Synopsis() string { return "Print a job as the server holds it" }

func (c *jobInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job inspect [options] <job>

  Prints the job (its ID or a unique prefix) as the server holds it, in
  Nomad's API JSON, wrapped as {"Job": ...}: the form job run -json and
  nomad job run -json read back.
` + apiOptions + `

Inspect options:

  -version=N   Print version N of the job instead of the latest.`)
}

func (c *jobInspectCommand) Run(args []string) int {
	fs := c.flags("job inspect", true)
	ver := fs.Int64("version", -1, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	if *ver >= 0 && uint64(*ver) != job.Version {
		vs, err := jobVersions(cl, job.ID, false)
		if err != nil {
			return c.errorf("%v", err)
		}
		job = nil
		for _, v := range vs.Versions {
			if v.Version == uint64(*ver) {
				job = v
			}
		}
		if job == nil {
			return c.errorf("job %q has no version %d (the server keeps the latest versions only)", fs.Arg(0), *ver)
		}
	}
	return c.printJSON(map[string]*sdk.Job{"Job": job})
}

type jobHistoryCommand struct{ *meta }

func (c *jobHistoryCommand) Synopsis() string { return "Display the versions of a job" }

func (c *jobHistoryCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job history [options] <job>

  Lists the versions the server keeps of a job (its ID or a unique prefix),
  newest first, with what changed from each version to the next.
` + apiOptions + `

History options:
` + jsonOption + `
  -p               Show the difference of each version from the one before.
  -full            Print each version's full job in JSON.
  -version=N       Show only version N.`)
}

func (c *jobHistoryCommand) Run(args []string) int {
	fs := c.flags("job history", true)
	diffs := fs.Bool("p", false, "")
	full := fs.Bool("full", false, "")
	ver := fs.Int64("version", -1, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	vs, err := jobVersions(cl, job.ID, true)
	if err != nil {
		return c.errorf("%v", err)
	}
	if *ver >= 0 {
		for i, v := range vs.Versions {
			if v.Version == uint64(*ver) {
				vs.Versions = vs.Versions[i : i+1]
				if i < len(vs.Diffs) {
					vs.Diffs = vs.Diffs[i : i+1]
				} else {
					vs.Diffs = nil
				}
				break
			}
		}
		if len(vs.Versions) != 1 || vs.Versions[0].Version != uint64(*ver) {
			return c.errorf("job %q has no version %d", job.ID, *ver)
		}
	}
	if c.json {
		return c.printJSON(vs)
	}
	for i, v := range vs.Versions {
		if i > 0 {
			c.ui.Output("")
		}
		c.kv("Version", fmt.Sprint(v.Version), "Stable", fmt.Sprint(v.Stable), "Submit Date", formatTime(v.SubmitTime))
		if *diffs && i < len(vs.Diffs) && vs.Diffs[i] != nil {
			c.ui.Output("Diff =\n" + renderJobDiff(vs.Diffs[i], false))
		}
		if *full {
			c.printJSON(v)
		}
	}
	return exitOK
}

// jobVersions reads the versions the server keeps of a job, with their
// differences when diffs is set.
func jobVersions(cl *client.Client, id string, diffs bool) (*httpapi.JobVersionsResponse, error) {
	var vs httpapi.JobVersionsResponse
	path := "/v1/job/" + url.PathEscape(id) + "/versions"
	if diffs {
		path += "?diffs=true"
	}
	if _, err := cl.Get(bg, path, &vs); err != nil {
		return nil, fmt.Errorf("reading versions of job %q: %w", id, err)
	}
	return &vs, nil
}
