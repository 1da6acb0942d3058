package jobspec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
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
// copy a dynamic block makes evaluates the same tree). HCL's JSON syntax
// leaves no tree to rename (jsonValue).

// runtimeBody is a body whose expressions, and those of the blocks within,
// keep runtime variables as written (runtimeExpr). src is the source of the
// file in native syntax, where references are read as written.
type runtimeBody struct {
	body hcl.Body
	src  []byte
}

var _ hcl.Body = runtimeBody{}

func (b runtimeBody) Content(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, diags := b.body.Content(schema)
	return b.content(c), diags
}

func (b runtimeBody) PartialContent(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	c, rest, diags := b.body.PartialContent(schema)
	if rest != nil {
		rest = runtimeBody{body: rest, src: b.src}
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
		wrapped.Body = runtimeBody{body: blk.Body, src: b.src}
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
		wrapped.Expr = runtimeExpr{Expression: a.Expr, src: b.src}
		out[name] = &wrapped
	}
	return out
}

// runtimeExpr is an expression that keeps the runtime variables it refers
// to as written, each by itself.
type runtimeExpr struct {
	hcl.Expression
	src []byte
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
		out[i] = runtimeExpr{Expression: elem, src: e.src}
	}
	return out
}

func (e runtimeExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if ctx == nil {
		return e.Expression.Value(nil)
	}
	if syntax, ok := e.Expression.(hclsyntax.Expression); ok {
		return evalKeepingRuntimeVars(syntax, ctx, e.src, 0)
	}
	return jsonValue(e.Expression, ctx)
}

// evalKeepingRuntimeVars evaluates expr in ctx after renaming the
// references to variables ctx does not define. src holds expr's source,
// from byte offset base of its ranges.
func evalKeepingRuntimeVars(expr hclsyntax.Expression, ctx *hcl.EvalContext, src []byte, base int) (cty.Value, hcl.Diagnostics) {
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
	return expr.Value(ctx)
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

// jsonValue evaluates an expression in HCL's JSON syntax, whose strings
// hcl parses afresh at each evaluation, leaving no tree to rename: the
// roots of the references to variables ctx does not define get values in
// which every path the expression uses evaluates to its own text. One JSON
// expression that uses a runtime variable and a longer path under it is
// refused (runtimeTree).
func jsonValue(expr hcl.Expression, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	tree, diags := runtimeTree(expr, ctx)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	if len(tree) > 0 {
		ctx = ctx.NewChild()
		ctx.Variables = make(map[string]cty.Value, len(tree))
		for root, v := range tree {
			ctx.Variables[root] = toValue(v)
		}
	}
	return expr.Value(ctx)
}

// runtimeTree returns the references of expr to variables ctx does not
// define as a tree for toValue, and an error for each variable expr also
// uses with attributes (${attr.driver.docker} beside
// ${attr.driver.docker.version}): no value can stand for both.
func runtimeTree(expr hcl.Expression, ctx *hcl.EvalContext) (map[string]any, hcl.Diagnostics) {
	tree := map[string]any{}
	var diags hcl.Diagnostics
	reported := map[string]bool{}
	for _, t := range expr.Variables() {
		if defines(ctx, t.RootName()) {
			continue
		}
		if short, long := addTraversal(tree, t); short != "" && !reported[short] {
			reported[short] = true
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Runtime variables that cannot be kept together",
				Detail: fmt.Sprintf("This expression uses %s and %s. A runtime variable is kept as written for the node or task to resolve, "+
					"but in HCL's JSON syntax not in an expression that also uses a longer path under it: "+
					"use them in separate arguments, or write the jobspec in HCL's native syntax.", short, long),
				Subject: expr.Range().Ptr()})
		}
	}
	return tree, diags
}

// addTraversal records a traversal in a tree of nested maps whose leaves
// are the traversal's text. Attribute steps and string index steps
// (env["a.b"]) are followed; other index steps cannot be reproduced as
// object attributes, so the path stops before them. When the tree already
// holds a path that is a prefix of t's, or longer than t's under it, the
// longer one wins, and the texts of the shorter and the longer path are
// returned.
func addTraversal(tree map[string]any, t hcl.Traversal) (short, long string) {
	var keys []string
	var text strings.Builder
	text.WriteString("${")
loop:
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			keys = append(keys, s.Name)
			text.WriteString(s.Name)
		case hcl.TraverseAttr:
			keys = append(keys, s.Name)
			text.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() != cty.String || s.Key.IsNull() || !s.Key.IsKnown() {
				break loop
			}
			keys = append(keys, s.Key.AsString())
			fmt.Fprintf(&text, "[%q]", s.Key.AsString())
		default:
			break loop
		}
	}
	text.WriteString("}")
	node := tree
	for i, key := range keys {
		if i == len(keys)-1 {
			switch v := node[key].(type) {
			case nil:
				node[key] = text.String()
			case map[string]any:
				return text.String(), firstLeaf(v)
			}
			break
		}
		switch v := node[key].(type) {
		case map[string]any:
			node = v
			continue
		case string:
			// A shorter path was recorded as a leaf: the longer one wins,
			// as an object cannot also be a string.
			short = v
		}
		child := map[string]any{}
		node[key] = child
		node = child
	}
	if short != "" {
		long = text.String()
	}
	return short, long
}

// firstLeaf returns a leaf of a non-empty tree of addTraversal's.
func firstLeaf(tree map[string]any) string {
	for _, v := range tree {
		if s, ok := v.(string); ok {
			return s
		}
		return firstLeaf(v.(map[string]any))
	}
	return ""
}

func toValue(v any) cty.Value {
	switch t := v.(type) {
	case string:
		return cty.StringVal(t)
	case map[string]any:
		attrs := make(map[string]cty.Value, len(t))
		for k, c := range t {
			attrs[k] = toValue(c)
		}
		return cty.ObjectVal(attrs)
	}
	return cty.NilVal
}
