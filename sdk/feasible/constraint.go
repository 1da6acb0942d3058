package feasible

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/sdk"
	version "github.com/hashicorp/go-version"
)

// Checker evaluates constraints and affinities against nodes, caching
// compiled regular expressions and version constraints. A malformed regexp
// or version constraint never matches. It is not safe for concurrent use;
// a scheduler keeps one per evaluation.
type Checker struct {
	regexps  map[string]*regexp.Regexp
	versions map[string]version.Constraints
	semvers  map[string]semverConstraints
}

// NewChecker returns a Checker.
func NewChecker() *Checker {
	return &Checker{
		regexps:  map[string]*regexp.Regexp{},
		versions: map[string]version.Constraints{},
		semvers:  map[string]semverConstraints{},
	}
}

// Meets reports whether node satisfies c. Operators that depend on other
// allocations (distinct_hosts, distinct_property) are not properties of a
// node and always pass here: see DistinctHostsEnabled (a scheduler then
// skips nodes where stack.Plan's JobCount, or GroupCount for a group's
// constraint, is not zero) and DistinctProperty.
func (ch *Checker) Meets(c *sdk.Constraint, n *sdk.Node) bool {
	switch c.Operand {
	case sdk.ConstraintDistinctHosts, sdk.ConstraintDistinctProperty:
		return true
	}
	l, lok := ResolveTarget(c.LTarget, n)
	r, rok := ResolveTarget(c.RTarget, n)
	return ch.Compare(c.Operand, l, r, lok, rok)
}

// Matches reports whether node satisfies an affinity's condition.
func (ch *Checker) Matches(a *sdk.Affinity, n *sdk.Node) bool {
	l, lok := ResolveTarget(a.LTarget, n)
	r, rok := ResolveTarget(a.RTarget, n)
	return ch.Compare(a.Operand, l, r, lok, rok)
}

// Compare applies a constraint operator to resolved values; lok and rok say
// whether each side was found (a missing side resolves to ""). The semantics
// are Nomad's: "!=" compares the resolved values only, so a missing
// attribute differs from any non-empty value; ordering
// compares as integers, then floats, then strings, and the set operators
// split both sides on commas.
func (ch *Checker) Compare(operand, l, r string, lok, rok bool) bool {
	switch operand {
	case sdk.ConstraintEqual, "==", "is":
		return lok && rok && l == r
	case sdk.ConstraintNotEqual, "not":
		return l != r
	case sdk.ConstraintLess, sdk.ConstraintLessEqual, sdk.ConstraintGreater, sdk.ConstraintGreaterEqual:
		return lok && rok && compareOrdered(operand, l, r)
	case sdk.ConstraintAttributeIsSet:
		return lok
	case sdk.ConstraintAttributeIsNotSet:
		return !lok
	case sdk.ConstraintVersion:
		return lok && rok && ch.versionMatch(l, r)
	case sdk.ConstraintSemver:
		return lok && rok && ch.semverMatch(l, r)
	case sdk.ConstraintRegex:
		return lok && rok && ch.regexpMatch(l, r)
	case sdk.ConstraintSetContains, sdk.ConstraintSetContainsAll:
		return lok && rok && setContains(l, r, true)
	case sdk.ConstraintSetContainsAny:
		return lok && rok && setContains(l, r, false)
	}
	return false
}

func (ch *Checker) regexpMatch(l, r string) bool {
	re, ok := ch.regexps[r]
	if !ok {
		re, _ = regexp.Compile(r) // nil on error: never matches
		ch.regexps[r] = re
	}
	return re != nil && re.MatchString(l)
}

func (ch *Checker) versionMatch(l, r string) bool {
	vc, ok := ch.versions[r]
	if !ok {
		vc, _ = version.NewConstraint(r)
		ch.versions[r] = vc
	}
	if vc == nil {
		return false
	}
	v, err := version.NewVersion(l)
	return err == nil && vc.Check(v)
}

func (ch *Checker) semverMatch(l, r string) bool {
	sc, ok := ch.semvers[r]
	if !ok {
		sc = parseSemverConstraints(r)
		ch.semvers[r] = sc
	}
	if sc == nil {
		return false
	}
	v, err := version.NewVersion(l)
	return err == nil && sc.check(v)
}

// setContains reports whether the comma-separated set l holds every (all)
// or any element of the comma-separated set r. Elements are trimmed.
func setContains(l, r string, all bool) bool {
	has := func(want string) bool {
		for rest := l; ; {
			item, tail, more := strings.Cut(rest, ",")
			if strings.TrimSpace(item) == want {
				return true
			}
			if !more {
				return false
			}
			rest = tail
		}
	}
	for rest := r; ; {
		item, tail, more := strings.Cut(rest, ",")
		found := has(strings.TrimSpace(item))
		if all && !found {
			return false
		}
		if !all && found {
			return true
		}
		if !more {
			return all
		}
		rest = tail
	}
}

// compareOrdered compares as integers when both sides are integers, as
// floats when both are numbers, and lexically otherwise, as Nomad does.
func compareOrdered(op, l, r string) bool {
	var cmp int
	if li, err := strconv.ParseInt(l, 10, 64); err == nil {
		if ri, err := strconv.ParseInt(r, 10, 64); err == nil {
			cmp = compare(li, ri)
			return orderHolds(op, cmp)
		}
	}
	if lf, err := strconv.ParseFloat(l, 64); err == nil {
		if rf, err := strconv.ParseFloat(r, 64); err == nil {
			return orderHolds(op, compare(lf, rf))
		}
	}
	return orderHolds(op, strings.Compare(l, r))
}

func compare[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func orderHolds(op string, cmp int) bool {
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

// semverConstraints is a list of strict semantic-version comparisons, all of
// which must hold. Unlike go-version's constraints, prerelease versions are
// ordered by semver precedence and match ranges like any other version.
type semverConstraints []semverConstraint

type semverConstraint struct {
	op string
	v  *version.Version
}

// parseSemverConstraints parses "op version, op version, ..." with the
// operators =, !=, >, <, >=, <= (none means =); nil if malformed.
func parseSemverConstraints(s string) semverConstraints {
	var out semverConstraints
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		op := ""
		for _, cand := range []string{">=", "<=", "!=", ">", "<", "="} {
			if strings.HasPrefix(part, cand) {
				op = cand
				break
			}
		}
		v, err := version.NewSemver(strings.TrimSpace(part[len(op):]))
		if err != nil {
			return nil
		}
		out = append(out, semverConstraint{op: op, v: v})
	}
	return out
}

func (cs semverConstraints) check(v *version.Version) bool {
	for _, c := range cs {
		cmp := v.Compare(c.v)
		ok := false
		switch c.op {
		case "", "=":
			ok = cmp == 0
		case "!=":
			ok = cmp != 0
		case ">":
			ok = cmp > 0
		case "<":
			ok = cmp < 0
		case ">=":
			ok = cmp >= 0
		case "<=":
			ok = cmp <= 0
		}
		if !ok {
			return false
		}
	}
	return true
}
