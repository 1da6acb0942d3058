package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// Job is a job as it is submitted: Nomad's API job, in which an unset field
// is nil (several defaults depend on whether a field was set at all), plus
// Drover's additions. Its JSON is Nomad's API job JSON with the additions
// as extra fields.
type Job struct {
	api.Job

	// Scheduler names the scheduler plugin that runs the job; empty or nil
	// means the built-in scheduler for the job's type. Drover's addition
	// (`scheduler = "NAME"` in a jobspec).
	Scheduler *string `json:",omitempty"`

	// ConsulToken and VaultToken are sent by Nomad's clients up to 1.7
	// (Nomad's API has dropped them since) and may be written in Nomad 1.6
	// jobspecs (consul_token, vault_token): accepted and ignored, as Drover
	// has no Consul or Vault integration to give them to.
	ConsulToken *string `json:",omitempty"`
	VaultToken  *string `json:",omitempty"`
}

// DecodeJSON decodes a job in Nomad's API JSON: a bare job, or an object
// whose only field is "Job" (what `drover job inspect` and `nomad job
// inspect` print). Decoding is strict: an unknown field, a value of the
// wrong type or trailing data is an error, located in path.
func DecodeJSON(path string, src []byte) (*Job, hcl.Diagnostics) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(src, &probe); err != nil {
		return nil, jsonDiagnostics(path, src, err, 0)
	}
	body, base := src, 0
	if raw, ok := probe["Job"]; ok && len(probe) == 1 {
		body = raw
		base = bytes.Index(src, raw)
	}
	var job Job
	if err := DecodeStrict(bytes.NewReader(body), &job); err != nil {
		if key, off, ok := unknownField(body, reflect.TypeOf(job)); ok {
			err = &OffsetError{Offset: off, Err: fmt.Errorf("json: unknown field %q", key)}
		}
		return nil, jsonDiagnostics(path, src, err, base)
	}
	return &job, nil
}

// unknownField finds the first object key in src that type t has no field
// for (as encoding/json matches names: exactly, then ignoring case), and
// the offset at which the key starts, so the error can be located.
func unknownField(src []byte, t reflect.Type) (string, int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var found string
	var at int64
	var walk func(t reflect.Type) error
	walk = func(t reflect.Type) error {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		delim, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch delim {
		case '[':
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				elem = t.Elem()
			}
			for dec.More() {
				if err := walk(elem); err != nil {
					return err
				}
			}
		case '{':
			fields := jsonFields(t)
			for dec.More() {
				// Where the key starts in src, as readJSONNode finds it: its
				// decoded form can be shorter or longer than its source
				// (escapes, invalid UTF-8), so it cannot be counted back
				// from the end of the token.
				keyAt := int64(skipJSONSpace(src, int(dec.InputOffset())))
				tok, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := tok.(string)
				var next reflect.Type
				switch {
				case t != nil && t.Kind() == reflect.Map:
					next = t.Elem()
				case t != nil && t.Kind() == reflect.Struct:
					ft, ok := fields[key]
					if !ok {
						ft, ok = fields[strings.ToLower(key)]
					}
					if !ok {
						found, at = key, keyAt
						return errFound
					}
					next = ft
				}
				if err := walk(next); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	if err := walk(t); errors.Is(err, errFound) {
		return found, at, true
	}
	return "", 0, false
}

var errFound = errors.New("found")

// jsonFields maps the JSON names of a struct's fields (and their lower-case
// forms) to their types, with embedded structs' fields promoted.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	if t == nil || t.Kind() != reflect.Struct {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range jsonFields(ft) {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
		out[strings.ToLower(name)] = f.Type
	}
	return out
}

// DecodeStrict decodes one JSON value from r into v: unknown fields and
// data after the value are errors.
func DecodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var off *OffsetError
		if !errors.As(err, &off) {
			err = &OffsetError{Offset: dec.InputOffset(), Err: err}
		}
		return err
	}
	if dec.More() {
		return &OffsetError{Offset: dec.InputOffset(), Err: errors.New("unexpected data after the JSON value")}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &OffsetError{Offset: dec.InputOffset(), Err: errors.New("unexpected data after the JSON value")}
	}
	return nil
}

// OffsetError is a JSON decoding error and the byte offset at which the
// decoder stood.
type OffsetError struct {
	Offset int64
	Err    error
}

func (e *OffsetError) Error() string { return e.Err.Error() }
func (e *OffsetError) Unwrap() error { return e.Err }

// jsonDiagnostics turns a JSON decoding error into a diagnostic located at
// the offending byte (base is where the decoded value starts in src).
func jsonDiagnostics(path string, src []byte, err error, base int) hcl.Diagnostics {
	offset := int64(-1)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var off *OffsetError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	case errors.As(err, &off):
		offset = off.Offset
	}
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid job JSON", Detail: fmt.Sprintf("%v.", err)}
	if offset >= 0 {
		pos := positionAt(src, base+int(offset))
		d.Subject = &hcl.Range{Filename: path, Start: pos, End: hcl.Pos{Line: pos.Line, Column: pos.Column + 1, Byte: pos.Byte + 1}}
	}
	return hcl.Diagnostics{d}
}

// positionAt returns the line and column of byte offset in src.
func positionAt(src []byte, offset int) hcl.Pos {
	offset = min(max(offset, 0), len(src))
	line := 1 + bytes.Count(src[:offset], []byte("\n"))
	col := offset - bytes.LastIndexByte(src[:offset], '\n')
	return hcl.Pos{Line: line, Column: col, Byte: offset}
}
