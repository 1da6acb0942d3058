package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tinylib/msgp/msgp"
	"go.etcd.io/bbolt"
)

// ErrDataDirLocked is returned when another agent holds the data dir.
var ErrDataDirLocked = errors.New("server: data dir is locked by another agent")

// raftLayer is the raft instance and what it owns.
type raftLayer struct {
	raft    *raft.Raft
	store   io.Closer // the BoltDB log store, nil in dev
	trans   raft.Transport
	timeout time.Duration
}

func (s *Server) setupRaft() error {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(s.cfg.NodeName)
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Error, Output: s.log})
	rc.SnapshotThreshold = s.cfg.SnapshotThreshold
	rc.SnapshotInterval = s.cfg.SnapshotInterval
	// A single voter elects itself at once.
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	rc.MaxAppendEntries = 512
	rc.BatchApplyCh = true

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	_, trans := raft.NewInmemTransport(raft.ServerAddress(s.cfg.NodeName))
	if s.cfg.Dev {
		st := raft.NewInmemStore()
		logs, stable, snaps = st, st, raft.NewInmemSnapshotStore()
	} else {
		dir := filepath.Join(s.cfg.DataDir, "raft")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("server: create raft dir: %w", err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{
			Path:        filepath.Join(dir, "raft.db"),
			BoltOptions: &bbolt.Options{Timeout: time.Second},
		})
		if err != nil {
			if errors.Is(err, bbolt.ErrTimeout) {
				return fmt.Errorf("%w: %s", ErrDataDirLocked, dir)
			}
			return fmt.Errorf("server: open raft log %s: %w", filepath.Join(dir, "raft.db"), err)
		}
		s.raftLayer.store = bolt
		logs, stable = bolt, bolt
		fss, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, rc.Logger)
		if err != nil {
			bolt.Close()
			return fmt.Errorf("server: snapshot store: %w", err)
		}
		snaps = fss
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		s.closeRaftStore()
		return fmt.Errorf("server: read raft state: %w", err)
	}
	if !has {
		cfg := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}}}
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, cfg); err != nil {
			s.closeRaftStore()
			return fmt.Errorf("server: bootstrap raft: %w", err)
		}
	}
	r, err := raft.NewRaft(rc, s.fsm, logs, stable, snaps, trans)
	if err != nil {
		s.closeRaftStore()
		return fmt.Errorf("server: start raft: %w", err)
	}
	s.raftLayer.raft, s.raftLayer.trans, s.raftLayer.timeout = r, trans, s.cfg.RaftApplyTimeout
	return nil
}

func (s *Server) closeRaftStore() {
	if s.raftLayer.store != nil {
		s.raftLayer.store.Close()
		s.raftLayer.store = nil
	}
}

// Apply commits a log entry through raft and returns its index. It is the
// only way state changes.
func (s *Server) Apply(t fsm.MessageType, msg msgp.Marshaler) (uint64, error) {
	buf, err := fsm.Encode(t, msg)
	if err != nil {
		return 0, fmt.Errorf("server: encode entry: %w", err)
	}
	f := s.raftLayer.raft.Apply(buf, s.raftLayer.timeout)
	if err := f.Error(); err != nil {
		return 0, fmt.Errorf("server: raft apply: %w", err)
	}
	if resp, ok := f.Response().(error); ok && resp != nil {
		return 0, resp
	}
	return f.Index(), nil
}
