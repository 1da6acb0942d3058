package server

import (
	"context"
	"sync"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// heartbeats keeps one timer per live node on the leader. A node that does
// not heartbeat within its TTL plus the grace period is marked down (or
// disconnected, see expire), which creates node-update evals for its jobs.
type heartbeats struct {
	s      *Server
	mu     sync.Mutex
	timers map[string]*time.Timer
	active bool
}

func newHeartbeats(s *Server) *heartbeats {
	return &heartbeats{s: s, timers: map[string]*time.Timer{}}
}

// run arms a timer for every node that is not down and disarms all when
// leadership ends. A new leader gives every node the failover TTL, so nodes
// have time to find it before they are marked down.
func (h *heartbeats) run(ctx context.Context) {
	h.mu.Lock()
	h.active = true
	failover := h.s.cfg.FailoverHeartbeatTTL
	for _, n := range h.s.store.Snapshot().Nodes() {
		if n.Status == sdk.NodeStatusDown {
			continue
		}
		ttl := max(failover, h.ttl())
		id := n.ID
		h.timers[id] = time.AfterFunc(ttl+h.s.cfg.HeartbeatGrace, func() { h.expire(id) })
	}
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	h.active = false
	for id, t := range h.timers {
		t.Stop()
		delete(h.timers, id)
	}
	h.mu.Unlock()
}

// ttl is the heartbeat TTL to give a node: it grows with the cluster so the
// leader sees at most MaxHeartbeatsPerSecond, plus up to the same again of
// jitter so nodes spread out.
func (h *heartbeats) ttl() time.Duration {
	n := len(h.timers)
	ttl := time.Duration(float64(n) / h.s.cfg.MaxHeartbeatsPerSecond * float64(time.Second))
	ttl = max(ttl, h.s.cfg.MinHeartbeatTTL)
	return ttl + time.Duration(h.s.randInt64(int64(ttl)))
}

// reset (re)arms a node's timer and returns the TTL to tell the node.
func (h *heartbeats) reset(nodeID string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	ttl := h.ttl()
	if !h.active {
		return ttl
	}
	if t, ok := h.timers[nodeID]; ok {
		t.Reset(ttl + h.s.cfg.HeartbeatGrace)
		return ttl
	}
	h.timers[nodeID] = time.AfterFunc(ttl+h.s.cfg.HeartbeatGrace, func() { h.expire(nodeID) })
	return ttl
}

// clear disarms a node's timer (the node was removed).
// count is how many nodes have a heartbeat timer armed.
func (h *heartbeats) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timers)
}

func (h *heartbeats) clear(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
		delete(h.timers, nodeID)
	}
}

// expire handles a node that missed its heartbeat. As Nomad's, a node
// running allocations whose group tolerates disconnects (disconnect's
// lost_after or max_client_disconnect) becomes disconnected rather than
// down: the schedulers mark those allocations unknown and replace them,
// and the node's timer is re-armed until the longest such window ends.
// A node with no such allocation, or whose windows are over, is marked
// down.
func (h *heartbeats) expire(nodeID string) {
	h.mu.Lock()
	delete(h.timers, nodeID)
	active := h.active
	h.mu.Unlock()
	if !active {
		return
	}
	snap := h.s.store.Snapshot()
	n := snap.Node(nodeID)
	if n == nil {
		return
	}
	now := h.s.now()
	since := now
	if n.Status == sdk.NodeStatusDisconnected {
		since = time.Unix(n.StatusUpdatedAt, 0)
	}
	status, left := sdk.NodeStatusDown, disconnectWindow(snap.AllocsByNode(nodeID), since, now)
	if left > 0 {
		status = sdk.NodeStatusDisconnected
		h.arm(nodeID, left)
	}
	if n.Status == status {
		return
	}
	h.s.log.Warn().Str("node_id", nodeID).Str("status", status).Msg("node missed its heartbeat")
	if _, err := h.s.UpdateNodeStatus(nodeID, status, "Node heartbeat missed"); err != nil {
		h.s.log.Error().Err(err).Str("node_id", nodeID).Str("status", status).Msg("failed to update the node's status")
	}
}

// disconnectWindow is how much longer, at now, a node disconnected since
// since may stay disconnected: the longest lost_after among its live
// allocations, 0 when none tolerates a disconnect or every window is over.
func disconnectWindow(allocs []*sdk.Allocation, since, now time.Time) time.Duration {
	var left time.Duration
	for _, a := range allocs {
		if a.TerminalStatus() || a.Job == nil {
			continue
		}
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.LostAfter() > 0 {
			left = max(left, since.Add(tg.LostAfter()).Sub(now))
		}
	}
	return left
}

// arm sets a node's timer to fire after d (a disconnected node's window).
func (h *heartbeats) arm(nodeID string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.active {
		return
	}
	if t, ok := h.timers[nodeID]; ok {
		t.Reset(d)
		return
	}
	h.timers[nodeID] = time.AfterFunc(d, func() { h.expire(nodeID) })
}
