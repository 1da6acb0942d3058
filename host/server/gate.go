package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/fsm"
)

// A log entry of a type some server of the cluster does not know would be
// refused by that server's FSM: its state would go without the write,
// silently, and differ from the others' from then on (and a server that
// led with it would serve that state). So during a rolling upgrade a
// server applies an entry of a type newer than those every version
// applies (the ACL entries and those after them) only once every server
// in the raft configuration says it applies that type, as Nomad gates its
// features on every server's version.

// lastUngatedType is the newest entry type every version of Drover
// applies: servers older than PeerInfo.Applies apply up to it.
const lastUngatedType = fsm.ClusterMetaRequestType

// peerAskTimeout bounds asking a server which entry types it applies.
const peerAskTimeout = 5 * time.Second

// upToDateFor is how long a server that said it applies every type this
// one does is not asked again: ACL writes would otherwise each wait on a
// round trip to every server. A server downgraded meanwhile is found out
// once that has passed.
const upToDateFor = time.Minute

// upToDatePeers remembers until when each server (by ID and address) is
// known to apply every entry type this one does.
type upToDatePeers struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (u *upToDatePeers) known(key string, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return now.Before(u.until[key])
}

func (u *upToDatePeers) remember(key string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.until == nil {
		u.until = map[string]time.Time{}
	}
	u.until[key] = now.Add(upToDateFor)
}

// serversApply returns nil if every other server of the cluster applies
// entries of type t; otherwise an error naming the first that does not,
// or could not be asked (a server that is down could come back and
// replay the entry), and the entry should not be written.
func (s *Server) serversApply(t fsm.MessageType) error {
	if t <= lastUngatedType || s.rpc == nil || s.raftLayer.raft == nil {
		return nil
	}
	f := s.raftLayer.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("server: read the raft configuration: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), peerAskTimeout)
	defer cancel()
	client := &http.Client{Transport: s.rpcTransport()}
	defer client.CloseIdleConnections()
	for _, sv := range f.Configuration().Servers {
		key := string(sv.ID) + "@" + string(sv.Address)
		if string(sv.ID) == s.cfg.NodeName || s.upToDate.known(key, time.Now()) {
			continue
		}
		info, err := fetchPeerInfo(ctx, client, string(sv.Address))
		if err != nil {
			return fmt.Errorf("server: this write needs every server to apply entries of type %d, and server %s "+
				"could not be asked (%v): once it answers, or is removed (drover operator raft remove-peer), retry", t, sv.ID, err)
		}
		if applies := max(info.Applies, lastUngatedType); applies < t {
			return fmt.Errorf("server: server %s runs an older Drover (%s applies entries up to type %d; this write is of type %d): "+
				"upgrade every server, then retry", sv.ID, sv.Address, applies, t)
		}
		if info.Applies >= fsm.LastMessageType {
			s.upToDate.remember(key, time.Now())
		}
	}
	return nil
}
