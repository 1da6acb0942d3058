package server_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// startCluster starts n servers that form one cluster and returns them
// with their configurations and the leader.
func startCluster(t *testing.T, n int) ([]server.Config, []*server.Server, *server.Server) {
	t.Helper()
	cfgs := servertest.ClusterConfigs(t, n)
	servers := make([]*server.Server, n)
	for i, cfg := range cfgs {
		fastLifecycle(&cfg)
		cfgs[i] = cfg
		servers[i] = servertest.StartMember(t, cfg, nil)
	}
	return cfgs, servers, servertest.WaitForClusterLeader(t, servers)
}

// liveAllocs counts the allocations of a job that are not stopped.
func liveAllocs(s *server.Server, jobID string) int {
	n := 0
	for _, a := range s.Store().Snapshot().AllocsByJob("default", jobID) {
		if a.DesiredStatus == sdk.AllocDesiredStatusRun {
			n++
		}
	}
	return n
}

func raftIDs(t *testing.T, s *server.Server) []string {
	t.Helper()
	servers, _, err := s.RaftConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sv := range servers {
		ids = append(ids, sv.ID)
	}
	slices.Sort(ids)
	return ids
}

// Three servers form a cluster on their own; what the leader commits
// reaches every follower; a follower refuses writes; when the leader
// stops another server takes over with the state and keeps scheduling;
// and the stopped server, restarted on its data dir, catches up as a
// follower.
func TestCluster_FormsReplicatesAndFailsOver(t *testing.T) {
	cfgs, servers, leader := startCluster(t, 3)
	if got := raftIDs(t, leader); !slices.Equal(got, []string{"server-1", "server-2", "server-3"}) {
		t.Fatalf("raft configuration %v", got)
	}
	registerNode(t, leader, 0, 4000)
	registerNode(t, leader, 1, 4000)
	if e := servertest.WaitForEval(t, leader, registerJob(t, leader, servertest.Job("web", "service", 3, 100, 64))); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval %s", e.Status)
	}
	for _, s := range servers {
		servertest.WaitFor(t, "the allocations on every server", func() bool { return liveAllocs(s, "web") == 3 })
	}
	var follower *server.Server
	for _, s := range servers {
		if s != leader {
			follower = s
			break
		}
	}
	if _, _, err := follower.RegisterJob(servertest.Job("nope", "service", 1, 100, 64)); !errors.Is(err, server.ErrNotLeader) {
		t.Fatalf("a follower's write: %v, want ErrNotLeader", err)
	}

	old := slices.Index(servers, leader)
	if err := leader.Shutdown(); err != nil {
		t.Fatal(err)
	}
	servers[old] = nil
	next := servertest.WaitForClusterLeader(t, servers)
	if e := servertest.WaitForEval(t, next, registerJob(t, next, servertest.Job("web2", "service", 2, 100, 64))); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval after failover %s", e.Status)
	}
	if liveAllocs(next, "web") != 3 || liveAllocs(next, "web2") != 2 {
		t.Fatalf("after failover: web %d, web2 %d allocations", liveAllocs(next, "web"), liveAllocs(next, "web2"))
	}

	back := servertest.StartMember(t, cfgs[old], nil)
	servertest.WaitFor(t, "the restarted server to catch up", func() bool { return liveAllocs(back, "web2") == 2 })
	servers[old] = back
	if l := servertest.WaitForClusterLeader(t, servers); l == back {
		t.Log("the restarted server took the lead back")
	}
}

// A new server told of one member of a running cluster asks its leader
// to add it, gets the state, and an operator can remove it again.
func TestCluster_NewServerJoinsAndIsRemoved(t *testing.T) {
	cfgs, _, leader := startCluster(t, 3)
	registerNode(t, leader, 0, 4000)
	servertest.WaitForEval(t, leader, registerJob(t, leader, servertest.Job("web", "service", 1, 100, 64)))

	cfg := servertest.ClusterConfigs(t, 1)[0]
	cfg.NodeName, cfg.BootstrapExpect, cfg.RetryJoin = "server-4", 3, []string{cfgs[0].RPCAddr}
	fourth := servertest.StartMember(t, cfg, nil)
	servertest.WaitFor(t, "the new server in the raft configuration", func() bool { return len(raftIDs(t, leader)) == 4 })
	servertest.WaitFor(t, "the new server to get the state", func() bool { return liveAllocs(fourth, "web") == 1 })
	if fourth.Leader() != leader.RPCAddr() {
		t.Fatalf("the new server follows %q, want %q", fourth.Leader(), leader.RPCAddr())
	}

	if err := fourth.RemovePeer("server-4", ""); !errors.Is(err, server.ErrNotLeader) {
		t.Fatalf("remove on a follower: %v", err)
	}
	if err := fourth.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := leader.RemovePeer("server-4", ""); err != nil {
		t.Fatal(err)
	}
	if got := raftIDs(t, leader); !slices.Equal(got, []string{"server-1", "server-2", "server-3"}) {
		t.Fatalf("after remove: %v", got)
	}
	if err := leader.RemovePeer("server-9", ""); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("remove of an unknown server: %v", err)
	}
}

// A cluster configuration that cannot work is refused at start, saying
// why.
func TestCluster_ConfigErrors(t *testing.T) {
	base := servertest.ClusterConfigs(t, 1)[0]
	for _, tc := range []struct {
		name   string
		modify func(*server.Config)
		want   string
	}{
		{"expect without RPC", func(c *server.Config) { c.RPCAddr, c.BootstrapExpect, c.RetryJoin = "", 3, nil }, "needs an RPC address"},
		{"retry join without RPC", func(c *server.Config) { c.RPCAddr, c.BootstrapExpect = "", 0 }, "needs an RPC address"},
		{"dev with RPC", func(c *server.Config) { c.Dev = true }, "dev server runs alone"},
		{"expect without retry join", func(c *server.Config) { c.BootstrapExpect, c.RetryJoin = 3, nil }, "needs retry_join"},
		{"negative expect", func(c *server.Config) { c.BootstrapExpect = -1 }, "must not be negative"},
		{"no retry interval", func(c *server.Config) { c.RetryInterval = 0 }, "retry interval"},
		{"wildcard without advertise", func(c *server.Config) { c.RPCAddr = "0.0.0.0:0" }, "advertise address"},
		{"bad advertise", func(c *server.Config) { c.RPCAdvertise = "nope" }, "advertise address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.DataDir = t.TempDir()
			cfg.RPCAddr = servertest.FreeAddrs(t, 1)[0]
			tc.modify(&cfg)
			s, err := server.New(cfg, servertest.NativeBuiltins(t, 1), zerolog.Nop())
			if err == nil {
				_ = s.Shutdown()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}
