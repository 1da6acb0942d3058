package server

import (
	"context"
	"sync"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
)

// A cluster has an ID, written into its state once by its first leader
// (state.ClusterMeta) and kept by each server in its data dir. Raft knows
// servers by name, so without it a data dir left over from another cluster
// under a member's name (or at a member's address) takes part in the
// cluster's elections, and with a higher term can win one and lead with a
// stranger's state. Servers that both know their cluster's ID refuse raft
// connections and joins between different clusters (rpcMux.route,
// addVoter, joinRound). A server that knows none yet (new, or its data dir
// older than the ID) accepts any and learns its cluster's from the state.

// clusterIdentity is the cluster ID this server knows.
type clusterIdentity struct {
	mu sync.Mutex
	id string
}

// ClusterID returns the ID of the cluster this server belongs to, "" until
// it knows one.
func (s *Server) ClusterID() string {
	s.cluster.mu.Lock()
	defer s.cluster.mu.Unlock()
	return s.cluster.id
}

// learnClusterID takes the cluster ID the state holds (the FSM's hook: an
// entry or a snapshot brought it) and keeps it in the data dir, then uses
// it. The data dir holds raft state by then, so it is marked initialized
// too (a server stopped right after its cluster formed would otherwise
// come back not knowing its cluster). The state is what counts: an
// operator snapshot of another cluster, restored, makes this its cluster.
func (s *Server) learnClusterID(m *state.ClusterMeta) {
	old := s.ClusterID()
	if old == m.ClusterID {
		return
	}
	if old != "" {
		s.log.Warn().Str("was", old).Str("now", m.ClusterID).Msg("the state names another cluster ID (a restored snapshot of another cluster); this server follows it")
	}
	if d := s.raftLayer.dir; d != nil {
		err := s.markDataDirInitialized()
		if err == nil {
			err = d.setClusterID(m.ClusterID)
		}
		if err != nil {
			s.log.Error().Err(err).Msg("could not keep the cluster ID in the data dir")
		}
	}
	s.cluster.mu.Lock()
	s.cluster.id = m.ClusterID
	s.cluster.mu.Unlock()
}

// ensureClusterID writes the cluster's ID into the state if it has none:
// the leader's duty, once per cluster (a leader of a cluster formed before
// cluster IDs writes one too).
func (s *Server) ensureClusterID(ctx context.Context) {
	if s.store.Snapshot().ClusterMeta() != nil {
		return
	}
	now := s.now()
	if _, err := s.Apply(fsm.ClusterMetaRequestType, &fsm.ClusterMetaRequest{ClusterID: newID(), CreateTime: now.UnixNano()}); err != nil && ctx.Err() == nil {
		s.log.Warn().Err(err).Msg("could not write the cluster ID; the next leader will")
	}
}

// sameCluster reports whether a server that says it belongs to cluster
// other may talk raft to, or join, this one: unless both know their
// cluster, it may.
func sameCluster(mine, other string) bool {
	return mine == "" || other == "" || mine == other
}
