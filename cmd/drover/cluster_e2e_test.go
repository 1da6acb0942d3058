package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

// TestE2E_ClusterSurvivesLosingItsLeader is the acceptance test of a
// cluster of servers: three `drover agent` processes, configured by file,
// form a cluster; clients talk only to the two followers, which forward to
// the leader; the leader is killed with SIGKILL while they register jobs.
// One of the others takes over, and every registration any server
// acknowledged is there, evaluated and fully placed.
func TestE2E_ClusterSurvivesLosingItsLeader(t *testing.T) {
	bin := droverBin(t)
	rpc := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	join, _ := json.Marshal(rpc)
	// The jobs are service jobs: each agent loads (compiles) only that
	// plugin.
	plugins := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "plugins", "service.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "service.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	agents := make([]*agentProc, 3)
	for i := range agents {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "agent.hcl")
		// Nodes are registered once and never heartbeat: long TTLs keep
		// them ready across the failover.
		conf := fmt.Sprintf(`
name     = "server-%d"
data_dir = %q
rpc_addr = %q
server {
  num_schedulers         = 2
  min_heartbeat_ttl      = "1h"
  heartbeat_grace        = "1h"
  failover_heartbeat_ttl = "1h"
  bootstrap_expect       = 3
  server_join {
    retry_join     = %s
    retry_interval = "200ms"
  }
}
`, i+1, filepath.Join(dir, "data"), rpc[i], join)
		if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		agents[i] = startAgent(t, bin, "-config", cfg, "-plugin-dir", plugins)
	}
	leaderOf := func(live []*agentProc) int {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			var leader string
			agreed := true
			for _, a := range live {
				var l string
				if code, err := call("GET", a.base+"/v1/status/leader", nil, &l); err != nil || code != 200 || l == "" || (leader != "" && l != leader) {
					agreed = false
					break
				}
				leader = l
			}
			if agreed {
				for i, addr := range rpc {
					if addr == leader {
						return i
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("the servers agree on no leader")
		return -1
	}
	li := leaderOf(agents)
	t.Logf("cluster formed after %s", time.Since(start).Round(time.Millisecond))
	var followers []*agentProc
	for i, a := range agents {
		if i != li {
			followers = append(followers, a)
		}
	}
	// Room for 800 jobs of two 100 MHz allocations; the clients stop at
	// 500 registrations.
	const nodes, maxJobs = 20, 500
	for i := 0; i < nodes; i++ {
		if code, err := call("PUT", followers[i%2].base+"/v1/nodes", &httpapi.NodeRegisterRequest{Node: &httpapi.RegisteredNode{Node: *loadNode(i)}}, nil); err != nil || code != 200 {
			t.Fatalf("register node through a follower: %d %v", code, err)
		}
	}

	// Load through the followers; the leader is killed while it runs, and
	// registrations go on through the election.
	acked := registerUnderLoad([]string{followers[0].base, followers[1].base}, maxJobs, func() {
		time.Sleep(1500 * time.Millisecond)
		agents[li].kill(t)
		time.Sleep(3 * time.Second)
	})

	next := leaderOf(followers)
	if next == li {
		t.Fatal("the killed server still leads")
	}
	base := agents[next].base
	t.Logf("%d job registrations acknowledged; server-%d took over from server-%d", len(acked), next+1, li+1)
	if len(acked) < 20 {
		t.Fatalf("only %d registrations acknowledged: the load did not load", len(acked))
	}
	for id := range acked {
		deadline := time.Now().Add(60 * time.Second)
		for {
			var evals []*sdk.Evaluation
			if code, err := call("GET", base+"/v1/job/"+id+"/evaluations", nil, &evals); err != nil || code != 200 {
				t.Fatalf("job %s acknowledged but not found after the failover: %d %v", id, code, err)
			}
			var allocs []*sdk.Allocation
			if code, err := call("GET", base+"/v1/job/"+id+"/allocations", nil, &allocs); err != nil || code != 200 {
				t.Fatalf("allocations of %s: %d %v", id, code, err)
			}
			done := len(evals) > 0
			for _, e := range evals {
				done = done && e.TerminalStatus()
			}
			if done && len(allocs) == 2 {
				break
			}
			if time.Now().After(deadline) {
				var es []string
				for _, e := range evals {
					es = append(es, fmt.Sprintf("%s %s %s %q blocked=%s next=%s", e.ID[:8], e.TriggeredBy, e.Status, e.StatusDescription, e.BlockedEval, e.NextEval))
				}
				t.Fatalf("job %s: evals %v, allocations %d", id, es, len(allocs))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Nomad's CLI view of the cluster: the dead server is failed.
	code, out := drover(t, bin, base, "server", "members")
	if code != 0 || !strings.Contains(out, "failed") || strings.Count(out, "alive") != 2 {
		t.Fatalf("server members (%d):\n%s", code, out)
	}
	// The operator removes the dead server for good, through a follower.
	dead := fmt.Sprintf("server-%d", li+1)
	follower := agents[3-li-next].base
	if code, out := drover(t, bin, follower, "operator", "raft", "remove-peer", "-peer-id", dead); code != 0 {
		t.Fatalf("remove-peer (%d):\n%s", code, out)
	}
	code, out = drover(t, bin, follower, "operator", "raft", "list-peers")
	if code != 0 || strings.Contains(out, dead) || strings.Count(out, "server-") != 4 || strings.Count(out, "leader") != 1 {
		t.Fatalf("list-peers after removing %s (%d):\n%s", dead, code, out)
	}
	// -stale answers from the follower's own view (what is left when the
	// cluster has no leader).
	if code, out := drover(t, bin, follower, "operator", "raft", "list-peers", "-stale"); code != 0 || strings.Count(out, "leader") != 1 {
		t.Fatalf("list-peers -stale (%d):\n%s", code, out)
	}
	// The operator hands the lead to the other server, by its raft address
	// (an address no server has is refused).
	if code, out := drover(t, bin, follower, "operator", "raft", "transfer-leadership", "-peer-address", "127.0.0.1:1"); code != 1 || !strings.Contains(out, "no server") {
		t.Fatalf("transfer-leadership to an unknown address (%d):\n%s", code, out)
	}
	other := 3 - li - next
	if code, out := drover(t, bin, follower, "operator", "raft", "transfer-leadership", "-peer-address", rpc[other]); code != 0 {
		t.Fatalf("transfer-leadership to %s (%d):\n%s", rpc[other], code, out)
	}
	if got := leaderOf([]*agentProc{agents[next], agents[other]}); got != other {
		t.Fatalf("after transfer-leadership to server-%d, server-%d leads", other+1, got+1)
	}
}
