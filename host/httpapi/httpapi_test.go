package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// newAPI starts a dev server with n ready nodes and its API.
func newAPI(t *testing.T, n int) (*httptest.Server, *server.Server) {
	t.Helper()
	s := servertest.New(t, nil, nil)
	for i := 0; i < n; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)), nil).Handler())
	t.Cleanup(ts.Close)
	return ts, s
}

func do(t *testing.T, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}

func TestAPI_ErrorsAreJSONWithStatus(t *testing.T) {
	ts, _ := newAPI(t, 1)
	cases := []struct {
		name, method, path, body string
		code                     int
	}{
		{"unknown job", "GET", "/v1/job/nope", "", 404},
		{"unknown path", "GET", "/v1/nope", "", 404},
		{"wrong method", "DELETE", "/v1/jobs", "", 405},
		{"wrong method on a job", "PATCH", "/v1/job/x", "", 405},
		{"bad json", "PUT", "/v1/jobs", "{", 400},
		{"unknown field", "PUT", "/v1/jobs", `{"Job":{"ID":"x"},"Bogus":1}`, 400},
		{"unknown nested field", "PUT", "/v1/jobs", `{"Job":{"ID":"x","TaskGroups":[{"Name":"g","Bogus":1}]}}`, 400},
		{"trailing data", "PUT", "/v1/jobs", `{"Job":{"ID":"x"}} {}`, 400},
		{"invalid job", "PUT", "/v1/jobs", `{"Job":{"ID":"x","TaskGroups":[{"Name":"g","Count":-1}]}}`, 400},
		{"null group", "PUT", "/v1/jobs", `{"Job":{"ID":"x","TaskGroups":[null]}}`, 400},
		{"hcl error", "POST", "/v1/jobs/parse", `{"JobHCL":"job {"}`, 400},
		{"hcl1", "POST", "/v1/jobs/parse", `{"JobHCL":"job \"x\" {}","hclv1":true}`, 400},
		{"empty body", "PUT", "/v1/jobs", "", 400},
		{"path mismatch", "PUT", "/v1/job/y", `{"Job":{"ID":"x"}}`, 400},
		{"bad filter", "GET", "/v1/evaluations?filter=Status%20%3D%3D", "", 400},
		{"bad per_page", "GET", "/v1/nodes?per_page=x", "", 400},
		{"bad index", "GET", "/v1/jobs?index=x", "", 400},
		{"unsupported global", "DELETE", "/v1/job/x?global=true", "", 400},
		{"conflicting check-and-set", "PUT", "/v1/jobs", `{"Job":{"ID":"x","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"exec"}]}]},"EnforceIndex":true,"JobModifyIndex":7}`, 409},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, out := do(t, tc.method, ts.URL+tc.path, tc.body)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, out)
			}
			var e httpapi.Error
			if err := json.Unmarshal(out, &e); err != nil || e.Message == "" || e.Code != tc.code {
				t.Fatalf("error body is not JSON with a code and message: %s", out)
			}
		})
	}
}

func TestAPI_BodiesAreSizeLimited(t *testing.T) {
	ts, _ := newAPI(t, 0)
	big := `{"JobHCL":"` + strings.Repeat("#", httpapi.MaxBodyBytes) + `"}`
	resp, out := do(t, "PUT", ts.URL+"/v1/jobs/parse", big)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %.200s", resp.StatusCode, out)
	}
}

// TestAPI_ParseBoundsTheEvaluation: a jobspec of a few lines whose
// evaluation would build billions of values (it took the agent out of
// memory) is a 400 located where its evaluation passed the budget, and
// the agent goes on answering.
func TestAPI_ParseBoundsTheEvaluation(t *testing.T) {
	ts, _ := newAPI(t, 0)
	hcl := "locals {\n  x = [for a in range(1024) : [for b in range(1024) : [for c in range(1024) : c]]]\n}\n" +
		"job \"j\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n    }\n  }\n}\n"
	body, _ := json.Marshal(map[string]string{"JobHCL": hcl})
	resp, out := do(t, "POST", ts.URL+"/v1/jobs/parse", string(body))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "input.hcl:2:") ||
		!strings.Contains(string(out), "Jobspec evaluation too large") {
		t.Fatalf("status %d: %.400s", resp.StatusCode, out)
	}
	if resp, out := do(t, "GET", ts.URL+"/v1/jobs", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the parse: status %d: %s", resp.StatusCode, out)
	}
}

