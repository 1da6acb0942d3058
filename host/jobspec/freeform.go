package jobspec

import (
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
//     (`check "c" { ... }` is `check = [{ c = [{ ... }] }]`).
//
// These are the shapes task drivers expect from HCL1 days.
func (d *decoder) freeform(b *hcl.Block) map[string]any {
	if body, ok := d.syntax[b.DefRange]; ok {
		return d.freeformBody(body)
	}
	// JSON syntax, or a block made by a dynamic block: attributes only.
	attrs, diags := b.Body.JustAttributes()
	d.add(diags...)
	out := make(map[string]any, len(attrs))
	for name, a := range attrs {
		val, diags := d.eval(a.Expr)
		d.add(diags...)
		if !diags.HasErrors() {
			out[name] = goValue(val)
		}
	}
	return out
}

func (d *decoder) freeformBody(body *hclsyntax.Body) map[string]any {
	out := make(map[string]any, len(body.Attributes)+len(body.Blocks))
	for name, a := range body.Attributes {
		val, diags := d.eval(a.Expr)
		d.add(diags...)
		if diags.HasErrors() {
			continue
		}
		v := goValue(val)
		if _, isObject := a.Expr.(*hclsyntax.ObjectConsExpr); isObject {
			v = []any{v}
		}
		out[name] = v
	}
	for _, b := range body.Blocks {
		var v any = d.freeformBody(b.Body)
		for i := len(b.Labels) - 1; i >= 0; i-- {
			v = map[string]any{b.Labels[i]: []any{v}}
		}
		list, _ := out[b.Type].([]any)
		out[b.Type] = append(list, v)
	}
	return out
}
