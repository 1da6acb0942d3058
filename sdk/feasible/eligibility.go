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
	job          map[string]ClassStatus
	jobEscaped   bool
	groups       map[string]map[string]ClassStatus
	groupEscaped map[string]bool
	// last is the group last asked about: a selection checks one group's
	// nodes in a row, and remembering it spares two lookups per node.
	last group
}

// group is one task group's class statuses.
type group struct {
	name    string
	classes map[string]ClassStatus // nil until a status is recorded
	escaped bool
}

// group returns tg's class statuses, through the last one asked about.
func (e *Eligibility) group(tg string) *group {
	if e.last.name != tg || e.last.classes == nil {
		e.last = group{name: tg, classes: e.groups[tg], escaped: e.groupEscaped[tg]}
	}
	return &e.last
}

// NewEligibility returns the eligibility tracker for job.
func NewEligibility(job *sdk.Job) *Eligibility {
	e := &Eligibility{
		job:          map[string]ClassStatus{},
		groups:       map[string]map[string]ClassStatus{},
		groupEscaped: map[string]bool{},
	}
	if job == nil {
		return e
	}
	e.jobEscaped = EscapedConstraints(job.Constraints)
	for _, tg := range job.TaskGroups {
		escaped := EscapedConstraints(tg.Constraints)
		for _, t := range tg.Tasks {
			escaped = escaped || EscapedConstraints(t.Constraints)
		}
		e.groupEscaped[tg.Name] = escaped
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
	if g.classes == nil {
		g.classes = map[string]ClassStatus{}
		e.groups[tg] = g.classes
	}
	g.classes[class] = statusOf(eligible)
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
	for _, esc := range e.groupEscaped {
		if esc {
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
	for _, classes := range e.groups {
		for class, st := range classes {
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
