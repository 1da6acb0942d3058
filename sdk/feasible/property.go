package feasible

import (
	"fmt"
	"strconv"

	"github.com/drover-sched/drover/sdk"
)

// OtherValue is the bucket spread targets put the values they do not name
// in (Nomad's implicit target "*").
const OtherValue = "*"

// PropertyCounts counts a job's live allocations (all of them, or one task
// group's) per value of a node property such as "${meta.rack}". It serves
// distinct_property (at most N allocations per value) and spread (how far
// each value is from its share). Counts start from the state and follow the
// plan being built through Add, so a scheduler never recounts.
//
// Live means neither stopped by the servers nor finished on its node: an
// allocation the servers stopped does not count, even while its node still
// runs it, as in Nomad v1.6.1's property sets (scheduler/propertyset.go
// skips terminal allocations). distinct_hosts and job anti-affinity, which
// Nomad reads from the node's proposed allocations, count it until its node
// reports it finished (see stack.Plan).
type PropertyCounts struct {
	// Attribute is the property target, e.g. "${meta.rack}".
	Attribute string
	// Group restricts counting to one task group; "" counts the whole job.
	Group   string
	targets map[string]bool
	counts  map[string]int
}

// NewPropertyCounts counts the live allocations of job (of group only,
// unless group is "") per value of attribute. When targets is not
// empty, values outside it count under OtherValue.
func NewPropertyCounts(state sdk.State, job *sdk.Job, attribute, group string, targets []string) *PropertyCounts {
	p := &PropertyCounts{Attribute: attribute, Group: group, counts: map[string]int{}}
	if len(targets) > 0 {
		p.targets = make(map[string]bool, len(targets))
		for _, t := range targets {
			p.targets[t] = true
		}
	}
	if state == nil || job == nil {
		return p
	}
	for _, a := range state.AllocsByJob(job.Namespace, job.ID) {
		if a.TerminalStatus() || (group != "" && a.TaskGroup != group) {
			continue
		}
		if n := state.Node(a.NodeID); n != nil {
			p.Add(n, 1)
		}
	}
	return p
}

// Value returns node's (bucketed) value of the property, and whether the
// node has the property at all.
func (p *PropertyCounts) Value(n *sdk.Node) (string, bool) {
	v, ok := ResolveTarget(p.Attribute, n)
	if !ok {
		return "", false
	}
	return p.bucket(v), true
}

func (p *PropertyCounts) bucket(v string) string {
	if p.targets == nil || p.targets[v] {
		return v
	}
	return OtherValue
}

// Count returns how many allocations use value (already bucketed).
func (p *PropertyCounts) Count(value string) int { return p.counts[value] }

// Add counts delta more allocations (negative: fewer) on node's value. A
// count never drops below zero.
func (p *PropertyCounts) Add(n *sdk.Node, delta int) {
	v, ok := p.Value(n)
	if !ok {
		return
	}
	c := p.counts[v] + delta
	if c <= 0 {
		delete(p.counts, v)
		return
	}
	p.counts[v] = c
}

// Counts returns the counts per value. Do not modify it.
func (p *PropertyCounts) Counts() map[string]int { return p.counts }

// Matches reports whether an allocation of task group tg is counted.
func (p *PropertyCounts) Matches(tg string) bool { return p.Group == "" || p.Group == tg }

// DistinctProperty is a distinct_property constraint: at most Allowed
// allocations per value of the property.
type DistinctProperty struct {
	*PropertyCounts
	Allowed int
	err     error
}

// NewDistinctProperty builds the check for constraint c, counting the job's
// allocations (group "" for a job-level constraint). RTarget is the allowed
// count (default 1); a malformed one fails every node with the reason.
func NewDistinctProperty(state sdk.State, job *sdk.Job, c *sdk.Constraint, group string) *DistinctProperty {
	d := &DistinctProperty{PropertyCounts: NewPropertyCounts(state, job, c.LTarget, group, nil), Allowed: 1}
	if c.RTarget != "" {
		n, err := strconv.ParseUint(c.RTarget, 10, 31)
		if err != nil {
			d.err = fmt.Errorf("failed to convert RTarget %q to a count", c.RTarget)
		}
		d.Allowed = int(n)
	}
	return d
}

// Check returns "" when one more allocation may use node's value, or the
// reason as Nomad reports it.
func (d *DistinctProperty) Check(n *sdk.Node) string {
	if d.err != nil {
		return d.err.Error()
	}
	v, ok := d.Value(n)
	if !ok {
		return fmt.Sprintf("missing property %q", d.Attribute)
	}
	if used := d.Count(v); used >= d.Allowed {
		return fmt.Sprintf("distinct_property: %s=%s used by %d allocs", d.Attribute, v, used)
	}
	return ""
}

// DistinctHostsEnabled reports whether the constraints ask for distinct
// hosts: a distinct_hosts constraint whose RTarget is empty, true, or not a
// boolean. The job's constraints ask for one allocation of the job per
// node, a group's for one allocation of the group: what a node holds is
// stack.Plan's JobCount or GroupCount.
func DistinctHostsEnabled(cs []*sdk.Constraint) bool {
	for _, c := range cs {
		if c.Operand != sdk.ConstraintDistinctHosts {
			continue
		}
		if c.RTarget == "" {
			return true
		}
		on, err := strconv.ParseBool(c.RTarget)
		return err != nil || on
	}
	return false
}
