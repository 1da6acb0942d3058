package jobspec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// runtimeVars keeps references to variables the jobspec does not define as
// written: ${attr.kernel.name}, ${node.unique.id}, ${meta.rack} and
// ${NOMAD_TASK_DIR} are resolved later, on a node or in a task, so
// "${attr.kernel.name}" evaluates to "${attr.kernel.name}". Nomad's parser
// does the same for every variable other than var and local.
//
// Before an expression is evaluated, add gives each undefined root it
// refers to a value in which every path the expression uses evaluates to
// its own source text. The values are made for each expression afresh: one
// expression may use ${attr.driver.docker} and another
// ${attr.driver.docker.version}, and a value cannot be both a string and an
// object with attributes. One expression that uses both is refused
// (conflicts): its value would not be what was written.
type runtimeVars struct {
	ctx *hcl.EvalContext
	// roots are the variables of ctx that add set for the last expression.
	roots []string
}

func newRuntimeVars(ctx *hcl.EvalContext) *runtimeVars {
	return &runtimeVars{ctx: ctx}
}

// definedRoots are the variables a jobspec defines itself.
var definedRoots = map[string]bool{"var": true, "local": true}

// add defines the runtime variables expr refers to, and only those. It
// fails when expr uses one both alone and with attributes (conflicts).
func (r *runtimeVars) add(expr hcl.Expression) hcl.Diagnostics {
	for _, root := range r.roots {
		delete(r.ctx.Variables, root)
	}
	r.roots = r.roots[:0]
	tree, diags := runtimeTree(expr)
	for root, v := range tree {
		r.ctx.Variables[root] = toValue(v)
		r.roots = append(r.roots, root)
	}
	return diags
}

// runtimeTree returns the runtime variables expr uses as a tree for
// toValue, and an error for each variable it also uses with attributes
// (${attr.driver.docker} beside ${attr.driver.docker.version}): no value
// can stand for both, and the longer path wins the tree.
func runtimeTree(expr hcl.Expression) (map[string]any, hcl.Diagnostics) {
	tree := map[string]any{}
	var diags hcl.Diagnostics
	reported := map[string]bool{}
	for _, t := range expr.Variables() {
		if definedRoots[t.RootName()] {
			continue
		}
		if short, long := addTraversal(tree, t); short != "" && !reported[short] {
			reported[short] = true
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Runtime variables that cannot be kept together",
				Detail: fmt.Sprintf("This expression uses %s and %s. A runtime variable is kept as written for the node or task to resolve, "+
					"but not in an expression that also uses a longer path under it: use them in separate arguments.", short, long),
				Subject: expr.Range().Ptr()})
		}
	}
	return tree, diags
}

// context returns a child of the parse's context in which the runtime
// variables exprs refer to stand for themselves, for expressions that are
// evaluated later and not through add (dynamic blocks' for_each and
// labels, which dynblock evaluates). Iterators of dynamic blocks that
// exprs use are given stand-ins too, which their iterations shadow. It
// fails when one of exprs uses a variable both alone and with attributes;
// across expressions, the longer path wins.
func (r *runtimeVars) context(exprs []hcl.Expression) (*hcl.EvalContext, hcl.Diagnostics) {
	tree := map[string]any{}
	var diags hcl.Diagnostics
	for _, expr := range exprs {
		_, ds := runtimeTree(expr)
		diags = append(diags, ds...)
		for _, t := range expr.Variables() {
			if !definedRoots[t.RootName()] {
				addTraversal(tree, t)
			}
		}
	}
	ctx := r.ctx.NewChild()
	ctx.Variables = make(map[string]cty.Value, len(tree))
	for root, v := range tree {
		ctx.Variables[root] = toValue(v)
	}
	return ctx, diags
}

// addTraversal records a traversal in a tree of nested maps whose leaves
// are the traversal's source text.
// Attribute steps and string index steps (env["a.b"]) are followed; other
// index steps cannot be reproduced as object attributes, so the path stops
// before them. When the tree already holds a path that is a prefix of
// t's, or longer than t's under it, the longer one wins, and the texts of
// the shorter and the longer path are returned.
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
