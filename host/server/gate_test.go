package server_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
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
	old := servers[(slices.Index(servers, leader)+1)%3]
	server.SetApplies(old, fsm.ClusterMetaRequestType)

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
