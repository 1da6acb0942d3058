package server_test

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
)

// During a rolling upgrade, an entry of a type a server does not apply
// (one that says it applies up to the types every version knows, as an
// older version) is not written: that server would drop it and its state
// would differ. Entries every version applies still are; once the server
// is upgraded, so is the new type.
func TestCluster_NewEntryTypesWaitForEveryServer(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, len(cfgs))
	for i, cfg := range cfgs {
		cfg.ACLEnabled = true
		servers[i] = servertest.StartMember(t, cfg, nil)
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	// The leader's own first write (namespaces made written objects)
	// asked every server, and it remembers them up to date for
	// upToDateFor: a server that became older since is found out once that
	// has passed, which the test does not wait for.
	servertest.WaitFor(t, "the leader's first write", func() bool { return leader.Store().Snapshot().RefsExplicit() })
	old := servers[(slices.Index(servers, leader)+1)%3]
	server.SetApplies(old, fsm.ClusterMetaRequestType)
	server.ForgetUpToDatePeers(leader)

	_, _, err := leader.BootstrapACL(0, "")
	if err == nil || !strings.Contains(err.Error(), "runs an older Drover") || !strings.Contains(err.Error(), old.Config().NodeName) {
		t.Fatalf("bootstrap with a server that does not apply ACL entries: %v", err)
	}
	if leader.Store().Snapshot().ACLBootstrapIndex() != 0 {
		t.Fatal("the refused bootstrap was written")
	}
	// What every version applies is written as before.
	if _, _, err := leader.RegisterJob(servertest.Job("web", "batch", 1, 10, 16)); err != nil {
		t.Fatalf("a job registration: %v", err)
	}

	server.SetApplies(old, fsm.LastMessageType)
	tok, _, err := leader.BootstrapACL(0, "")
	if err != nil {
		t.Fatalf("bootstrap once every server applies ACL entries: %v", err)
	}
	servertest.WaitFor(t, "every server to have the token", func() bool {
		for _, s := range servers {
			if s.Store().Snapshot().ACLTokenByAccessor(tok.AccessorID) == nil {
				return false
			}
		}
		return true
	})
}

// Asking the other servers whether they apply an entry's type leaves no
// connection open: each gated write made a transport of its own, whose
// idle connections to every other server (and their goroutines, here and
// there) stayed open for good, as neither side times them out.
func TestCluster_GatedWritesLeaveNoConnectionsOpen(t *testing.T) {
	cfgs := servertest.ClusterConfigs(t, 3)
	servers := make([]*server.Server, len(cfgs))
	for i, cfg := range cfgs {
		cfg.ACLEnabled = true
		servers[i] = servertest.StartMember(t, cfg, nil)
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	write := func(i int) {
		t.Helper()
		p := &state.ACLPolicy{Name: "p" + strconv.Itoa(i), Rules: `namespace "default" { policy = "read" }`}
		if _, err := leader.UpsertACLPolicies([]*state.ACLPolicy{p}); err != nil {
			t.Fatal(err)
		}
	}
	// Idle HTTP client connections each keep a read loop.
	idle := func() int {
		buf := make([]byte, 8<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "net/http.(*persistConn).readLoop")
	}
	write(0)
	time.Sleep(100 * time.Millisecond)
	before := idle()
	for i := 1; i <= 20; i++ {
		write(i)
	}
	servertest.WaitFor(t, "the gated writes' connections to close", func() bool { return idle() <= before+5 })
}
