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
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/agent"
	"github.com/hashicorp/cli"
	"github.com/mattn/go-isatty"
	"github.com/mattn/go-runewidth"
)

const version = agent.Version

// Exit codes scripts can rely on.
const (
	exitOK        = 0
	exitError     = 1
	exitPlacement = 2 // job run: some allocations could not be placed
	// job plan, as Nomad's: 0 nothing would change, 1 allocations would be
	// created or destroyed, 255 the plan could not be made.
	exitPlanChanges = 1
	exitPlanError   = 255
	// operator debug, as Nomad's: the output directory exists, or the
	// files cannot be written.
	exitDebugOutput = 2
)

// Environment variables the CLI reads.
const (
	envAddress   = "DROVER_ADDR"
	envNamespace = "DROVER_NAMESPACE"
	defaultAddr  = "http://127.0.0.1:4646"
)

// tokenEnv are the variables -token defaults to, Drover's first, as the
// TLS options read theirs.
var tokenEnv = []string{"DROVER_TOKEN", "NOMAD_TOKEN"}

// meta is what every CLI command shares: the UI, the agent address, the
// TLS options, the ACL token, the namespace and the -json switch.
type meta struct {
	ui        cli.Ui
	out       io.Writer
	address   string
	namespace string
	tls       tlsOptions
	// token is the ACL token's secret ID (-token, $DROVER_TOKEN or
	// $NOMAD_TOKEN), sent with every request.
	token option
	json  bool
	// in is standard input (nil: os.Stdin), for the commands that read a
	// file or "-".
	in io.Reader
	// errOut is standard error (nil: os.Stderr), for a child command's
	// (var lock); the CLI's own messages go through ui.
	errOut io.Writer
	// now is the clock for the times commands print.
	now func() time.Time
}

// apiOptions documents the options every API command takes.
const apiOptions = `
General options:

  -address=ADDR    Address of the Drover agent (default: $DROVER_ADDR, or
                   http://127.0.0.1:4646).
  -namespace=NS    Namespace to act in (default: $DROVER_NAMESPACE, or
                   "default"; "*" lists every namespace).` + tokenOptionHelp + tlsOptionsHelp

// noNamespaceOptions documents the options of the API commands that act
// in no namespace (acl, plugin).
const noNamespaceOptions = `
General options:

  -address=ADDR    Address of the Drover agent (default: $DROVER_ADDR, or
                   http://127.0.0.1:4646).` + tokenOptionHelp + tlsOptionsHelp

// tokenOptionHelp documents -token.
const tokenOptionHelp = `
  -token=SECRET    Secret ID of the ACL token to authenticate with, sent as
                   the X-Nomad-Token header (default: $DROVER_TOKEN, else
                   $NOMAD_TOKEN; -token="" sends none).`

// jsonOption documents -json.
const jsonOption = `
  -json            Print the API's JSON instead of a table.`

