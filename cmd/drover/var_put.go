package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"
)

type varPutCommand struct{ *meta }

func (c *varPutCommand) Synopsis() string { return "Create or update a variable" }

func (c *varPutCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover var put [options] <path> [<spec>] [<key>=<value>]...
       drover var put [options] <spec> [<key>=<value>]...

  Creates or updates a variable (PUT /v1/var/<path>). Its items come from a
  variable specification, from key=value arguments, or both; the arguments
  win. A specification is "-" (standard input, in the -in format) or
  @file (HCL or JSON by its extension .hcl or .json, else -in); drover var
  init writes an example. <path> and -namespace, when given, win over the
  specification's (and reset its indexes).

  A value is a string, @file for the file's contents, - for standard
  input's, or \@... for a string that starts with @. An empty value
  (key=) removes the item.

  Without -force, the write is a check-and-set: it succeeds only if the
  variable's modify index is the -check-index given, else the
  specification's modify_index, else 0, which only a new variable has.
  Updating a variable that exists thus takes -check-index (what var get
  shows as Check Index) or -force. With ACLs, the token needs the
  variables write capability for the path.
` + apiOptions + `

Put options:

  -check-index=N   The modify index the variable must have (0: it must not
                   exist).
  -force           Write whatever the variable's modify index.
  -in=FORMAT       hcl or json (the default): how to read a specification
                   from standard input or from a file with neither
                   extension.` + fmt.Sprintf(varOutputOptions, "none") + `
  -verbose         Say what is read and written on standard error.`)
}

// varSpec is what var put (or var lock) read before it writes.
type varSpec struct {
	path     string // the <path> argument, "" if a specification gives it
	contents []byte // the specification, if one was given
	name     string // where the specification came from, for errors
	in       string // its format
}

func (c *varPutCommand) Run(args []string) int {
	fs := c.flags("var put", false)
	force := fs.Bool("force", false, "")
	verbose := fs.Bool("verbose", false, "")
	checkIndexStr := fs.String("check-index", "", "")
	in := fs.String("in", outJSON, "")
	out := fs.String("out", c.defaultOut(outNone), "")
	tmpl := fs.String("template", "", "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	say := func(string) {}
	if *verbose {
		say = func(msg string) { c.ui.Warn(msg) }
	}
	checkIndex, checked, err := parseCheckIndex(*checkIndexStr)
	if err != nil {
		c.ui.Error(err.Error())
		return exitError
	}
	if c.namespace == "*" {
		c.ui.Error(errWildcardNamespace)
		return exitError
	}
	args = fs.Args()
	switch {
	case len(args) == 0:
		c.ui.Error("This command takes a path or a specification, then key=value pairs")
		return exitError
	case len(args) == 1 && !isStdinArg(args[0]) && !isFileArg(args[0]):
		c.ui.Error("Must supply data: a specification (- or @file) or key=value pairs after the path")
		return exitError
	}
	if *in != outHCL && *in != outJSON {
		c.ui.Error(errInvalidInFormat)
		return exitError
	}
	if err := checkOut(*out, *tmpl, []string{outGoTemplate, outHCL, outJSON, outNone, outTable}, errInvalidOutFormat); err != nil {
		c.ui.Error(err.Error())
		return exitError
	}
	inSet := false
	fs.Visit(func(f *flag.Flag) { inSet = inSet || f.Name == "in" })

	// The first argument is the path or a specification; a specification
	// may follow a path.
	spec := varSpec{in: *in}
	stdinUsed := false
	readSpec := func(arg string) error {
		if isStdinArg(arg) {
			stdinUsed = true
			spec.name = "<stdin>"
			say(fmt.Sprintf("Reading whole %s variable specification from stdin", strings.ToUpper(spec.in)))
			b, err := io.ReadAll(c.stdin())
			if err != nil {
				return fmt.Errorf("Error reading from stdin: %w", err)
			}
			spec.contents = b
			return nil
		}
		return spec.readFile(arg[1:], inSet, say)
	}
	if isStdinArg(args[0]) || isFileArg(args[0]) {
		if err := readSpec(args[0]); err != nil {
			c.ui.Error(err.Error())
			return exitError
		}
	} else {
		spec.path = cleanVarPath(args[0])
		say(fmt.Sprintf("Writing to path %q", spec.path))
	}
	args = args[1:]
	if spec.path != "" && len(args) > 0 && (isStdinArg(args[0]) || isFileArg(args[0])) {
		if err := readSpec(args[0]); err != nil {
			c.ui.Error(err.Error())
			return exitError
		}
		args = args[1:]
	}

	v, err := c.makeVariable(spec)
	if err != nil {
		c.ui.Error(fmt.Sprintf("Failed to parse variable data: %v", err))
		return exitError
	}
	kvs, err := c.parseItemArgs(args, stdinUsed)
	if err != nil {
		c.ui.Error(fmt.Sprintf("Failed to parse K=V data: %v", err))
		return exitError
	}
	var warnings []string
	for _, kv := range kvs {
		if kv.value == "" {
			if _, ok := v.Items[kv.key]; ok {
				say(fmt.Sprintf("Removed item %q", kv.key))
				delete(v.Items, kv.key)
			} else {
				say(fmt.Sprintf("Item %q does not exist, continuing...", kv.key))
			}
			continue
		}
		if w := invalidIdentifierWarning(kv.key); w != "" {
			warnings = append(warnings, w)
		}
		v.Items[kv.key] = kv.value
	}
	if v.Path == "" {
		c.ui.Error("A variable path is required: give it as the first argument, or as path in the specification")
		return exitError
	}
	if checked {
		v.ModifyIndex = checkIndex
	}

	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	// The query's namespace and the body's agree: a specification's
	// namespace is where the variable goes unless -namespace says where.
	if v.Namespace != "" {
		cl.Namespace = v.Namespace
	}
	var written api.Variable
	if _, err := cl.Put(bg, varURL(v.Path, v.ModifyIndex, !*force), v, &written); err != nil {
		if cur, ok := casConflict(err); ok && !*force {
			c.printCASConflict(v.ModifyIndex, cur, "If you are sure you want to perform this operation, add the -force or -check-index=%d flag before the positional arguments.")
			return exitError
		}
		return c.errorf("creating variable %q: %v", v.Path, err)
	}
	success := fmt.Sprintf("Created variable %q with modify index %d", written.Path, written.ModifyIndex)
	if len(warnings) > 0 {
		c.ui.Warn("Variable Warnings:\n* " + strings.Join(warnings, "\n* "))
	}
	if *out == outNone {
		c.ui.Output(success)
		return exitOK
	}
	say(success)
	return c.printVariable(&written, *out, *tmpl)
}

// readFile reads the specification file name (an @file argument without
// its @): HCL or JSON by its extension .hcl or .json, else in the format
// s.in if -in was given.
func (s *varSpec) readFile(name string, inSet bool, say func(string)) error {
	s.name = name
	switch filepath.Ext(name) {
	case ".json":
		s.in = outJSON
	case ".hcl":
		s.in = outHCL
	default:
		if !inSet {
			return fmt.Errorf("Unable to determine format of %s; Use the -in flag to specify it.", name)
		}
	}
	say(fmt.Sprintf("Reading whole %s variable specification from %q", strings.ToUpper(s.in), name))
	b, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("Error reading %q: %w", name, err)
	}
	s.contents = b
	return nil
}

func isFileArg(a string) bool  { return strings.HasPrefix(a, "@") }
func isStdinArg(a string) bool { return a == "-" }

// makeVariable makes the variable to write (var put) or lock (var lock)
// from the specification, if any, the <path> argument and -namespace. A
// path or namespace other than the specification's makes another
// variable: its indexes and times are reset, as a copy's.
func (m *meta) makeVariable(spec varSpec) (*api.Variable, error) {
	v := &api.Variable{}
	if len(spec.contents) > 0 {
		var err error
		switch spec.in {
		case outJSON:
			if err = json.Unmarshal(spec.contents, v); err != nil {
				return nil, fmt.Errorf("error unmarshaling json: %w", err)
			}
		case outHCL:
			if v, err = parseVariableSpec(spec.contents, spec.name); err != nil {
				return nil, fmt.Errorf("error parsing hcl: %w", err)
			}
		}
	}
	reset := false
	if m.namespace != "" && m.namespace != v.Namespace {
		v.Namespace, reset = m.namespace, true
	}
	if spec.path != "" && spec.path != v.Path {
		v.Path, reset = spec.path, true
	}
	if reset {
		v.CreateIndex, v.CreateTime, v.ModifyIndex, v.ModifyTime = 0, 0, 0, 0
	}
	v.Path = cleanVarPath(v.Path)
	if v.Items == nil {
		v.Items = api.VariableItems{}
	}
	return v, nil
}

// specKeys are the attributes a variable specification may have.
var specKeys = []string{"namespace", "path", "create_index", "modify_index", "create_time", "modify_time", "items"}

// parseVariableSpec parses an HCL variable specification: the attributes
// specKeys names, items either an attribute (items = { k = "v" }, as var
// get -out=hcl writes) or a block (items { k = "v" }, as var init does).
func parseVariableSpec(src []byte, filename string) (*api.Variable, error) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	body := f.Body.(*hclsyntax.Body)
	v := &api.Variable{}
	for name, attr := range body.Attributes {
		val, diags := attr.Expr.Value(nil)
		if diags.HasErrors() {
			return nil, diags
		}
		var err error
		switch name {
		case "namespace":
			err = decodeSpecValue(val, cty.String, &v.Namespace)
		case "path":
			err = decodeSpecValue(val, cty.String, &v.Path)
		case "create_index":
			err = decodeSpecValue(val, cty.Number, &v.CreateIndex)
		case "modify_index":
			err = decodeSpecValue(val, cty.Number, &v.ModifyIndex)
		case "create_time":
			err = decodeSpecValue(val, cty.Number, &v.CreateTime)
		case "modify_time":
			err = decodeSpecValue(val, cty.Number, &v.ModifyTime)
		case "items":
			err = decodeSpecValue(val, cty.Map(cty.String), &v.Items)
		default:
			err = fmt.Errorf("invalid key %q; a specification has %s", name, strings.Join(specKeys, ", "))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", attr.SrcRange, name, err)
		}
	}
	for _, b := range body.Blocks {
		switch {
		case b.Type != "items":
			return nil, fmt.Errorf("%s: invalid block %q; only items may be a block", b.DefRange(), b.Type)
		case len(b.Labels) > 0 || len(b.Body.Blocks) > 0:
			return nil, fmt.Errorf("%s: the items block takes no labels and holds only key = value", b.DefRange())
		case v.Items != nil:
			return nil, fmt.Errorf("%s: items is given twice", b.DefRange())
		}
		v.Items = api.VariableItems{}
		for k, attr := range b.Body.Attributes {
			val, diags := attr.Expr.Value(nil)
			if diags.HasErrors() {
				return nil, diags
			}
			var s string
			if err := decodeSpecValue(val, cty.String, &s); err != nil {
				return nil, fmt.Errorf("%s: items: %s: %w", attr.SrcRange, k, err)
			}
			v.Items[k] = s
		}
	}
	return v, nil
}

// decodeSpecValue converts an HCL value to ty, then into dst.
func decodeSpecValue(val cty.Value, ty cty.Type, dst any) error {
	if val.IsNull() {
		return errors.New("must not be null")
	}
	conv, err := convert.Convert(val, ty)
	if err != nil {
		return fmt.Errorf("must be a %s: %w", ty.FriendlyName(), err)
	}
	return gocty.FromCtyValue(conv, dst)
}

// itemArg is one key=value argument of var put.
type itemArg struct{ key, value string }

// parseItemArgs reads the key=value arguments, in order: a value @file
// is the file's contents, - standard input's (once, and not if the
// specification came from it), \@... the string without the backslash.
func (c *varPutCommand) parseItemArgs(args []string, stdinUsed bool) ([]itemArg, error) {
	var kvs []itemArg
	for _, a := range args {
		if a == "" {
			continue
		}
		key, value, ok := strings.Cut(a, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("invalid key/value pair %q: format must be key=value", a)
		}
		switch {
		case strings.HasPrefix(value, "@"):
			b, err := os.ReadFile(value[1:])
			if err != nil {
				return nil, fmt.Errorf("invalid key/value pair %q: error reading file: %w", a, err)
			}
			value = string(b)
		case strings.HasPrefix(value, `\@`):
			value = value[1:]
		case value == "-":
			if stdinUsed {
				return nil, fmt.Errorf("invalid key/value pair %q: stdin already consumed", a)
			}
			stdinUsed = true
			b, err := io.ReadAll(c.stdin())
			if err != nil {
				return nil, fmt.Errorf("invalid key/value pair %q: %w", a, err)
			}
			value = string(b)
		}
		kvs = append(kvs, itemArg{key, value})
	}
	return kvs, nil
}

// invalidIdentifierWarning warns about a key that templates can only read
// with the index function, as Nomad's CLI does; "" for an identifier.
func invalidIdentifierWarning(key string) string {
	var bad []string
	for _, r := range key {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			if q := fmt.Sprintf(`"%c"`, r); !slices.Contains(bad, q) {
				bad = append(bad, q)
			}
		}
	}
	if len(bad) == 0 {
		return ""
	}
	slices.Sort(bad)
	return fmt.Sprintf(`"%s" contains characters [%s] that require the 'index' function for direct access in templates`, key, strings.Join(bad, ","))
}

// The files var init writes by default, as Nomad's.
const (
	defaultHCLVarSpecFile  = "spec.nv.hcl"
	defaultJSONVarSpecFile = "spec.nv.json"
)

const varSpecItemsNote = `The items map is the only strictly required part of a variable specification, since path and namespace can be set via other means. It contains the sensitive material to encrypt and store as a Nomad variable. The entire items map is encrypted and decrypted as a single unit.`

const varSpecKeysNote = `REMINDER: While keys in the items map can contain dots, using them in templates is easier when they do not. As a best practice, avoid dotted keys when possible.`

// exampleHCLVarSpec is the specification var init writes by default.
var exampleHCLVarSpec = `# A variable path can be specified in the specification file
# and will be used when writing the variable without specifying a
# path in the command or when writing JSON directly to the ` + "`/var/`" + `
# HTTP API endpoint
# path = "path/to/variable"

# The Namespace to write the variable can be included in the specification. This
# value can be overridden by specifying the "-namespace" flag on the "put"
# command.
# namespace = "default"

` + wrapIndent(varSpecItemsNote, 70, "# ") + `

` + wrapIndent(varSpecKeysNote, 70, "# ") + `
items {
  key1 = "value 1"
  key2 = "value 2"
}
`

// exampleJSONVarSpec is the specification var init -out=json writes.
const exampleJSONVarSpec = `{
  "Namespace": "default",
  "Path": "path/to/variable",
  "Items": {
    "key1": "value 1",
    "key2": "value 2"
  }
}
`

type varInitCommand struct{ *meta }

func (c *varInitCommand) Synopsis() string { return "Create an example variable specification file" }

func (c *varInitCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover var init [options] [<filename>]

  Writes an example variable specification, for var put to read, to
  <filename> (default spec.nv.hcl, or spec.nv.json with -out=json). An
  existing file is never overwritten.

Init options:

  -out=FORMAT      hcl (the default) or json.
  -quiet           Print nothing when it succeeds.`)
}

