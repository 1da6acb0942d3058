package jobspec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// The decoder fills Nomad's API job types from HCL bodies by their `hcl`
// struct tags, which are Nomad's published schema of the job language:
// `name,optional` is an attribute, `name` a required one, `name,block` a
// block (a struct, a list of structs, a map of labelled structs, a map of
// strings, or a free-form map) and `,label` a block label. Blocks whose
// rules the tags cannot express (constraint and affinity shorthands, task
// scaling policies, ports, ...) have hooks in hooks.go.
//
// Every attribute and block decoded is recorded under its path (see Path)
// so validation errors can point at source.

// decoder decodes one job.
type decoder struct {
	ctx *hcl.EvalContext
	// native is set for HCL native syntax (not JSON): there, string maps such
	// as meta and env may also be written as attributes (meta = {...}),
	// which JSON syntax cannot tell from blocks.
	native bool
	// syntax maps the range of every native block to its syntax tree, for
	// free-form blocks whose nested blocks have no schema. The blocks a
	// dynamic block generates carry the dynamic block's range, so that range
	// maps to the syntax of its content.
	syntax map[hcl.Range]*hclsyntax.Body
	ranges map[string]hcl.Range
	specs  map[reflect.Type]*structSpec
	diags  hcl.Diagnostics
	// b is the parse's evaluation budget: each block decoded spends from
	// it, as a dynamic block can make any number.
	b *budget
}

func newDecoder(ctx *hcl.EvalContext, file *hcl.File, b *budget) *decoder {
	d := &decoder{ctx: ctx, b: b, ranges: map[string]hcl.Range{}, specs: map[reflect.Type]*structSpec{},
		syntax: map[hcl.Range]*hclsyntax.Body{}}
	if body, ok := file.Body.(*hclsyntax.Body); ok {
		d.native = true
		_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
			if b, ok := n.(*hclsyntax.Block); ok {
				d.syntax[b.DefRange()] = b.Body
				if b.Type == "dynamic" {
					for _, c := range b.Body.Blocks {
						if c.Type == "content" {
							d.syntax[b.DefRange()] = c.Body
						}
					}
				}
			}
			return nil
		})
	}
	return d
}

func (d *decoder) add(diags ...*hcl.Diagnostic) { d.diags = append(d.diags, diags...) }

func (d *decoder) record(p Path, r hcl.Range) { d.ranges[p.key()] = r }

// fieldKind is what a tagged field is in HCL.
type fieldKind int

const (
	kindAttr fieldKind = iota
	kindRequired
	kindBlock
	kindLabel
)

type fieldSpec struct {
	name  string
	kind  fieldKind
	index []int
	typ   reflect.Type
}

// structSpec is the HCL schema of one struct type.
type structSpec struct {
	fields []fieldSpec
	labels []fieldSpec
}

func (d *decoder) spec(t reflect.Type) *structSpec {
	if s, ok := d.specs[t]; ok {
		return s
	}
	s := &structSpec{}
	d.specs[t] = s
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok || !f.IsExported() {
			continue
		}
		name, kind, _ := strings.Cut(tag, ",")
		fs := fieldSpec{name: name, index: f.Index, typ: f.Type}
		switch kind {
		case "optional":
			fs.kind = kindAttr
		case "":
			// As in gohcl, a pointer field is never required.
			fs.kind = kindRequired
			if f.Type.Kind() == reflect.Pointer {
				fs.kind = kindAttr
			}
		case "block":
			fs.kind = kindBlock
		case "label":
			fs.kind = kindLabel
			s.labels = append(s.labels, fs)
			continue
		default:
			continue
		}
		s.fields = append(s.fields, fs)
	}
	return s
}

// labelNames returns the label names of blocks decoded into type t: the
// struct's label fields, or one label (the key) for maps of blocks.
func (d *decoder) labelNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	keyed := false
	if t.Kind() == reflect.Map {
		keyed = true
		t = t.Elem()
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for _, l := range d.spec(t).labels {
		names = append(names, cmpOr(l.name, "name"))
	}
	if keyed && len(names) == 0 {
		names = []string{"name"}
	}
	return names
}

