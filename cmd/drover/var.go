package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/nomad/api"
)

// The var commands, as Nomad 1.7's: list, get, put, purge, init and lock.
// They speak Nomad's variables API (/v1/vars, /v1/var/<path>) and its JSON
// (the api package's Variable and VariableMetadata).

const varGroupHelp = `Usage: drover var <subcommand> [options] [args]

  Interacts with variables: encrypted maps of items stored at a path in a
  namespace, for jobs to read (credentials and other secrets).

  Write an example variable specification:

      $ drover var init

  Create or update a variable:

      $ drover var put <path> key=value

  Read a variable:

      $ drover var get <path>

  List variables:

      $ drover var list [<prefix>]

  Delete a variable:

      $ drover var purge <path>

  Run a command while holding a lock on a variable:

      $ drover var lock <path> <command>...`

// The -out formats of the var commands.
const (
	outGoTemplate = "go-template"
	outHCL        = "hcl"
	outJSON       = "json"
	outNone       = "none"
	outTable      = "table"
	outTerse      = "terse"
)

// Messages as Nomad's CLI words them.
const (
	errMissingTemplate       = `A template must be supplied using '-template' when using go-template formatting`
	errUnexpectedTemplate    = `The '-template' flag is only valid when using 'go-template' formatting`
	errVariableNotFound      = `Variable not found`
	errNoMatchingVariables   = `No matching variables found`
	errInvalidInFormat       = `Invalid value for "-in"; valid values are [hcl, json]`
	errInvalidOutFormat      = `Invalid value for "-out"; valid values are [go-template, hcl, json, none, table]`
	errInvalidListOutFormat  = `Invalid value for "-out"; valid values are [go-template, json, table, terse]`
	msgWarnFilterPerformance = "Filter queries require a full scan of the data; use prefix searching " +
		"where possible"
)

// varOutputOptions documents -out and -template for get and put.
const varOutputOptions = `
  -out=FORMAT      go-template, hcl, json, none or table. The default is
                   %s when standard output is a terminal, json otherwise.
  -template=TMPL   Go template to render the variable with; required with
                   -out=go-template, refused with any other format.`

// defaultOut is the -out a command has when none is given: for people
// (table, or none) on a terminal, JSON for scripts otherwise, as Nomad's.
func (m *meta) defaultOut(forTerminal string) string {
	if m.outIsTerminal() {
		return forTerminal
	}
	return outJSON
}

// checkOut checks -out and -template against the formats a command knows.
func checkOut(out, tmpl string, formats []string, invalid string) error {
	if out != outGoTemplate && tmpl != "" {
		return errors.New(errUnexpectedTemplate)
	}
	if !slices.Contains(formats, out) {
		return errors.New(invalid)
	}
	if out == outGoTemplate && tmpl == "" {
		return errors.New(errMissingTemplate)
	}
	return nil
}

// parseCheckIndex parses -check-index; "" is no check.
func parseCheckIndex(s string) (index uint64, set bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	index, err = strconv.ParseUint(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, false, fmt.Errorf("Invalid -check-index value %q: out of range for uint64", s)
	case err != nil:
		return 0, false, fmt.Errorf("Invalid -check-index value %q: not parsable as uint64", s)
	}
	return index, true, nil
}

// cleanVarPath drops the spaces and slashes around a variable's path, as
// Nomad's client does: the API's router would redirect them.
func cleanVarPath(p string) string { return strings.Trim(strings.TrimSpace(p), "/") }

