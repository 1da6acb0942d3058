package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// The example jobspecs job init writes.
var (
	//go:embed assets/example.nomad.hcl
	exampleJob []byte
	//go:embed assets/example-short.nomad.hcl
	exampleJobShort []byte
)

// defaultInitFile is where job init writes, as Nomad's does.
const defaultInitFile = "example.nomad.hcl"

type jobInitCommand struct{ *meta }

func (c *jobInitCommand) Synopsis() string { return "Write an example jobspec" }

func (c *jobInitCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job init [options] [filename]

  Writes an example jobspec, commented, to filename (default
  example.nomad.hcl). An existing file is never overwritten.

Init options:

  -short    Write a minimal jobspec without comments.`)
}

func (c *jobInitCommand) Run(args []string) int {
	flags := c.flags("job init", false)
	short := flags.Bool("short", false, "")
	if !c.parse(flags, args, c.Help()) || !c.args(flags, 0, 1, "at most one argument: [filename]") {
		return exitError
	}
	name := defaultInitFile
	if flags.NArg() == 1 {
		name = flags.Arg(0)
	}
	content := exampleJob
	if *short {
		content = exampleJobShort
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return c.errorf("%s already exists; remove it or name another file", name)
	}
	if err != nil {
		return c.errorf("%v", err)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return c.errorf("writing %s: %v", name, err)
	}
	if err := f.Close(); err != nil {
		return c.errorf("writing %s: %v", name, err)
	}
	c.ui.Output(fmt.Sprintf("Example job file written to %s", name))
	return exitOK
}
