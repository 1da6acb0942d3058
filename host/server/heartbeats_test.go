package server_test

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// disconnectRig is a server with short heartbeat TTLs and three nodes:
// node-0000 runs job "tolerant" (its group tolerates disconnects for
// lostAfter), node-0001 runs job "plain", both stop heartbeating; node-0002
// keeps heartbeating.
func disconnectRig(t *testing.T, lostAfter time.Duration) *server.Server {
	s := servertest.New(t, servertest.NativeBuiltins(t, 1), func(c *server.Config) {
		c.NumWorkers = 1
		c.MinHeartbeatTTL, c.HeartbeatGrace, c.FailoverHeartbeatTTL = 200*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
	})
	register := func(i int) {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	register(0)
	register(1)
	avoid := func(j *sdk.Job, node string) *sdk.Job {
		j.Constraints = append(j.Constraints, &sdk.Constraint{LTarget: "${node.unique.id}", RTarget: node, Operand: "!="})
		return j
	}
	tolerant := avoid(servertest.Job("tolerant", sdk.JobTypeService, 1, 100, 64), "node-0001") // on node-0000
	tolerant.TaskGroups[0].Disconnect = &sdk.DisconnectStrategy{LostAfter: lostAfter}
	plain := avoid(servertest.Job("plain", sdk.JobTypeService, 1, 100, 64), "node-0000") // on node-0001
	for _, j := range []*sdk.Job{tolerant, plain} {
		evalID, _, err := s.RegisterJob(j)
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, evalID)
	}
	// Only running allocations are kept (unknown) through a disconnect;
	// pending ones are lost at once, as in Nomad.
	setRunning(t, s, s.Store().Snapshot().Allocs()...)
	register(2)
	heartbeat(t, "node-0002", s)
	waitFor(t, "node-0001 to be down and node-0000 disconnected", func() bool {
		return nodeStatus(s, "node-0001") == sdk.NodeStatusDown && nodeStatus(s, "node-0000") == sdk.NodeStatusDisconnected
	})
	if st := nodeStatus(s, "node-0002"); st != sdk.NodeStatusReady {
		t.Fatalf("the node that heartbeats is %s", st)
	}
	waitFor(t, "the unknown allocation to be replaced", func() bool {
		var unknown, live int
		for _, a := range s.Store().Snapshot().AllocsByJob("default", "tolerant") {
			switch {
			case a.ClientStatus == sdk.AllocClientStatusUnknown:
				unknown++
			case !a.TerminalStatus() && a.NodeID == "node-0002":
				live++
			}
		}
		return unknown == 1 && live == 1
	})
	// The down node's allocation is lost by the plain job's own eval,
	// which may still run when the tolerant job's replacement is placed.
	waitFor(t, "the down node's allocation to be lost", func() bool {
		for _, a := range s.Store().Snapshot().AllocsByJob("default", "plain") {
			if a.NodeID == "node-0001" {
				return a.ClientStatus == sdk.AllocClientStatusLost
			}
		}
		return false
	})
	return s
}

func nodeStatus(s *server.Server, id string) string { return s.Store().Snapshot().Node(id).Status }

func setRunning(t *testing.T, s *server.Server, allocs ...*sdk.Allocation) {
	t.Helper()
	var running []server.AllocUpdate
	for _, a := range allocs {
		running = append(running, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning})
	}
	if _, err := s.UpdateAllocsFromClient(running); err != nil {
		t.Fatal(err)
	}
}

// heartbeat keeps a node heartbeating until the test ends.
func heartbeat(t *testing.T, nodeID string, s *server.Server) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				_, _, _ = s.NodeHeartbeat(nodeID)
			}
		}
	}()
}

// A node that misses its heartbeat is marked down, unless it runs an
// allocation whose group tolerates disconnects: then it is disconnected
// (its allocations become unknown and are replaced) until the group's
// lost_after is over, and down after that.
func TestHeartbeats_MissedHeartbeatDisconnectsThenDowns(t *testing.T) {
	s := disconnectRig(t, 3*time.Second)
	disconnectedAt := s.Store().Snapshot().Node("node-0000").StatusUpdatedAt
	waitFor(t, "node-0000 to be down once lost_after is over", func() bool { return nodeStatus(s, "node-0000") == sdk.NodeStatusDown })
	// Status times are in whole seconds: a 3s window shows as 2 or more.
	if held := s.Store().Snapshot().Node("node-0000").StatusUpdatedAt - disconnectedAt; held < 2 {
		t.Fatalf("node-0000 went down %ds after disconnecting, before its 3s lost_after", held)
	}
}

// A disconnected node that heartbeats again within lost_after is ready
// again; once its allocation reports running, one of the two copies (the
// replacement, as Nomad 1.6 keeps the original) is stopped.
func TestHeartbeats_ReconnectWithinLostAfter(t *testing.T) {
	s := disconnectRig(t, time.Minute)
	heartbeat(t, "node-0000", s)
	waitFor(t, "node-0000 to be ready again", func() bool { return nodeStatus(s, "node-0000") == sdk.NodeStatusReady })
	var original *sdk.Allocation
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "tolerant") {
		if a.NodeID == "node-0000" {
			original = a
		}
	}
	setRunning(t, s, original)
	waitFor(t, "one copy of the allocation to be left", func() bool {
		var live []*sdk.Allocation
		for _, a := range s.Store().Snapshot().AllocsByJob("default", "tolerant") {
			if !a.TerminalStatus() {
				live = append(live, a)
			}
		}
		return len(live) == 1 && live[0].ID == original.ID
	})
}
