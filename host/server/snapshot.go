package server

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/snapshot"
	"github.com/hashicorp/raft"
)

// SavedSnapshot is a raft snapshot opened for an operator to save.
type SavedSnapshot struct {
	Meta snapshot.Meta
	rc   io.ReadCloser
}

// SaveSnapshot opens a snapshot of the whole state to be written as an
// operator snapshot (the archive of host/snapshot). It takes a new raft
// snapshot, or uses the newest one when nothing was written since.
func (s *Server) SaveSnapshot() (*SavedSnapshot, error) {
	meta, rc, err := s.openSnapshot()
	if err != nil {
		return nil, err
	}
	return &SavedSnapshot{rc: rc, Meta: snapshot.Meta{Version: int(meta.Version), ID: meta.ID, Index: meta.Index, Term: meta.Term,
		Size: meta.Size, DroverVersion: Version, CreateTime: s.now().UTC()}}, nil
}

// Write writes the archive to w and closes the snapshot.
func (p *SavedSnapshot) Write(w io.Writer) error {
	defer p.rc.Close()
	if err := snapshot.Write(w, p.Meta, p.rc); err != nil {
		return fmt.Errorf("server: write snapshot: %w", err)
	}
	return nil
}

// Close releases a snapshot that is not written.
func (p *SavedSnapshot) Close() error { return p.rc.Close() }

func (s *Server) openSnapshot() (*raft.SnapshotMeta, io.ReadCloser, error) {
	f := s.raftLayer.raft.Snapshot()
	if err := f.Error(); err == nil {
		return f.Open()
	} else if !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil, nil, fmt.Errorf("server: take snapshot: %w", err)
	}
	list, err := s.raftLayer.snaps.List()
	if err != nil || len(list) == 0 {
		return nil, nil, fmt.Errorf("server: no snapshot to save: %v", err)
	}
	return s.raftLayer.snaps.Open(list[0].ID)
}

// maxRestoreIndex bounds the index a restored snapshot may claim: no raft
// log comes near it (a million entries a second for 290,000 years).
const maxRestoreIndex = 1 << 63

// RestoreSnapshot replaces the whole state with an operator snapshot read
// from r. The archive is verified (checksums, sizes) and its state read in
// full before anything changes: a bad file is refused with the reason and
// the state is left as it was. The leader's machinery then restarts on the
// restored state, as after an election: open evals back in the broker and
// the blocked tracker, node heartbeats re-armed, plugin mirrors fully
// resynchronised.
func (s *Server) RestoreSnapshot(r io.Reader) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	// One restore at a time: a second one's leadership restart must not
	// interleave with the first's.
	s.restoreMu.Lock()
	defer s.restoreMu.Unlock()
	dir := ""
	if d := s.raftLayer.dir; d != nil {
		dir = d.path
	}
	arc, err := snapshot.Read(r, dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	defer arc.Close()
	// Raft writes the state again, as its own snapshot in the data dir,
	// while the extracted copy still exists.
	if dir != "" {
		if err := snapshot.CheckRoom(dir, arc.Meta.Size); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	st, err := fsm.ReadSnapshot(arc.State)
	if err != nil {
		return fmt.Errorf("%w: snapshot state: %v", ErrInvalid, err)
	}
	// Raft restores at the archive's index (or past its own last one):
	// one below the state's would put the state's objects ahead of the
	// log, and one near 2^64 would wrap raft's next index to zero.
	if idx := st.LatestIndex(); arc.Meta.Index < idx || arc.Meta.Index > maxRestoreIndex {
		return fmt.Errorf("%w: snapshot index %d is not a raft index for a state at index %d", ErrInvalid, arc.Meta.Index, idx)
	}
	if _, err := arc.State.Seek(0, io.SeekStart); err != nil {
		return err
	}
	// The restored state keeps this cluster's ID, whatever the snapshot
	// says: the servers refuse raft from another cluster, and a restore
	// reaches the followers over raft (clusterid.go).
	var body io.Reader = arc.State
	size := arc.Meta.Size
	if ours := s.store.Snapshot().ClusterMeta(); ours != nil {
		size += fsm.ClusterMetaRecordSize(ours) - fsm.ClusterMetaRecordSize(st.Snapshot().ClusterMeta())
		pr, pw := io.Pipe()
		defer pr.Close()
		go func() { pw.CloseWithError(fsm.ReplaceClusterMeta(pw, arc.State, ours)) }()
		body = pr
	}
	s.revokeLeadership()
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, ID: arc.Meta.ID, Index: arc.Meta.Index, Term: arc.Meta.Term, Size: size}
	// No timeout: one would also bound the entry raft writes after
	// restoring, and report a restore that succeeded slowly as failed.
	rerr := s.raftLayer.raft.Restore(meta, body, 0)
	if rerr != nil {
		rerr = fmt.Errorf("server: restore snapshot: %w", rerr)
	}
	// Whatever raft did, the leader's duties run again on the state as it
	// is now (restored, or as it was if raft refused), retried while this
	// server leads: nothing else would restart them.
	err = nil
	for try := 0; try < 5 && s.IsLeader(); try++ {
		if err = s.establishLeadership(); err == nil {
			break
		}
		s.log.Warn().Err(err).Msg("leader duties did not restart after a restore; retrying")
		time.Sleep(time.Second)
	}
	if err != nil {
		return errors.Join(rerr, fmt.Errorf("server: leader duties after the restore: %w", err))
	}
	if rerr == nil {
		s.log.Info().Uint64("snapshot_index", arc.Meta.Index).Str("snapshot_id", arc.Meta.ID).Msg("state restored from a snapshot")
	}
	return rerr
}
