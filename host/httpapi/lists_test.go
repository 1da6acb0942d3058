package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// getList GETs a list and decodes it into a slice of T, failing on any
// status but want.
func getList[T any](t *testing.T, u string, want int) ([]T, *http.Response) {
	t.Helper()
	resp, out := do(t, "GET", u, "")
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d: %s", u, resp.StatusCode, want, out)
	}
	var got []T
	if want == http.StatusOK {
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("GET %s: %v: %s", u, err, out)
		}
	}
	return got, resp
}

// ids returns the IDs of a list's items.
func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

// A list's filter reads the stored objects, as Nomad's paginator does,
// not the stubs listed: a job's Meta, a node's Attributes and an
// allocation's Job are selectable though the stubs leave them out.
func TestAPI_ListFiltersReadTheObjects(t *testing.T) {
	ts, s := newAPI(t, 2)
	web := servertest.Job("web", "service", 1, 100, 64)
	web.Meta = map[string]string{"team": "frontend"}
	servertest.WaitForEval(t, s, mustRegister(t, s, web))
	servertest.WaitForEval(t, s, mustRegister(t, s, servertest.Job("db", "service", 1, 100, 64)))
	secret := servertest.Node(2, 4000, 8192)
	secret.SecretID, secret.Meta = "s3cr3t", nil
	if _, _, err := s.RegisterNode(secret); err != nil {
		t.Fatal(err)
	}

	type stub struct{ ID string }
	id := func(s stub) string { return s.ID }
	cases := []struct {
		name, path, filter string
		want               int // how many match
	}{
		{"job meta", "/v1/jobs", `Meta.team == "frontend"`, 1},
		{"job task groups", "/v1/jobs", `TaskGroups is not empty`, 2},
		{"job status, a stub field too", "/v1/jobs", `Status == "running"`, 2},
		{"node attributes", "/v1/nodes", `Attributes["kernel.name"] == "linux"`, 3},
		{"node meta", "/v1/nodes", `Meta.rack == "r1"`, 1},
		{"node secret, which a filter does not see", "/v1/nodes", `SecretID != ""`, 0},
		{"allocation job meta", "/v1/allocations", `Job.Meta.team == "frontend"`, 1},
		{"allocation client status", "/v1/allocations", `ClientStatus == "pending"`, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := getList[stub](t, ts.URL+tc.path+"?filter="+url.QueryEscape(tc.filter), http.StatusOK)
			if len(got) != tc.want {
				t.Fatalf("%d match (%v), want %d", len(got), ids(got, id), tc.want)
			}
		})
	}
	// What only the stubs have is an error, as in Nomad.
	getList[stub](t, ts.URL+"/v1/jobs?filter="+url.QueryEscape(`JobSummary.Summary.g.Running == 1`), http.StatusBadRequest)
}

// Paging the jobs of every namespace goes through each once, in the
// list's order, both ways, when one namespace is a prefix of another
// followed by a character that sorts before the token's '.' ("a" and
// "a-b"), or holds a '.' itself: a job registered before namespaces were
// checked, written here to the state directly, as it was then.
func TestAPI_JobListPagesAcrossNamespaces(t *testing.T) {
	ts, s := newAPI(t, 1)
	servertest.Namespaces(t, s, "a", "a-b")
	var want []string
	for _, ns := range []string{"a", "a-b", "a.c"} {
		for _, id := range []string{"x", "y"} {
			j := servertest.Job(id, "batch", 1, 10, 16)
			j.Namespace = ns
			if ns == "a.c" {
				if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: j}); err != nil {
					t.Fatal(err)
				}
			} else {
				mustRegister(t, s, j)
			}
			want = append(want, ns+"/"+id)
		}
	}
	type stub struct{ Namespace, ID string }
	for _, reverse := range []bool{false, true} {
		var got []string
		token := ""
		for pages := 0; pages < 2*len(want); pages++ {
			u := ts.URL + "/v1/jobs?namespace=*&per_page=1&next_token=" + url.QueryEscape(token)
			if reverse {
				u += "&reverse=true"
			}
			pg, resp := getList[stub](t, u, http.StatusOK)
			for _, j := range pg {
				got = append(got, j.Namespace+"/"+j.ID)
			}
			if token = resp.Header.Get("X-Nomad-NextToken"); token == "" {
				break
			}
		}
		w := slices.Clone(want)
		if reverse {
			slices.Reverse(w)
		}
		if !slices.Equal(got, w) {
			t.Errorf("reverse=%v: pages gave %v, want %v", reverse, got, w)
		}
	}
}

