// Package blocked tracks blocked evaluations: evals that could not place
// every allocation and wait for the cluster to change.
//
// A blocked eval either captured the computed node classes it was
// feasible on (ClassEligibility) or "escaped" them (feasibility depended on
// more than the class). A capacity change on nodes of class C (a node
// registered or became ready or eligible, allocations on it ended) unblocks
// the captured evals eligible for C or that never saw C, and every escaped
// eval. The tracker keeps one blocked eval per job, the one with the newest
// view; extra ones are duplicates, canceled by the leader's reaper, as is
// the blocked eval of a job whose later eval completed without placement
// failures (Untrack).
// The tracker remembers the last unblock index per class, so an eval whose
// snapshot is older than an unblock that concerns it is enqueued at once:
// it missed the change it waits for. Evals blocked after running out of
// plan attempts (max-plan-attempts) are retried periodically
// (UnblockFailed) whatever happens to capacity.
//
// A system or sysbatch job's blocked eval is one per job like any other:
// Drover's system scheduler blocks once per eval, not once per node as
// Nomad's (whose tracker keeps those by node and lets them out with
// UnblockNode on the node's own changes). The nodes it could not place on
// were feasible, so their class is eligible, and a change on any of them
// unblocks it by class, as it does Nomad's too.
//
// Unblocked evals go to the broker through Enqueuer.EnqueueAll, with the
// token of the delivery that reblocked them if their worker still holds
// them. The tracker is pure: no goroutines, no clock.
package blocked

import (
	"sync"

	"github.com/drover-sched/drover/sdk"
)

// Enqueuer receives unblocked evals; it is the broker's EnqueueAll.
type Enqueuer interface {
	EnqueueAll(evals map[*sdk.Evaluation]string)
}

type wrapped struct {
	eval  *sdk.Evaluation
	token string
}

// Tracker is the blocked-evals tracker. It is safe for concurrent use.
type Tracker struct {
	broker Enqueuer

	mu      sync.Mutex
	enabled bool
	// captured evals by ID, escaped evals by ID.
	captured map[string]wrapped
	escaped  map[string]wrapped
	// jobs maps a job to its blocked eval's ID.
	jobs map[sdk.NamespacedID]string
	// unblockIndexes is the last unblock index per computed class.
	unblockIndexes map[string]uint64
	// lastUnblock is the highest unblock index of any class.
	lastUnblock uint64
	// duplicates lost to a newer blocked eval of their job; retired were
	// made moot by an eval of their job that completed without placement
	// failures (Untrack).
	duplicates, retired []*sdk.Evaluation
	dupWake             chan struct{}
}

// New returns a disabled tracker.
func New(broker Enqueuer) *Tracker {
	t := &Tracker{broker: broker, dupWake: make(chan struct{}, 1)}
	t.flush()
	return t
}

func (t *Tracker) flush() {
	t.captured = map[string]wrapped{}
	t.escaped = map[string]wrapped{}
	t.jobs = map[sdk.NamespacedID]string{}
	t.unblockIndexes = map[string]uint64{}
	t.lastUnblock = 0
	t.duplicates, t.retired = nil, nil
}

// SetEnabled turns the tracker on or off; off drops everything.
func (t *Tracker) SetEnabled(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.enabled && !on {
		t.flush()
	}
	t.enabled = on
}

// Block tracks a blocked eval.
func (t *Tracker) Block(e *sdk.Evaluation) { t.block(e, "") }

// Reblock tracks an eval that a worker still holds under token: if it is
// unblocked before the worker acks, the broker requeues it on the ack.
func (t *Tracker) Reblock(e *sdk.Evaluation, token string) { t.block(e, token) }

func (t *Tracker) block(e *sdk.Evaluation, token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.enabled {
		return
	}
	// A newer version of a tracked eval replaces it.
	t.remove(e.ID)
	jk := sdk.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
	if existingID, ok := t.jobs[jk]; ok {
		existing := t.get(existingID)
		switch {
		case existing.eval == nil:
			delete(t.jobs, jk) // cannot happen: jobs and the sets move together
		case latestIndex(existing.eval) > latestIndex(e):
			// The tracked one saw a newer state: the new one is the duplicate.
			t.addDuplicate(&t.duplicates, e)
			return
		default:
			t.remove(existingID)
			t.addDuplicate(&t.duplicates, existing.eval)
		}
	}
	if t.missedUnblock(e) {
		t.broker.EnqueueAll(map[*sdk.Evaluation]string{e: token})
		return
	}
	t.jobs[jk] = e.ID
	w := wrapped{eval: e, token: token}
	// Only an eval that escaped is escaped (Nomad's processBlock): one with
	// no class eligibility (no node was there to see) is captured, and as
	// it never saw any class, a change on any class unblocks it all the same.
	if e.EscapedComputedClass {
		t.escaped[e.ID] = w
	} else {
		t.captured[e.ID] = w
	}
}

