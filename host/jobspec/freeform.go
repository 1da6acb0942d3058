package jobspec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// freeform reads a block without a schema (a task's config, a scaling
// policy, an Envoy escape hatch) into plain Go values, as Nomad does:
//
//   - an attribute is its value, except that an object written in place
//     (`labels = { a = "b" }`) becomes a list holding that object;
//   - nested blocks of one type become a list of objects, and a labelled
//     block nests its content under its labels
//     (`check "c" { ... }` is `check = [{ c = [{ ... }] }]`);
//   - dynamic blocks inside are expanded like literal ones (Nomad leaves
//     them as a "dynamic" entry no driver accepts, hashicorp/nomad#18506).
//
// These are the shapes task drivers expect from HCL1 days.
func (d *decoder) freeform(b *hcl.Block) map[string]any {
	if syn, ok := d.syntax[b.DefRange]; ok {
		return d.freeformBody(syn, b.Body)
	}
	// JSON syntax: attributes only.
	attrs := d.anyAttributes(b.Body)
	out := make(map[string]any, len(attrs))
	for name, a := range attrs {
		if v, ok := d.freeformValue(a.Expr); ok {
			out[name] = v
		}
	}
	return out
}

// freeformValue evaluates expr into the Go value a free-form block holds,
// reporting any problem where expr is written.
func (d *decoder) freeformValue(expr hcl.Expression) (any, bool) {
	val, diags := d.eval(expr)
	d.add(diags...)
	if diags.HasErrors() {
		return nil, false
	}
	v, err := goValue(val)
	if err != nil {
		d.invalidValue(expr, err)
		return nil, false
	}
	return v, true
}

// freeformBody reads body, whose native syntax is syn. The syntax gives the
// schema; the values come from body, so that inside a dynamic block's
// content they see its iterator (`config { args = [group.value] }`).
func (d *decoder) freeformBody(syn *hclsyntax.Body, body hcl.Body) map[string]any {
	if !d.b.spend(perBlock, body.MissingItemRange()) {
		return map[string]any{}
	}
	schema := &hcl.BodySchema{}
	for name := range syn.Attributes {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: name})
	}
	seen := map[string]bool{}
	for _, b := range syn.Blocks {
		typ, labels := b.Type, len(b.Labels)
		if typ == "dynamic" && labels == 1 {
			typ, labels = b.Labels[0], dynamicLabels(b)
		}
		if !seen[typ] {
			seen[typ] = true
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: typ, LabelNames: labelNames(labels)})
		}
	}
	content, diags := body.Content(schema)
	d.add(diags...)
	if content == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(content.Attributes)+len(content.Blocks))
	for name, a := range content.Attributes {
		v, ok := d.freeformValue(a.Expr)
		if !ok {
			continue
		}
		if _, isObject := syn.Attributes[name].Expr.(*hclsyntax.ObjectConsExpr); isObject {
			v = []any{v}
		}
		out[name] = v
	}
	for _, b := range content.Blocks {
		nested, ok := d.syntax[b.DefRange]
		if !ok {
			continue
		}
		var v any = d.freeformBody(nested, b.Body)
		for i := len(b.Labels) - 1; i >= 0; i-- {
			v = map[string]any{b.Labels[i]: []any{v}}
		}
		list, _ := out[b.Type].([]any)
		out[b.Type] = append(list, v)
	}
	return out
}

// dynamicLabels returns how many labels the blocks a dynamic block
// generates have, as its labels argument is written: a list of n
// expressions, or none. A labels argument computed otherwise counts as
// none, and dynblock reports the mismatch if it gives labels.
func dynamicLabels(b *hclsyntax.Block) int {
	if a, ok := b.Body.Attributes["labels"]; ok {
		if tuple, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
			return len(tuple.Exprs)
		}
	}
	return 0
}

func labelNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("label%d", i)
	}
	return out
}

// anyAttributes is body.JustAttributes, except that inside a dynamic
// block's content the expressions see the block's iterator: hcl's dynblock
// passes JustAttributes through to the content as written, but wraps what
// Content returns (`env { REGION = group.value }`).
func (d *decoder) anyAttributes(body hcl.Body) hcl.Attributes {
	raw, diags := body.JustAttributes()
	if diags.HasErrors() || len(raw) == 0 {
		d.add(diags...)
		return raw
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	if content := d.attributes(body, names); content != nil {
		return content.Attributes
	}
	return raw
}
