package httpapi_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// clusterAPIs starts three servers that form a cluster, each with its API
// served as the agent serves it (also to requests the others forward).
func clusterAPIs(t *testing.T) ([]*server.Server, []*httptest.Server, *server.Server) {
	t.Helper()
	return clusterAPIsWith(t, nil)
}

// clusterAPIsWith is clusterAPIs with modify applied to each server's
// configuration (nil: none).
func clusterAPIsWith(t *testing.T, modify func(*server.Config)) ([]*server.Server, []*httptest.Server, *server.Server) {
	t.Helper()
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, len(cfgs))
	apis := make([]*httptest.Server, len(cfgs))
	for i, cfg := range cfgs {
		if modify != nil {
			modify(&cfg)
		}
		s := servertest.StartMember(t, cfg, nil)
		api := httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), nil)
		s.SetForwardedHandler(api.Handler())
		apis[i] = httptest.NewServer(api.Handler())
		t.Cleanup(apis[i].Close)
		servers[i] = s
	}
	return servers, apis, servertest.WaitForClusterLeader(t, servers)
}

// A client may talk to any server: a follower forwards writes and
// consistent reads to the leader (so it reads its own writes at once),
// answers stale reads and its agent endpoints itself, and says when there
// is no leader.
func TestCluster_FollowersForwardToTheLeader(t *testing.T) {
	servers, apis, leader := clusterAPIs(t)
	li := slices.Index(servers, leader)
	f := (li + 1) % 3
	follower := apis[f]

	node := `{"Node": {"ID": "agent-1", "Name": "agent-1", "SecretID": "s3cret",
  "Attributes": {"kernel.name": "linux", "driver.exec": "1"},
  "Drivers": {"exec": {"Detected": true, "Healthy": true}},
  "NodeResources": {"Cpu": {"CpuShares": 4000}, "Memory": {"MemoryMB": 8192}, "Disk": {"DiskMB": 100000}}}}`
	if resp, out := do(t, "PUT", follower.URL+"/v1/nodes", node); resp.StatusCode != 200 {
		t.Fatalf("register a node through a follower: %d %s", resp.StatusCode, out)
	}
	if resp, out := do(t, "PUT", follower.URL+"/v1/node/agent-1/heartbeat", `{"SecretID": "s3cret"}`); resp.StatusCode != 200 {
		t.Fatalf("heartbeat through a follower: %d %s", resp.StatusCode, out)
	}
	job := `{"Job":{"ID":"web","Type":"service","TaskGroups":[{"Name":"g","Count":2,"Tasks":[{"Name":"t","Driver":"exec","Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	resp, out := do(t, "PUT", follower.URL+"/v1/jobs", job)
	if resp.StatusCode != 200 {
		t.Fatalf("register a job through a follower: %d %s", resp.StatusCode, out)
	}
	var reg struct{ EvalID string }
	_ = json.Unmarshal(out, &reg)
	servertest.WaitForEval(t, leader, reg.EvalID)
	// A consistent read through the follower is the leader's.
	resp, out = do(t, "GET", follower.URL+"/v1/evaluation/"+reg.EvalID, "")
	if resp.StatusCode != 200 || !strings.Contains(string(out), `"complete"`) {
		t.Fatalf("read through a follower: %d %s", resp.StatusCode, out)
	}
	if got := resp.Header.Values(httpapi.ServerHeader); len(got) != 1 || got[0] != leader.Config().NodeName {
		t.Fatalf("a consistent read through a follower was answered by %v, want the leader %s", got, leader.Config().NodeName)
	}
	// A stale read is the follower's own, once it has the entries.
	servertest.WaitFor(t, "the follower's replica", func() bool {
		return len(servers[f].Store().Snapshot().AllocsByJob("default", "web")) == 2
	})
	resp, out = do(t, "GET", follower.URL+"/v1/job/web/allocations?stale", "")
	var allocs []map[string]any
	if err := json.Unmarshal(out, &allocs); resp.StatusCode != 200 || err != nil || len(allocs) != 2 {
		t.Fatalf("stale read: %d %s", resp.StatusCode, out)
	}
	if got := resp.Header.Get(httpapi.ServerHeader); got != servers[f].Config().NodeName {
		t.Fatalf("a stale read was answered by %s, want the follower %s", got, servers[f].Config().NodeName)
	}
	if resp.Header.Get("X-Nomad-KnownLeader") != "true" || resp.Header.Get("X-Nomad-LastContact") == "" {
		t.Fatalf("a follower's stale read: KnownLeader %q, LastContact %q", resp.Header.Get("X-Nomad-KnownLeader"), resp.Header.Get("X-Nomad-LastContact"))
	}
	// ?stale is a boolean, as in Nomad: false asks for a consistent read,
	// which the leader answers; anything else is a 400 from the server
	// asked.
	for _, tc := range []struct {
		stale, by string
		code      int
	}{
		{"stale=true", servers[f].Config().NodeName, 200},
		{"stale=1", servers[f].Config().NodeName, 200},
		{"stale=", servers[f].Config().NodeName, 200},
		{"stale=false", leader.Config().NodeName, 200},
		{"stale=0", leader.Config().NodeName, 200},
		{"stale=maybe", servers[f].Config().NodeName, 400},
	} {
		resp, out := do(t, "GET", follower.URL+"/v1/job/web/allocations?"+tc.stale, "")
		if resp.StatusCode != tc.code || resp.Header.Get(httpapi.ServerHeader) != tc.by {
			t.Errorf("%s: %d from %s, want %d from %s: %s", tc.stale, resp.StatusCode, resp.Header.Get(httpapi.ServerHeader), tc.code, tc.by, out)
		}
	}
	// A client cannot pass for a server: the forwarding mark is the
	// address a request came in on, not a header.
	req, _ := http.NewRequest("GET", follower.URL+"/v1/evaluation/"+reg.EvalID, nil)
	req.Header.Set(server.ForwardedHeader, "someone")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.Header.Get(httpapi.ServerHeader) != leader.Config().NodeName {
		t.Fatalf("a read claiming to be forwarded was answered by %s (%v)", resp.Header.Get(httpapi.ServerHeader), err)
	}
	// A request forwarded to a server that does not lead (the lead moved
	// on the way) is refused: not answered from its replica, not sent on.
	other := servers[(li+2)%3]
	viaRPC := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return servers[f].DialLeader(ctx, addr)
	}}}
	resp, err := viaRPC.Get("http://" + other.RPCAddr() + "/v1/evaluation/" + reg.EvalID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(httpapi.ServerHeader) != other.Config().NodeName {
		t.Fatalf("a request forwarded to a follower: %d from %s", resp.StatusCode, resp.Header.Get(httpapi.ServerHeader))
	}
	// Agent endpoints are the agent's own.
	if _, out := do(t, "GET", follower.URL+"/v1/agent/self", ""); !strings.Contains(string(out), servers[f].Config().NodeName) {
		t.Fatalf("agent self through a follower: %s", out)
	}
	// Every server names the same leader and lists the same members.
	for _, api := range apis {
		if _, out := do(t, "GET", api.URL+"/v1/status/leader", ""); string(out) != `"`+leader.RPCAddr()+`"`+"\n" {
			t.Fatalf("status/leader %s, want %s", out, leader.RPCAddr())
		}
	}
	var members struct {
		Members []struct{ Name, Status string }
	}
	_, out = do(t, "GET", follower.URL+"/v1/agent/members", "")
	if err := json.Unmarshal(out, &members); err != nil || len(members.Members) != 3 {
		t.Fatalf("members: %s", out)
	}
	for _, m := range members.Members {
		if m.Status != "alive" {
			t.Fatalf("members: %s", out)
		}
	}

	// The operator endpoints reach the leader through any server: removing
	// a server that is not there is a 404; handing the lead over works.
	if resp, out := do(t, "DELETE", follower.URL+"/v1/operator/raft/peer?id=nobody", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("remove an unknown peer: %d %s", resp.StatusCode, out)
	}
	if resp, out := do(t, "PUT", follower.URL+"/v1/operator/raft/transfer-leadership?id="+servers[f].Config().NodeName, ""); resp.StatusCode != 200 {
		t.Fatalf("transfer the lead through a follower: %d %s", resp.StatusCode, out)
	}
	if l := servertest.WaitForClusterLeader(t, servers); l != servers[f] {
		t.Fatalf("the lead went to %s, not %s", l.Config().NodeName, servers[f].Config().NodeName)
	}
	if resp, _ := do(t, "GET", follower.URL+"/v1/evaluation/"+reg.EvalID, ""); resp.Header.Get("X-Nomad-LastContact") != "0" ||
		resp.Header.Get(httpapi.ServerHeader) != servers[f].Config().NodeName {
		t.Fatalf("a read on the new leader: LastContact %q, answered by %s", resp.Header.Get("X-Nomad-LastContact"), resp.Header.Get(httpapi.ServerHeader))
	}

	// With the other two gone there is no quorum, hence no leader: once
	// the follower sees that (it may lead for a moment, handed the lead by
	// a stopping server), it says so, and reports the others as failed.
	for i, s := range servers {
		if i != f {
			if err := s.Shutdown(); err != nil {
				t.Fatal(err)
			}
		}
	}
	servertest.WaitFor(t, "the follower to say there is no leader", func() bool {
		resp, out = do(t, "PUT", follower.URL+"/v1/jobs", strings.Replace(job, `"web"`, `"web2"`, 1))
		return resp.StatusCode == http.StatusInternalServerError && strings.Contains(string(out), "no cluster leader")
	})
	_, out = do(t, "GET", follower.URL+"/v1/agent/members", "")
	if err := json.Unmarshal(out, &members); err != nil || len(members.Members) != 3 {
		t.Fatalf("members: %s", out)
	}
	failed := 0
	for _, m := range members.Members {
		if m.Status == "failed" {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("members after two stopped: %s", out)
	}
	if resp, _ := do(t, "GET", follower.URL+"/v1/job/web?stale", ""); resp.StatusCode != 200 {
		t.Fatalf("a stale read without a leader: %d", resp.StatusCode)
	}
	// A health check fails it, as Nomad's does a server without a leader.
	if resp, out := do(t, "GET", follower.URL+"/v1/agent/health", ""); resp.StatusCode != http.StatusInternalServerError ||
		strings.TrimSpace(string(out)) != `{"server":{"ok":false,"message":"no leader"}}` {
		t.Fatalf("health without a leader: %d %s", resp.StatusCode, out)
	}
}

// Nomad's client (RaftTransferLeadershipByAddress, what later versions'
// `operator raft transfer-leadership -peer-address` call) hands the lead
// to the server at that raft address, through any server; an address in
// no server's configuration is a 404, not a transfer to any server.
func TestCluster_TransferLeadershipByAddress(t *testing.T) {
	servers, apis, leader := clusterAPIs(t)
	// Each server in turn, through another server.
	for i, to := range servers {
		if to == leader {
			continue
		}
		c := nomadClient(t, apis[(i+1)%3].URL)
		if err := c.Operator().RaftTransferLeadershipByAddress(to.RPCAddr(), nil); err != nil {
			t.Fatalf("transfer to %s: %v", to.RPCAddr(), err)
		}
		servertest.WaitFor(t, to.Config().NodeName+" to lead", func() bool { return servertest.WaitForClusterLeader(t, servers) == to })
		leader = to
	}
	resp, out := do(t, "PUT", apis[0].URL+"/v1/operator/raft/transfer-leadership?address=127.0.0.1:1", "")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("transfer to an unknown address: %d %s", resp.StatusCode, out)
	}
	resp, out = do(t, "PUT", apis[0].URL+"/v1/operator/raft/transfer-leadership?id=a&address=127.0.0.1:1", "")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("transfer with both id and address: %d %s", resp.StatusCode, out)
	}
	if l := servertest.WaitForClusterLeader(t, servers); l != leader {
		t.Fatalf("the refused transfers moved the lead to %s", l.Config().NodeName)
	}
}

// With ACLs, any server may be asked: a follower forwards the ACL writes
// and the requests it does not answer to the leader, which checks their
// token; it checks the token of a stale read itself, from its replica.
func TestCluster_ACLs(t *testing.T) {
	servers, apis, leader := clusterAPIsWith(t, func(c *server.Config) { c.ACLEnabled = true })
	li := slices.Index(servers, leader)
	f1, f2 := (li+1)%3, (li+2)%3

	root, _, err := nomadClient(t, apis[f1].URL).ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatalf("bootstrap through a follower: %v", err)
	}
	admin := withToken(t, apis[f2].URL, root.SecretID)
	writer := makeToken(t, admin, "writer", `namespace "default" { policy = "write" }`)
	reader := makeToken(t, admin, "reader", `namespace "default" { policy = "read" }`)

	job := `{"Job":{"ID":"web","Type":"batch","TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"exec"}]}]}}`
	if resp, out := doAs(t, reader, "PUT", apis[f1].URL+"/v1/jobs", job); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a reader registers through a follower: %d %s", resp.StatusCode, out)
	}
	if resp, out := doAs(t, writer, "PUT", apis[f1].URL+"/v1/jobs", job); resp.StatusCode != http.StatusOK {
		t.Fatalf("a writer registers through a follower: %d %s", resp.StatusCode, out)
	}

	// A stale read is answered by the follower, which checks the token
	// from its replica once it has it.
	servertest.WaitFor(t, "the follower's replica", func() bool {
		snap := servers[f2].Store().Snapshot()
		return snap.Job("default", "web") != nil && len(snap.ACLTokens("")) == 3
	})
	resp, out := doAs(t, reader, "GET", apis[f2].URL+"/v1/jobs?stale", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"web"`) {
		t.Fatalf("a reader's stale read: %d %s", resp.StatusCode, out)
	}
	if got := resp.Header.Get(httpapi.ServerHeader); got != servers[f2].Config().NodeName {
		t.Fatalf("the stale read was answered by %s, not the follower", got)
	}
	for _, path := range []string{"/v1/jobs?stale", "/v1/jobs"} {
		if resp, out := doAs(t, "", "GET", apis[f2].URL+path, ""); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("no token, GET %s through a follower: %d %s", path, resp.StatusCode, out)
		}
	}
}

// Variables in a cluster: written through a follower, read from another
// follower's replica (which decrypts them with the keyring it replicated),
// and re-encrypted by a full rotation; a new leader carries on with a
// rotation the last one left unfinished.
func TestCluster_Variables(t *testing.T) {
	servers, apis, leader := clusterAPIs(t)
	li := slices.Index(servers, leader)
	f1, f2 := (li+1)%3, (li+2)%3
	vars := nomadClient(t, apis[f1].URL).Variables()
	for _, p := range []string{"app/a", "app/b"} {
		if _, _, err := vars.Create(&api.Variable{Path: p, Items: api.VariableItems{"k": p}}, nil); err != nil {
			t.Fatalf("write %s through a follower: %v", p, err)
		}
	}
	servertest.WaitFor(t, "the second follower's replica", func() bool {
		return len(servers[f2].Store().Snapshot().Variables("default", "")) == 2
	})
	stale := nomadClient(t, apis[f2].URL).Variables()
	v, _, err := stale.Read("app/b", &api.QueryOptions{AllowStale: true})
	if err != nil || v.Items["k"] != "app/b" {
		t.Fatalf("stale read on a follower: %+v, %v", v, err)
	}

	// A rotation left rekeying by a leader that stopped: the next leader
	// re-encrypts what the old key still encrypts.
	old := leader.Store().Snapshot().ActiveRootKey()
	if _, _, err := nomadClient(t, apis[f2].URL).Keyring().Rotate(nil, nil); err != nil {
		t.Fatal(err)
	}
	c := *old
	c.State = state.RootKeyRekeying
	if _, err := leader.Apply(fsm.RootKeyUpsertRequestType, &fsm.RootKeyUpsertRequest{Keys: []*state.RootKey{&c}}); err != nil {
		t.Fatal(err)
	}
	if err := nomadClient(t, apis[f1].URL).Operator().RaftTransferLeadershipByAddress(servers[f1].RPCAddr(), nil); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the old key's variables re-encrypted by the new leader", func() bool {
		snap := servers[f2].Store().Snapshot()
		k := snap.RootKey(old.KeyID)
		return k != nil && k.State == state.RootKeyInactive && len(snap.VariablesEncryptedWith(old.KeyID, 0)) == 0
	})
	if v, _, err := stale.Read("app/a", &api.QueryOptions{AllowStale: true}); err != nil || v.Items["k"] != "app/a" {
		t.Fatalf("a re-encrypted variable read on a follower: %+v, %v", v, err)
	}
}

// The autopilot through Nomad's client, asked of a follower: its
// configuration (the agent's until written, then through raft, with
// check-and-set) and the servers' health.
func TestCluster_Autopilot(t *testing.T) {
	servers, apis, leader := clusterAPIs(t)
	f := (slices.Index(servers, leader) + 1) % 3
	op := nomadClient(t, apis[f].URL).Operator()
	conf, _, err := op.AutopilotGetConfiguration(nil)
	if err != nil || !conf.CleanupDeadServers || conf.LastContactThreshold != 200*time.Millisecond || conf.MaxTrailingLogs != 250 ||
		conf.ServerStabilizationTime != 10*time.Second || conf.ModifyIndex != 0 {
		t.Fatalf("default configuration = %+v, %v", conf, err)
	}
	conf.CleanupDeadServers, conf.MaxTrailingLogs = false, 100
	if ok, _, err := op.AutopilotCASConfiguration(conf, nil); !ok || err != nil {
		t.Fatalf("check-and-set at 0: %v, %v", ok, err)
	}
	if ok, _, err := op.AutopilotCASConfiguration(conf, nil); ok || err != nil {
		t.Fatalf("a second check-and-set at 0: %v, %v", ok, err)
	}
	got, _, err := op.AutopilotGetConfiguration(nil)
	if err != nil || got.CleanupDeadServers || got.MaxTrailingLogs != 100 || got.ModifyIndex == 0 || got.CreateIndex != got.ModifyIndex {
		t.Fatalf("written configuration = %+v, %v", got, err)
	}

	var health *api.OperatorHealthReply
	servertest.WaitFor(t, "a healthy cluster", func() bool {
		health, _, err = op.AutopilotServerHealth(nil)
		return err == nil && health.Healthy
	})
	if health.FailureTolerance != 1 || len(health.Servers) != 3 || len(health.Voters) != 3 || health.Leader != leader.Config().NodeName {
		t.Fatalf("health = %+v", health)
	}
	for _, sv := range health.Servers {
		if !sv.Healthy || !sv.Voter || sv.SerfStatus != "alive" || sv.LastIndex == 0 || sv.Leader != (sv.ID == leader.Config().NodeName) {
			t.Errorf("server health = %+v", sv)
		}
	}
}

// Variable locks in a cluster: taken and renewed through followers (the
// leases are the leader's), kept by the next leader, which gives the lock
// a whole TTL and takes renewals and the release.
func TestCluster_VariableLocks(t *testing.T) {
	servers, apis, leader := clusterAPIs(t)
	li := slices.Index(servers, leader)
	f1, f2 := (li+1)%3, (li+2)%3
	vars := nomadClient(t, apis[f1].URL).Variables()
	held, _, err := vars.AcquireLock(&api.Variable{Path: "app/leader", Items: api.VariableItems{"who": "a"},
		Lock: &api.VariableLock{TTL: "10s"}}, nil)
	if err != nil {
		t.Fatalf("acquire through a follower: %v", err)
	}
	if _, _, err := nomadClient(t, apis[f2].URL).Variables().RenewLock(held, nil); err != nil {
		t.Fatalf("renew through the other follower: %v", err)
	}
	if err := nomadClient(t, apis[f1].URL).Operator().RaftTransferLeadershipByAddress(servers[f1].RPCAddr(), nil); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the new leader", func() bool { return servers[f1].IsLeader() })
	// Its loop runs each second: the lock, which it had no lease for, is
	// given a whole TTL, not taken off.
	time.Sleep(2500 * time.Millisecond)
	if v := servers[f1].Store().Snapshot().Variable("default", "app/leader"); v.Lock == nil || v.Lock.ID != held.LockID() {
		t.Fatalf("the new leader took the lock off: %+v", v)
	}
	other := nomadClient(t, apis[li].URL).Variables()
	if _, _, err := other.RenewLock(held, nil); err != nil {
		t.Fatalf("renew through the old leader: %v", err)
	}
	if _, _, err := other.ReleaseLock(held, nil); err != nil {
		t.Fatalf("release: %v", err)
	}
	servertest.WaitFor(t, "the release on every replica", func() bool {
		for _, s := range servers {
			if v := s.Store().Snapshot().Variable("default", "app/leader"); v == nil || v.Lock != nil {
				return false
			}
		}
		return true
	})
}

// The agent endpoints answer for the server ?server_id= names, asked of
// any server: another by name, the leader, or the one asked; a node or a
// server that is not one is refused.
func TestCluster_AgentEndpointsOfAnotherServer(t *testing.T) {
	servers, apis, leader := clusterAPIsWith(t, func(c *server.Config) { c.EnableDebug = true })
	li := slices.Index(servers, leader)
	f1, f2 := (li+1)%3, (li+2)%3
	self := func(query string) (int, string) {
		resp, body := do(t, "GET", apis[f1].URL+"/v1/agent/self"+query, "")
		var out struct{ Member struct{ Name string } }
		_ = json.Unmarshal(body, &out)
		return resp.StatusCode, out.Member.Name
	}
	region := servers[0].Config().Region
	for _, c := range []struct {
		query, want string
	}{
		{"", servers[f1].Config().NodeName},
		{"?server_id=" + servers[f2].Config().NodeName, servers[f2].Config().NodeName},
		{"?server_id=" + servers[f2].Config().NodeName + "." + region, servers[f2].Config().NodeName},
		{"?server_id=leader", leader.Config().NodeName},
	} {
		if code, name := self(c.query); code != http.StatusOK || name != c.want+"."+region {
			t.Errorf("agent/self%s: %d %q, want %s", c.query, code, name, c.want)
		}
	}
	if code, _ := self("?server_id=nope"); code != http.StatusNotFound {
		t.Errorf("an unknown server: %d, want 404", code)
	}
	if code, _ := self("?node_id=n1"); code != http.StatusBadRequest {
		t.Errorf("a node: %d, want 400", code)
	}
	resp, body := do(t, "GET", apis[f1].URL+"/v1/agent/pprof/goroutine?debug=1&server_id="+servers[f2].Config().NodeName, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Errorf("another server's profile: %d %.100s", resp.StatusCode, body)
	}
}