// extras are schema items a hook handles itself.
type extras struct {
	attrs  []hcl.AttributeSchema
	blocks []hcl.BlockHeaderSchema
	// skip names tagged fields the hook decodes instead of the generic code.
	skip map[string]bool
}

// decodeStruct decodes body into the struct v (addressable) at path p. It
// returns the content of the extra schema items for the caller's hook.
func (d *decoder) decodeStruct(body hcl.Body, v reflect.Value, p Path, ex extras) *hcl.BodyContent {
	if !d.b.spend(perBlock, body.MissingItemRange()) {
		return &hcl.BodyContent{}
	}
	spec := d.spec(v.Type())
	schema := &hcl.BodySchema{Attributes: ex.attrs, Blocks: ex.blocks}
	for _, f := range spec.fields {
		if ex.skip[f.name] {
			continue
		}
		switch f.kind {
		case kindAttr, kindRequired:
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name, Required: f.kind == kindRequired})
		case kindBlock:
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: f.name, LabelNames: d.labelNames(f.typ)})
			if d.native && isStringMap(f.typ) {
				// meta = { ... } as well as meta { ... }
				schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name})
			}
		}
	}
	content, diags := body.Content(schema)
	d.add(diags...)
	for _, f := range spec.fields {
		if ex.skip[f.name] {
			continue
		}
		fv := v.FieldByIndex(f.index)
		switch f.kind {
		case kindAttr, kindRequired:
			if a, ok := content.Attributes[f.name]; ok {
				d.setAttr(a, fv, p.Attr(f.name))
			}
		case kindBlock:
			blocks := content.Blocks.OfType(f.name)
			if a, ok := content.Attributes[f.name]; ok {
				if len(blocks) > 0 {
					d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s block", f.name),
						Detail:  fmt.Sprintf("%s is defined both as an attribute (at %s) and as a block.", f.name, a.NameRange),
						Subject: blocks[0].DefRange.Ptr()})
					continue
				}
				d.setAttr(a, fv, p.Attr(f.name))
				continue
			}
			d.setBlocks(blocks, fv, p, f.name)
		}
	}
	return content
}

// setLabels fills the struct v's label fields from b.
func (d *decoder) setLabels(b *hcl.Block, v reflect.Value) {
	for i, l := range d.spec(v.Type()).labels {
		if i >= len(b.Labels) {
			return
		}
		fv := v.FieldByIndex(l.index)
		if fv.Kind() == reflect.Pointer {
			fv.Set(reflect.New(fv.Type().Elem()))
			fv = fv.Elem()
		}
		fv.SetString(b.Labels[i])
	}
}

