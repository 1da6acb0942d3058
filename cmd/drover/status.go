package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/hashicorp/cli"
)

type statusCommand struct{ *meta }

func (c *statusCommand) Synopsis() string { return "Display the status output for a resource" }

func (c *statusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover status [options] [<identifier>]

  Displays the status of whatever an identifier names, as nomad status
  does. Without one, lists the jobs (job status). With one, searches every
  context for it (POST /v1/search, context "all") and runs the status
  command of what matches: job, eval, alloc, node, deployment or namespace
  status (plugin and volume status for CSI plugins and volumes). An exact
  ID wins; a prefix must match one object of one context, else the
  matches are listed and nothing is shown ("Multiple matches found").
` + apiOptions + `

Status options:

  -verbose         Display full information (passed on to the status
                   command that takes it).`)
}

// statusTarget is the status command for a search context's match, and
// whether it takes -verbose.
type statusTarget struct {
	cmd     func(*meta) cli.Command
	verbose bool
}

// statusTargets are the contexts nomad status shows, by the name
// /v1/search gives them. Any other context (node_pools, scaling_policy,
// vars) cannot be resolved, as in Nomad.
var statusTargets = map[string]statusTarget{
	"jobs":       {func(m *meta) cli.Command { return &jobStatusCommand{meta: m} }, true},
	"evals":      {func(m *meta) cli.Command { return &evalStatusCommand{meta: m} }, true},
	"allocs":     {func(m *meta) cli.Command { return &allocStatusCommand{meta: m} }, true},
	"nodes":      {func(m *meta) cli.Command { return &nodeStatusCommand{meta: m} }, true},
	"deployment": {func(m *meta) cli.Command { return &deploymentStatusCommand{meta: m} }, false},
	"namespaces": {func(m *meta) cli.Command { return &namespaceStatusCommand{meta: m} }, false},
	"plugins":    {func(m *meta) cli.Command { return &pluginStatusCommand{meta: m} }, true},
	"volumes":    {func(m *meta) cli.Command { return &volumeStatusCommand{meta: m} }, true},
}

func (c *statusCommand) Run(args []string) int {
	fs := c.flags("status", false)
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 1, "either no arguments or one: <identifier>") {
		return exitError
	}
	if fs.NArg() == 0 {
		return (&jobStatusCommand{meta: c.meta}).Run(forwardArgs(fs, *verbose, nil))
	}
	id := fs.Arg(0)
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var res httpapi.SearchResponse
	if _, err := cl.Post(bg, "/v1/search", map[string]string{"Prefix": id, "Context": "all"}, &res); err != nil {
		return c.errorf("querying search with id %q: %v", id, err)
	}
	match, ok := statusMatch(id, res.Matches)
	if !ok {
		c.ui.Error(fmt.Sprintf("Multiple matches found for id %q", id))
		for _, ctx := range sortedKeys(res.Matches) {
			if ids := res.Matches[ctx]; len(ids) > 0 {
				c.ui.Error(fmt.Sprintf("\n%s:", strings.ToUpper(ctx[:1])+ctx[1:]))
				c.ui.Error(strings.Join(ids, ", "))
			}
		}
		return exitError
	}
	target, known := statusTargets[match]
	if !known {
		c.ui.Error(fmt.Sprintf("Unable to resolve ID: %q", id))
		return exitError
	}
	return target.cmd(c.meta).Run(forwardArgs(fs, *verbose && target.verbose, []string{id}))
}

// statusMatch is the context of matches that id names, as Nomad's status
// decides it: the one context whose first match is id itself, else the
// one context with a single match; ok is false when several contexts
// (or several IDs of one) match. The context is "" when nothing matches.
func statusMatch(id string, matches map[string][]string) (ctx string, ok bool) {
	var exact []string
	for c, ids := range matches {
		if len(ids) > 0 && ids[0] == id {
			exact = append(exact, c)
		}
	}
	switch len(exact) {
	case 1:
		return exact[0], true
	case 0:
	default:
		return "", false
	}
	var single []string
	for c, ids := range matches {
		switch len(ids) {
		case 0:
		case 1:
			single = append(single, c)
		default:
			return "", false
		}
	}
	if len(single) > 1 {
		return "", false
	}
	sort.Strings(single)
	if len(single) == 1 {
		return single[0], true
	}
	return "", true
}

// forwardArgs are the options set on fs (the common ones: address, token,
// namespace, TLS), -verbose if verbose, then rest: what status passes to
// the command it runs, which reads the environment's defaults itself.
func forwardArgs(fs *flag.FlagSet, verbose bool, rest []string) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "verbose" {
			out = append(out, "-"+f.Name+"="+f.Value.String())
		}
	})
	if verbose {
		out = append(out, "-verbose")
	}
	return append(out, rest...)
}
