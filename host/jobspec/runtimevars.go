package jobspec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Runtime variables are kept as written: ${attr.kernel.name},
// ${node.unique.id}, ${meta.rack} and ${NOMAD_TASK_DIR} are resolved later,
// on a node or in a task, so "${attr.kernel.name}" evaluates to
// "${attr.kernel.name}". Nomad's parser does the same for every reference
// to a variable that is not defined where it is evaluated (var, local, and
// the iterators of dynamic blocks and for expressions are): each evaluates
// to its own text, whatever else the expression uses.
//
// Nomad does it with a fork of HCL that calls back on undefined variables.
// Drover uses upstream HCL, so the bodies of the job and its locals are
// wrapped (runtimeBody) and their expressions resolve each reference by
// itself when they are evaluated (runtimeExpr): every reference whose root
// the evaluation context does not define is renamed, in the parse's own
// syntax tree, to a variable named by the reference's text and standing for
// it. "${attr.driver.docker} ${attr.driver.docker.version}" then refers to
// the variables "${attr.driver.docker}" and "${attr.driver.docker.version}",
// as no single value of attr could stand for both (a string has no
// attributes). The names cannot clash with a jobspec's own, which are
// identifiers; a tree renamed once is the same when evaluated again (each
// copy a dynamic block makes evaluates the same tree). hcl parses the
// strings of HCL's JSON syntax afresh at each evaluation, leaving no tree
// to rename, so jsonValue evaluates JSON expressions itself.

// runtimeBody is a body whose expressions, and those of the blocks within,
// keep runtime variables as written (runtimeExpr). src is the source of the
// file in native syntax, where references are read as written.
type runtimeBody struct {
	body hcl.Body
	src  []byte
	b    *budget
}

var _ hcl.Body = runtimeBody{}

func (b runtimeBody) Content(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, diags := b.body.Content(schema)
	return b.content(c), diags
}

func (b runtimeBody) PartialContent(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	c, rest, diags := b.body.PartialContent(schema)
	if rest != nil {
		rest = runtimeBody{body: rest, src: b.src, b: b.b}
	}
	return b.content(c), rest, diags
}

func (b runtimeBody) JustAttributes() (hcl.Attributes, hcl.Diagnostics) {
	attrs, diags := b.body.JustAttributes()
	return b.attributes(attrs), diags
}

func (b runtimeBody) MissingItemRange() hcl.Range { return b.body.MissingItemRange() }

func (b runtimeBody) content(c *hcl.BodyContent) *hcl.BodyContent {
	if c == nil {
		return nil
	}
	out := &hcl.BodyContent{Attributes: b.attributes(c.Attributes), MissingItemRange: c.MissingItemRange}
	for _, blk := range c.Blocks {
		wrapped := *blk
		wrapped.Body = runtimeBody{body: blk.Body, src: b.src, b: b.b}
		out.Blocks = append(out.Blocks, &wrapped)
	}
	return out
}

func (b runtimeBody) attributes(attrs hcl.Attributes) hcl.Attributes {
	if attrs == nil {
		return nil
	}
	out := make(hcl.Attributes, len(attrs))
	for name, a := range attrs {
		wrapped := *a
		wrapped.Expr = runtimeExpr{Expression: a.Expr, src: b.src, b: b.b}
		out[name] = &wrapped
	}
	return out
}

// runtimeExpr is an expression that keeps the runtime variables it refers
// to as written, each by itself. Its evaluation spends from b.
type runtimeExpr struct {
	hcl.Expression
	src []byte
	b   *budget
}

// UnwrapExpression lets hcl's static analysis (hcl.AbsTraversalForExpr
// for a dynamic block's iterator) see the expression as written.
func (e runtimeExpr) UnwrapExpression() hcl.Expression { return e.Expression }

// ExprList returns the elements of a list written in place, each keeping
// runtime variables as written: dynblock evaluates a dynamic block's labels
// one by one (labels = ["${node.class}"]).
func (e runtimeExpr) ExprList() []hcl.Expression {
	elems, diags := hcl.ExprList(e.Expression)
	if diags.HasErrors() {
		return nil
	}
	out := make([]hcl.Expression, len(elems))
	for i, elem := range elems {
		out[i] = runtimeExpr{Expression: elem, src: e.src, b: e.b}
	}
	return out
}

func (e runtimeExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if ctx == nil {
		return e.Expression.Value(nil)
	}
	if syntax, ok := e.Expression.(hclsyntax.Expression); ok {
		return evalKeepingRuntimeVars(syntax, ctx, e.src, 0, e.b)
	}
	return jsonValue(e.Expression, ctx, e.b)
}

// evalKeepingRuntimeVars evaluates expr in ctx after renaming the
// references to variables ctx does not define. src holds expr's source,
// from byte offset base of its ranges. The evaluation, and the value, are
// spent from b; expr's tree is metered already (parseSource, jsonValue).
func evalKeepingRuntimeVars(expr hclsyntax.Expression, ctx *hcl.EvalContext, src []byte, base int, b *budget) (cty.Value, hcl.Diagnostics) {
	if b.spent() {
		b.locate(expr.Range())
		return cty.DynamicVal, nil
	}
	vars := map[string]cty.Value{}
	undefined := map[hcl.Range]bool{}
	for _, t := range expr.Variables() {
		switch root := t.RootName(); {
		case isStandIn(root):
			// Renamed at an earlier evaluation of the same tree.
			vars[root] = cty.StringVal(root)
		case !defines(ctx, root):
			undefined[t.SourceRange()] = true
		}
	}
	if len(undefined) > 0 {
		_ = hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
			st, ok := n.(*hclsyntax.ScopeTraversalExpr)
			if !ok || !undefined[st.Traversal.SourceRange()] {
				return nil
			}
			// A reference whose text is not in src is left undefined, for
			// HCL to report; the parse gives src for every tree it wraps.
			if text, ok := runtimeText(src, base, st.Traversal.SourceRange()); ok {
				st.Traversal = hcl.Traversal{hcl.TraverseRoot{Name: text, SrcRange: st.Traversal.SourceRange()}}
				vars[text] = cty.StringVal(text)
			}
			return nil
		})
	}
	if len(vars) > 0 {
		ctx = ctx.NewChild()
		ctx.Variables = vars
	}
	v, diags := expr.Value(ctx)
	if !b.spendValue(v, expr.Range()) {
		return cty.DynamicVal, nil
	}
	return v, diags
}

