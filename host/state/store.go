// Package state is the host's cluster state: go-memdb tables for nodes,
// jobs (with versions), allocations, evaluations, deployments and the
// scheduler configuration, a per-table index, and the change journal that
// plugin runtimes read to send state deltas, and the event stream to
// build its events.
//
// Only the FSM writes, one transaction per raft log entry, through Write.
// Readers take a Snapshot: a consistent, immutable view at one index.
// Objects in the store are never modified in place; writers insert copies.
package state

import (
	"context"
	"errors"
	"fmt"
	"sync"

	memdb "github.com/hashicorp/go-memdb"
)

// ErrNotFound is returned by writes that name an object that does not exist.
var ErrNotFound = errors.New("state: not found")

// DefaultJournalSize bounds the change journal.
const DefaultJournalSize = 1 << 20

// Store is the state store.
type Store struct {
	db      *memdb.MemDB
	journal *Journal

	// mu orders commits and journal appends against snapshot creation, so a
	// snapshot at index S always finds every change up to S in the journal.
	mu sync.Mutex
	// latest is the highest index written.
	latest uint64
	// watch is closed and replaced on every commit, for WaitForIndex.
	watch chan struct{}
}

// NewStore returns an empty store.
func NewStore() (*Store, error) {
	db, err := newDB()
	if err != nil {
		return nil, err
	}
	return &Store{db: db, journal: NewJournal(DefaultJournalSize), watch: make(chan struct{})}, nil
}

// newDB returns an empty database that does not track mutations for
// watchers. go-memdb's primary database records, in every write
// transaction, the radix nodes it replaces so that it can close their
// watch channels on commit; past 8,192 of them (a plan of a few thousand
// allocations touches several per allocation and index) it instead walks
// every index it changed, old and new trees both, to find them: a cost
// that grew with the state, not the plan. Nothing here watches memdb
// channels (readers use WaitForIndex), and a database made by Snapshot
// is the same database without that tracking.
func newDB() (*memdb.MemDB, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return db.Snapshot(), nil
}

// Journal returns the change journal.
func (s *Store) Journal() *Journal { return s.journal }

// LatestIndex is the highest index written.
func (s *Store) LatestIndex() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// Snapshot returns a consistent view of the latest state.
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Snapshot{reader: reader{s.db.Txn(false)}, index: s.latest, journal: s.journal}
}

// WaitForIndex blocks until the store reaches index or ctx ends, and
// returns a snapshot at or above index.
func (s *Store) WaitForIndex(ctx context.Context, index uint64) (*Snapshot, error) {
	for {
		s.mu.Lock()
		latest, watch := s.latest, s.watch
		s.mu.Unlock()
		if latest >= index {
			return s.Snapshot(), nil
		}
		select {
		case <-watch:
		case <-ctx.Done():
			return nil, fmt.Errorf("state: waiting for index %d (at %d): %w", index, latest, ctx.Err())
		}
	}
}

// Write runs fn in one write transaction at index and commits it. If fn
// fails nothing is written.
func (s *Store) Write(index uint64, fn func(tx *Txn) error) error {
	txn := s.db.Txn(true)
	tx := &Txn{reader: reader{txn}, txn: txn, index: index, tables: map[string]bool{}}
	if err := fn(tx); err != nil {
		txn.Abort()
		return err
	}
	if err := tx.finish(); err != nil {
		txn.Abort()
		return err
	}
	for table := range tx.tables {
		if err := tx.txn.Insert(TableIndex, &IndexEntry{Key: table, Value: index}); err != nil {
			tx.txn.Abort()
			return fmt.Errorf("state: update index of %s: %w", table, err)
		}
	}
	s.mu.Lock()
	tx.txn.Commit()
	s.journal.append(index, tx.changes)
	if index > s.latest {
		s.latest = index
	}
	close(s.watch)
	s.watch = make(chan struct{})
	s.mu.Unlock()
	return nil
}

// Restore replaces the whole state with what fn inserts, at index. The
// journal restarts empty, so plugin mirrors resynchronise in full.
func (s *Store) Restore(index uint64, fn func(tx *Txn) error) error {
	db, err := newDB()
	if err != nil {
		return err
	}
	txn := db.Txn(true)
	tx := &Txn{reader: reader{txn}, txn: txn, index: index, tables: map[string]bool{}, restore: true}
	if err := fn(tx); err != nil {
		tx.txn.Abort()
		return err
	}
	tx.txn.Commit()
	s.mu.Lock()
	s.db = db
	s.latest = index
	s.journal.reset(index)
	close(s.watch)
	s.watch = make(chan struct{})
	s.mu.Unlock()
	return nil
}
