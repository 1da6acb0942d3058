package feasible

import "github.com/drover-sched/drover/sdk"

// ClassStatus is what an evaluation knows about a computed node class.
type ClassStatus uint8

// Class statuses.
const (
	// ClassUnknown: no node of the class was checked yet.
	ClassUnknown ClassStatus = iota
	// ClassIneligible: nodes of the class fail the checks.
	ClassIneligible
	// ClassEligible: nodes of the class pass the checks.
	ClassEligible
	// ClassEscaped: the checks depend on more than the class (a constraint
	// on a unique property); every node must be checked.
	ClassEscaped
)

// Eligibility records, over one evaluation, which computed node classes a
// job and each of its task groups were feasible on. Nodes of one class share
// every property class-cached checks read, so the first node of a class
// decides for all. A blocked eval carries Classes and Escaped so that the
// host unblocks it only when a node of a useful class changes.
type Eligibility struct {
	job        map[string]ClassStatus
	jobEscaped bool
	groups     map[string]*group
	// last is the group last asked about: a selection checks one group's
	// nodes in a row, and remembering it spares a lookup per node.
	last *group
}

// group is one task group's class statuses.
type group struct {
	name    string
	classes map[string]ClassStatus
	escaped bool
	// decided holds, per class whose job and group statuses are both
	// settled, what Check returns for its nodes: one lookup instead of
	// two. It stays empty when the job's or the group's checks escaped.
	decided map[string]string
	// bySlot holds the same answers by the class's number in the state
	// (sdk.Node.Slots), for nodes that have one: an index instead of
	// hashing the class string.
	bySlot []decision
}

// decision is decided's answer for class.
type decision struct {
	class, reason string
	known         bool
}

// decide records reason as the answer for class, numbered slot (0: none).
func (g *group) decide(class string, slot int32, reason string) {
	g.decided[class] = reason
	if slot <= 0 {
		return
	}
	if int(slot) >= len(g.bySlot) {
		g.bySlot = append(g.bySlot, make([]decision, int(slot)+1-len(g.bySlot))...)
	}
	g.bySlot[slot] = decision{class: class, reason: reason, known: true}
}

// undecide forgets the answer for class.
func (g *group) undecide(class string) {
	if _, ok := g.decided[class]; !ok {
		return
	}
	delete(g.decided, class)
	for i := range g.bySlot {
		if g.bySlot[i].known && g.bySlot[i].class == class {
			g.bySlot[i] = decision{}
		}
	}
}

// group returns tg's class statuses, through the last one asked about.
func (e *Eligibility) group(tg string) *group {
	if e.last != nil && e.last.name == tg {
		return e.last
	}
	g := e.groups[tg]
	if g == nil {
		g = &group{name: tg, classes: map[string]ClassStatus{}, decided: map[string]string{}}
		e.groups[tg] = g
	}
	e.last = g
	return g
}

// NewEligibility returns the eligibility tracker for job.
func NewEligibility(job *sdk.Job) *Eligibility {
	e := &Eligibility{job: map[string]ClassStatus{}, groups: map[string]*group{}}
	if job == nil {
		return e
	}
	e.jobEscaped = EscapedConstraints(job.Constraints)
	for _, tg := range job.TaskGroups {
		escaped := EscapedConstraints(tg.Constraints)
		for _, t := range tg.Tasks {
			escaped = escaped || EscapedConstraints(t.Constraints) || (t.Resources != nil && DevicesEscape(t.Resources.Devices))
		}
		e.group(tg.Name).escaped = escaped
	}
	return e
}

// JobStatus is the job-level status of class.
func (e *Eligibility) JobStatus(class string) ClassStatus {
	if e.jobEscaped {
		return ClassEscaped
	}
	return e.job[class]
}

// SetJob records the job-level outcome for class.
func (e *Eligibility) SetJob(class string, eligible bool) {
	e.job[class] = statusOf(eligible)
	for _, g := range e.groups {
		g.undecide(class)
	}
}

// GroupStatus is the task-group-level status of class.
func (e *Eligibility) GroupStatus(tg, class string) ClassStatus {
	g := e.group(tg)
	if g.escaped {
		return ClassEscaped
	}
	return g.classes[class]
}

// SetGroup records the task-group-level outcome for class.
func (e *Eligibility) SetGroup(tg, class string, eligible bool) {
	g := e.group(tg)
	g.classes[class] = statusOf(eligible)
	g.undecide(class)
}

func statusOf(eligible bool) ClassStatus {
	if eligible {
		return ClassEligible
	}
	return ClassIneligible
}

// Escaped reports whether any constraint of the job escaped class caching.
func (e *Eligibility) Escaped() bool {
	if e.jobEscaped {
		return true
	}
	for _, g := range e.groups {
		if g.escaped {
			return true
		}
	}
	return false
}

// Classes returns every class seen and whether the job could run there: a
// class is eligible when some task group is, and ineligible when the job
// failed there or no group passed.
func (e *Eligibility) Classes() map[string]bool {
	out := map[string]bool{}
	for _, g := range e.groups {
		for class, st := range g.classes {
			switch st {
			case ClassEligible:
				out[class] = true
			case ClassIneligible:
				if _, ok := out[class]; !ok {
					out[class] = false
				}
			}
		}
	}
	for class, st := range e.job {
		switch st {
		case ClassEligible:
			if _, ok := out[class]; !ok {
				out[class] = true
			}
		case ClassIneligible:
			out[class] = false
		}
	}
	return out
}

// Check runs the job's and the group's node checks on n, consulting and
// filling the class cache. It returns "" when n is feasible, or the name of
// the failed check as Nomad reports it in AllocMetric.ConstraintFiltered
// ("computed class ineligible" when the class is known to fail).
func (e *Eligibility) Check(ch *Checker, g *GroupChecks, n *sdk.Node) string {
	class := n.ComputedClass
	gs := e.group(g.name)
	_, slot := n.Slots()
	if slot > 0 && int(slot) < len(gs.bySlot) {
		// The class string is checked, as a number means a class only
		// within the state that gave it; the nodes of a class in sdk/mirror
		// share one string, so this compares pointers.
		if d := &gs.bySlot[slot]; d.known && d.class == class {
			return d.reason
		}
	}
	if reason, ok := gs.decided[class]; ok {
		return reason
	}
	reason := e.check(ch, g, n)
	if !e.jobEscaped && !gs.escaped {
		// Both statuses are settled now: the next node of the class is
		// decided by them alone.
		if e.job[class] == ClassIneligible || gs.classes[class] == ClassIneligible {
			gs.decide(class, slot, FilterClassIneligible)
		} else {
			gs.decide(class, slot, "")
		}
	}
	return reason
}

func (e *Eligibility) check(ch *Checker, g *GroupChecks, n *sdk.Node) string {
	class := n.ComputedClass
	jobStatus := e.JobStatus(class)
	switch jobStatus {
	case ClassIneligible:
		return FilterClassIneligible
	case ClassUnknown, ClassEscaped:
		if reason := g.checkJob(ch, n); reason != "" {
			if jobStatus == ClassUnknown {
				e.SetJob(class, false)
			}
			return reason
		}
		if jobStatus == ClassUnknown {
			e.SetJob(class, true)
		}
	}
	groupStatus := e.GroupStatus(g.name, class)
	switch groupStatus {
	case ClassIneligible:
		return FilterClassIneligible
	case ClassEligible:
		return ""
	}
	reason := g.checkGroup(ch, n)
	if groupStatus == ClassUnknown {
		e.SetGroup(g.name, class, reason == "")
	}
	return reason
}
