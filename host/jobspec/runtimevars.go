package jobspec

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// runtimeRoots are variables resolved later, on a node or in a task
// (${attr.kernel.name}, ${node.unique.id}, ${meta.rack}, ${NOMAD_TASK_DIR},
// ...). The jobspec keeps them as written.
var runtimeRoots = map[string]bool{
	"attr": true, "node": true, "meta": true, "unique": true, "env": true, "device": true,
}

func isRuntimeRoot(name string) bool {
	return runtimeRoots[name] || strings.HasPrefix(name, "NOMAD_")
}

// runtimeVariables returns eval-context variables under which every
// reference to a runtime variable in body evaluates to its own source,
// "${attr.kernel.name}" to "${attr.kernel.name}".
func runtimeVariables(body hcl.Body) map[string]cty.Value {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	tree := map[string]any{}
	_ = hclsyntax.VisitAll(sb, func(n hclsyntax.Node) hcl.Diagnostics {
		expr, ok := n.(*hclsyntax.ScopeTraversalExpr)
		if !ok || !isRuntimeRoot(expr.Traversal.RootName()) {
			return nil
		}
		addTraversal(tree, expr.Traversal)
		return nil
	})
	out := make(map[string]cty.Value, len(tree))
	for k, v := range tree {
		out[k] = toValue(v)
	}
	return out
}

// addTraversal records a traversal in a tree of nested maps whose leaves
// are the traversal's source text.
func addTraversal(tree map[string]any, t hcl.Traversal) {
	var names []string
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			names = append(names, s.Name)
		case hcl.TraverseAttr:
			names = append(names, s.Name)
		default:
			// Index steps cannot be reproduced as object attributes: keep
			// the path up to here.
		}
		if _, ok := step.(hcl.TraverseIndex); ok {
			break
		}
	}
	node := tree
	for i, name := range names {
		last := i == len(names)-1
		if last {
			if _, isMap := node[name].(map[string]any); !isMap {
				node[name] = "${" + strings.Join(names, ".") + "}"
			}
			return
		}
		child, ok := node[name].(map[string]any)
		if !ok {
			child = map[string]any{}
			node[name] = child
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
