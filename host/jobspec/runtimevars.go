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
// refers to a value in which every path used so far evaluates to its own
// source text.
type runtimeVars struct {
	ctx  *hcl.EvalContext
	tree map[string]any
}

func newRuntimeVars(ctx *hcl.EvalContext) *runtimeVars {
	return &runtimeVars{ctx: ctx, tree: map[string]any{}}
}

// definedRoots are the variables a jobspec defines itself.
var definedRoots = map[string]bool{"var": true, "local": true}

// add defines the runtime variables expr refers to.
func (r *runtimeVars) add(expr hcl.Expression) {
	for _, t := range expr.Variables() {
		root := t.RootName()
		if definedRoots[root] {
			continue
		}
		if addTraversal(r.tree, t) {
			r.ctx.Variables[root] = toValue(r.tree[root])
		}
	}
}

// addTraversal records a traversal in a tree of nested maps whose leaves
// are the traversal's source text, and reports whether the tree changed.
// Attribute steps and string index steps (env["a.b"]) are followed; other
// index steps cannot be reproduced as object attributes, so the path stops
// before them.
func addTraversal(tree map[string]any, t hcl.Traversal) bool {
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
			if _, exists := node[key]; exists {
				return false
			}
			node[key] = text.String()
			return true
		}
		child, ok := node[key].(map[string]any)
		if !ok {
			// A shorter path was recorded as a leaf: the longer one wins, as
			// an object cannot also be a string.
			child = map[string]any{}
			node[key] = child
		}
		node = child
	}
	return false
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
