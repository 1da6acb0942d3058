package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/internal/hclogzero"
	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// Autopilot, as Nomad's (hashicorp/raft-autopilot): the leader watches
// every server of the raft configuration (how far its log trails the
// leader's, when it last heard from the leader), reports the cluster's
// health and failure tolerance, and, with cleanup_dead_servers, removes
// servers that have failed, as long as enough voters stay for a quorum
// (and min_quorum). Nomad learns that a server failed from its gossip;
// Drover has none, so a server is failed once it has not answered the
// leader for Config.AutopilotFailedAfter (30 s by default), counted from
// when the leader first saw it in its configuration at the earliest. A
// removed server that comes back asks to join again (watchMembership).

// DefaultAutopilotConfig is Nomad's default autopilot configuration.
func DefaultAutopilotConfig() state.AutopilotConfig {
	return state.AutopilotConfig{CleanupDeadServers: true, LastContactThreshold: int64(200 * time.Millisecond),
		MaxTrailingLogs: 250, ServerStabilizationTime: int64(10 * time.Second)}
}

// AutopilotConfig returns the autopilot configuration: the one an
// operator wrote, else the agent's (Config.Autopilot).
func (s *Server) AutopilotConfig(snap *state.Snapshot) *state.AutopilotConfig {
	if c := snap.AutopilotConfig(); c != nil {
		return c
	}
	c := s.cfg.Autopilot
	return &c
}

// SetAutopilotConfig writes the autopilot configuration; with cas, only if
// the stored one's modify index is still index (0 before any). It reports
// whether it was written.
func (s *Server) SetAutopilotConfig(c *state.AutopilotConfig, cas bool, index uint64) (bool, uint64, error) {
	if c.LastContactThreshold < 0 || c.ServerStabilizationTime < 0 {
		return false, 0, badRequest(errors.New("autopilot durations must not be negative"))
	}
	applied, err := s.Apply(fsm.AutopilotConfigRequestType, &fsm.AutopilotConfigRequest{Config: c, CAS: cas, ModifyIndex: index})
	if errors.Is(err, fsm.ErrConflict) {
		return false, s.store.Snapshot().Index(), nil
	}
	if err != nil {
		return false, 0, err
	}
	return true, applied, nil
}

// AutopilotState is the autopilot's last view of the servers (nil on a
// server that does not lead).
func (s *Server) AutopilotState() *autopilot.State {
	if ap := s.autopilot.Load(); ap != nil {
		return ap.GetState()
	}
	return nil
}

// runAutopilot runs an autopilot while this server leads.
func (s *Server) runAutopilot(ctx context.Context) {
	s.autopilotSeen.reset()
	ap := s.newAutopilot()
	ap.Start(ctx)
	s.autopilot.Store(ap)
	<-ctx.Done()
	s.autopilot.Store(nil)
	<-ap.Stop()
}

func (s *Server) newAutopilot() *autopilot.Autopilot {
	opts := []autopilot.Option{autopilot.WithLogger(hclogzero.New(s.log, "autopilot", hclogzero.Level(s.log)))}
	if s.cfg.AutopilotInterval > 0 {
		opts = append(opts, autopilot.WithUpdateInterval(s.cfg.AutopilotInterval), autopilot.WithReconcileInterval(s.cfg.AutopilotInterval))
	}
	return autopilot.New(s.raftLayer.raft, autopilotDelegate{s}, opts...)
}

// seenServers remembers when each server of the raft configuration last
// answered the leader, and the version it said it runs. A server's clock
// starts when the leader first sees it in the configuration (as it begins
// to lead, or once the server is added), not earlier: a server that joins,
// or is added back, while the leader has led for long is not failed, and
// removed, before it could answer once.
type seenServers struct {
	mu       sync.Mutex
	at       map[raft.ServerID]time.Time
	versions map[raft.ServerID]string
}

func (ss *seenServers) reset() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.at, ss.versions = map[raft.ServerID]time.Time{}, map[raft.ServerID]string{}
}

// track makes ids, the servers of the raft configuration at now, the
// servers watched: one new to it is counted from now, one no longer in it
// is forgotten (added back, it is new again).
func (ss *seenServers) track(ids []raft.ServerID, now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, id := range ids {
		if _, ok := ss.at[id]; !ok {
			ss.at[id] = now
		}
	}
	for id := range ss.at {
		if !slices.Contains(ids, id) {
			delete(ss.at, id)
			delete(ss.versions, id)
		}
	}
}

// saw records that id, a server watched, answered at now.
func (ss *seenServers) saw(id raft.ServerID, now time.Time, version string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.at[id]; ok {
		ss.at[id], ss.versions[id] = now, version
	}
}