// varURL is the API path of the variable at path, each segment escaped,
// with ?cas=index when checked.
func varURL(path string, index uint64, checked bool) string {
	segs := strings.Split(cleanVarPath(path), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u := "/v1/var/" + strings.Join(segs, "/")
	if checked {
		u += "?cas=" + strconv.FormatUint(index, 10)
	}
	return u
}

// casConflict returns the variable a check-and-set conflict's answer (409)
// holds: the variable as it is, with its items if the token may read them,
// with a modify index of 0 if it does not exist.
func casConflict(err error) (*api.Variable, bool) {
	var e *client.APIError
	if !errors.As(err, &e) || e.Status != http.StatusConflict {
		return nil, false
	}
	var v api.Variable
	if err := json.Unmarshal(e.Body, &v); err != nil {
		return nil, false
	}
	return &v, true
}

// printCASConflict says that a write's check-index was not the variable's
// modify index, and what to do about it.
func (m *meta) printCASConflict(checkIndex uint64, cur *api.Variable, remedy string) {
	msg := fmt.Sprintf("Your provided check-index (%d) does not match the server-side index (%d).", checkIndex, cur.ModifyIndex)
	if cur.ModifyIndex > 0 {
		msg += fmt.Sprintf(" The server-side item was last updated on %s.", formatTime(cur.ModifyTime))
	}
	msg += " " + fmt.Sprintf(remedy, cur.ModifyIndex)
	m.ui.Error("\nCheck-and-Set conflict\n")
	m.ui.Warn(wrapIndent(msg, 80, "    ") + "\n")
}

// wrapIndent wraps text into lines of at most width columns, indent
// included (a longer word keeps a line of its own).
func wrapIndent(text string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(indent)+len(line)+1+len(w) > width {
			lines = append(lines, indent+line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, indent+line)
	}
	return strings.Join(lines, "\n")
}

// renderTemplate executes a Go template (-template) on data.
func renderTemplate(tmpl string, data any) (string, error) {
	t, err := template.New("out").Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("parsing -template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("executing -template: %w", err)
	}
	return b.String(), nil
}

// printVariable prints a variable in an -out format other than none.
func (m *meta) printVariable(v *api.Variable, out, tmpl string) int {
	switch out {
	case outJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return m.errorf("encode JSON: %v", err)
		}
		m.ui.Output(string(b))
	case outHCL:
		m.ui.Output(variableHCL(v))
	case outGoTemplate:
		s, err := renderTemplate(tmpl, v)
		if err != nil {
			return m.errorf("%v", err)
		}
		m.ui.Output(s)
	case outTable:
		m.printVariableTable(v)
	}
	return exitOK
}

// printVariableTable prints a variable's metadata, then its items sorted
// by key.
func (m *meta) printVariableTable(v *api.Variable) {
	ns := v.Namespace
	if ns == "" {
		ns = "<none>"
	}
	pairs := []string{"Namespace", ns, "Path", v.Path, "Create Time", formatTime(v.CreateTime)}
	if v.ModifyTime != v.CreateTime {
		pairs = append(pairs, "Modify Time", formatTime(v.ModifyTime))
	}
	m.kv(append(pairs, "Check Index", strconv.FormatUint(v.ModifyIndex, 10))...)
	fmt.Fprintln(m.out, "\nItems")
	keys := make([]string, 0, len(v.Items))
	for k := range v.Items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	items := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		items = append(items, k, v.Items[k])
	}
	m.kv(items...)
}

// variableHCL renders a variable as a specification var put reads back:
// the server's fields marked as such, items aligned.
func variableHCL(v *api.Variable) string {
	var b strings.Builder
	fmt.Fprintf(&b, "namespace    = %s\n", hclQuote(v.Namespace))
	fmt.Fprintf(&b, "path         = %s\n", hclQuote(v.Path))
	fmt.Fprintf(&b, "create_index = %d  # Set by server\n", v.CreateIndex)
	fmt.Fprintf(&b, "modify_index = %d  # Set by server; consulted for check-and-set\n", v.ModifyIndex)
	fmt.Fprintf(&b, "create_time  = %d  # Set by server\n", v.CreateTime)
	fmt.Fprintf(&b, "modify_time  = %d  # Set by server\n", v.ModifyTime)
	b.WriteString("\nitems = {\n")
	keys := make([]string, 0, len(v.Items))
	width := 0
	for k := range v.Items {
		keys = append(keys, k)
		width = max(width, len(hclKey(k)))
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-*s = %s\n", width, hclKey(k), hclQuote(v.Items[k]))
	}
	b.WriteString("}")
	return b.String()
}

// hclKey is an item's key as an HCL object key: bare if it is an
// identifier, quoted otherwise.
func hclKey(k string) string {
	ident := k != "" && !unicode.IsDigit(rune(k[0])) && k[0] != '-'
	for _, r := range k {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' {
			ident = false
		}
	}
	if ident {
		return k
	}
	return hclQuote(k)
}

