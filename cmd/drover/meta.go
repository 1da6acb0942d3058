package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/agent"
	"github.com/hashicorp/cli"
)

const version = agent.Version

// Exit codes scripts can rely on.
const (
	exitOK        = 0
	exitError     = 1
	exitPlacement = 2 // job run: some allocations could not be placed
)

// meta is what every CLI command shares: the UI, the agent address and
// the -json switch.
type meta struct {
	ui      cli.Ui
	out     io.Writer
	address string
	json    bool
}

// flags returns a flag set with the common flags.
func (m *meta) flags(name string, withJSON bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def := os.Getenv("DROVER_ADDR")
	if def == "" {
		def = "http://127.0.0.1:4646"
	}
	fs.StringVar(&m.address, "address", def, "")
	if withJSON {
		fs.BoolVar(&m.json, "json", false, "")
	}
	return fs
}

// parse parses args; on error it prints the error and the help.
func (m *meta) parse(fs *flag.FlagSet, args []string, help string) bool {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.ui.Output(help)
			return false
		}
		m.ui.Error(fmt.Sprintf("Error parsing flags: %v", err))
		m.ui.Error(help)
		return false
	}
	return true
}

func (m *meta) client() (*client.Client, error) { return client.New(m.address) }

func (m *meta) errorf(format string, args ...any) int {
	m.ui.Error(fmt.Sprintf("Error: "+format, args...))
	return exitError
}

// printJSON prints v as indented JSON.
func (m *meta) printJSON(v any) int {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return m.errorf("encode JSON: %v", err)
	}
	fmt.Fprintln(m.out, string(b))
	return exitOK
}

// table prints rows with aligned columns.
func (m *meta) table(rows [][]string) {
	if len(rows) == 0 {
		return
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) && len(c) > widths[i] {
				widths[i] = len(c)
			}
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len(c)+2))
		}
		fmt.Fprintln(m.out, strings.TrimRight(b.String(), " "))
	}
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

var bg = context.Background()
