package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
)

// Variable locks, as Nomad 1.7's: a lock on a variable is held by the
// client that acquired it, which renews it within its TTL; while it is
// held only that client changes the variable. A lock not renewed in time
// is lost: the leader takes it off, and none is acquired for its lock
// delay (the grace a lost holder has to notice and stop, against two
// holders at once). A client elects a leader among its peers by acquiring
// a lock and renewing it for as long as it leads.
//
// Renewals are not written: the leader keeps each lock's deadline in
// memory (as Nomad's), and a new leader gives every lock a whole TTL from
// when it took over. What a lost lock's delay is, and until when it lasts,
// is in the state, so a new leader keeps it.

// Lock TTLs and delays, Nomad's.
const (
	minLockTTL       = 10 * time.Second
	maxLockTTL       = 24 * time.Hour
	defaultLockTTL   = 15 * time.Second
	defaultLockDelay = 15 * time.Second
	// lockCheckInterval is how often the leader looks for locks whose
	// TTL passed.
	lockCheckInterval = time.Second
)

// lockLeases are the deadlines of the locks the leader knows of, by
// namespace and path, on the clock now (time.Now if nil; tests set it).
type lockLeases struct {
	mu  sync.Mutex
	m   map[string]lockLease
	now func() time.Time
}

// clock is the leases' time; the caller holds l.mu.
func (l *lockLeases) clock() time.Time {
	if l.now == nil {
		return time.Now()
	}
	return l.now()
}

type lockLease struct {
	id       string
	deadline time.Time
}

func lockKey(ns, path string) string { return ns + "\x00" + path }

// extend sets the lease of the lock id on the variable at path in ns to
// end ttl from now.
func (l *lockLeases) extend(ns, path, id string, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.put(lockKey(ns, path), id, l.clock().Add(ttl))
}

// put sets the lease of the lock id on the variable of key k to end at
// deadline; the caller holds l.mu.
func (l *lockLeases) put(k, id string, deadline time.Time) {
	if l.m == nil {
		l.m = map[string]lockLease{}
	}
	l.m[k] = lockLease{id: id, deadline: deadline}
}

// AcquireVariableLock puts a lock on the variable at path in namespace ns,
// creating it with items if it does not exist (with none, as Nomad's lock
// helpers make theirs) and writing items over it if some are given. ttl (10 s to 24 h) and
// delay default to 15 s each. A variable locked by another, or whose lost
// lock's delay lasts, is a *VariableConflict. It returns the variable as
// stored, with its lock's new ID.
func (s *Server) AcquireVariableLock(ns, path string, items map[string]string, ttl, delay time.Duration) (*state.Variable, uint64, error) {
	if err := checkVariableNamespace(ns); err != nil {
		return nil, 0, err
	}
	if err := checkVariablePath(path); err != nil {
		return nil, 0, err
	}
	ttl, delay = cmp.Or(ttl, defaultLockTTL), cmp.Or(delay, defaultLockDelay)
	switch {
	case ttl < 0 || delay < 0:
		return nil, 0, badRequest(errors.New("Lock delay and TTL must be positive"))
	case ttl < minLockTTL || ttl > maxLockTTL:
		return nil, 0, badRequest(errors.New("TTL must be between 10 seconds and 24 hours"))
	}
	snap := s.store.Snapshot()
	cur := snap.Variable(ns, path)
	if len(items) > 0 {
		if err := checkVariableItems(items); err != nil {
			return nil, 0, err
		}
	}
	if cur != nil && (cur.Lock != nil || cur.LockDelayUntil > s.now().UnixNano()) {
		return nil, 0, &VariableConflict{Current: cur}
	}
	if err := checkVariablePlacement(snap, cur, ns, path); err != nil {
		return nil, 0, err
	}
	lock := &state.VariableLock{ID: newID(), TTL: int64(ttl), LockDelay: int64(delay)}
	req := &fsm.VariableApplyRequest{Op: fsm.VarOpLockAcquire, RefsMustExist: true}
	var index uint64
	var err error
	if len(items) > 0 || cur == nil {
		index, err = s.applySealed(req, ns, path, items, lock)
	} else {
		now := s.now()
		req.Now = now.UnixNano()
		req.Var = &state.Variable{Namespace: ns, Path: path, ModifyTime: req.Now, Lock: lock}
		index, err = s.Apply(fsm.VariableApplyRequestType, req)
		err = s.variableConflict(ns, path, err)
	}
	if err != nil {
		return nil, 0, err
	}
	s.varLocks.extend(ns, path, lock.ID, ttl)
	return s.storedVariable(ns, path, index)
}