// hclQuote quotes s as an HCL string literal that reads back as s: the
// template sequences ${ and %{ escaped, control characters as \uNNNN.
func hclQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case (r == '$' || r == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteRune(r)
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

type varListCommand struct{ *meta }

func (c *varListCommand) Synopsis() string { return "List variable metadata" }

func (c *varListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover var list [options] [<prefix>]

  Lists the variables (GET /v1/vars) whose path starts with <prefix>:
  their metadata, never their items. One page is listed at a time when
  -per-page is given; the next page's token is printed to standard error
  (or in the JSON), so that standard output holds only variables. With
  ACLs, only the variables the token may list are listed.
` + apiOptions + `

List options:

  -per-page=N      How many variables a page holds.
  -page-token=TOK  The page to start at (the token a previous page gave).
  -filter=EXPR     A go-bexpr expression the variables must match (a full
                   scan: prefer <prefix> where it will do).
  -out=FORMAT      go-template, json, table or terse (paths only, with
                   their namespace under -namespace=*). The default is
                   table when standard output is a terminal, json
                   otherwise.
  -template=TMPL   Go template to render the list with; required with
                   -out=go-template.
  -json            Same as -out=json.
  -q               Same as -out=terse.
  -t=TMPL          Same as -out=go-template -template=TMPL.`)
}

func (c *varListCommand) Run(args []string) int {
	fs := c.flags("var list", true)
	out := fs.String("out", "", "")
	tmpl := fs.String("template", "", "")
	shortTmpl := fs.String("t", "", "")
	quiet := fs.Bool("q", false, "")
	perPage := fs.Int("per-page", 0, "")
	pageToken := fs.String("page-token", "", "")
	filter := fs.String("filter", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 1, "flags and either no arguments or one: <prefix>") {
		return exitError
	}
	// The shorthands name a format as -out does; two that disagree are
	// refused rather than one silently winning.
	var formats []string
	for _, f := range []struct {
		set    bool
		format string
	}{{*out != "", *out}, {c.json, outJSON}, {*quiet, outTerse}, {*shortTmpl != "", outGoTemplate}} {
		if f.set && !slices.Contains(formats, f.format) {
			formats = append(formats, f.format)
		}
	}
	if len(formats) > 1 {
		return c.errorf("-out, -json, -q and -t name different formats: %s", strings.Join(formats, ", "))
	}
	format := c.defaultOut(outTable)
	if len(formats) == 1 {
		format = formats[0]
	}
	if *shortTmpl != "" {
		if *tmpl != "" && *tmpl != *shortTmpl {
			return c.errorf("-t and -template give different templates")
		}
		*tmpl = *shortTmpl
	}
	if err := checkOut(format, *tmpl, []string{outGoTemplate, outJSON, outTable, outTerse}, errInvalidListOutFormat); err != nil {
		c.ui.Error(err.Error())
		return exitError
	}
	if *perPage < 0 {
		return c.errorf("-per-page=%d: give a positive number of variables", *perPage)
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	if *filter != "" {
		c.ui.Warn(msgWarnFilterPerformance)
	}
	q := url.Values{}
	if fs.NArg() == 1 {
		q.Set("prefix", fs.Arg(0))
	}
	if *perPage > 0 {
		q.Set("per_page", strconv.Itoa(*perPage))
	}
	if *pageToken != "" {
		q.Set("next_token", *pageToken)
	}
	if *filter != "" {
		q.Set("filter", *filter)
	}
	path := "/v1/vars"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	vars := []*api.VariableMetadata{}
	meta, err := cl.Get(bg, path, &vars)
	if err != nil {
		return c.errorf("listing variables: %v", err)
	}
	if vars == nil {
		vars = []*api.VariableMetadata{}
	}
	switch format {
	case outJSON:
		// A paged list is wrapped with its query meta, so that the next
		// page's token reaches a script that reads only standard output.
		if *perPage > 0 {
			return c.printJSON(struct {
				Data      []*api.VariableMetadata
				QueryMeta *api.QueryMeta
			}{vars, &api.QueryMeta{LastIndex: meta.Index, NextToken: meta.NextToken}})
		}
		return c.printJSON(vars)
	case outTerse:
		rows := make([][]string, 0, len(vars))
		for _, v := range vars {
			if c.namespace == "*" {
				rows = append(rows, []string{v.Namespace, v.Path})
			} else {
				rows = append(rows, []string{v.Path})
			}
		}
		c.table(rows)
	case outGoTemplate:
		s, err := renderTemplate(*tmpl, vars)
		if err != nil {
			return c.errorf("%v", err)
		}
		c.ui.Output(s)
	default:
		if len(vars) == 0 {
			c.ui.Output(errNoMatchingVariables)
			break
		}
		slices.SortFunc(vars, func(a, b *api.VariableMetadata) int {
			if a.Namespace != b.Namespace {
				return strings.Compare(a.Namespace, b.Namespace)
			}
			return strings.Compare(a.Path, b.Path)
		})
		rows := [][]string{{"Namespace", "Path", "Last Updated"}}
		for _, v := range vars {
			rows = append(rows, []string{v.Namespace, v.Path, formatTime(v.ModifyTime)})
		}
		c.table(rows)
	}
	if meta.NextToken != "" {
		c.ui.Warn("Next page token: " + meta.NextToken)
	}
	return exitOK
}

type varGetCommand struct{ *meta }

func (c *varGetCommand) Synopsis() string { return "Read a variable" }

func (c *varGetCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover var get [options] <path>

  Prints the variable at <path> (GET /v1/var/<path>), its items included.
  With ACLs, the token needs the variables read capability for the path.
  A variable that does not exist exits with 1.
` + apiOptions + `

Get options:

  -item=KEY        Print only the item KEY's value, with no newline after
                   it (for pipes); this wins over -out.` + fmt.Sprintf(varOutputOptions, "table"))
}