// setBlocks decodes the blocks of one type into the field fv.
func (d *decoder) setBlocks(blocks hcl.Blocks, fv reflect.Value, p Path, typ string) {
	if len(blocks) == 0 {
		return
	}
	t := fv.Type()
	switch {
	case t.Kind() == reflect.Slice:
		for _, b := range blocks {
			bp := p.Item(typ, fv.Len())
			if len(b.Labels) > 0 {
				bp = p.Block(typ, b.Labels[0])
			}
			elem := reflect.New(t.Elem()).Elem()
			target := elem
			if target.Kind() == reflect.Pointer {
				target.Set(reflect.New(t.Elem().Elem()))
				target = target.Elem()
			}
			d.decodeBlock(b, target, bp)
			fv.Set(reflect.Append(fv, elem))
		}
	case t.Kind() == reflect.Map && isFreeform(t):
		if !d.single(blocks) {
			return
		}
		d.record(p.Attr(typ), blocks[0].DefRange)
		fv.Set(reflect.ValueOf(d.freeform(blocks[0])))
	case t.Kind() == reflect.Map && (isStringMap(t) || t.Elem() == reflect.TypeOf([]string(nil))):
		if !d.single(blocks) {
			return
		}
		d.record(p.Attr(typ), blocks[0].DefRange)
		d.setMapBlock(blocks[0].Body, fv, p.Attr(typ))
	case t.Kind() == reflect.Map:
		if fv.IsNil() {
			fv.Set(reflect.MakeMap(t))
		}
		for _, b := range blocks {
			key := b.Labels[0]
			if fv.MapIndex(reflect.ValueOf(key)).IsValid() {
				d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s block", typ),
					Detail: fmt.Sprintf("A %s block labelled %q is already defined.", typ, key), Subject: b.DefRange.Ptr()})
				continue
			}
			elem := reflect.New(t.Elem()).Elem()
			target := elem
			if target.Kind() == reflect.Pointer {
				target.Set(reflect.New(t.Elem().Elem()))
				target = target.Elem()
			}
			d.decodeBlock(b, target, p.Block(typ, key))
			fv.SetMapIndex(reflect.ValueOf(key), elem)
		}
	default:
		if !d.single(blocks) {
			return
		}
		target := fv
		if t.Kind() == reflect.Pointer {
			fv.Set(reflect.New(t.Elem()))
			target = fv.Elem()
		}
		d.decodeBlock(blocks[0], target, p.Attr(typ))
	}
}

// single reports whether there is one block, and complains otherwise.
func (d *decoder) single(blocks hcl.Blocks) bool {
	if len(blocks) == 1 {
		return true
	}
	d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s block", blocks[0].Type),
		Detail:  fmt.Sprintf("Only one %s block is allowed here; another was defined at %s.", blocks[0].Type, blocks[0].DefRange),
		Subject: blocks[1].DefRange.Ptr()})
	return false
}

// decodeBlock decodes one block into the struct target, through the type's
// hook if it has one.
func (d *decoder) decodeBlock(b *hcl.Block, target reflect.Value, p Path) {
	d.record(p, b.DefRange)
	d.setLabels(b, target)
	if h := hookFor(target.Type()); h != nil {
		h(d, b.Body, target, p)
		return
	}
	d.decodeStruct(b.Body, target, p, extras{})
}

// setMapBlock decodes a block of attributes into a map of strings (meta,
// env) or of string lists (a check's header), at path p. An attribute
// that is null is left out, as null entries are in the attribute form
// (meta = {...}). Each entry is recorded under its name, so that a problem
// with one (an artifact's checksum option) points at it.
func (d *decoder) setMapBlock(body hcl.Body, fv reflect.Value, p Path) {
	attrs := d.anyAttributes(body)
	if fv.IsNil() {
		fv.Set(reflect.MakeMapWithSize(fv.Type(), len(attrs)))
	}
	for name, a := range attrs {
		val, ok := d.value(a.Expr)
		if !ok || val.IsNull() {
			continue
		}
		d.record(p.Attr(name), a.Expr.Range())
		ev := reflect.New(fv.Type().Elem()).Elem()
		if d.assign(a.Expr, val, ev) {
			fv.SetMapIndex(reflect.ValueOf(name), ev)
		}
	}
}

// setAttr evaluates attribute a into fv and records its range. It reports
// whether it succeeded.
func (d *decoder) setAttr(a *hcl.Attribute, fv reflect.Value, p Path) bool {
	d.record(p, a.Expr.Range())
	return d.setValue(a.Expr, fv)
}

var durationType = reflect.TypeOf(time.Duration(0))

// setValue evaluates expr and stores it in fv, converting it to fv's type;
// null leaves fv unset. It reports whether it succeeded.
func (d *decoder) setValue(expr hcl.Expression, fv reflect.Value) bool {
	val, ok := d.value(expr)
	if !ok {
		return false
	}
	if val.IsNull() {
		return true
	}
	return d.assign(expr, val, fv)
}

