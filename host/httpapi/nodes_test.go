package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
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

// Registration refusals, as Nomad's: node pool "all" and a pool name
// Nomad refuses are a 400 naming the pool, and another secret than the
// node's a 403, as for its heartbeats and reports.
func TestAPI_NodeRegisterRefusals(t *testing.T) {
	ts, _ := newAPI(t, 0)
	reg := func(id, secret, pool string) (int, string) {
		b, _ := json.Marshal(map[string]any{"Node": map[string]any{"ID": id, "Name": id, "SecretID": secret, "NodePool": pool,
			"Attributes": map[string]string{"kernel.name": "linux"}}})
		resp, out := do(t, "PUT", ts.URL+"/v1/nodes", string(b))
		return resp.StatusCode, string(out)
	}
	for _, tc := range []struct {
		pool string
		code int
		says string
	}{
		{"all", 400, `node is not allowed to register in node pool \"all\"`},
		{"bad pool!", 400, `invalid node pool: invalid name \"bad pool!\"`},
		{"good-pool", 200, ""},
	} {
		if code, out := reg("n-"+tc.pool, "s3cret", tc.pool); code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("pool %q: %d %s, want %d %s", tc.pool, code, out, tc.code, tc.says)
		}
	}
	if code, out := reg("n-good-pool", "wrong", "good-pool"); code != 403 {
		t.Errorf("registered again with another secret: %d %s, want 403", code, out)
	}
}

// A node registering over HTTP reports its CSI plugins in Nomad's Node
// JSON, and its read shows them: what the schedulers check a volume's
// plugin against.
func TestAPI_NodeRegisterKeepsCSIPlugins(t *testing.T) {
	ts, _ := newAPI(t, 0)
	body := `{"Node": {"ID": "n1", "Name": "n1", "Status": "ready", "Attributes": {"kernel.name": "linux"},
		"CSINodePlugins": {"ebs": {"PluginID": "ebs", "AllocID": "a1", "Healthy": true,
			"NodeInfo": {"ID": "i-123", "MaxVolumes": 25, "AccessibleTopology": {"Segments": {"zone": "us-east-1a"}}}}},
		"CSIControllerPlugins": {"ebs": {"PluginID": "ebs", "Healthy": true, "RequiresControllerPlugin": true,
			"ControllerInfo": {"SupportsAttachDetach": true}}}}}`
	if resp, out := do(t, "PUT", ts.URL+"/v1/nodes", body); resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, out)
	}
	resp, out := do(t, "GET", ts.URL+"/v1/node/n1", "")
	if resp.StatusCode != 200 {
		t.Fatalf("read: %d %s", resp.StatusCode, out)
	}
	var n struct {
		CSINodePlugins, CSIControllerPlugins map[string]*sdk.CSIInfo
	}
	if err := json.Unmarshal(out, &n); err != nil {
		t.Fatal(err)
	}
	np, cp := n.CSINodePlugins["ebs"], n.CSIControllerPlugins["ebs"]
	if np == nil || !np.Healthy || np.NodeInfo.MaxVolumes != 25 || np.NodeInfo.AccessibleTopology.Segments["zone"] != "us-east-1a" ||
		cp == nil || !cp.RequiresControllerPlugin || !cp.ControllerInfo.SupportsAttachDetach {
		t.Fatalf("node read back %s", out)
	}
}

// PUT /v1/node/:id/evaluate forces node-update evaluations of the node's
// jobs, as Nomad's Node.Evaluate, answered in Nomad's NodeUpdateResponse
// shape; Nomad's Go client (Nodes().ForceEvaluate) calls it.
func TestAPI_NodeEvaluate(t *testing.T) {
	ts, s := newAPI(t, 1)
	nodeID := s.Store().Snapshot().Nodes()[0].ID
	resp, out := do(t, "PUT", ts.URL+"/v1/node/"+nodeID+"/evaluate", "")
	var none httpapi.NodeUpdateResponse
	if err := json.Unmarshal(out, &none); err != nil || resp.StatusCode != 200 || len(none.EvalIDs) != 0 || none.Index != 0 {
		t.Fatalf("a node without jobs: %d %s", resp.StatusCode, out)
	}
	sys := `{"Job":{"ID":"sys","Type":"system","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"docker","Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	if resp, out := do(t, "PUT", ts.URL+"/v1/jobs", sys); resp.StatusCode != 200 {
		t.Fatalf("register system job: %d %s", resp.StatusCode, out)
	}
	resp, out = do(t, "POST", ts.URL+"/v1/node/"+nodeID+"/evaluate", "")
	var got httpapi.NodeUpdateResponse
	if err := json.Unmarshal(out, &got); err != nil || resp.StatusCode != 200 || len(got.EvalIDs) != 1 ||
		got.EvalCreateIndex == 0 || got.Index != got.EvalCreateIndex || got.NodeModifyIndex != 0 ||
		resp.Header.Get("X-Nomad-Index") != fmt.Sprint(got.Index) {
		t.Fatalf("a node with a system job: %d %s (index header %s)", resp.StatusCode, out, resp.Header.Get("X-Nomad-Index"))
	}
	e := s.Store().Snapshot().Eval(got.EvalIDs[0])
	if e == nil || e.JobID != "sys" || e.NodeID != nodeID || e.TriggeredBy != sdk.EvalTriggerNodeUpdate {
		t.Fatalf("eval %+v", e)
	}
	if resp, out := do(t, "PUT", ts.URL+"/v1/node/nope/evaluate", ""); resp.StatusCode != 404 {
		t.Fatalf("an unknown node: %d %s", resp.StatusCode, out)
	}
	if _, _, err := nomadClient(t, ts.URL).Nodes().ForceEvaluate(nodeID, nil); err != nil {
		t.Fatalf("Nomad's client: %v", err)
	}
}
