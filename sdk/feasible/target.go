package feasible

import (
	"strings"

	"github.com/drover-sched/drover/sdk"
)

// ResolveTarget resolves a constraint target against a node, as Nomad does:
// "${node.unique.id}", "${node.unique.name}", "${node.datacenter}",
// "${node.class}", "${node.pool}", "${attr.X}", "${meta.X}", or a literal
// (anything not starting with "${"). ok is false when the target names
// something the node does not have.
func ResolveTarget(target string, n *sdk.Node) (string, bool) {
	if len(target) < 2 || target[0] != '$' || target[1] != '{' {
		return target, true
	}
	switch target {
	case "${node.unique.id}":
		return n.ID, true
	case "${node.datacenter}":
		return n.Datacenter, true
	case "${node.unique.name}":
		return n.Name, true
	case "${node.class}":
		return n.NodeClass, true
	case "${node.pool}":
		return n.NodePool, true
	}
	if key, ok := strings.CutPrefix(target, "${attr."); ok {
		v, ok := n.Attributes[strings.TrimSuffix(key, "}")]
		return v, ok
	}
	if key, ok := strings.CutPrefix(target, "${meta."); ok {
		v, ok := n.Meta[strings.TrimSuffix(key, "}")]
		return v, ok
	}
	return "", false
}

// Escapes reports whether a constraint depends on more than a node's
// computed class: it names a unique property (${node.unique.*},
// ${attr.unique.*}, ${meta.unique.*}), which sdk.Node.ComputeClass leaves
// out. Feasibility decided by such a constraint cannot be cached per class.
func Escapes(c *sdk.Constraint) bool {
	return escapesTarget(c.LTarget) || escapesTarget(c.RTarget)
}

func escapesTarget(t string) bool {
	return strings.HasPrefix(t, "${") && strings.Contains(t, "unique.")
}

// EscapedConstraints reports whether any of the constraints escapes.
func EscapedConstraints(cs []*sdk.Constraint) bool {
	for _, c := range cs {
		if c.Operand != sdk.ConstraintDistinctHosts && c.Operand != sdk.ConstraintDistinctProperty && Escapes(c) {
			return true
		}
	}
	return false
}
