package reconcile

import (
	"slices"
	"strings"

	"github.com/drover-sched/drover/sdk"
)

// set is a set of allocations by ID. Anything the reconciler emits is taken
// from a set in order (see sorted), so results never depend on map order.
type set map[string]*sdk.Allocation

func newSet(allocs ...*sdk.Allocation) set {
	s := make(set, len(allocs))
	for _, a := range allocs {
		s[a.ID] = a
	}
	return s
}

// sorted returns the allocations by name index, then ID.
func (s set) sorted() []*sdk.Allocation {
	out := make([]*sdk.Allocation, 0, len(s))
	for _, a := range s {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *sdk.Allocation) int {
		if ia, ib := a.Index(), b.Index(); ia != ib {
			return ia - ib
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// difference returns the allocations of s in none of others.
func (s set) difference(others ...set) set {
	out := make(set, len(s))
outer:
	for id, a := range s {
		for _, o := range others {
			if _, ok := o[id]; ok {
				continue outer
			}
		}
		out[id] = a
	}
	return out
}

// union returns the allocations in s or any of others.
func (s set) union(others ...set) set {
	out := make(set, len(s))
	for id, a := range s {
		out[id] = a
	}
	for _, o := range others {
		for id, a := range o {
			out[id] = a
		}
	}
	return out
}

// fromKeys returns the allocations of s with the given IDs.
func (s set) fromKeys(ids []string) set {
	out := set{}
	for _, id := range ids {
		if a, ok := s[id]; ok {
			out[id] = a
		}
	}
	return out
}

// nameSet returns the names in s.
func (s set) nameSet() map[string]bool {
	out := make(map[string]bool, len(s))
	for _, a := range s {
		out[a.Name] = true
	}
	return out
}

// filterByTerminal keeps the non-terminal allocations.
func (s set) filterByTerminal() set {
	out := make(set, len(s))
	for id, a := range s {
		if !a.TerminalStatus() {
			out[id] = a
		}
	}
	return out
}

// filterByDesiredRunFailed returns the allocations that failed on their
// node and are still meant to run (awaiting a reschedule, or out of
// attempts).
func (s set) filterByDesiredRunFailed() set {
	out := set{}
	for id, a := range s {
		if a.DesiredStatus == sdk.AllocDesiredStatusRun && a.ClientStatus == sdk.AllocClientStatusFailed {
			out[id] = a
		}
	}
	return out
}

// filterByDeployment splits s by whether allocations belong to deployment id.
func (s set) filterByDeployment(id string) (match, other set) {
	match, other = set{}, set{}
	for k, a := range s {
		if a.DeploymentID == id {
			match[k] = a
		} else {
			other[k] = a
		}
	}
	return match, other
}

// filterByClientStatus keeps allocations the node reports in status.
func (s set) filterByClientStatus(status string) set {
	out := set{}
	for id, a := range s {
		if a.ClientStatus == status {
			out[id] = a
		}
	}
	return out
}

// nameIndex hands out allocation names ("job.group[i]") of a group: the
// lowest free indexes for new allocations, the highest used ones to stop.
type nameIndex struct {
	job, group string
	count      int
	used       []bool
}

func newNameIndex(job, group string, count int, in set) *nameIndex {
	n := &nameIndex{job: job, group: group, count: count, used: make([]bool, count)}
	n.set(in)
	return n
}

func (n *nameIndex) set(s set) {
	for _, a := range s {
		n.setIndex(a.Index())
	}
}

func (n *nameIndex) setIndex(i int) {
	if i < 0 {
		return
	}
	for i >= len(n.used) {
		n.used = append(n.used, false)
	}
	n.used[i] = true
}

func (n *nameIndex) unsetIndex(i int) {
	if i >= 0 && i < len(n.used) {
		n.used[i] = false
	}
}

func (n *nameIndex) name(i int) string { return sdk.AllocName(n.job, n.group, i) }

// highest returns up to k used names, highest index first.
func (n *nameIndex) highest(k int) map[string]bool {
	out := map[string]bool{}
	for i := len(n.used) - 1; i >= 0 && len(out) < k; i-- {
		if n.used[i] {
			out[n.name(i)] = true
			n.used[i] = false
		}
	}
	return out
}

// next returns k names: free indexes below count first, then indexes past
// the highest used.
func (n *nameIndex) next(k int) []string {
	out := make([]string, 0, k)
	for i := 0; i < n.count && len(out) < k; i++ {
		if !n.used[i] {
			out = append(out, n.name(i))
			n.setIndex(i)
		}
	}
	for i := len(n.used); len(out) < k; i++ {
		out = append(out, n.name(i))
		n.setIndex(i)
	}
	return out
}

// nextCanaries returns k names for canaries, as Nomad's NextCanaries: the
// names (below count) of allocations being replaced first (a canary takes
// the place of what it will replace), then free indexes below count, then
// indexes from count up, so that extra canaries do not take the names of
// allocations that stay (those are the ones stopped once they are
// promoted); never a name an existing canary has.
func (n *nameIndex) nextCanaries(k int, canaries, destructive set) []string {
	taken := canaries.nameSet()
	var out []string
	for _, a := range destructive.sorted() {
		if len(out) == k {
			return out
		}
		if i := a.Index(); i >= 0 && i < n.count && !taken[a.Name] {
			out = append(out, a.Name)
			taken[a.Name] = true
		}
	}
	for i := 0; len(out) < k && i < n.count; i++ {
		if name := n.name(i); !n.used[i] && !taken[name] {
			out = append(out, name)
			taken[name] = true
		}
	}
	for i := n.count; len(out) < k; i++ {
		if name := n.name(i); !taken[name] {
			out = append(out, name)
			taken[name] = true
		}
	}
	return out
}
