package state

import (
	"sort"
	"sync"
)

// Kind is the kind of object a journal entry names.
type Kind uint8

// Kinds of objects the journal names: those plugins mirror, then the ACL
// objects and node pools, journaled for the event stream alone (mirrored).
const (
	KindNode Kind = iota + 1
	KindJob
	KindAlloc
	KindDeployment
	KindSchedConfig
	// KindEval changes go only to plugins that mirror evaluations.
	KindEval
	KindACLPolicy      // key: the policy's name
	KindACLToken       // key: the token's accessor ID
	KindACLRole        // key: the role's ID
	KindACLAuthMethod  // key: the method's name
	KindACLBindingRule // key: the rule's ID
	KindNodePool       // key: the pool's name
	// KindCSIVolume: key jobKey(namespace, ID). Mirrored by plugins whose
	// host declares ABI 1.11.
	KindCSIVolume
)

// mirrored reports whether plugins mirror objects of kind k, and so
// whether their state deltas carry its changes.
func (k Kind) mirrored() bool {
	switch k {
	case KindNode, KindJob, KindAlloc, KindDeployment, KindSchedConfig, KindEval, KindCSIVolume:
		return true
	}
	return false
}

// Change records that an object changed (or was deleted) at Index.
type Change struct {
	Index uint64
	Kind  Kind
	// Key is the object's ID; for jobs, namespace + "\x00" + ID.
	Key string
}

// Journal is the ordered, bounded record of which objects changed at which
// index. Plugin runtimes read the kinds they mirror to send deltas, the
// event stream every kind; it covers the changes after Floor and is empty
// after a restart or restore.
type Journal struct {
	mu      sync.RWMutex
	entries []Change
	floor   uint64
	// top is the newest index the journal has been brought to. A mirror
	// claiming a later index synchronised with another history (a store
	// restored or replaced since): the journal does not cover it.
	top uint64
	// restored is set by a restore and cleared by the first write after
	// it, which raises the floor to just below that write's index: raft
	// numbers that write past every index of the history the restore
	// replaced (and the restore itself), so a mirror synchronised anywhere
	// in that history loads in full.
	restored bool
	max      int
}

// NewJournal returns a journal holding at most max entries.
func NewJournal(max int) *Journal {
	return &Journal{max: max}
}

// append adds the changes made at index; indexes must come in order. When
// full, the oldest whole index is dropped and the floor rises.
func (j *Journal) append(index uint64, cs []Change) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if index > j.top {
		j.top = index
	}
	if j.restored {
		j.restored = false
		j.entries, j.floor = j.entries[:0], index-1
	}
	if len(cs) == 0 {
		return
	}
	j.entries = append(j.entries, cs...)
	if over := len(j.entries) - j.max; over > 0 {
		// Drop whole indexes so the floor is exact.
		cut := over
		for cut < len(j.entries) && j.entries[cut].Index == j.entries[cut-1].Index {
			cut++
		}
		j.floor = j.entries[cut-1].Index
		n := copy(j.entries, j.entries[cut:])
		j.entries = j.entries[:n]
	}
}

// reset empties the journal, which then covers nothing below floor.
func (j *Journal) reset(floor uint64) {
	j.mu.Lock()
	j.entries = nil
	j.floor, j.top, j.restored = floor, floor, true
	j.mu.Unlock()
}

// Floor is the index at and below which the journal has forgotten changes.
func (j *Journal) Floor() uint64 {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.floor
}

// Between returns the changes with lo < Index <= hi, and false if the
// journal no longer covers that range.
func (j *Journal) Between(lo, hi uint64) ([]Change, bool) {
	return j.between(lo, hi, func(Change) bool { return true })
}

// between returns the changes with lo < Index <= hi that keep accepts.
func (j *Journal) between(lo, hi uint64, keep func(Change) bool) ([]Change, bool) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if lo < j.floor || hi > j.top {
		return nil, false
	}
	start := sort.Search(len(j.entries), func(i int) bool { return j.entries[i].Index > lo })
	end := sort.Search(len(j.entries), func(i int) bool { return j.entries[i].Index > hi })
	var out []Change
	for _, c := range j.entries[start:end] {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out, true
}

// Len is the number of entries held.
func (j *Journal) Len() int {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return len(j.entries)
}

// ChangedBetween reports whether an object of kind changed at an index in
// (lo, hi] other than skip. It answers true when the journal no longer
// covers the range: the caller must then assume a change.
func (j *Journal) ChangedBetween(kind Kind, lo, hi, skip uint64) bool {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if lo < j.floor || hi > j.top {
		return true
	}
	start := sort.Search(len(j.entries), func(i int) bool { return j.entries[i].Index > lo })
	for _, c := range j.entries[start:] {
		if c.Index > hi {
			break
		}
		if c.Kind == kind && c.Index != skip {
			return true
		}
	}
	return false
}
