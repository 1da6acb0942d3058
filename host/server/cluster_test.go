package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/internal/testlog"
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

// handLead makes servers[i] the leader, handing the lead over if another
// server has it, and returns it.
func handLead(t *testing.T, servers []*server.Server, i int) *server.Server {
	t.Helper()
	to := servers[i].Config().NodeName
	if leader := servertest.WaitForClusterLeader(t, servers); leader != servers[i] {
		if err := leader.TransferLeadership(to, ""); err != nil {
			t.Fatalf("hand the lead to %s: %v", to, err)
		}
	}
	servertest.WaitFor(t, to+" to lead", func() bool { return servertest.WaitForClusterLeader(t, servers) == servers[i] })
	return servers[i]
}

// liveAllocs counts the allocations of a job that are not stopped.
// placeService registers a service job of count 100 MHz / 64 MB tasks on
// s and waits for its eval to complete.
func placeService(t *testing.T, s *server.Server, id string, count int) {
	t.Helper()
	if e := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job(id, "service", count, 100, 64))); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("%s: eval %s", id, e.Status)
	}
}

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
	placeService(t, leader, "web", 3)
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
	placeService(t, next, "web2", 2)
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
	// A server that only joins: no bootstrap_expect, one member to ask.
	cfg.NodeName, cfg.BootstrapExpect, cfg.RetryJoin = "server-4", 0, []string{cfgs[0].RPCAddr}
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
	base := servertest.ClusterConfigs(t, 1)[0] // a lone networked server
	other := []string{"127.0.0.1:1"}
	for _, tc := range []struct {
		name   string
		modify func(*server.Config)
		want   string
	}{
		{"expect without RPC", func(c *server.Config) { c.RPCAddr, c.BootstrapExpect = "", 3 }, "needs an RPC address"},
		{"retry join without RPC", func(c *server.Config) { c.RPCAddr, c.BootstrapExpect, c.RetryJoin = "", 0, other }, "needs an RPC address"},
		{"dev with RPC", func(c *server.Config) { c.Dev = true }, "dev server runs alone"},
		{"expect without retry join", func(c *server.Config) { c.BootstrapExpect = 3 }, "needs retry_join"},
		{"expect 1 with retry join", func(c *server.Config) { c.RetryJoin = other }, "bootstrap_expect = 1"},
		{"expect over the servers named", func(c *server.Config) { c.BootstrapExpect, c.RetryJoin = 3, other }, "names only 1 other servers"},
		{"retry join not host:port", func(c *server.Config) { c.BootstrapExpect, c.RetryJoin = 0, []string{"nope"} }, "not host:port"},
		{"advertise without RPC", func(c *server.Config) { c.RPCAddr, c.RPCAdvertise, c.BootstrapExpect = "", "10.0.0.1:4647", 0 }, "needs an RPC address"},
		{"advertise on no address", func(c *server.Config) { c.RPCAdvertise = "0.0.0.0:4647" }, "advertise address"},
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

// A server waiting for the others is a member of no cluster yet: it
// lists itself, knows no leader, and forms nothing on its own.
func TestCluster_WaitingServerListsItself(t *testing.T) {
	cfg := servertest.ClusterConfigs(t, 3)[0]
	s := servertest.StartMember(t, cfg, nil)
	time.Sleep(5 * cfg.RetryInterval)
	members, err := s.Members(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members[0].ID != cfg.NodeName || !members[0].Alive || members[0].Address != cfg.RPCAddr {
		t.Fatalf("members %+v", members)
	}
	if s.IsLeader() || s.Leader() != "" || len(raftIDs(t, s)) != 0 {
		t.Fatalf("a lone server expecting 3 formed a cluster: leader %q, raft %v", s.Leader(), raftIDs(t, s))
	}
}

// A server stopped while it waits for the others (a first rollout under a
// supervisor, a mistyped bootstrap_expect) has no state yet: it starts
// again on its data dir, and then forms the cluster with the others.
func TestCluster_WaitingServerStartsAgain(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 2)
	first := servertest.StartMember(t, cfgs[0], nil)
	time.Sleep(5 * cfgs[0].RetryInterval)
	if err := first.Shutdown(); err != nil {
		t.Fatal(err)
	}
	again := servertest.StartMember(t, cfgs[0], nil)
	other := servertest.StartMember(t, cfgs[1], nil)
	servertest.WaitForClusterLeader(t, []*server.Server{again, other})
}

// A data dir is its server's: started under another name it is refused,
// as raft knows servers by name.
func TestCluster_DataDirOfAnotherServerIsRefused(t *testing.T) {
	cfg := servertest.ClusterConfigs(t, 1)[0]
	s := servertest.StartMember(t, cfg, nil)
	servertest.WaitForClusterLeader(t, []*server.Server{s})
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	cfg.NodeName = "server-9"
	_, err := server.New(cfg, servertest.NativeBuiltins(t, 1), zerolog.Nop())
	if !errors.Is(err, server.ErrDataDirUnusable) || !strings.Contains(err.Error(), `belongs to server "server-1"`) {
		t.Fatalf("another server's data dir: %v", err)
	}
}

// neverLeads checks, over several join rounds, that none of servers leads
// or is in a raft configuration: they formed no cluster.
func neverLeads(t *testing.T, what string, servers ...*server.Server) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s.IsLeader() || len(raftIDs(t, s)) != 0 {
				t.Fatalf("%s: %s formed a cluster: leader %v, raft %v", what, s.Config().NodeName, s.IsLeader(), raftIDs(t, s))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Formation never splits the servers: a server that only joins never
// bootstraps; servers that find one already in a cluster (even one
// without a leader) join it rather than bootstrap another; servers that
// disagree on bootstrap_expect form nothing.
func TestCluster_FormationNeverSplits(t *testing.T) {
	t.Run("join only", func(t *testing.T) {
		cfg := servertest.ClusterConfigs(t, 1)[0]
		cfg.BootstrapExpect, cfg.RetryJoin = 0, servertest.FreeAddrs(t, 1) // nobody there
		neverLeads(t, "a server that only joins", servertest.StartMember(t, cfg, nil))
	})
	t.Run("a cluster without a leader", func(t *testing.T) {
		cfgs, servers, leader := startCluster(t, 3)
		var survivor server.Config
		var left *server.Server
		for i, s := range servers {
			if s == leader {
				continue
			}
			if survivor.NodeName == "" {
				survivor, left = cfgs[i], s
				continue
			}
			_ = s.Shutdown()
		}
		_ = leader.Shutdown() // the survivor is left without a quorum
		// The leader hands its lead over as it shuts down: the survivor
		// may lead until it finds it has no quorum. New servers that
		// joined it then would join the cluster, not form one, which is
		// not the case under test.
		servertest.WaitFor(t, "the survivor to be without a leader", func() bool { return !left.IsLeader() && left.Leader() == "" })
		fresh := servertest.ClusterConfigs(t, 3)
		var started []*server.Server
		for i := range fresh {
			fresh[i].NodeName = fmt.Sprintf("new-%d", i+1)
			fresh[i].RetryJoin = append([]string{survivor.RPCAddr}, fresh[i].RetryJoin...)
			started = append(started, servertest.StartMember(t, fresh[i], nil))
		}
		neverLeads(t, "new servers beside a cluster without a leader", started...)
	})
	t.Run("bootstrap_expect disagrees", func(t *testing.T) {
		cfgs := servertest.ClusterConfigs(t, 3)
		a, b := cfgs[0], cfgs[1]
		a.BootstrapExpect, a.RetryJoin = 2, []string{a.RPCAddr, b.RPCAddr}
		// b also names a third server that never comes.
		neverLeads(t, "servers expecting 2 and 3", servertest.StartMember(t, a, nil), servertest.StartMember(t, b, nil))
	})
}

// A member restarted at another RPC address asks to be updated; a new
// server at a departed member's address, under another name, replaces it.
func TestCluster_MembersMoveAndAreReplaced(t *testing.T) {
	cfgs, servers, leader := startCluster(t, 3)
	registerNode(t, leader, 0, 4000)
	f := (slices.Index(servers, leader) + 1) % 3
	if err := servers[f].Shutdown(); err != nil {
		t.Fatal(err)
	}
	moved := cfgs[f]
	moved.RPCAddr = servertest.FreeAddrs(t, 1)[0]
	back := servertest.StartMember(t, moved, nil)
	addrOf := func(id string) string {
		confs, _, err := leader.RaftConfiguration()
		if err != nil {
			t.Fatal(err)
		}
		for _, sv := range confs {
			if sv.ID == id {
				return sv.Address
			}
		}
		return ""
	}
	servertest.WaitFor(t, "the moved server's new address in the configuration", func() bool { return addrOf(moved.NodeName) == moved.RPCAddr })
	servertest.WaitForEval(t, leader, registerJob(t, leader, servertest.Job("web", "service", 1, 100, 64)))
	servertest.WaitFor(t, "the moved server to follow", func() bool { return liveAllocs(back, "web") == 1 && back.Leader() == leader.RPCAddr() })

	if err := back.Shutdown(); err != nil {
		t.Fatal(err)
	}
	repl := servertest.ClusterConfigs(t, 1)[0]
	repl.NodeName, repl.RPCAddr = "server-9", moved.RPCAddr
	repl.BootstrapExpect, repl.RetryJoin = 0, []string{leader.RPCAddr()}
	nine := servertest.StartMember(t, repl, nil)
	servertest.WaitFor(t, "the replacement in the configuration", func() bool {
		ids := raftIDs(t, leader)
		return len(ids) == 3 && slices.Contains(ids, "server-9") && !slices.Contains(ids, moved.NodeName)
	})
	servertest.WaitFor(t, "the replacement to get the state", func() bool { return liveAllocs(nine, "web") == 1 })
}

// A second server under the name of a member that still runs is refused:
// taking the member's place in the configuration would cut it off.
func TestCluster_DuplicateNameIsRefused(t *testing.T) {
	cfgs, servers, leader := startCluster(t, 3)
	f := (slices.Index(servers, leader) + 1) % 3
	dup := servertest.ClusterConfigs(t, 1)[0]
	dup.NodeName, dup.BootstrapExpect, dup.RetryJoin = cfgs[f].NodeName, 0, []string{leader.RPCAddr()}
	servertest.StartMember(t, dup, nil)
	time.Sleep(10 * dup.RetryInterval)
	confs, _, err := leader.RaftConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	for _, sv := range confs {
		if sv.ID == cfgs[f].NodeName && sv.Address != cfgs[f].RPCAddr {
			t.Fatalf("the duplicate took %s's place: %+v", sv.ID, confs)
		}
	}
	servertest.WaitForEval(t, leader, registerJob(t, leader, servertest.Job("web", "service", 0, 100, 64)))
	servertest.WaitFor(t, "the member to follow still", func() bool {
		return servers[f].Store().Snapshot().Job("default", "web") != nil
	})
}

// clusterIDs waits until each server knows its cluster's ID, the same for
// all, and returns it.
func clusterID(t *testing.T, servers []*server.Server) string {
	t.Helper()
	var id string
	servertest.WaitFor(t, "every server to know the cluster ID", func() bool {
		id = servers[0].ClusterID()
		for _, s := range servers {
			if s.ClusterID() == "" || s.ClusterID() != id {
				return false
			}
		}
		return true
	})
	return id
}

// A data dir left over from another cluster, started under a member's
// name at its address, takes no part in the cluster: its raft connections
// are refused both ways, so even with a higher term it cannot lead with
// its stranger's state, and the two real members elect a leader that has
// the cluster's own state. (A QA pass saw such a server lead, the
// cluster's jobs gone from the leader's view.)
func TestCluster_ADataDirOfAnotherClusterTakesNoPart(t *testing.T) {
	cfgs, servers, leader := startCluster(t, 3)
	placeService(t, leader, "ours", 0)
	ours := clusterID(t, servers)
	for _, s := range servers {
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}

	// Another cluster, on the same names and addresses, whose term ends
	// higher.
	others := make([]server.Config, 3)
	var theirs []*server.Server
	for i, cfg := range cfgs {
		cfg.DataDir = t.TempDir()
		others[i] = cfg
		theirs = append(theirs, servertest.StartMember(t, cfg, nil))
	}
	other := servertest.WaitForClusterLeader(t, theirs)
	placeService(t, other, "theirs", 0)
	if id := clusterID(t, theirs); id == ours {
		t.Fatal("two clusters share an ID")
	}
	for range 3 {
		if err := servertest.WaitForClusterLeader(t, theirs).TransferLeadership("", ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range theirs {
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}

	back := []*server.Server{servertest.StartMember(t, cfgs[0], nil), servertest.StartMember(t, cfgs[1], nil)}
	stranger := servertest.StartMember(t, others[2], nil)
	leader = servertest.WaitForClusterLeader(t, back)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if stranger.IsLeader() {
			t.Fatal("the data dir of another cluster leads")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if servertest.WaitForClusterLeader(t, back).Store().Snapshot().Job("default", "ours") == nil {
		t.Fatal("the leader lost the cluster's state")
	}
	if stranger.Store().Snapshot().Job("default", "ours") != nil || stranger.ClusterID() == ours {
		t.Fatal("the stranger took the cluster's state")
	}
}

// A new server started at the address of a member that is gone, under
// its own name, takes no raft meant for that member: a cluster that has
// lost its quorum does not get it back from a server that holds none of
// its log (raft grants a vote when it knows no configuration). It waits
// for its members, or an operator, instead.
func TestCluster_ANewServerAtAGoneMembersAddressDoesNotVoteForIt(t *testing.T) {
	cfgs, servers, leader := startCluster(t, 3)
	placeService(t, leader, "web", 0)
	for _, s := range servers {
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
	survivor := servertest.StartMember(t, cfgs[0], nil)
	fresh := servertest.ClusterConfigs(t, 1)[0]
	fresh.NodeName, fresh.RPCAddr = "new-1", cfgs[1].RPCAddr
	fresh.BootstrapExpect, fresh.RetryJoin = 0, []string{cfgs[0].RPCAddr}
	newcomer := servertest.StartMember(t, fresh, nil)
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if survivor.IsLeader() || newcomer.IsLeader() {
			t.Fatalf("a cluster of one of three servers got a leader with the vote of a server at a gone member's address")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An operator restores another cluster's snapshot (a backup restored into
// a cluster built anew) while a follower is down: the cluster keeps its
// own ID, so its servers keep talking to each other, and every one of
// them, the one that was down too, gets the restored state.
func TestCluster_RestoringAnotherClustersSnapshotKeepsTheClusterWhole(t *testing.T) {
	_, theirs, other := startCluster(t, 3)
	placeService(t, other, "theirs", 0)
	theirID := clusterID(t, theirs)
	snap, err := other.SaveSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := snap.Write(&archive); err != nil {
		t.Fatal(err)
	}
	snap.Close()

	cfgs, servers, leader := startCluster(t, 3)
	ours := clusterID(t, servers)
	f := (slices.Index(servers, leader) + 1) % 3
	if err := servers[f].Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := leader.RestoreSnapshot(bytes.NewReader(archive.Bytes())); err != nil {
		t.Fatal(err)
	}
	servers[f] = servertest.StartMember(t, cfgs[f], nil)
	servertest.WaitFor(t, "every server to hold the restored state", func() bool {
		for _, s := range servers {
			if s.Store().Snapshot().Job("default", "theirs") == nil {
				return false
			}
		}
		return true
	})
	servertest.WaitForClusterLeader(t, servers)
	for _, s := range servers {
		if id := s.ClusterID(); id != ours || id == theirID {
			t.Fatalf("%s knows cluster %s after the restore, want its own %s", s.Config().NodeName, id, ours)
		}
		if m := s.Store().Snapshot().ClusterMeta(); m == nil || m.ClusterID != ours {
			t.Fatalf("%s's state names cluster %+v", s.Config().NodeName, m)
		}
	}
}

// Three failovers in a row, each old leader restarted as a follower:
// every job registered along the way is placed, and in the end every
// replica holds exactly the leader's state.
func TestCluster_RepeatedFailoversConverge(t *testing.T) {
	cfgs, servers, leader := startCluster(t, 3)
	registerNode(t, leader, 0, 4000)
	registerNode(t, leader, 1, 4000)
	for round := range 3 {
		id := fmt.Sprintf("web-%d", round)
		placeService(t, leader, id, 2)
		old := slices.Index(servers, leader)
		if err := leader.Shutdown(); err != nil {
			t.Fatal(err)
		}
		servers[old] = nil
		leader = servertest.WaitForClusterLeader(t, servers)
		servers[old] = servertest.StartMember(t, cfgs[old], nil)
		leader = servertest.WaitForClusterLeader(t, servers)
	}
	for round := range 3 {
		if n := liveAllocs(leader, fmt.Sprintf("web-%d", round)); n != 2 {
			t.Fatalf("web-%d has %d allocations", round, n)
		}
	}
	// A last write everyone must have, then the replicas must equal the
	// leader's state.
	index, err := leader.SetSchedulerConfig(&sdk.SchedulerConfiguration{MemoryOversubscriptionEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	want := dump(t, leader.Store().Snapshot())
	for _, s := range servers {
		servertest.WaitFor(t, "a replica to reach the last write", func() bool { return s.Store().Snapshot().Index() >= index })
		sameState(t, want, dump(t, s.Store().Snapshot()))
	}
}

// Followers schedule: with the lead handed to a server without workers,
// the followers' workers take the evals from the leader's broker, submit
// their plans to its queue (which checks them against the latest state)
// and conclude the evals through it. A failing scheduler's eval is nacked
// back to the leader and fails there after its deliveries.
func TestCluster_FollowersSchedule(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, 3)
	for i, cfg := range cfgs {
		fastLifecycle(&cfg)
		if i == 0 {
			cfg.NumWorkers = 0 // the server that will lead
		}
		reg := servertest.Func(t, 2, func(ctx *sdk.Context, e *sdk.Evaluation) error {
			if e.JobID == "broken" {
				return errors.New("this scheduler fails")
			}
			return placer(ctx, e)
		})
		servers[i] = servertest.StartMember(t, cfg, reg)
	}
	leader := handLead(t, servers, 0)
	registerNode(t, leader, 0, 4000)
	registerNode(t, leader, 1, 4000)
	for i := range 6 {
		id := fmt.Sprintf("web-%d", i)
		placeService(t, leader, id, 2)
		if n := liveAllocs(leader, id); n != 2 {
			t.Fatalf("%s: %d allocations", id, n)
		}
	}
	// (The leader has no workers: the followers placed all of that.)
	e := servertest.WaitForEval(t, leader, registerJob(t, leader, servertest.Job("broken", "service", 1, 100, 64)), sdk.EvalStatusFailed)
	if !strings.Contains(e.StatusDescription, "this scheduler fails") {
		t.Fatalf("the follower's nack reason did not reach the leader: %q", e.StatusDescription)
	}
}

// A follower stopping while its workers take evals hands back every eval
// it holds (or was being handed) before Shutdown returns, rather than
// leaving them outstanding on the leader until their nack timeouts.
func TestCluster_StoppingFollowerHandsBackItsEvals(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, 3)
	for i, cfg := range cfgs {
		fastLifecycle(&cfg)
		cfg.NumWorkers = 0
		if i == 2 {
			cfg.NumWorkers = 16
		}
		servers[i] = servertest.StartMember(t, cfg, servertest.Func(t, 16, func(ctx *sdk.Context, e *sdk.Evaluation) error {
			time.Sleep(time.Duration(e.CreateTime%7) * time.Millisecond)
			return placer(ctx, e)
		}))
	}
	leader := handLead(t, servers, 0)
	registerNode(t, leader, 0, 1_000_000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for j := 0; j < 300; j++ {
			if _, _, err := leader.RegisterJob(servertest.Job(fmt.Sprintf("j%d", j), "service", 1, 10, 10)); err != nil {
				return
			}
		}
	}()
	time.Sleep(150 * time.Millisecond)
	if err := servers[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	<-done
	// The leader may still be answering a dequeue the follower left: it
	// takes that eval back as soon as the answer fails, far within the
	// nack timeout (a minute).
	deadline := time.Now().Add(2 * time.Second)
	for st := leader.Broker().Stats(); st.TotalUnacked != 0; st = leader.Broker().Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("%d evals left outstanding under the stopped follower's tokens: %+v", st.TotalUnacked, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A leader that is stopped hands the lead over before it goes, rather than
// leaving the others to wait out an election timeout.
func TestCluster_StoppingLeaderHandsTheLeadOver(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, 3)
	logs := make([]*testlog.Buffer, 3)
	for i, cfg := range cfgs {
		logs[i] = &testlog.Buffer{}
		s, err := server.New(cfg, servertest.NativeBuiltins(t, 1), zerolog.New(logs[i]).Level(zerolog.InfoLevel))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Shutdown() })
		servers[i] = s
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	i := slices.Index(servers, leader)
	if err := leader.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs[i].String(), "handed the lead over before stopping") {
		t.Fatalf("the stopping leader did not hand the lead over; its log:\n%s", logs[i].String())
	}
	servers[i] = nil
	servertest.WaitForClusterLeader(t, servers)
}
