package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/sdk"
)

// A node the servers hold down may not report its allocations (403, as
// the other refusals of a node agent's request) until it heartbeats, as
// Nomad's UpdateAlloc refuses it.
func TestAPI_AllocStatusRefusedFromADownNode(t *testing.T) {
	ts, s := newAPI(t, 1)
	job := `{"Job":{"ID":"j","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"docker","Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	if resp, out := do(t, "PUT", ts.URL+"/v1/jobs", job); resp.StatusCode != 200 {
		t.Fatalf("register job: %d %s", resp.StatusCode, out)
	}
	var alloc *sdk.Allocation
	for deadline := time.Now().Add(10 * time.Second); alloc == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if as := s.Store().Snapshot().AllocsByJob("default", "j"); len(as) == 1 {
			alloc = as[0]
		}
	}
	if alloc == nil {
		t.Fatal("the job was not placed")
	}
	if _, err := s.UpdateNodeStatus(alloc.NodeID, sdk.NodeStatusDown, "test"); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(httpapi.AllocStatusRequest{NodeID: alloc.NodeID,
		Allocs: []server.AllocUpdate{{ID: alloc.ID, ClientStatus: sdk.AllocClientStatusRunning}}})
	if resp, out := do(t, "PUT", ts.URL+"/v1/allocations/status", string(b)); resp.StatusCode != 403 {
		t.Fatalf("report from a down node: %d %s, want 403", resp.StatusCode, out)
	}
	if resp, out := do(t, "PUT", ts.URL+"/v1/node/"+alloc.NodeID+"/heartbeat", ""); resp.StatusCode != 200 {
		t.Fatalf("heartbeat: %d %s", resp.StatusCode, out)
	}
	if resp, out := do(t, "PUT", ts.URL+"/v1/allocations/status", string(b)); resp.StatusCode != 200 {
		t.Fatalf("report after the heartbeat: %d %s", resp.StatusCode, out)
	}
}
