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
// object with attributes.
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

// add defines the runtime variables expr refers to, and only those.
func (r *runtimeVars) add(expr hcl.Expression) {
	for _, root := range r.roots {
		delete(r.ctx.Variables, root)
	}
	r.roots = r.roots[:0]
	tree := map[string]any{}
	for _, t := range expr.Variables() {
		if !definedRoots[t.RootName()] {
			addTraversal(tree, t)
		}
	}
	for root, v := range tree {
		r.ctx.Variables[root] = toValue(v)
		r.roots = append(r.roots, root)
	}
}

// context returns a child of the parse's context in which the runtime
// variables exprs refer to stand for themselves, for expressions that are
// evaluated later and not through add (dynamic blocks' for_each and
// labels, which dynblock evaluates). Iterators of dynamic blocks that
// exprs use are given stand-ins too, which their iterations shadow.
func (r *runtimeVars) context(exprs []hcl.Expression) *hcl.EvalContext {
	tree := map[string]any{}
	for _, expr := range exprs {
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
	return ctx
}

// addTraversal records a traversal in a tree of nested maps whose leaves
// are the traversal's source text.
// Attribute steps and string index steps (env["a.b"]) are followed; other
// index steps cannot be reproduced as object attributes, so the path stops
// before them.
func addTraversal(tree map[string]any, t hcl.Traversal) {
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
			if _, exists := node[key]; !exists {
				node[key] = text.String()
			}
			return
		}
		child, ok := node[key].(map[string]any)
		if !ok {
			// A shorter path was recorded as a leaf: the longer one wins, as
			// an object cannot also be a string. Only one expression that
			// uses both (${attr.a}-${attr.a.b}) meets this.
			child = map[string]any{}
			node[key] = child
		}
		node = child
	}
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