// TestAPI_BlockingQueryRefusesABadWait: a wait that is neither a
// duration nor milliseconds is a 400 that says what a wait is, not a
// parser's error; huge milliseconds are capped rather than refused.
func TestAPI_BlockingQueryRefusesABadWait(t *testing.T) {
	ts, _ := newAPI(t, 1)
	for _, wait := range []string{"abc", "1.5", "5 s"} {
		resp, out := do(t, "GET", ts.URL+"/v1/nodes?index=1&wait="+url.QueryEscape(wait), "")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "invalid wait") ||
			strings.Contains(string(out), "strconv") {
			t.Errorf("wait=%s: %d %s", wait, resp.StatusCode, out)
		}
	}
	// The index is passed: these answer at once, whatever the wait.
	for _, wait := range []string{"10ms", "10", "99999999999999999", "-5s"} {
		if resp, out := do(t, "GET", ts.URL+"/v1/nodes?index=1&wait="+wait, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("wait=%s: %d %s", wait, resp.StatusCode, out)
		}
	}
}

func TestAPI_BlockingQueryWaitsForChange(t *testing.T) {
	ts, s := newAPI(t, 1)
	resp, _ := do(t, "GET", ts.URL+"/v1/nodes", "")
	index := resp.Header.Get("X-Nomad-Index")
	if index == "" || index == "0" {
		t.Fatalf("index header %q", index)
	}

	start := time.Now()
	resp, _ = do(t, "GET", ts.URL+"/v1/nodes?index="+index+"&wait=300ms", "")
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("a blocking query with no change returned after %s", waited)
	}
	if got := resp.Header.Get("X-Nomad-Index"); got != index {
		t.Fatalf("index after a timeout = %s, want %s", got, index)
	}

	done := make(chan string, 1)
	go func() {
		resp, _ := do(t, "GET", ts.URL+"/v1/nodes?index="+index+"&wait=20s", "")
		done <- resp.Header.Get("X-Nomad-Index")
	}()
	time.Sleep(100 * time.Millisecond)
	if _, _, err := s.RegisterNode(servertest.Node(1, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got <= index && len(got) <= len(index) {
			t.Fatalf("index after a change = %s, want more than %s", got, index)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking query did not return after the change")
	}
}

// A blocking read of an object that does not exist waits for it, as in
// Nomad: it answers the object once registered, or 404 when the wait runs
// out.
func TestAPI_BlockingReadWaitsForAMissingObject(t *testing.T) {
	ts, s := newAPI(t, 1)
	servertest.WaitForEval(t, s, mustRegister(t, s, servertest.Job("other", "service", 1, 100, 64)))
	resp, _ := do(t, "GET", ts.URL+"/v1/job/other", "")
	index := resp.Header.Get("X-Nomad-Index") // the jobs table's index
	start := time.Now()
	if resp, _ := do(t, "GET", ts.URL+"/v1/job/late?index="+index+"&wait=300ms", ""); resp.StatusCode != 404 {
		t.Fatalf("status %d, want 404", resp.StatusCode)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("the read of a missing job answered after %s, without waiting", waited)
	}
	done := make(chan int, 1)
	go func() {
		resp, _ := do(t, "GET", ts.URL+"/v1/job/late?index="+index+"&wait=20s", "")
		done <- resp.StatusCode
	}()
	time.Sleep(100 * time.Millisecond)
	mustRegister(t, s, servertest.Job("late", "service", 1, 100, 64))
	select {
	case code := <-done:
		if code != 200 {
			t.Fatalf("status %d once the job exists, want 200", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking read did not return once the job was registered")
	}
}

func TestAPI_ListsPageAndFilter(t *testing.T) {
	ts, _ := newAPI(t, 5)
	var all []httpapi.NodeListStub
	resp, out := do(t, "GET", ts.URL+"/v1/nodes", "")
	if err := json.Unmarshal(out, &all); err != nil || len(all) != 5 {
		t.Fatalf("nodes: %v %s", err, out)
	}
	var got []string
	token := ""
	for pages := 0; pages < 10; pages++ {
		url := ts.URL + "/v1/nodes?per_page=2"
		if token != "" {
			url += "&next_token=" + token
		}
		resp, out = do(t, "GET", url, "")
		var page []httpapi.NodeListStub
		if err := json.Unmarshal(out, &page); err != nil {
			t.Fatal(err)
		}
		for _, n := range page {
			got = append(got, n.ID)
		}
		if token = resp.Header.Get("X-Nomad-NextToken"); token == "" {
			break
		}
	}
	if len(got) != 5 || got[0] != all[0].ID || got[4] != all[4].ID {
		t.Fatalf("pages gave %v", got)
	}

	_, out = do(t, "GET", ts.URL+"/v1/nodes?reverse=true&per_page=1", "")
	var last []httpapi.NodeListStub
	_ = json.Unmarshal(out, &last)
	if len(last) != 1 || last[0].ID != all[4].ID {
		t.Fatalf("reverse: %s", out)
	}

	_, out = do(t, "GET", ts.URL+`/v1/nodes?filter=`+strings.ReplaceAll(`Name == "node-0003"`, " ", "%20"), "")
	var one []httpapi.NodeListStub
	_ = json.Unmarshal(out, &one)
	if len(one) != 1 || one[0].Name != "node-0003" {
		t.Fatalf("filter: %s", out)
	}
}

func TestAPI_JobPathsWithSlashes(t *testing.T) {
	ts, _ := newAPI(t, 1)
	body := `{"Job":{"ID":"parent/dispatch-1","Type":"batch","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"exec","Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	if resp, out := do(t, "PUT", ts.URL+"/v1/jobs", body); resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, out)
	}
	for _, p := range []string{"/v1/job/parent/dispatch-1", "/v1/job/parent%2Fdispatch-1/summary", "/v1/job/parent/dispatch-1/evaluations"} {
		if resp, out := do(t, "GET", ts.URL+p, ""); resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", p, resp.StatusCode, out)
		}
	}
}

// TestAPI_NodeAgentEndpoints drives the three endpoints node agents use:
// register with a secret, heartbeat, report allocation status.
func TestAPI_NodeAgentEndpoints(t *testing.T) {
	ts, s := newAPI(t, 0)
	node := `{"Node": {"ID": "agent-1", "Name": "agent-1", "Datacenter": "dc1", "SecretID": "s3cret",
  "Attributes": {"kernel.name": "linux", "driver.exec": "1"},
  "Drivers": {"exec": {"Detected": true, "Healthy": true, "UpdateTime": "2026-01-02T03:04:05Z"}},
  "NodeResources": {"Cpu": {"CpuShares": 4000}, "Memory": {"MemoryMB": 8192}, "Disk": {"DiskMB": 100000},
    "Devices": [{"Vendor": "nvidia", "Type": "gpu", "Name": "t4", "Attributes": {"memory": {"Int": 16, "Unit": "GiB"}},
      "Instances": [{"ID": "gpu0", "Healthy": true, "Locality": {"PciBusID": "0000:3b:00.0"}}]}]},
  "Resources": {"CPU": 4000, "MemoryMB": 8192}, "Reserved": {"CPU": 0}, "CgroupParent": "nomad.slice"}}`
	resp, out := do(t, "PUT", ts.URL+"/v1/nodes", node)
	if resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, out)
	}
	var reg httpapi.NodeUpdateResponse
	_ = json.Unmarshal(out, &reg)
	if reg.HeartbeatTTL <= 0 || reg.Index == 0 {
		t.Fatalf("register response: %s", out)
	}
	stored := s.Store().Snapshot().Node("agent-1")
	if stored == nil || stored.SecretID != "s3cret" || stored.Status != sdk.NodeStatusReady ||
		stored.NodeResources.Devices[0].Attributes["memory"] != "16 GiB" {
		t.Fatalf("stored node: %+v", stored)
	}
	_, out = do(t, "GET", ts.URL+"/v1/node/agent-1", "")
	if strings.Contains(string(out), "s3cret") || !strings.Contains(string(out), `"memory":{"Int":16,"Unit":"GiB"}`) {
		t.Fatalf("node read leaks its secret or loses Nomad's attribute form: %s", out)
	}

	if resp, out := do(t, "PUT", ts.URL+"/v1/node/agent-1/heartbeat", `{"SecretID": "wrong"}`); resp.StatusCode != 403 {
		t.Fatalf("heartbeat with a wrong secret: %d %s", resp.StatusCode, out)
	}
	if resp, out := do(t, "PUT", ts.URL+"/v1/node/agent-1/heartbeat", `{"SecretID": "s3cret"}`); resp.StatusCode != 200 {
		t.Fatalf("heartbeat: %d %s", resp.StatusCode, out)
	}
	if resp, _ := do(t, "PUT", ts.URL+"/v1/node/nope/heartbeat", ""); resp.StatusCode != 404 {
		t.Fatalf("heartbeat of an unknown node: %d", resp.StatusCode)
	}

	job := `{"Job":{"ID":"j","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"exec","Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
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
	update := func(nodeID, secret string) (*http.Response, []byte) {
		b, _ := json.Marshal(httpapi.AllocStatusRequest{NodeID: nodeID, SecretID: secret,
			Allocs: []server.AllocUpdate{{ID: alloc.ID, ClientStatus: sdk.AllocClientStatusRunning, ClientDescription: "started"}}})
		return do(t, "PUT", ts.URL+"/v1/allocations/status", string(b))
	}
	if resp, out := update("agent-1", "wrong"); resp.StatusCode != 403 {
		t.Fatalf("alloc status with a wrong secret: %d %s", resp.StatusCode, out)
	}
	if resp, out := update("agent-1", "s3cret"); resp.StatusCode != 200 {
		t.Fatalf("alloc status: %d %s", resp.StatusCode, out)
	}
	if got := s.Store().Snapshot().Alloc(alloc.ID); got.ClientStatus != sdk.AllocClientStatusRunning || got.ClientDescription != "started" {
		t.Fatalf("alloc after the report: %s %s", got.ClientStatus, got.ClientDescription)
	}
	// Without a node, a report is refused: anyone could otherwise free
	// capacity a node still uses.
	if resp, out := update("", ""); resp.StatusCode != 400 {
		t.Fatalf("alloc status without a node: %d %s", resp.StatusCode, out)
	}
	// A report naming an allocation the server no longer has does not
	// block the others.
	b, _ := json.Marshal(httpapi.AllocStatusRequest{NodeID: "agent-1", SecretID: "s3cret", Allocs: []server.AllocUpdate{
		{ID: "collected-long-ago", ClientStatus: sdk.AllocClientStatusComplete},
		{ID: alloc.ID, ClientStatus: sdk.AllocClientStatusRunning, ClientDescription: "still running"}}})
	if resp, out := do(t, "PUT", ts.URL+"/v1/allocations/status", string(b)); resp.StatusCode != 200 {
		t.Fatalf("alloc status with an unknown allocation: %d %s", resp.StatusCode, out)
	}
	if got := s.Store().Snapshot().Alloc(alloc.ID); got.ClientDescription != "still running" {
		t.Fatalf("the known allocation's report was lost: %q", got.ClientDescription)
	}

	// A node that comes back with a heartbeat gets its jobs evaluated (a
	// system job's at least), and the answer names the evals, as Nomad's
	// does.
	sys := `{"Job":{"ID":"sys","Type":"system","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"exec","Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	if resp, out := do(t, "PUT", ts.URL+"/v1/jobs", sys); resp.StatusCode != 200 {
		t.Fatalf("register system job: %d %s", resp.StatusCode, out)
	}
	if _, err := s.UpdateNodeStatus("agent-1", sdk.NodeStatusDown, "test"); err != nil {
		t.Fatal(err)
	}
	resp, out = do(t, "PUT", ts.URL+"/v1/node/agent-1/heartbeat", `{"SecretID": "s3cret"}`)
	var hb httpapi.NodeUpdateResponse
	if err := json.Unmarshal(out, &hb); err != nil || resp.StatusCode != 200 || len(hb.EvalIDs) == 0 || hb.EvalCreateIndex == 0 {
		t.Fatalf("heartbeat of a down node: %d %s", resp.StatusCode, out)
	}
	found := false
	for _, id := range hb.EvalIDs {
		e := s.Store().Snapshot().Eval(id)
		if e == nil || e.TriggeredBy != sdk.EvalTriggerNodeUpdate {
			t.Fatalf("the heartbeat's eval %s: %+v", id, e)
		}
		found = found || e.JobID == "sys"
	}
	if !found {
		t.Fatalf("the heartbeat's evals %v do not evaluate the system job", hb.EvalIDs)
	}
}

// Allocation list entries carry DesiredTransition, as Nomad's stubs do, so
// a filter can select the allocations marked to migrate.
func TestAPI_AllocationListFiltersOnDesiredTransition(t *testing.T) {
	ts, s := newAPI(t, 1)
	servertest.WaitForEval(t, s, mustRegister(t, s, servertest.Job("web", "service", 2, 100, 64)))
	allocs := s.Store().Snapshot().AllocsByJob("default", "web")
	if len(allocs) != 2 {
		t.Fatalf("placed %d", len(allocs))
	}
	yes := true
	if _, err := s.Apply(fsm.AllocUpdateDesiredTransitionRequestType, &fsm.AllocUpdateDesiredTransitionRequest{
		Allocs: map[string]*sdk.DesiredTransition{allocs[0].ID: {Migrate: &yes}}}); err != nil {
		t.Fatal(err)
	}
	resp, out := do(t, "GET", ts.URL+"/v1/allocations?filter="+url.QueryEscape("DesiredTransition.Migrate == true"), "")
	var got []sdk.AllocationListStub
	if err := json.Unmarshal(out, &got); resp.StatusCode != 200 || err != nil {
		t.Fatalf("%d %s (%v)", resp.StatusCode, out, err)
	}
	if len(got) != 1 || got[0].ID != allocs[0].ID || !got[0].DesiredTransition.ShouldMigrate() {
		t.Fatalf("filtered: %s", out)
	}
}

func mustRegister(t *testing.T, s *server.Server, job *sdk.Job) string {
	t.Helper()
	id, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