// flags returns a flag set with the common flags.
func (m *meta) flags(name string, withJSON bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := os.Getenv(envAddress)
	if addr == "" {
		addr = defaultAddr
	}
	fs.StringVar(&m.address, "address", addr, "")
	fs.StringVar(&m.namespace, "namespace", os.Getenv(envNamespace), "")
	m.token = option{flag: "token"}
	for _, env := range tokenEnv {
		if v := os.Getenv(env); v != "" {
			m.token.value, m.token.from = v, env
			break
		}
	}
	fs.Var(&m.token, "token", "")
	m.tls.register(fs)
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

// args checks the number of positional arguments.
func (m *meta) args(fs *flag.FlagSet, min, max int, usage string) bool {
	if n := fs.NArg(); n < min || n > max {
		m.ui.Error("This command takes " + usage)
		return false
	}
	return true
}

func (m *meta) client() (*client.Client, error) {
	tlsc, err := m.tls.config()
	if err != nil {
		return nil, err
	}
	c, err := client.New(m.address, tlsc)
	if err != nil {
		return nil, err
	}
	c.Namespace = m.namespace
	// A secret read from a file by the shell ($(cat f)) ends with a
	// newline, which no header may hold.
	c.Token = strings.TrimSpace(m.token.value)
	return c, nil
}

// errWildcardNamespace is Nomad's CLI's answer to -namespace=* from a
// command that acts in one namespace.
const errWildcardNamespace = `The wildcard namespace ("*") is not valid for this command.`

// singleNamespaceClient is the client for a command that acts in one
// namespace (var get, put and purge; service info and delete): it refuses
// the wildcard namespace before anything is sent.
func (m *meta) singleNamespaceClient() (*client.Client, bool) {
	if m.namespace == "*" {
		m.ui.Error(errWildcardNamespace)
		return nil, false
	}
	cl, err := m.client()
	if err != nil {
		m.errorf("%v", err)
		return nil, false
	}
	return cl, true
}

// noNamespaceClient is the client for a command that acts in no
// namespace (the acl, keyring and autopilot commands): no namespace is
// sent, whatever -namespace says.
func (m *meta) noNamespaceClient() (*client.Client, bool) {
	cl, err := m.client()
	if err != nil {
		m.errorf("%v", err)
		return nil, false
	}
	cl.Namespace = ""
	return cl, true
}

// noArgsNoNamespace parses the arguments of a command that takes none
// but its options and acts in no namespace, and returns its client.
func (m *meta) noArgsNoNamespace(fs *flag.FlagSet, args []string, help string) (*client.Client, bool) {
	if !m.parse(fs, args, help) || !m.args(fs, 0, 0, "no arguments") {
		return nil, false
	}
	return m.noNamespaceClient()
}

// stdin is standard input.
func (m *meta) stdin() io.Reader {
	if m.in != nil {
		return m.in
	}
	return os.Stdin
}

// stderr is standard error.
func (m *meta) stderr() io.Writer {
	if m.errOut != nil {
		return m.errOut
	}
	return os.Stderr
}

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

// table prints rows with aligned columns, as formatTable renders them.
func (m *meta) table(rows [][]string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(m.out, formatTable(rows))
}

// formatTable renders rows with aligned columns, a line each. Cells are
// measured by the columns a terminal gives them (runewidth), not by their
// bytes: a job named in another script than Latin's keeps the columns
// after it in line.
func formatTable(rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], runewidth.StringWidth(c))
			}
		}
	}
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i == len(r)-1 || i >= len(widths) {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(c)+2))
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	return strings.Join(lines, "\n")
}

// kv prints "key = value" lines with aligned keys, as Nomad's status
// commands do.
func (m *meta) kv(pairs ...string) {
	width := 0
	for i := 0; i+1 < len(pairs); i += 2 {
		width = max(width, len(pairs[i]))
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintln(m.out, strings.TrimRight(fmt.Sprintf("%-*s = %s", width, pairs[i], pairs[i+1]), " "))
	}
}

// outIsTerminal reports whether standard output is a terminal, which a
// person reads, rather than a file or a pipe.
func (m *meta) outIsTerminal() bool {
	f, ok := m.out.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func (m *meta) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// idFormat is how a command shows IDs: shortened (shortID), or whole with
// -verbose.
func idFormat(verbose bool) func(string) string {
	if verbose {
		return func(s string) string { return s }
	}
	return shortID
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// formatTime prints a Unix-nanosecond time for people.
func formatTime(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).Local().Format(time.RFC3339)
}

var bg = context.Background()

// deleteByName is the Run of a command that deletes one object named
// exactly by its one argument (arg, as its usage names it): DELETE
// path(name), then done (a format of the name) on success, or the error
// naming what it could not delete.
func (m *meta) deleteByName(args []string, cmd, help, arg string, path func(string) string, what, done string) int {
	fs := m.flags(cmd, false)
	if !m.parse(fs, args, help) || !m.args(fs, 1, 1, "one argument: "+arg) {
		return exitError
	}
	cl, ok := m.noNamespaceClient()
	if !ok {
		return exitError
	}
	name := fs.Arg(0)
	if _, err := cl.Delete(bg, path(name), nil); err != nil {
		return m.errorf("deleting %s %q: %v", what, name, err)
	}
	m.ui.Output(fmt.Sprintf(done, name))
	return exitOK
}