// A node pool's nodes and jobs are lists as /v1/nodes and /v1/jobs are,
// as Nomad's NodePool.ListNodes and ListJobs: paged, filtered on the
// objects, with the node list's os and resources; a malformed filter is
// a 400, and so is a prefix (Nomad refuses it there as ambiguous). A pool
// no node is in lists no nodes and the jobs that name it.
func TestAPI_NodePoolListsPageAndFilter(t *testing.T) {
	ts, s := newAPI(t, 2)
	gpu := servertest.Node(2, 4000, 8192)
	gpu.NodePool = "gpu"
	if _, _, err := s.RegisterNode(gpu); err != nil {
		t.Fatal(err)
	}
	web := servertest.Job("web", "service", 1, 100, 64)
	web.Meta = map[string]string{"team": "frontend"}
	mustRegister(t, s, web)
	mustRegister(t, s, servertest.Job("db", "service", 1, 100, 64))

	type node struct {
		ID            string
		Attributes    map[string]string
		NodeResources *sdk.NodeResources
	}
	nodes, resp := getList[node](t, ts.URL+"/v1/node/pool/all/nodes?per_page=2", http.StatusOK)
	token := resp.Header.Get("X-Nomad-NextToken")
	if len(nodes) != 2 || token != "node-0002" {
		t.Fatalf("first page %v, next token %q", nodes, token)
	}
	if nodes, _ = getList[node](t, ts.URL+"/v1/node/pool/all/nodes?per_page=2&next_token="+token, http.StatusOK); len(nodes) != 1 || nodes[0].ID != "node-0002" {
		t.Fatalf("second page %v", nodes)
	}
	nodes, _ = getList[node](t, ts.URL+"/v1/node/pool/all/nodes?os=true&resources=true&filter="+url.QueryEscape(`Meta.rack == "r1"`), http.StatusOK)
	if len(nodes) != 1 || nodes[0].ID != "node-0001" || nodes[0].Attributes == nil || nodes[0].NodeResources == nil {
		t.Fatalf("filtered with os and resources: %+v", nodes)
	}
	if nodes, _ = getList[node](t, ts.URL+"/v1/node/pool/gpu/nodes?filter="+url.QueryEscape(`Attributes["kernel.name"] == "linux"`), http.StatusOK); len(nodes) != 1 {
		t.Fatalf("gpu pool: %+v", nodes)
	}

	type job struct {
		ID   string
		Meta map[string]string
	}
	jobs, resp := getList[job](t, ts.URL+"/v1/node/pool/default/jobs?per_page=1", http.StatusOK)
	if len(jobs) != 1 || jobs[0].ID != "db" || resp.Header.Get("X-Nomad-NextToken") != "default.web" {
		t.Fatalf("first page %v, next token %q", jobs, resp.Header.Get("X-Nomad-NextToken"))
	}
	jobs, _ = getList[job](t, ts.URL+"/v1/node/pool/default/jobs?meta=true&filter="+url.QueryEscape(`Meta.team == "frontend"`), http.StatusOK)
	if len(jobs) != 1 || jobs[0].ID != "web" || jobs[0].Meta["team"] != "frontend" {
		t.Fatalf("filtered with meta: %+v", jobs)
	}

	// A pool no node is in: no nodes, and the jobs that name it.
	servertest.NodePools(t, s, "tpu")
	batch := servertest.Job("train", "batch", 1, 100, 64)
	batch.NodePool = "tpu"
	mustRegister(t, s, batch)
	if nodes, _ = getList[node](t, ts.URL+"/v1/node/pool/tpu/nodes", http.StatusOK); len(nodes) != 0 {
		t.Fatalf("nodes of a pool without nodes: %+v", nodes)
	}
	if jobs, _ = getList[job](t, ts.URL+"/v1/node/pool/tpu/jobs", http.StatusOK); len(jobs) != 1 || jobs[0].ID != "train" {
		t.Fatalf("jobs of a pool without nodes: %+v", jobs)
	}

	for _, path := range []string{"/v1/node/pool/all/nodes", "/v1/node/pool/default/jobs"} {
		getList[job](t, ts.URL+path+"?filter="+url.QueryEscape(`Status ==`), http.StatusBadRequest)
		getList[job](t, ts.URL+path+"?prefix=node", http.StatusBadRequest)
	}
}