// storedVariable is the variable at path in ns as the write at index left
// it (ErrNotFound if a later write deleted it).
func (s *Server) storedVariable(ns, path string, index uint64) (*state.Variable, uint64, error) {
	v := s.store.Snapshot().Variable(ns, path)
	if v == nil {
		return nil, 0, fmt.Errorf("%w: variable %q", ErrNotFound, path)
	}
	return v, index, nil
}

// RenewVariableLock renews the lock lockID on the variable at path in ns
// for another TTL; a lock not held (lost, released, or another's) is a
// *VariableConflict, and so is one whose lease has ended, whether or not
// the leader has taken it off yet: a renewal must not bring back a lock
// whose expiry is being committed. It is the leader's to answer: its
// leases are in its memory.
func (s *Server) RenewVariableLock(ns, path, lockID string) (*state.Variable, error) {
	if err := checkVariableNamespace(ns); err != nil {
		return nil, err
	}
	l := &s.varLocks
	l.mu.Lock()
	defer l.mu.Unlock()
	// Read under the lock, as the leader's loop does (expireVariableLocksOnce).
	v := s.store.Snapshot().Variable(ns, path)
	if v == nil || v.Lock == nil || v.Lock.ID != lockID {
		return nil, &VariableConflict{Current: v}
	}
	k, now := lockKey(ns, path), l.clock()
	if lease, ok := l.m[k]; ok && lease.id == lockID && now.After(lease.deadline) {
		return nil, &VariableConflict{Current: v}
	}
	l.put(k, lockID, now.Add(time.Duration(v.Lock.TTL)))
	return v, nil
}

// ReleaseVariableLock takes the lock lockID off the variable at path in
// ns; a lock not held is a *VariableConflict. The next may be acquired at
// once.
func (s *Server) ReleaseVariableLock(ns, path, lockID string) (*state.Variable, uint64, error) {
	if err := checkVariableNamespace(ns); err != nil {
		return nil, 0, err
	}
	v := s.store.Snapshot().Variable(ns, path)
	if v == nil || v.Lock == nil || v.Lock.ID != lockID {
		return nil, 0, &VariableConflict{Current: v}
	}
	now := s.now().UnixNano()
	index, err := s.Apply(fsm.VariableApplyRequestType, &fsm.VariableApplyRequest{Op: fsm.VarOpLockRelease, Now: now,
		Var: &state.Variable{Namespace: ns, Path: path, ModifyTime: now, Lock: &state.VariableLock{ID: lockID}}})
	if err != nil {
		return nil, 0, s.variableConflict(ns, path, err)
	}
	return s.storedVariable(ns, path, index)
}

// expireVariableLocks runs on the leader: it takes off the locks whose
// TTL passed without a renewal.
func (s *Server) expireVariableLocks(ctx context.Context) {
	// Leases of an earlier term are stale: each lock gets a whole TTL
	// from now.
	s.varLocks.mu.Lock()
	s.varLocks.m = nil
	s.varLocks.mu.Unlock()
	t := time.NewTicker(lockCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.expireVariableLocksOnce(); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("variable locks: failed to take off an expired lock; retrying")
		}
	}
}

// expireVariableLocksOnce takes off the locks whose lease has ended. A
// lock the leader has no lease for (acquired under another leader) gets a
// whole TTL from now.
func (s *Server) expireVariableLocksOnce() error {
	l := &s.varLocks
	l.mu.Lock()
	// Read under the lock: a lease an acquisition set after its write
	// must not be replaced from a state read before that write.
	locked := s.store.Snapshot().LockedVariables()
	var expired []*state.Variable
	now := l.clock()
	seen := make(map[string]bool, len(locked))
	for _, v := range locked {
		k := lockKey(v.Namespace, v.Path)
		seen[k] = true
		lease, ok := l.m[k]
		switch {
		case !ok || lease.id != v.Lock.ID:
			l.put(k, v.Lock.ID, now.Add(time.Duration(v.Lock.TTL)))
		case now.After(lease.deadline):
			expired = append(expired, v)
		}
	}
	for k := range l.m {
		if !seen[k] {
			delete(l.m, k)
		}
	}
	l.mu.Unlock()
	for _, v := range expired {
		_, err := s.Apply(fsm.VariableApplyRequestType, &fsm.VariableApplyRequest{Op: fsm.VarOpLockExpire, Now: now.UnixNano(),
			Var: &state.Variable{Namespace: v.Namespace, Path: v.Path, ModifyTime: now.UnixNano(), Lock: &state.VariableLock{ID: v.Lock.ID}}})
		if err != nil {
			return err
		}
		s.log.Info().Str("namespace", v.Namespace).Str("path", v.Path).Str("lock_id", v.Lock.ID).
			Dur("lock_delay", time.Duration(v.Lock.LockDelay)).Msg("variable locks: a lock's TTL passed without a renewal; it is lost")
	}
	return nil
}