func (ss *seenServers) version(id raft.ServerID) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.versions[id]
}

// failed reports whether id, a server watched, has not answered for
// longer than after, since it last did or since it is watched.
func (ss *seenServers) failed(id raft.ServerID, now time.Time, after time.Duration) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	last, ok := ss.at[id]
	return ok && now.Sub(last) > after
}

// autopilotDelegate is the server as raft-autopilot sees it.
type autopilotDelegate struct{ s *Server }

func (d autopilotDelegate) AutopilotConfig() *autopilot.Config {
	c := d.s.AutopilotConfig(d.s.store.Snapshot())
	return &autopilot.Config{CleanupDeadServers: c.CleanupDeadServers, LastContactThreshold: time.Duration(c.LastContactThreshold),
		MaxTrailingLogs: c.MaxTrailingLogs, MinQuorum: c.MinQuorum, ServerStabilizationTime: time.Duration(c.ServerStabilizationTime)}
}

func (d autopilotDelegate) NotifyState(st *autopilot.State) {
	healthy := 0
	if st.Healthy {
		healthy = 1
	}
	d.s.metrics.SetGauge([]string{"autopilot", "healthy"}, float32(healthy))
	d.s.metrics.SetGauge([]string{"autopilot", "failure_tolerance"}, float32(st.FailureTolerance))
}

// KnownServers are the servers of the raft configuration, each alive or
// failed by when it last answered.
func (d autopilotDelegate) KnownServers() map[raft.ServerID]*autopilot.Server {
	s := d.s
	f := s.raftLayer.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	_, leader := s.raftLayer.raft.LeaderWithID()
	now := s.now()
	servers := f.Configuration().Servers
	ids := make([]raft.ServerID, len(servers))
	for i, sv := range servers {
		ids[i] = sv.ID
	}
	s.autopilotSeen.track(ids, now)
	out := map[raft.ServerID]*autopilot.Server{}
	for _, sv := range servers {
		status, version := autopilot.NodeAlive, Version
		if sv.ID != raft.ServerID(s.cfg.NodeName) {
			version = s.autopilotSeen.version(sv.ID)
			if s.autopilotSeen.failed(sv.ID, now, s.cfg.AutopilotFailedAfter) {
				status = autopilot.NodeFailed
			}
		}
		out[sv.ID] = &autopilot.Server{ID: sv.ID, Name: string(sv.ID), Address: sv.Address, NodeStatus: status,
			Version: version, RaftVersion: 3, IsLeader: sv.ID == leader, NodeType: autopilot.NodeVoter}
	}
	return out
}

// FetchServerStats asks each server (this one: its own raft) how far its
// log is and when it last heard from the leader.
func (d autopilotDelegate) FetchServerStats(ctx context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	s := d.s
	out := map[raft.ServerID]*autopilot.ServerStats{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	tr := s.rpcTransport()
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for id, sv := range servers {
		if id == raft.ServerID(s.cfg.NodeName) {
			info := s.peerInfo()
			mu.Lock() // beside the answers of servers asked already
			out[id] = &autopilot.ServerStats{LastIndex: info.LastIndex, LastTerm: info.LastTerm, LastContact: info.LastContact}
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := fetchPeerInfo(ctx, client, string(sv.Address))
			if err != nil || info.ID != string(id) {
				return
			}
			s.autopilotSeen.saw(id, s.now(), info.Version)
			mu.Lock()
			out[id] = &autopilot.ServerStats{LastIndex: info.LastIndex, LastTerm: info.LastTerm, LastContact: info.LastContact}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// RemoveFailedServer removes a failed server from the raft configuration,
// in the background, as raft-autopilot asks.
func (d autopilotDelegate) RemoveFailedServer(sv *autopilot.Server) {
	s := d.s
	go func() {
		s.log.Warn().Str("server", string(sv.ID)).Str("address", string(sv.Address)).
			Dur("not_answering_for", s.cfg.AutopilotFailedAfter).Msg("autopilot: removing a failed server from the raft configuration")
		if err := s.raftLayer.raft.RemoveServer(sv.ID, 0, s.cfg.RaftApplyTimeout).Error(); err != nil {
			s.log.Error().Err(err).Str("server", string(sv.ID)).Msg("autopilot: could not remove a failed server")
		}
	}()
}

// raftStats are this server's log position and last contact with the
// leader, for PeerInfo.
func (s *Server) raftStats() (lastIndex, lastTerm uint64, lastContact time.Duration) {
	r := s.raftLayer.raft
	lastIndex = r.LastIndex()
	lastTerm, _ = strconv.ParseUint(r.Stats()["last_log_term"], 10, 64)
	return lastIndex, lastTerm, s.LastContact()
}
