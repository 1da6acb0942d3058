package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
)

// The specification files of namespace apply and node pool apply: HCL
// (native syntax, or HCL's JSON syntax for a file named *.json, as
// Nomad's hclsimple reads them, or one that holds a JSON object) or, with
// -json, the API's JSON. Bad input is reported as located diagnostics,
// "file:line:col: error: ...", with the line.

// specFile is a specification as read, with the name its diagnostics
// give it.
type specFile struct {
	name string
	src  []byte
}

// stdinSpecName names standard input in diagnostics.
const stdinSpecName = "<stdin>"

// readSpecFile reads path, or standard input for "-".
func (m *meta) readSpecFile(path string) (*specFile, error) {
	src, err := m.readInput(path)
	if err != nil {
		return nil, err
	}
	name := path
	if path == "-" {
		name = stdinSpecName
	}
	return &specFile{name: name, src: src}, nil
}

// specError is a specification's problems, rendered by String with the
// lines they are on.
type specError struct {
	file  *specFile
	diags hcl.Diagnostics
}

func (e *specError) Error() string { return e.diags.Error() }

// String renders the diagnostics as jobspecs' are, each with its line.
func (e *specError) String() string {
	return jobspec.FormatDiagnostics(map[string][]byte{e.file.name: e.file.src}, e.diags)
}

// diagError returns diags as an error if they hold one, else nil; they
// are sorted by where they are, the first problem in the file first.
func (f *specFile) diagError(diags hcl.Diagnostics) error {
	if !diags.HasErrors() {
		return nil
	}
	at := func(d *hcl.Diagnostic) int {
		if d.Subject == nil {
			return -1
		}
		return d.Subject.Start.Byte
	}
	diags = slices.Clone(diags)
	slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int { return cmp.Compare(at(a), at(b)) })
	return &specError{file: f, diags: diags}
}

// errorAt returns an error located at rng.
func (f *specFile) errorAt(rng hcl.Range, summary, detail string) error {
	return f.diagError(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}})
}

// isJSON reports whether the file is JSON: named *.json, or a JSON
// object (which HCL's native syntax never starts with).
func (f *specFile) isJSON() bool {
	return strings.HasSuffix(f.name, ".json") || bytes.HasPrefix(bytes.TrimSpace(f.src), []byte("{"))
}

// hclBody parses the file as HCL: HCL's JSON syntax if it is JSON, the
// native syntax otherwise.
func (f *specFile) hclBody() (hcl.Body, error) {
	var (
		file  *hcl.File
		diags hcl.Diagnostics
	)
	if f.isJSON() {
		file, diags = hcljson.Parse(f.src, f.name)
	} else {
		file, diags = hclsyntax.ParseConfig(f.src, f.name, hcl.InitialPos)
	}
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	return file.Body, nil
}

// decodeAttrs decodes the attributes of content named in dst into the
// values dst holds (a *string, *bool, *[]string...): HCL's conversions
// apply (a number is a string's "8080"), a value of another type is
// reported where it is.
func decodeAttrs(content *hcl.BodyContent, dst map[string]any) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for name, attr := range content.Attributes {
		if v, ok := dst[name]; ok {
			diags = append(diags, gohcl.DecodeExpression(attr.Expr, nil, v)...)
		}
	}
	return diags
}

// decodeMap decodes a block of name = "value" attributes (meta) into a
// map; nil when the block is absent.
func decodeMap(block *hcl.Block) (map[string]string, hcl.Diagnostics) {
	if block == nil {
		return nil, nil
	}
	attrs, diags := block.Body.JustAttributes()
	out := make(map[string]string, len(attrs))
	for name, attr := range attrs {
		var v string
		diags = append(diags, gohcl.DecodeExpression(attr.Expr, nil, &v)...)
		out[name] = v
	}
	return out, diags
}

// oneBlock returns the block of type typ in content, nil if there is
// none; a second one is an error where it is.
func oneBlock(content *hcl.BodyContent, typ string) (*hcl.Block, hcl.Diagnostics) {
	blocks := content.Blocks.OfType(typ)
	switch len(blocks) {
	case 0:
		return nil, nil
	case 1:
		return blocks[0], nil
	}
	return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s block", typ),
		Detail:  fmt.Sprintf("Only one %s block is allowed. Another was defined at %s.", typ, blocks[0].DefRange),
		Subject: blocks[1].DefRange.Ptr()}}
}

// decodeJSON decodes the file as one JSON value into v, as Nomad's CLI
// reads an object in the API's JSON (field names in any case, unknown
// ones ignored); a syntax error, a value of the wrong type or data after
// the value is reported where it is.
func (f *specFile) decodeJSON(what string, v any) error {
	dec := json.NewDecoder(bytes.NewReader(f.src))
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		err = errors.New("no JSON value: the input is empty")
	}
	// The decoder's offsets are just after the byte at fault, but for
	// data after the value, which starts after the space that follows it.
	offset := dec.InputOffset()
	if err == nil {
		if rest := bytes.TrimLeft(f.src[offset:], " \t\r\n"); len(rest) > 0 {
			offset = int64(len(f.src)-len(rest)) + 1
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
		err = fmt.Errorf("%s: cannot use a JSON %s as a %s", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.ErrUnexpectedEOF):
		offset = int64(len(f.src)) + 1
	}
	pos := posAt(f.src, int(offset)-1)
	return f.errorAt(hcl.Range{Filename: f.name, Start: pos, End: hcl.Pos{Line: pos.Line, Column: pos.Column + 1, Byte: pos.Byte + 1}},
		"Invalid "+what+" JSON", fmt.Sprintf("%v.", err))
}

// posAt is the line and column of the byte at offset in src.
func posAt(src []byte, offset int) hcl.Pos {
	offset = min(max(offset, 0), len(src))
	line := 1 + bytes.Count(src[:offset], []byte("\n"))
	col := offset - bytes.LastIndexByte(src[:offset], '\n')
	return hcl.Pos{Line: line, Column: col, Byte: offset}
}

// printSpecError prints a specification's problems: located, with their
// lines, if they are a specError; then hint, if any.
func (m *meta) printSpecError(prefix string, err error, hint string) int {
	var se *specError
	if errors.As(err, &se) {
		m.ui.Error(prefix + ":\n" + se.String())
	} else {
		m.errorf("%s: %v", prefix, err)
	}
	if hint != "" {
		m.ui.Error(hint)
	}
	return exitError
}
