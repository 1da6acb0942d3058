package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/jobdiff"
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
		vs, err := jobVersions(cl, job.ID, "")
		if err != nil {
			return c.errorf("%v", err)
		}
		job = nil
		for _, v := range vs.Versions {
			if v.Version == uint64(*ver) {
				job = v.Job
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
  -diff-tag=NAME   With -p, the difference of each version from the one
                   tagged NAME instead.
  -diff-version=N  With -p, the difference of each version from version N
                   instead.
  -full            Print each version's full job in JSON.
  -version=N       Show only version N.`)
}

func (c *jobHistoryCommand) Run(args []string) int {
	fs := c.flags("job history", true)
	diffs := fs.Bool("p", false, "")
	diffTag := fs.String("diff-tag", "", "")
	diffVersion := fs.Int64("diff-version", -1, "")
	full := fs.Bool("full", false, "")
	ver := fs.Int64("version", -1, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	if *diffTag != "" && *diffVersion >= 0 {
		return c.errorf("-diff-tag and -diff-version cannot both be given")
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	query := url.Values{"diffs": {"true"}}
	switch {
	case *diffTag != "":
		query.Set("diff_tag", *diffTag)
	case *diffVersion >= 0:
		query.Set("diff_version", strconv.FormatInt(*diffVersion, 10))
	}
	vs, err := jobVersions(cl, job.ID, query.Encode())
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
		kv := []string{"Version", fmt.Sprint(v.Version), "Stable", fmt.Sprint(v.Stable), "Submit Date", formatTime(v.SubmitTime)}
		if t := v.VersionTag; t != nil {
			kv = append(kv, "Tag Name", t.Name)
			if t.Description != "" {
				kv = append(kv, "Tag Description", t.Description)
			}
		}
		c.kv(kv...)
		if *diffs && i < len(vs.Diffs) && vs.Diffs[i] != nil && vs.Diffs[i].Type != jobdiff.TypeNone {
			c.ui.Output("Diff =\n" + renderJobDiff(vs.Diffs[i], false))
		}
		if *full {
			c.printJSON(v)
		}
	}
	return exitOK
}

// jobVersions reads the versions the server keeps of a job, with their
// differences when diffs holds query parameters ("diffs=true", with
// "diff_tag=" or "diff_version=" to diff every version against one).
func jobVersions(cl *client.Client, id string, diffs string) (*httpapi.JobVersionsResponse, error) {
	var vs httpapi.JobVersionsResponse
	path := "/v1/job/" + url.PathEscape(id) + "/versions"
	if diffs != "" {
		path += "?" + diffs
	}
	if _, err := cl.Get(bg, path, &vs); err != nil {
		return nil, fmt.Errorf("reading versions of job %q: %w", id, err)
	}
	return &vs, nil
}