// latestIndex is how recent an eval's view is: its snapshot index, or its
// create index if it was created later. The newest blocked eval of a job is
// kept: it carries the most recent class eligibility.
func latestIndex(e *sdk.Evaluation) uint64 { return max(e.CreateIndex, e.SnapshotIndex) }

func (t *Tracker) get(id string) wrapped {
	if w, ok := t.captured[id]; ok {
		return w
	}
	return t.escaped[id]
}

func (t *Tracker) remove(id string) {
	w := t.get(id)
	delete(t.captured, id)
	delete(t.escaped, id)
	if w.eval != nil {
		jk := sdk.NamespacedID{Namespace: w.eval.Namespace, ID: w.eval.JobID}
		if t.jobs[jk] == id {
			delete(t.jobs, jk)
		}
	}
}

func (t *Tracker) addDuplicate(to *[]*sdk.Evaluation, e *sdk.Evaluation) {
	*to = append(*to, e)
	select {
	case t.dupWake <- struct{}{}:
	default:
	}
}

// missedUnblock reports whether an unblock that concerns e happened after
// the snapshot e was scheduled on (Nomad's missedUnblock). An eval with no
// snapshot index (not scheduled by a worker, which always sets it) has an
// unknown view, older than any unblock, as in Nomad.
func (t *Tracker) missedUnblock(e *sdk.Evaluation) bool {
	if t.lastUnblock <= e.SnapshotIndex {
		return false
	}
	if e.EscapedComputedClass {
		return true
	}
	for class, idx := range t.unblockIndexes {
		if idx <= e.SnapshotIndex {
			continue
		}
		if eligible, seen := e.ClassEligibility[class]; !seen || eligible {
			return true
		}
	}
	return false
}

// SetUnblockIndex records that capacity on nodes of computedClass changed
// at index, without unblocking anything: a new leader calls it with what
// the state says before it re-blocks the restored evals, so that an eval
// blocked on a view older than a change that happened before the leader
// took over is enqueued rather than left waiting for the next change.
func (t *Tracker) SetUnblockIndex(computedClass string, index uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.enabled {
		return
	}
	t.noteUnblock(computedClass, index)
}

func (t *Tracker) noteUnblock(computedClass string, index uint64) {
	if index > t.unblockIndexes[computedClass] {
		t.unblockIndexes[computedClass] = index
	}
	t.lastUnblock = max(t.lastUnblock, index)
}

// Unblock enqueues the evals that capacity on nodes of computedClass at
// index might let place.
func (t *Tracker) Unblock(computedClass string, index uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.enabled {
		return
	}
	t.noteUnblock(computedClass, index)
	out := map[*sdk.Evaluation]string{}
	for id, w := range t.captured {
		if eligible, seen := w.eval.ClassEligibility[computedClass]; !seen || eligible {
			out[w.eval] = w.token
			t.remove(id)
		}
	}
	for id, w := range t.escaped {
		out[w.eval] = w.token
		t.remove(id)
	}
	if len(out) > 0 {
		t.broker.EnqueueAll(out)
	}
}

// UnblockFailed enqueues every blocked max-plan-attempts eval; the leader
// calls it periodically.
func (t *Tracker) UnblockFailed() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.enabled {
		return
	}
	out := map[*sdk.Evaluation]string{}
	for _, set := range []map[string]wrapped{t.captured, t.escaped} {
		for id, w := range set {
			if w.eval.TriggeredBy == sdk.EvalTriggerMaxPlans {
				out[w.eval] = w.token
				t.remove(id)
			}
		}
	}
	if len(out) > 0 {
		t.broker.EnqueueAll(out)
	}
}