func (c *varGetCommand) Run(args []string) int {
	fs := c.flags("var get", false)
	item := fs.String("item", "", "")
	out := fs.String("out", c.defaultOut(outTable), "")
	tmpl := fs.String("template", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <path>") {
		return exitError
	}
	if err := checkOut(*out, *tmpl, []string{outGoTemplate, outHCL, outJSON, outNone, outTable}, errInvalidOutFormat); err != nil {
		c.ui.Error(err.Error())
		return exitError
	}
	cl, ok := c.singleNamespaceClient()
	if !ok {
		return exitError
	}
	var v api.Variable
	if _, err := cl.Get(bg, varURL(fs.Arg(0), 0, false), &v); err != nil {
		if client.IsNotFound(err) {
			c.ui.Warn(errVariableNotFound)
			return exitError
		}
		return c.errorf("retrieving variable %q: %v", fs.Arg(0), err)
	}
	if *item != "" {
		val, ok := v.Items[*item]
		if !ok {
			c.ui.Error(fmt.Sprintf("Variable does not contain %q item", *item))
			return exitError
		}
		fmt.Fprint(c.out, val)
		return exitOK
	}
	return c.printVariable(&v, *out, *tmpl)
}

type varPurgeCommand struct{ *meta }

func (c *varPurgeCommand) Synopsis() string { return "Purge a variable" }

func (c *varPurgeCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover var purge [options] <path>

  Deletes the variable at <path> for good (DELETE /v1/var/<path>). With
  ACLs, the token needs the variables destroy capability for the path.
` + apiOptions + `

Purge options:

  -check-index=N   Delete the variable only if its modify index is still N
                   (check-and-set); a conflict prints the index it has and
                   exits with 1.`)
}

func (c *varPurgeCommand) Run(args []string) int {
	fs := c.flags("var purge", false)
	checkIndexStr := fs.String("check-index", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <path>") {
		return exitError
	}
	checkIndex, checked, err := parseCheckIndex(*checkIndexStr)
	if err != nil {
		c.ui.Error(err.Error())
		return exitError
	}
	cl, ok := c.singleNamespaceClient()
	if !ok {
		return exitError
	}
	path := fs.Arg(0)
	if _, err := cl.Delete(bg, varURL(path, checkIndex, checked), nil); err != nil {
		if cur, ok := casConflict(err); ok && checked {
			c.printCASConflict(checkIndex, cur, "If you are sure you want to purge it, give -check-index=%d, or no -check-index at all.")
			return exitError
		}
		return c.errorf("purging variable %q: %v", path, err)
	}
	c.ui.Output(fmt.Sprintf("Successfully purged variable %q!", path))
	return exitOK
}
