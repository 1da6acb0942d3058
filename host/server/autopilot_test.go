package server_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// The leader's autopilot reports every server healthy; a server that
// stops answering is failed after AutopilotFailedAfter, the cluster
// unhealthy. With cleanup_dead_servers off (an operator's configuration,
// through raft, with check-and-set) it stays in the raft configuration;
// turned on, it is removed (two voters stay: a quorum). Restarted from its
// data dir, it finds that the leader's configuration no longer holds it
// and asks to be added again: a non-voter, promoted once stable.
func TestAutopilot_RemovesAFailedServerWhichRejoins(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, 3)
	for i := range cfgs {
		cfgs[i].AutopilotFailedAfter, cfgs[i].AutopilotInterval = 2*time.Second, 100*time.Millisecond
		cfgs[i].Autopilot.ServerStabilizationTime = int64(100 * time.Millisecond)
		servers[i] = servertest.StartMember(t, cfgs[i], nil)
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	// The servers' versions are known from the second round on.
	servertest.WaitFor(t, "a healthy cluster", func() bool {
		st := leader.AutopilotState()
		return st != nil && st.Healthy && st.FailureTolerance == 1 && len(st.Servers) == 3 &&
			!slices.ContainsFunc(slices.Collect(maps.Values(st.Servers)), func(sv *autopilot.ServerState) bool { return sv.Server.Version == "" })
	})
	for id, sv := range leader.AutopilotState().Servers {
		if sv.Server.NodeStatus != autopilot.NodeAlive || sv.Server.Version != server.Version || !sv.Health.Healthy {
			t.Errorf("server %s: %+v", id, sv)
		}
	}

	c := *leader.AutopilotConfig(leader.Store().Snapshot())
	c.CleanupDeadServers = false
	if ok, _, err := leader.SetAutopilotConfig(&c, true, 0); !ok || err != nil {
		t.Fatalf("set the configuration: %v, %v", ok, err)
	}
	if ok, _, err := leader.SetAutopilotConfig(&c, true, 0); ok || err != nil {
		t.Fatalf("a second check-and-set at index 0: %v, %v", ok, err)
	}

	f := (slices.Index(servers, leader) + 1) % 3
	gone := cfgs[f].NodeName
	if err := servers[f].Shutdown(); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the stopped server failed, the cluster unhealthy", func() bool {
		st := leader.AutopilotState()
		return st != nil && !st.Healthy && st.FailureTolerance == 0 && st.Servers[raft.ServerID(gone)] != nil &&
			st.Servers[raft.ServerID(gone)].Server.NodeStatus == autopilot.NodeFailed
	})
	time.Sleep(500 * time.Millisecond) // several autopilot rounds
	if !slices.Contains(raftIDs(t, leader), gone) {
		t.Fatal("a failed server was removed with cleanup_dead_servers off")
	}
	c = *leader.AutopilotConfig(leader.Store().Snapshot())
	c.CleanupDeadServers = true
	if ok, _, err := leader.SetAutopilotConfig(&c, true, c.ModifyIndex); !ok || err != nil {
		t.Fatalf("turn cleanup on: %v, %v", ok, err)
	}
	servertest.WaitFor(t, "the failed server removed", func() bool { return !slices.Contains(raftIDs(t, leader), gone) })

	back := servertest.StartMember(t, cfgs[f], nil)
	servertest.WaitFor(t, "the server back in the configuration, following", func() bool {
		return slices.Contains(raftIDs(t, leader), gone) && back.Leader() == leader.RPCAddr()
	})
	// It comes back as a non-voter, promoted once stable.
	servertest.WaitFor(t, "a healthy cluster again, the server a voter", func() bool {
		st := leader.AutopilotState()
		return st != nil && st.Healthy && len(st.Servers) == 3 && st.Servers[raft.ServerID(gone)].State == autopilot.RaftVoter
	})
}

// A server added while the leader has led for longer than
// AutopilotFailedAfter is not failed (nor removed) before it could answer:
// its clock starts when the leader sees it in the configuration.
func TestAutopilot_JoiningServerIsNotFailed(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 4)
	for i := range cfgs {
		cfgs[i].AutopilotFailedAfter, cfgs[i].AutopilotInterval = time.Second, 20*time.Millisecond
		cfgs[i].Autopilot.ServerStabilizationTime = int64(100 * time.Millisecond)
		cfgs[i].BootstrapExpect, cfgs[i].RetryJoin = 3, cfgs[i].RetryJoin[:3]
	}
	servers := make([]*server.Server, 3)
	for i := range servers {
		servers[i] = servertest.StartMember(t, cfgs[i], nil)
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	time.Sleep(2 * cfgs[0].AutopilotFailedAfter)

	joiner := raft.ServerID(cfgs[3].NodeName)
	servertest.StartMember(t, cfgs[3], nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st := leader.AutopilotState(); st != nil && st.Servers[joiner] != nil {
			sv := st.Servers[joiner]
			if sv.Server.NodeStatus != autopilot.NodeAlive {
				t.Fatalf("the joining server is %s in the autopilot's state", sv.Server.NodeStatus)
			}
			if sv.Health.Healthy {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the joining server is not healthy after 20 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if !slices.Contains(raftIDs(t, leader), string(joiner)) {
		t.Fatal("the joining server was removed")
	}
}

// A server that joins a running cluster is a non-voter until the leader's
// autopilot has seen it healthy for server_stabilization_time, then a
// voter.
func TestAutopilot_PromotesAJoiningServer(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, 3)
	for i := range cfgs {
		cfgs[i].AutopilotInterval = 100 * time.Millisecond
		cfgs[i].Autopilot.ServerStabilizationTime = int64(3 * time.Second)
		servers[i] = servertest.StartMember(t, cfgs[i], nil)
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	// raft-autopilot waits for stabilization only once it has run that
	// long itself (before, it promotes at once).
	servertest.WaitFor(t, "the autopilot running", func() bool { return leader.AutopilotState() != nil })
	time.Sleep(time.Duration(cfgs[0].Autopilot.ServerStabilizationTime) + 500*time.Millisecond)
	cfg := servertest.ClusterConfigs(t, 1)[0]
	cfg.NodeName, cfg.BootstrapExpect, cfg.RetryJoin = "server-4", 0, []string{cfgs[0].RPCAddr}
	servertest.StartMember(t, cfg, nil)
	suffrage := func() (in, voter bool) {
		confs, _, err := leader.RaftConfiguration()
		if err != nil {
			t.Fatal(err)
		}
		for _, sv := range confs {
			if sv.ID == "server-4" {
				return true, sv.Voter
			}
		}
		return false, false
	}
	servertest.WaitFor(t, "the new server in the configuration", func() bool { in, _ := suffrage(); return in })
	if _, voter := suffrage(); voter {
		t.Fatal("a joining server votes at once")
	}
	servertest.WaitFor(t, "the new server promoted", func() bool { _, voter := suffrage(); return voter })
}