// Untrack retires a job's blocked eval because a later eval of the job
// completed without placement failures, as Nomad's FSM does: it placed
// everything it was to place (which may be nothing, as after a failed
// deployment). The eval is handed to the reaper to be canceled, so it does
// not linger as blocked in the state store.
func (t *Tracker) Untrack(ns, jobID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.enabled {
		return
	}
	if id, ok := t.jobs[sdk.NamespacedID{Namespace: ns, ID: jobID}]; ok {
		w := t.get(id)
		t.remove(id)
		if w.eval != nil {
			t.addDuplicate(&t.retired, w.eval)
		}
	}
}

// Forget stops tracking an eval that no longer exists (deleted): unlike
// Untrack, nothing is left to cancel. An eval it does not track is ignored.
func (t *Tracker) Forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remove(id)
}

// Duplicates returns and forgets the duplicate blocked evals and the
// retired ones (Untrack); the leader's reaper cancels both, each with its
// own reason. wake is signalled when some are waiting.
func (t *Tracker) Duplicates() (dups, retired []*sdk.Evaluation, wake <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dups, t.duplicates = t.duplicates, nil
	retired, t.retired = t.retired, nil
	return dups, retired, t.dupWake
}

// Stats counts tracked evals.
type Stats struct {
	// ByJob and ByClassInDC are the resources the tracked evals could not
	// place, per job and per datacenter and node class (Nomad's
	// BlockedResourcesStats); see blockedResources.
	ByJob       map[sdk.NamespacedID]Resources
	ByClassInDC map[ClassInDC]Resources
	// TotalBlocked is every tracked eval: TotalCaptured + TotalEscaped.
	TotalBlocked, TotalEscaped, TotalCaptured int
	// TotalDuplicates wait for the reaper to cancel them: duplicates and
	// retired evals.
	TotalDuplicates int
}

// Resources is what blocked evals could not place: CPU in MHz, memory in
// MB.
type Resources struct{ CPU, MemoryMB int }

// ClassInDC keys blocked resources by datacenter and computed node class.
type ClassInDC struct{ Datacenter, Class string }

// Stats returns the tracker's counters.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := Stats{TotalBlocked: len(t.captured) + len(t.escaped), TotalEscaped: len(t.escaped),
		TotalCaptured: len(t.captured), TotalDuplicates: len(t.duplicates) + len(t.retired),
		ByJob: map[sdk.NamespacedID]Resources{}, ByClassInDC: map[ClassInDC]Resources{}}
	for _, set := range []map[string]wrapped{t.captured, t.escaped} {
		for _, w := range set {
			blockedResources(w.eval, &st)
		}
	}
	return st
}

// blockedResources adds what e could not place to st, as Nomad's
// generateResourceStats: the resources exhausted over its failed task
// groups count once for its job and once for every pair of a datacenter
// with available nodes and a class exhausted (the class "" when none was).
// Unlike Nomad, which keeps running sums (and zero entries for 15 minutes
// after), the stats are of the evals tracked now.
func blockedResources(e *sdk.Evaluation, st *Stats) {
	var r Resources
	dcs, classes := map[string]bool{}, map[string]bool{}
	for _, m := range e.FailedTGAllocs {
		if m == nil {
			continue
		}
		for dc := range m.NodesAvailable {
			dcs[dc] = true
		}
		for class := range m.ClassExhausted {
			classes[class] = true
		}
		if len(m.ClassExhausted) == 0 {
			classes[""] = true
		}
		for _, x := range m.ResourcesExhausted {
			if x != nil {
				r.CPU += x.CPU
				r.MemoryMB += x.MemoryMB
			}
		}
	}
	add := func(a, b Resources) Resources {
		return Resources{CPU: a.CPU + b.CPU, MemoryMB: a.MemoryMB + b.MemoryMB}
	}
	jk := sdk.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
	st.ByJob[jk] = add(st.ByJob[jk], r)
	for dc := range dcs {
		for class := range classes {
			k := ClassInDC{Datacenter: dc, Class: class}
			st.ByClassInDC[k] = add(st.ByClassInDC[k], r)
		}
	}
}

// Blocked returns the tracked eval of a job, if any.
func (t *Tracker) Blocked(ns, jobID string) *sdk.Evaluation {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.jobs[sdk.NamespacedID{Namespace: ns, ID: jobID}]; ok {
		return t.get(id).eval
	}
	return nil
}
