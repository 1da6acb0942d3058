// Package feasible decides whether a node can run a task group: node
// readiness, datacenters, drivers and constraints.
package feasible

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/sdk"
	version "github.com/hashicorp/go-version"
)

// ResolveTarget resolves a constraint target against a node: "${attr.X}",
// "${meta.X}", "${node.unique.id}", "${node.unique.name}",
// "${node.datacenter}", "${node.class}", "${node.pool}", or a literal. ok is
// false when the target names something the node does not have.
func ResolveTarget(target string, n *sdk.Node) (string, bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	key := target[2 : len(target)-1]
	switch {
	case key == "node.unique.id":
		return n.ID, true
	case key == "node.unique.name":
		return n.Name, true
	case key == "node.datacenter":
		return n.Datacenter, true
	case key == "node.class":
		return n.NodeClass, n.NodeClass != ""
	case key == "node.pool":
		return n.NodePool, true
	case strings.HasPrefix(key, "attr."):
		v, ok := n.Attributes[key[len("attr."):]]
		return v, ok
	case strings.HasPrefix(key, "meta."):
		v, ok := n.Meta[key[len("meta."):]]
		return v, ok
	}
	return "", false
}

// Checker evaluates constraints, caching compiled regexps and versions.
// It is not safe for concurrent use.
type Checker struct {
	regexps  map[string]*regexp.Regexp
	versions map[string]version.Constraints
}

// NewChecker returns a Checker.
func NewChecker() *Checker {
	return &Checker{regexps: map[string]*regexp.Regexp{}, versions: map[string]version.Constraints{}}
}

// Meets reports whether node satisfies c. Operators that depend on other
// allocations (distinct_hosts, distinct_property) are not node properties
// and always pass here.
func (ch *Checker) Meets(c *sdk.Constraint, n *sdk.Node) bool {
	switch c.Operand {
	case sdk.ConstraintDistinctHosts, sdk.ConstraintDistinctProperty:
		return true
	}
	l, lok := ResolveTarget(c.LTarget, n)
	r, rok := ResolveTarget(c.RTarget, n)
	switch c.Operand {
	case sdk.ConstraintAttributeIsSet:
		return lok
	case sdk.ConstraintAttributeIsNotSet:
		return !lok
	case sdk.ConstraintNotEqual, "not":
		return !lok || !rok || l != r
	}
	if !lok || !rok {
		return false
	}
	switch c.Operand {
	case sdk.ConstraintEqual, "==", "is", "":
		return l == r
	case sdk.ConstraintLess, sdk.ConstraintLessEqual, sdk.ConstraintGreater, sdk.ConstraintGreaterEqual:
		return compareOrdered(c.Operand, l, r)
	case sdk.ConstraintRegex:
		re, ok := ch.regexps[r]
		if !ok {
			var err error
			if re, err = regexp.Compile(r); err != nil {
				re = nil
			}
			ch.regexps[r] = re
		}
		return re != nil && re.MatchString(l)
	case sdk.ConstraintVersion, sdk.ConstraintSemver:
		vc, ok := ch.versions[r]
		if !ok {
			var err error
			if vc, err = version.NewConstraint(r); err != nil {
				vc = nil
			}
			ch.versions[r] = vc
		}
		if vc == nil {
			return false
		}
		v, err := version.NewVersion(l)
		return err == nil && vc.Check(v)
	case sdk.ConstraintSetContains, sdk.ConstraintSetContainsAll:
		have := splitSet(l)
		for _, want := range strings.Split(r, ",") {
			if !have[strings.TrimSpace(want)] {
				return false
			}
		}
		return true
	case sdk.ConstraintSetContainsAny:
		have := splitSet(l)
		for _, want := range strings.Split(r, ",") {
			if have[strings.TrimSpace(want)] {
				return true
			}
		}
		return false
	}
	return false
}

func splitSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		m[strings.TrimSpace(p)] = true
	}
	return m
}

// compareOrdered compares numerically when both sides are numbers and
// lexically otherwise, as Nomad does.
func compareOrdered(op, l, r string) bool {
	lf, lerr := strconv.ParseFloat(l, 64)
	rf, rerr := strconv.ParseFloat(r, 64)
	var cmp int
	if lerr == nil && rerr == nil {
		switch {
		case lf < rf:
			cmp = -1
		case lf > rf:
			cmp = 1
		}
	} else {
		cmp = strings.Compare(l, r)
	}
	switch op {
	case sdk.ConstraintLess:
		return cmp < 0
	case sdk.ConstraintLessEqual:
		return cmp <= 0
	case sdk.ConstraintGreater:
		return cmp > 0
	case sdk.ConstraintGreaterEqual:
		return cmp >= 0
	}
	return false
}
