package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
)

// The job tag commands, as Nomad 1.9's: name a kept version of a job, so
// that it is kept whatever the number of versions after it, and revert to
// it, or diff against it, by name.

type jobTagApplyCommand struct{ *meta }

func (c *jobTagApplyCommand) Synopsis() string { return "Tag a version of a job" }

func (c *jobTagApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job tag apply [options] <job>

  Tags a version of a job (its ID or a unique prefix), its latest unless
  -version says which. A tagged version is kept, whatever the number of
  versions registered after it, until the tag is unset; "drover job
  revert <job> <tag>" and "drover job history -diff-tag=<tag>" name it.
  A name tags one version of a job; tagging a tagged version replaces its
  tag.
` + apiOptions + `

Tag options:

  -name=NAME          The tag's name (required).
  -description=TEXT   What the version is, for people.
  -version=N          The version to tag (default: the latest).`)
}

func (c *jobTagApplyCommand) Run(args []string) int {
	fs := c.flags("job tag apply", false)
	name := fs.String("name", "", "")
	description := fs.String("description", "", "")
	version := fs.Int64("version", -1, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	if *name == "" {
		return c.errorf("-name is required")
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	// The version read, not Latest: the one the message names, whatever
	// is registered meanwhile (as Nomad's).
	req := &httpapi.JobTagRequest{Description: *description, Version: job.Version}
	if *version >= 0 {
		req.Version = uint64(*version)
	}
	var resp httpapi.JobTagResponse
	if _, err := cl.Put(bg, tagPath(job.ID, *name), req, &resp); err != nil {
		return c.errorf("tagging job %q: %v", job.ID, err)
	}
	c.ui.Output(fmt.Sprintf("Job version %d tagged with name \"%s\"", req.Version, resp.Name))
	return exitOK
}

type jobTagUnsetCommand struct{ *meta }

func (c *jobTagUnsetCommand) Synopsis() string { return "Remove a tag from a version of a job" }

func (c *jobTagUnsetCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job tag unset [options] <job>

  Removes a version tag from a job (its ID or a unique prefix). The
  version it tagged is then kept only while it is among the versions the
  server keeps untagged (the six newest).
` + apiOptions + `

Unset options:

  -name=NAME   The tag to remove (required).`)
}

func (c *jobTagUnsetCommand) Run(args []string) int {
	fs := c.flags("job tag unset", false)
	name := fs.String("name", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <job>") {
		return exitError
	}
	if *name == "" {
		return c.errorf("-name is required")
	}
	cl, job, ok := c.clientAndJob(fs.Arg(0))
	if !ok {
		return exitError
	}
	if _, err := cl.Delete(bg, tagPath(job.ID, *name), nil); err != nil {
		return c.errorf("removing tag %q from job %q: %v", *name, job.ID, err)
	}
	c.ui.Output(fmt.Sprintf("Tag %q removed from job %q", *name, job.ID))
	return exitOK
}

func tagPath(jobID, name string) string {
	return "/v1/job/" + url.PathEscape(jobID) + "/versions/" + url.PathEscape(name) + "/tag"
}

// versionByNameOrNumber resolves what names a version of a job on the
// command line: its number (with or without a leading "v"), else a tag.
func versionByNameOrNumber(cl *client.Client, jobID, arg string) (uint64, error) {
	if v, err := strconv.ParseUint(strings.TrimPrefix(arg, "v"), 10, 64); err == nil {
		return v, nil
	}
	vs, err := jobVersions(cl, jobID, "")
	if err != nil {
		return 0, err
	}
	for _, v := range vs.Versions {
		if v.VersionTag != nil && v.VersionTag.Name == arg {
			return v.Version, nil
		}
	}
	return 0, fmt.Errorf("job %q has no version numbered or tagged %q", jobID, arg)
}
