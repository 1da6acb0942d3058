// Command drover is Drover's one binary: the agent, and the CLI that talks
// to it (job, eval, alloc, node, plugin, operator), as Nomad's does.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	ui := &cli.BasicUi{Reader: os.Stdin, Writer: stdout, ErrorWriter: stderr}
	m := &meta{ui: ui, out: stdout}
	c := &cli.CLI{
		Name:        "drover",
		Version:     version,
		Args:        args,
		Commands:    commands(m),
		HelpFunc:    cli.BasicHelpFunc("drover"),
		HelpWriter:  stdout,
		ErrorWriter: stderr,
	}
	code, err := c.Run()
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return code
}

func commands(m *meta) map[string]cli.CommandFactory {
	f := func(c cli.Command) cli.CommandFactory { return func() (cli.Command, error) { return c, nil } }
	return map[string]cli.CommandFactory{
		"agent":           f(&agentCommand{meta: m}),
		"job":             f(&groupCommand{synopsis: "Interact with jobs", help: "Usage: drover job <subcommand> [options] [args]"}),
		"job run":         f(&jobRunCommand{meta: m}),
		"job status":      f(&jobStatusCommand{meta: m}),
		"job stop":        f(&jobStopCommand{meta: m}),
		"eval":            f(&groupCommand{synopsis: "Interact with evaluations", help: "Usage: drover eval <subcommand> [options] [args]"}),
		"eval list":       f(&evalListCommand{meta: m}),
		"eval status":     f(&evalStatusCommand{meta: m}),
		"node":            f(&groupCommand{synopsis: "Interact with nodes", help: "Usage: drover node <subcommand> [options] [args]"}),
		"node status":     f(&nodeStatusCommand{meta: m}),
		"plugin":          f(&groupCommand{synopsis: "Interact with scheduler plugins", help: "Usage: drover plugin <subcommand> [options] [args]"}),
		"plugin list":     f(&pluginListCommand{meta: m}),
		"bench":           f(&groupCommand{synopsis: "Run benchmarks", help: "Usage: drover bench <subcommand> [options]"}),
		"bench scheduler": f(&benchSchedulerCommand{meta: m}),
	}
}

// groupCommand is a command that only groups subcommands.
type groupCommand struct{ synopsis, help string }

func (g *groupCommand) Help() string     { return g.help }
func (g *groupCommand) Synopsis() string { return g.synopsis }
func (g *groupCommand) Run([]string) int { return cli.RunResultHelp }
