package httpapi_test

import (
	"net"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/rs/zerolog"
)

// What Nomad's `server members` and `operator raft list-peers` read: the
// one server, its tags, and the leader's address matching the member's.
func TestNomadClient_MembersAndRaftPeers(t *testing.T) {
	s := servertest.New(t, nil, nil)
	a := httpapi.New(s, zerolog.Nop(), func() any { return nil })
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(ts.Close)
	a.SetAdvertise(ts.Listener.Addr().String())
	c := nomadClient(t, ts.URL)

	m, err := c.Agent().Members()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Members) != 1 {
		t.Fatalf("members: %+v", m)
	}
	me := m.Members[0]
	leader, err := c.Status().Leader()
	if err != nil {
		t.Fatal(err)
	}
	if net.JoinHostPort(me.Addr, me.Tags["port"]) != leader || strconv.Itoa(int(me.Port)) != me.Tags["port"] ||
		me.Status != "alive" || me.Tags["region"] != "global" || me.Tags["raft_vsn"] != "3" {
		t.Fatalf("member %+v, leader %q: Nomad's CLI would not see it lead", me, leader)
	}
	cfg, err := c.Operator().RaftGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 1 || !cfg.Servers[0].Leader || !cfg.Servers[0].Voter || cfg.Servers[0].ID == "" {
		t.Fatalf("raft configuration: %+v", cfg.Servers)
	}
}

// nomad system reconcile summaries: nothing to recount here, and no error.
func TestNomadClient_ReconcileSummaries(t *testing.T) {
	ts, _ := newAPI(t, 0)
	if err := nomadClient(t, ts.URL).System().ReconcileSummaries(); err != nil {
		t.Fatal(err)
	}
}
