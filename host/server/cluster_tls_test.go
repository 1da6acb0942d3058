package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/tlsutil"
	"github.com/drover-sched/drover/host/tlsutil/tlstest"
	"github.com/drover-sched/drover/internal/testlog"
	"github.com/rs/zerolog"
)

// withTLS loads TLS for RPC from cert and key, signed by the CA of f.
func withTLS(t *testing.T, cfg *server.Config, f tlstest.Files, cert, key string, modify func(*tlsutil.Config)) {
	t.Helper()
	c := tlsutil.Config{RPC: true, CAFile: f.CA, CertFile: cert, KeyFile: key, VerifyServerHostname: true}
	if modify != nil {
		modify(&c)
	}
	tlsc, err := tlsutil.Load(c, cfg.Region)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = tlsc
}

// startLogged starts a cluster member whose warnings go to logs.
func startLogged(t *testing.T, cfg server.Config, logs *testlog.Buffer) *server.Server {
	t.Helper()
	s, err := server.New(cfg, servertest.NativeBuiltins(t, 1),
		zerolog.New(logs).Level(zerolog.WarnLevel).With().Str("server", cfg.NodeName).Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}

// Three servers with TLS on their RPC port form a cluster, replicate and
// list each other; a server that comes without a certificate the
// cluster's CA signed for a server (plaintext, another CA's, a client's)
// is refused at the connection, with a warning saying why, and takes no
// part.
func TestCluster_TLS(t *testing.T) {
	f := tlstest.Write(t, "global")
	cfgs := servertest.ClusterConfigs(t, 6)
	var logs testlog.Buffer
	var servers []*server.Server
	for i, cfg := range cfgs[:3] {
		cfg.RetryJoin = []string{cfgs[0].RPCAddr, cfgs[1].RPCAddr, cfgs[2].RPCAddr}
		cfg.BootstrapExpect = 3
		fastLifecycle(&cfg)
		withTLS(t, &cfg, f, f.ServerCert, f.ServerKey, nil)
		cfgs[i] = cfg
		servers = append(servers, startLogged(t, cfg, &logs))
	}
	leader := servertest.WaitForClusterLeader(t, servers)
	registerNode(t, leader, 0, 4000)
	placeService(t, leader, "web", 2)
	for _, s := range servers {
		servertest.WaitFor(t, "the allocations on every server", func() bool { return liveAllocs(s, "web") == 2 })
	}
	members, err := servers[1].Members(context.Background(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if !m.Alive || m.Region != "global" {
			t.Errorf("member %s over TLS: alive %v, region %q", m.ID, m.Alive, m.Region)
		}
	}

	intruders := []struct {
		name, warning string
		tls           func(cfg *server.Config)
	}{
		{"plaintext", "refused a plaintext RPC connection", func(*server.Config) {}},
		// Go's TLS client sends no certificate the server's CA did not
		// sign.
		{"another CA's certificate", "didn't provide a certificate", func(cfg *server.Config) {
			withTLS(t, cfg, f, f.RogueCert, f.RogueKey, func(c *tlsutil.Config) { c.CAFile = f.CA })
		}},
		{"a client's certificate", "not a server's certificate", func(cfg *server.Config) {
			withTLS(t, cfg, f, f.ClientCert, f.ClientKey, func(c *tlsutil.Config) { c.VerifyServerHostname = false })
		}},
	}
	for i, in := range intruders {
		t.Run(in.name, func(t *testing.T) {
			cfg := cfgs[3+i]
			cfg.BootstrapExpect, cfg.RetryJoin = 0, []string{cfgs[0].RPCAddr}
			in.tls(&cfg)
			before := len(logs.String())
			var own testlog.Buffer
			startLogged(t, cfg, &own)
			servertest.WaitFor(t, "the cluster to refuse it", func() bool { return strings.Contains(logs.String()[before:], in.warning) })
			if got := raftIDs(t, servertest.WaitForClusterLeader(t, servers)); !slices.Equal(got, []string{"server-1", "server-2", "server-3"}) {
				t.Fatalf("raft configuration %v", got)
			}
		})
	}
}

// rpc_upgrade_mode moves a cluster to TLS one server at a time: servers
// that take both, and try plaintext where TLS is refused, form a cluster
// with a server that speaks plaintext only, and then with one that speaks
// TLS only.
func TestCluster_TLSUpgradeMode(t *testing.T) {
	f := tlstest.Write(t, "global")
	cfgs := servertest.ClusterConfigs(t, 3)
	upgrading := func(c *tlsutil.Config) { c.RPCUpgradeMode = true }
	servers := make([]*server.Server, 3)
	for i, cfg := range cfgs {
		fastLifecycle(&cfg)
		if i > 0 {
			withTLS(t, &cfg, f, f.ServerCert, f.ServerKey, upgrading)
		}
		cfgs[i] = cfg
		servers[i] = servertest.StartMember(t, cfg, nil)
	}
	// A leader that speaks TLS first: it reaches the plaintext server
	// only by trying plaintext.
	leader := handLead(t, servers, 1)
	registerNode(t, leader, 0, 4000)
	placeService(t, leader, "web", 1)
	for _, s := range servers {
		servertest.WaitFor(t, "the allocation on every server", func() bool { return liveAllocs(s, "web") == 1 })
	}

	// The plaintext server moves to TLS only.
	if err := servers[0].Shutdown(); err != nil {
		t.Fatal(err)
	}
	withTLS(t, &cfgs[0], f, f.ServerCert, f.ServerKey, nil)
	servers[0] = servertest.StartMember(t, cfgs[0], nil)
	leader = servertest.WaitForClusterLeader(t, servers)
	placeService(t, leader, "web2", 1)
	for _, s := range servers {
		servertest.WaitFor(t, "the second allocation on every server", func() bool { return liveAllocs(s, "web2") == 1 })
	}
}