// defines reports whether ctx, or a context it is a child of, defines the
// variable name.
func defines(ctx *hcl.EvalContext, name string) bool {
	for ; ctx != nil; ctx = ctx.Parent() {
		if _, ok := ctx.Variables[name]; ok {
			return true
		}
	}
	return false
}

// isStandIn reports whether a variable is a renamed runtime reference:
// its name is text starting with "${", which no identifier does.
func isStandIn(name string) bool { return strings.HasPrefix(name, "${") }

// runtimeText returns the text that a runtime reference at rng stands for,
// read in src (which starts at byte base of the ranges), as Nomad keeps it:
// an interpolation that opens with the reference keeps its own text
// ("${ NOMAD_ALLOC_ID }" stays so, spaces and all); a reference written
// outside one, or followed by more in the interpolation, is written as one
// ("${attr.kernel.name}" for attr.kernel.name). Index steps are kept as
// written (${attr.list[0]}, ${meta["rack.id"]}).
func runtimeText(src []byte, base int, rng hcl.Range) (string, bool) {
	start, end := rng.Start.Byte-base, rng.End.Byte-base
	if start < 0 || end > len(src) || start >= end {
		return "", false
	}
	open := start
	for open > 0 && src[open-1] == ' ' {
		open--
	}
	if open < 2 || src[open-2] != '$' || src[open-1] != '{' {
		return "${" + string(src[start:end]) + "}", true
	}
	open -= 2
	closing := end
	for closing < len(src) && src[closing] == ' ' {
		closing++
	}
	if closing < len(src) && src[closing] == '}' {
		return string(src[open : closing+1]), true
	}
	return string(src[open:end]) + "}", true
}

// jsonValue evaluates an expression in HCL's JSON syntax as hcl's JSON
// parser does (strings are templates, and so are the keys of objects),
// except that each string keeps the runtime variables it refers to as
// written: the strings are parsed here, from the same positions, and their
// trees renamed.
func jsonValue(expr hcl.Expression, ctx *hcl.EvalContext, b *budget) (cty.Value, hcl.Diagnostics) {
	if l, ok := expr.(interface{ ExprList() []hcl.Expression }); ok {
		if elems := l.ExprList(); elems != nil {
			var diags hcl.Diagnostics
			vals := make([]cty.Value, 0, len(elems))
			for _, e := range elems {
				v, ds := jsonValue(e, ctx, b)
				diags = append(diags, ds...)
				vals = append(vals, v)
			}
			return cty.TupleVal(vals), diags
		}
	}
	if m, ok := expr.(interface{ ExprMap() []hcl.KeyValuePair }); ok {
		if pairs := m.ExprMap(); pairs != nil {
			return jsonObject(pairs, ctx, b)
		}
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() || val.IsNull() || val.Type() != cty.String {
		return val, diags
	}
	rng := expr.Range()
	// From after the opening quote, as hcl's JSON parser parses it: escapes
	// before a reference shift its range in the file as they do there, but
	// not its text, which is read in the string.
	start := hcl.Pos{Line: rng.Start.Line, Column: rng.Start.Column + 1, Byte: rng.Start.Byte + 1}
	src := []byte(val.AsString())
	tmpl, diags := hclsyntax.ParseTemplate(src, rng.Filename, start)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	b.meter(tmpl)
	return evalKeepingRuntimeVars(tmpl, ctx, src, start.Byte, b)
}

// jsonObject evaluates the pairs of a JSON object, keys and values.
func jsonObject(pairs []hcl.KeyValuePair, ctx *hcl.EvalContext, b *budget) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	attrs := make(map[string]cty.Value, len(pairs))
	defined := make(map[string]hcl.Range, len(pairs))
	known := true
	for _, pair := range pairs {
		key, keyDiags := jsonValue(pair.Key, ctx, b)
		val, valDiags := jsonValue(pair.Value, ctx, b)
		diags = append(diags, keyDiags...)
		diags = append(diags, valDiags...)
		if keyDiags.HasErrors() {
			continue
		}
		keyRange := pair.Key.Range()
		key, err := convert.Convert(key, cty.String)
		switch {
		case err != nil:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid object key expression",
				Detail: fmt.Sprintf("Cannot use this expression as an object key: %s.", err), Subject: keyRange.Ptr()})
			continue
		case key.IsNull():
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid object key expression",
				Detail: "Cannot use null value as an object key.", Subject: keyRange.Ptr()})
			continue
		case !key.IsKnown():
			known = false
			continue
		}
		name := key.AsString()
		if prev, ok := defined[name]; ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate object attribute",
				Detail: fmt.Sprintf("An attribute named %q was already defined at %s.", name, prev), Subject: keyRange.Ptr()})
			continue
		}
		attrs[name] = val
		defined[name] = keyRange
	}
	if !known {
		return cty.DynamicVal, diags
	}
	return cty.ObjectVal(attrs), diags
}