// A read of an object that does not exist answers 404 with the index of
// its table, as Nomad's (setMeta before the 404), and a blocking read of a
// missing deployment waits on the deployments table, not on every write.
func TestAPI_MissingObjectsAnswerTheirTablesIndex(t *testing.T) {
	ts, s := newAPI(t, 1)
	for _, path := range []string{"/v1/job/nope", "/v1/node/nope", "/v1/allocation/nope", "/v1/evaluation/nope",
		"/v1/deployment/nope", "/v1/namespace/nope"} {
		if resp, out := do(t, "GET", ts.URL+path, ""); resp.StatusCode != 404 || resp.Header.Get("X-Nomad-Index") == "" {
			t.Errorf("%s: %d, X-Nomad-Index %q: %s", path, resp.StatusCode, resp.Header.Get("X-Nomad-Index"), out)
		}
	}

	_, resp := getList[struct{ ID string }](t, ts.URL+"/v1/deployments", http.StatusOK)
	index := resp.Header.Get("X-Nomad-Index")
	done := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		resp, _ := do(t, "GET", ts.URL+"/v1/deployment/nope?index="+index+"&wait=400ms", "")
		if resp.StatusCode != 404 || resp.Header.Get("X-Nomad-Index") != index {
			t.Errorf("blocking read of a missing deployment: %d, X-Nomad-Index %q, want 404, %s",
				resp.StatusCode, resp.Header.Get("X-Nomad-Index"), index)
		}
		done <- time.Since(start)
	}()
	time.Sleep(50 * time.Millisecond)
	if _, _, err := s.RegisterNode(servertest.Node(1, 4000, 8192)); err != nil { // a write elsewhere
		t.Fatal(err)
	}
	if waited := <-done; waited < 350*time.Millisecond {
		t.Fatalf("the blocking read of a missing deployment answered after %s, on a write to nodes", waited)
	}
}

// A node's allocations block on the highest ModifyIndex of its
// allocations, and a job's versions on its latest version's, as Nomad's
// Node.GetAllocs and Job.GetJobVersions: a write to another node's
// allocations or another job does not wake them; one to theirs does.
func TestAPI_NodeAllocationsAndJobVersionsBlockOnTheirOwn(t *testing.T) {
	ts, s := newAPI(t, 2)
	on := func(id, node string, count int) *sdk.Job {
		j := servertest.Job(id, "service", count, 100, 64)
		j.Constraints = []*sdk.Constraint{{LTarget: "${node.unique.id}", Operand: "=", RTarget: node}}
		return j
	}
	servertest.WaitForEval(t, s, mustRegister(t, s, on("web", "node-0000", 1)))
	paths := []string{"/v1/node/node-0000/allocations", "/v1/job/web/versions"}
	indexes := map[string]string{}
	for _, p := range paths {
		resp, out := do(t, "GET", ts.URL+p, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, out)
		}
		indexes[p] = resp.Header.Get("X-Nomad-Index")
	}
	// block reads each path at its index, in parallel, and returns how
	// long each took.
	block := func(wait string, write func()) map[string]time.Duration {
		type took struct {
			path string
			d    time.Duration
		}
		done := make(chan took, len(paths))
		start := time.Now()
		for _, p := range paths {
			go func() {
				do(t, "GET", ts.URL+p+"?index="+indexes[p]+"&wait="+wait, "")
				done <- took{p, time.Since(start)}
			}()
		}
		time.Sleep(50 * time.Millisecond)
		write()
		out := map[string]time.Duration{}
		for range paths {
			tk := <-done
			out[tk.path] = tk.d
		}
		return out
	}
	other := block("400ms", func() { servertest.WaitForEval(t, s, mustRegister(t, s, on("db", "node-0001", 1))) })
	for p, d := range other {
		if d < 350*time.Millisecond {
			t.Errorf("%s woke after %s on a write to another node's allocations and another job", p, d)
		}
	}
	own := block("10s", func() { mustRegister(t, s, on("web", "node-0000", 2)) })
	for p, d := range own {
		if d > 5*time.Second {
			t.Errorf("%s did not wake on a write to its own (%s)", p, d)
		}
	}
}

// Smaller query semantics of Nomad's: an evaluation list's filter does not
// go with its job and status parameters, a deployment's allocations are
// listed without looking the deployment up, and ?pretty=0 does not indent.
func TestAPI_SmallQuerySemanticsAsNomad(t *testing.T) {
	ts, _ := newAPI(t, 1)
	for _, q := range []string{"job=web", "status=complete"} {
		resp, out := do(t, "GET", ts.URL+"/v1/evaluations?"+q+"&filter="+url.QueryEscape(`Type == "service"`), "")
		if resp.StatusCode != 400 || !strings.Contains(string(out), "Filter expression cannot be used with other filter parameters") {
			t.Errorf("%s with a filter: %d %s", q, resp.StatusCode, out)
		}
	}
	if resp, out := do(t, "GET", ts.URL+"/v1/deployment/allocations/nope", ""); resp.StatusCode != 200 || string(out) != "[]\n" {
		t.Errorf("allocations of a deployment that does not exist: %d %s", resp.StatusCode, out)
	}
	for q, indented := range map[string]bool{"pretty": true, "pretty=1": true, "pretty=true": true, "pretty=0": false} {
		_, out := do(t, "GET", ts.URL+"/v1/nodes?"+q, "")
		if strings.Contains(string(out), "\n    ") != indented {
			t.Errorf("?%s: indented %v, want %v: %s", q, !indented, indented, out)
		}
	}
}