func (c *varInitCommand) Run(args []string) int {
	flags := c.flags("var init", false)
	out := flags.String("out", outHCL, "")
	quiet := flags.Bool("quiet", false, "")
	if !c.parse(flags, args, c.Help()) || !c.args(flags, 0, 1, "no arguments or one: <filename>") {
		return exitError
	}
	name, content := defaultHCLVarSpecFile, exampleHCLVarSpec
	switch *out {
	case outHCL:
	case outJSON:
		name, content = defaultJSONVarSpecFile, exampleJSONVarSpec
	default:
		c.ui.Error(`Invalid value for "-out"; valid values are [hcl, json]`)
		return exitError
	}
	if flags.NArg() == 1 {
		name = flags.Arg(0)
	}
	if !c.writeNewFile(name, content) {
		return exitError
	}
	if !*quiet {
		if *out == outJSON {
			c.ui.Info(wrapIndent(strings.ReplaceAll(varSpecItemsNote, "items", "Items"), 70, ""))
			c.ui.Warn(wrapIndent(strings.ReplaceAll(varSpecKeysNote, "items", "Items"), 70, ""))
		}
		c.ui.Output("Example variable specification written to " + name)
	}
	return exitOK
}

// writeNewFile writes an init command's example to a new file, refusing
// one that exists, with Nomad's messages; false once it said why it could
// not.
func (m *meta) writeNewFile(name, content string) bool {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o660)
	if errors.Is(err, fs.ErrExist) {
		m.ui.Error(fmt.Sprintf("File %q already exists", name))
		return false
	}
	if err != nil {
		m.ui.Error(fmt.Sprintf("Failed to write %q: %v", name, err))
		return false
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		m.ui.Error(fmt.Sprintf("Failed to write %q: %v", name, err))
		return false
	}
	return true
}