// value evaluates expr, which must be known when the job is parsed. It
// reports whether it succeeded.
func (d *decoder) value(expr hcl.Expression) (cty.Value, bool) {
	val, diags := d.eval(expr)
	d.add(diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	if !val.IsWhollyKnown() {
		d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown value",
			Detail: "The value cannot be known when the job is parsed.", Subject: expr.Range().Ptr()})
		return cty.NilVal, false
	}
	return val, true
}

// assign stores val, the value of expr, in fv, converting it to fv's type.
// It reports whether it succeeded.
func (d *decoder) assign(expr hcl.Expression, val cty.Value, fv reflect.Value) bool {
	if err := assign(val, fv); err != nil {
		d.invalidValue(expr, err)
		return false
	}
	return true
}

// invalidValue reports that the value of expr cannot be used: err says why.
func (d *decoder) invalidValue(expr hcl.Expression, err error) {
	d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value",
		Detail: sentence(err.Error()), Subject: expr.Range().Ptr(), Expression: expr, EvalContext: d.ctx})
}

// eval evaluates expr, which keeps the runtime variables it refers to as
// written (runtimeExpr).
func (d *decoder) eval(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	return expr.Value(d.ctx)
}

// assign converts val to fv's type and stores it. Within a map of typed
// values (meta = { a = null }) a null entry is left out; elsewhere, a null
// within a value (a list element) is an error, as in Nomad.
func assign(val cty.Value, fv reflect.Value) error {
	t := fv.Type()
	if val.IsNull() && t.Kind() != reflect.Interface {
		return errors.New("null is not allowed here")
	}
	if t.Kind() == reflect.Pointer {
		elem := reflect.New(t.Elem())
		if err := assign(val, elem.Elem()); err != nil {
			return err
		}
		fv.Set(elem)
		return nil
	}
	if t == durationType {
		dur, err := durationOf(val)
		if err != nil {
			return err
		}
		fv.SetInt(int64(dur))
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		s, err := convert.Convert(val, cty.String)
		if err != nil {
			return errors.New(errText(err))
		}
		fv.SetString(s.AsString())
	case reflect.Bool:
		b, err := convert.Convert(val, cty.Bool)
		if err != nil {
			return errors.New(errText(err))
		}
		fv.SetBool(b.True())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := wholeNumber(val)
		if err != nil {
			return err
		}
		i, acc := n.Int64()
		if acc != big.Exact || fv.OverflowInt(i) {
			bits := fv.Type().Bits()
			return fmt.Errorf("%s is out of range for this argument (it must be a whole number from %d to %d)",
				n.String(), int64(-1)<<(bits-1), uint64(1)<<(bits-1)-1)
		}
		fv.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := wholeNumber(val)
		if err != nil {
			return err
		}
		u, acc := n.Uint64()
		if acc != big.Exact || n.Sign() < 0 || fv.OverflowUint(u) {
			return fmt.Errorf("%s is out of range for this argument (it must be a whole number from 0 up)", n.String())
		}
		fv.SetUint(u)
	case reflect.Float32, reflect.Float64:
		n, err := convert.Convert(val, cty.Number)
		if err != nil {
			return errors.New(errText(err))
		}
		f, err := finiteFloat(n.AsBigFloat())
		if err != nil {
			return err
		}
		fv.SetFloat(f)
	case reflect.Slice:
		if !val.CanIterateElements() || val.Type().IsMapType() || val.Type().IsObjectType() {
			return fmt.Errorf("a list is required, not %s", val.Type().FriendlyName())
		}
		out := reflect.MakeSlice(t, 0, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			elem := reflect.New(t.Elem()).Elem()
			if err := assign(ev, elem); err != nil {
				return fmt.Errorf("element %d: %w", out.Len(), err)
			}
			out = reflect.Append(out, elem)
		}
		fv.Set(out)
	case reflect.Map:
		if !val.Type().IsMapType() && !val.Type().IsObjectType() {
			return fmt.Errorf("a map is required, not %s", val.Type().FriendlyName())
		}
		out := reflect.MakeMapWithSize(t, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			if ev.IsNull() && t.Elem().Kind() != reflect.Interface {
				continue
			}
			elem := reflect.New(t.Elem()).Elem()
			if t.Elem().Kind() == reflect.Interface {
				gv, err := goValue(ev)
				if err != nil {
					return fmt.Errorf("%s: %w", k.AsString(), err)
				}
				if gv != nil {
					elem.Set(reflect.ValueOf(gv))
				}
			} else if err := assign(ev, elem); err != nil {
				return fmt.Errorf("%s: %w", k.AsString(), err)
			}
			out.SetMapIndex(reflect.ValueOf(k.AsString()), elem)
		}
		fv.Set(out)
	case reflect.Interface:
		v, err := goValue(val)
		if err != nil {
			return err
		}
		if v != nil {
			fv.Set(reflect.ValueOf(v))
		}
	default:
		return fmt.Errorf("values of type %s cannot be set here", t)
	}
	return nil
}

