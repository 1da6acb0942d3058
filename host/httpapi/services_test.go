package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

const servicesHCL = `
job "shop" {
  meta { tier = "front" }
  group "web" {
    count = 2
    network {
      port "http" {}
    }
    service {
      name     = "${NOMAD_JOB_NAME}-${NOMAD_GROUP_NAME}"
      port     = "http"
      tags     = ["v1", "${NOMAD_META_tier}"]
      provider = "nomad"
    }
    service {
      name = "in-consul"
      port = "http"
    }
    task "app" {
      driver = "docker"
      service {
        port     = "http"
        provider = "nomad"
        tags     = ["${node.datacenter}"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// TestNomadClient_Services: Nomad's client lists and reads the services of
// running allocations (provider "nomad" only), named, tagged and
// addressed as a Nomad client registers them; they go when their
// allocation stops or its node goes down.
func TestNomadClient_Services(t *testing.T) {
	ts, srv := newAPI(t, 0)
	for i := 0; i < 2; i++ {
		n := servertest.Node(i, 4000, 8192)
		n.Attributes["unique.network.ip-address"] = "10.1.0." + string(rune('1'+i))
		n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 20000, 20010
		if _, _, err := srv.RegisterNode(n); err != nil {
			t.Fatal(err)
		}
	}
	c := nomadClient(t, ts.URL)
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: servicesHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEval(t, c, reg.EvalID)
	allocs, _, err := c.Jobs().Allocations("shop", false, nil)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("allocations = %d, %v", len(allocs), err)
	}
	if list, _, err := c.Services().List(nil); err != nil || len(list) != 0 {
		t.Fatalf("services before any allocation runs = %+v, %v", list, err)
	}
	// The Service topic of the event stream, from here on.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicService: {"*"}}, srv.Store().Snapshot().Index()+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	nextServiceEvents := func(want int) []api.Event {
		t.Helper()
		var got []api.Event
		for len(got) < want {
			select {
			case evs := <-stream:
				if evs.Err != nil {
					t.Fatal(evs.Err)
				}
				got = append(got, evs.Events...)
			case <-time.After(10 * time.Second):
				t.Fatalf("service events: %d of %d: %+v", len(got), want, got)
			}
		}
		return got
	}
	var updates []server.AllocUpdate
	for _, a := range allocs {
		updates = append(updates, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning})
	}
	if _, err := srv.UpdateAllocsFromClient(updates); err != nil {
		t.Fatal(err)
	}

	registered := nextServiceEvents(4) // 2 allocations, 2 services each
	for _, ev := range registered {
		r, err := ev.Service()
		if ev.Type != "ServiceRegistration" || ev.Topic != api.TopicService || err != nil || r.JobID != "shop" || ev.Key != r.ID ||
			!slices.Contains(ev.FilterKeys, r.ServiceName) {
			t.Errorf("registration event %+v (%+v, %v)", ev, r, err)
		}
	}

	list, _, err := c.Services().List(nil)
	if err != nil || len(list) != 1 || list[0].Namespace != "default" || len(list[0].Services) != 2 {
		t.Fatalf("services = %+v, %v", list, err)
	}
	if s := list[0].Services[0]; s.ServiceName != "shop-web" || !slices.Equal(s.Tags, []string{"front", "v1"}) {
		t.Errorf("first service = %+v, want shop-web tagged front, v1", s)
	}
	if s := list[0].Services[1]; s.ServiceName != "shop-web-app" || !slices.Equal(s.Tags, []string{"dc1"}) {
		t.Errorf("second service = %+v, want shop-web-app tagged dc1", s)
	}
	regs, _, err := c.Services().Get("shop-web", nil)
	if err != nil || len(regs) != 2 {
		t.Fatalf("shop-web instances = %+v, %v", regs, err)
	}
	for _, r := range regs {
		a, _, err := c.Allocations().Info(r.AllocID, nil)
		if err != nil {
			t.Fatal(err)
		}
		port := a.AllocatedResources.Shared.Ports[0]
		if r.Port != port.Value || port.Value < 20000 || !strings.HasPrefix(r.Address, "10.1.0.") || r.NodeID != a.NodeID ||
			r.JobID != "shop" || r.Datacenter != "dc1" || r.ID != "_nomad-task-"+a.ID+"-group-web-shop-web-http" {
			t.Errorf("registration %+v of allocation on %s with port %+v", r, a.NodeID, port)
		}
	}
	app, _, err := c.Services().Get("shop-web-app", nil)
	if err != nil || len(app) != 2 || app[0].Port < 20000 || !strings.HasSuffix(app[0].ID, "-app-shop-web-app-http") {
		t.Fatalf("shop-web-app instances = %+v, %v", app, err)
	}
	// choose: the same instance for the same key.
	one, _, err := c.Services().Get("shop-web", &api.QueryOptions{Params: map[string]string{"choose": "1|some-alloc"}})
	again, _, err2 := c.Services().Get("shop-web", &api.QueryOptions{Params: map[string]string{"choose": "1|some-alloc"}})
	if err != nil || err2 != nil || len(one) != 1 || len(again) != 1 || one[0].ID != again[0].ID {
		t.Fatalf("choose = %+v, %+v (%v, %v)", one, again, err, err2)
	}
	if byJob, _, err := c.Jobs().Services("shop", nil); err != nil || len(byJob) != 4 {
		t.Fatalf("job's services = %d, %v", len(byJob), err)
	}
	if byAlloc, _, err := c.Allocations().Services(allocs[0].ID, nil); err != nil || len(byAlloc) != 2 {
		t.Fatalf("allocation's services = %d, %v", len(byAlloc), err)
	}
	resp, body := do(t, "DELETE", ts.URL+"/v1/service/shop-web/"+regs[0].ID, "")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "removed when the allocation stops") {
		t.Errorf("delete of a registration: %d %s", resp.StatusCode, body)
	}

	// One allocation completes, the other's node goes down.
	if _, err := srv.UpdateAllocsFromClient([]server.AllocUpdate{{ID: regs[0].AllocID, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	if left, _, err := c.Services().Get("shop-web", nil); err != nil || len(left) != 1 || left[0].AllocID != regs[1].AllocID {
		t.Fatalf("after one allocation completed: %+v, %v", left, err)
	}
	for _, ev := range nextServiceEvents(2) {
		if r, err := ev.Service(); ev.Type != "ServiceDeregistration" || err != nil || r.AllocID != regs[0].AllocID {
			t.Errorf("deregistration event of the completed allocation %+v (%+v, %v)", ev, r, err)
		}
	}
	if _, err := srv.UpdateNodeStatus(regs[1].NodeID, sdk.NodeStatusDown, "test"); err != nil {
		t.Fatal(err)
	}
	if left, _, err := c.Services().Get("shop-web", nil); err != nil || len(left) != 0 {
		t.Fatalf("after the other's node went down: %+v, %v", left, err)
	}
	for _, ev := range nextServiceEvents(2) {
		if r, err := ev.Service(); ev.Type != "ServiceDeregistration" || err != nil || r.AllocID != regs[1].AllocID {
			t.Errorf("deregistration event of the down node's allocation %+v (%+v, %v)", ev, r, err)
		}
	}
}
