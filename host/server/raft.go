package server

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/hashicorp/raft"
	"github.com/tinylib/msgp/msgp"
)

// raftLayer is the raft instance and what it owns.
type raftLayer struct {
	raft *raft.Raft
	// started is raft once it runs, for the transport's goroutines
	// (raftAddrs).
	started atomic.Pointer[raft.Raft]
	snaps   raft.SnapshotStore
	dir     *dataDir // nil in dev
	trans   raft.Transport
	timeout time.Duration
}

func (s *Server) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(s.cfg.NodeName)
	rc.Logger = raftLogger(s.log, s.cfg.RPCAddr != "")
	rc.SnapshotThreshold = s.cfg.SnapshotThreshold
	rc.SnapshotInterval = s.cfg.SnapshotInterval
	rc.TrailingLogs = s.cfg.RaftTrailingLogs
	// Concurrent applies are gathered into one log write (one fsync) of up
	// to MaxAppendEntries entries, and handed to the FSM as one batch.
	rc.MaxAppendEntries = 1024
	rc.BatchApplyCh = true
	if s.cfg.RPCAddr != "" {
		// Servers on a network keep raft's timeouts (Nomad's).
		return rc
	}
	// A single voter elects itself as soon as its first (randomised)
	// heartbeat timeout passes, and never loses its quorum of one; short
	// timeouts only shorten the wait at start.
	rc.HeartbeatTimeout = 100 * time.Millisecond
	rc.ElectionTimeout = 100 * time.Millisecond
	rc.LeaderLeaseTimeout = 50 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	return rc
}

func (s *Server) setupRaft() (err error) {
	rc := s.raftConfig()
	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if !s.cfg.Dev {
		// Known before the RPC address listens, as it decides which raft
		// connections are let in (clusterid.go); openDataDir reports a bad
		// metadata file.
		if meta, err := readDataDirMeta(filepath.Join(s.cfg.DataDir, dataDirMetaFile)); err == nil && meta != nil {
			s.cluster.id = meta.ClusterID
		}
	}
	var trans raft.Transport
	if s.cfg.RPCAddr == "" {
		_, trans = raft.NewInmemTransport(raft.ServerAddress(s.cfg.NodeName))
	} else {
		ln, advertise, lerr := listenRPC(s.cfg.RPCAddr, s.cfg.RPCAdvertise)
		if lerr != nil {
			return lerr
		}
		s.rpc = newRPCMux(ln, advertise, s.cfg.NodeName, s.ClusterID, s.cfg.TLS,
			rpcLimits{handshakeTimeout: s.cfg.RPCHandshakeTimeout, maxConnsPerClient: s.cfg.RPCMaxConnsPerClient,
				server: raftAddrs{&s.raftLayer.started}.serverIP}, s.log)
		nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: raftStream{s.rpc.raft, s.ClusterID, s.rpcClient()}, ServerAddressProvider: raftAddrs{&s.raftLayer.started},
			MaxPool: 3, Timeout: 10 * time.Second, Logger: rc.Logger})
		defer func() {
			if err != nil {
				_ = nt.Close()
				s.rpc.close()
				s.rpc = nil
			}
		}()
		trans = raftTransport{nt}
	}
	if s.cfg.Dev {
		st := raft.NewInmemStore()
		logs, stable, snaps = st, st, raft.NewInmemSnapshotStore()
	} else {
		dir, err := openDataDir(s.cfg.DataDir, s.cfg.NodeName, rc.Logger)
		if err != nil {
			return err
		}
		s.raftLayer.dir = dir
		logs, stable, snaps = dir.bolt, dir.bolt, dir.snaps
	}
	defer func() {
		if err != nil {
			s.closeRaftStore()
		}
	}()
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("%w: read raft state: %v", ErrDataDirCorrupt, err)
	}
	if !has && !s.cfg.Joins() {
		// Alone: bootstrap at once. Otherwise joinCluster bootstraps or
		// joins once it has found the other servers.
		cfg := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}}}
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, cfg); err != nil {
			return fmt.Errorf("server: bootstrap raft: %w", err)
		}
		has = true
	}
	r, err := newRaft(rc, s.fsm, logs, stable, snaps, trans)
	if err != nil {
		if s.cfg.Dev {
			return fmt.Errorf("server: start raft: %w", err)
		}
		if d := s.raftLayer.dir; d != nil && d.snapErr != nil {
			err = d.snapErr
		}
		return fmt.Errorf("%w: restore state from %s: %v", ErrDataDirCorrupt, s.cfg.DataDir, err)
	}
	s.raftLayer.raft, s.raftLayer.trans, s.raftLayer.timeout, s.raftLayer.snaps = r, trans, s.cfg.RaftApplyTimeout, snaps
	s.raftLayer.started.Store(r)
	if has {
		if err := s.markDataDirInitialized(); err != nil {
			_ = r.Shutdown().Error()
			return err
		}
	}
	return nil
}

// markDataDirInitialized records that the data dir holds raft state (see
// dataDir.markInitialized); nothing in dev mode.
func (s *Server) markDataDirInitialized() error {
	if d := s.raftLayer.dir; d != nil {
		return d.markInitialized(s.cfg.NodeName, s.now())
	}
	return nil
}

// newRaft starts raft, which restores the newest snapshot into the FSM; a
// panic while reading the stores is reported as an error.
func newRaft(rc *raft.Config, f raft.FSM, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, trans raft.Transport) (r *raft.Raft, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return raft.NewRaft(rc, f, logs, stable, snaps, trans)
}

func (s *Server) closeRaftStore() {
	if s.raftLayer.dir != nil {
		s.raftLayer.dir.close()
		s.raftLayer.dir = nil
	}
}

// Apply commits a log entry through raft and returns its index. It is the
// only way state changes.
func (s *Server) Apply(t fsm.MessageType, msg msgp.Marshaler) (uint64, error) {
	buf, err := fsm.Encode(t, msg)
	if err != nil {
		return 0, fmt.Errorf("server: encode entry: %w", err)
	}
	return s.ApplyEntry(buf)
}

// ApplyEntry commits an encoded log entry and returns its index; an entry
// the FSM refused returns the FSM's error.
func (s *Server) ApplyEntry(data []byte) (uint64, error) {
	if len(data) > 0 {
		if err := s.serversApply(fsm.MessageType(data[0])); err != nil {
			return 0, err
		}
	}
	f := s.raftLayer.raft.Apply(data, s.raftLayer.timeout)
	if err := f.Error(); err != nil {
		if err == raft.ErrNotLeader || err == raft.ErrLeadershipLost {
			return 0, fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
		return 0, fmt.Errorf("server: raft apply: %w", err)
	}
	if resp, ok := f.Response().(error); ok && resp != nil {
		return 0, resp
	}
	return f.Index(), nil
}