func wholeNumber(val cty.Value) (*big.Float, error) {
	n, err := convert.Convert(val, cty.Number)
	if err != nil {
		return nil, errors.New(errText(err))
	}
	bf := n.AsBigFloat()
	if !bf.IsInt() {
		return nil, fmt.Errorf("a whole number is required, not %s", bf.Text('g', -1))
	}
	return bf, nil
}

// durationOf reads a duration: a string Go's time.ParseDuration accepts
// ("30s", "1h30m") or a number of nanoseconds, as Nomad does.
func durationOf(val cty.Value) (time.Duration, error) {
	switch val.Type() {
	case cty.String:
		dur, err := time.ParseDuration(val.AsString())
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (use a number and a unit, such as \"30s\" or \"5m\")", val.AsString())
		}
		return dur, nil
	case cty.Number:
		n, err := wholeNumber(val)
		if err != nil {
			return 0, err
		}
		i, acc := n.Int64()
		if acc != big.Exact {
			return 0, fmt.Errorf("%s nanoseconds is out of range", n.String())
		}
		return time.Duration(i), nil
	}
	return 0, fmt.Errorf("a duration is required (such as \"30s\"), not %s", val.Type().FriendlyName())
}

// goValue converts a value to plain Go values as Nomad keeps them in
// free-form maps: strings, bools, int (or int64, or float64 when not whole),
// []any and map[string]any. A number no float64 holds is an error.
func goValue(v cty.Value) (any, error) {
	if v.IsNull() || !v.IsKnown() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Bool:
		return v.True(), nil
	case t == cty.Number:
		bf := v.AsBigFloat()
		if i, acc := bf.Int64(); acc == big.Exact {
			if int64(int(i)) == i {
				return int(i), nil
			}
			return i, nil
		}
		return finiteFloat(bf)
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			ge, err := goValue(e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", len(out), err)
			}
			out = append(out, ge)
		}
		return out, nil
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			ge, err := goValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k.AsString(), err)
			}
			out[k.AsString()] = ge
		}
		return out, nil
	}
	return nil, nil
}

// finiteFloat converts n to a float64, refusing a number too large for one
// (1e400, or the infinity of pow(10, 400)): kept as an infinity, it would
// make the job unencodable as JSON, and so fail far from its source with
// no line to point at.
func finiteFloat(n *big.Float) (float64, error) {
	f, _ := n.Float64()
	if math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s is out of range (a number here must fit a 64-bit float, at most about 1.8e308)", n.Text('g', 10))
	}
	return f, nil
}

// sentence capitalises s and ends it with a period, as HCL's diagnostics
// read.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func errText(err error) string {
	if pe, ok := err.(cty.PathError); ok {
		return pe.Error()
	}
	return err.Error()
}

func isStringMap(t reflect.Type) bool {
	return t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String
}

func isFreeform(t reflect.Type) bool {
	return t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Interface
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
