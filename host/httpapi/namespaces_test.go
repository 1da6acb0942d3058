package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// errText is err's text with the JSON escapes of its body's quotes undone
// (Nomad's client quotes the response body it got).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.ReplaceAll(err.Error(), `\"`, `"`)
}

// Namespaces through Nomad's client: written with their description,
// meta and capabilities, read back; a job needs its namespace and a
// driver it allows; a namespace with a job or a variable is not deleted,
// default never is; Enterprise fields and a name that is not the path's
// are refused.
func TestNomadClient_NamespaceWrites(t *testing.T) {
	ts, srv := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	prod := &api.Namespace{Name: "prod", Description: "production", Meta: map[string]string{"team": "a"},
		Capabilities: &api.NamespaceCapabilities{EnabledTaskDrivers: []string{"docker", "exec"}, DisabledTaskDrivers: []string{"exec"}}}
	wm, err := c.Namespaces().Register(prod, nil)
	if err != nil || wm.LastIndex == 0 {
		t.Fatalf("register: %v %+v", err, wm)
	}
	// Nomad 1.6's shape: its capabilities are task drivers alone.
	if _, out := do(t, "GET", ts.URL+"/v1/namespace/prod", ""); !strings.Contains(string(out), `"DisabledTaskDrivers"`) ||
		strings.Contains(string(out), "NetworkModes") {
		t.Errorf("namespace read: %s", out)
	}
	got, _, err := c.Namespaces().Info("prod", nil)
	if err != nil || got.Description != "production" || got.Meta["team"] != "a" || got.Capabilities == nil ||
		strings.Join(got.Capabilities.EnabledTaskDrivers, ",") != "docker,exec" || got.CreateIndex != wm.LastIndex {
		t.Fatalf("info: %v %+v", err, got)
	}

	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	register := func(ns, driver string) error {
		job.Namespace, job.TaskGroups[0].Tasks[0].Driver = &ns, driver
		_, _, err := c.Jobs().Register(job, &api.WriteOptions{Namespace: ns})
		return err
	}
	for _, tc := range []struct{ ns, driver, want string }{
		{"nope", "docker", `job "web" is in nonexistent namespace "nope"`},
		{"prod", "exec", `used task driver "exec" is not allowed in namespace "prod"`}, // disabled wins over enabled
		{"prod", "raw_exec", `used task driver "raw_exec" is not allowed in namespace "prod"`},
	} {
		if err := register(tc.ns, tc.driver); !strings.Contains(errText(err), "400") || !strings.Contains(errText(err), tc.want) {
			t.Errorf("%s/%s: %v, want a 400 %q", tc.ns, tc.driver, err, tc.want)
		}
	}
	if err := register("prod", "docker"); err != nil {
		t.Fatalf("a job in prod: %v", err)
	}
	if _, err := c.Namespaces().Delete("prod", nil); err == nil || !strings.Contains(err.Error(), "non-terminal job") {
		t.Fatalf("delete with a job: %v", err)
	}
	if _, _, err := c.Jobs().Deregister("web", true, &api.WriteOptions{Namespace: "prod"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Variables().Create(&api.Variable{Namespace: "prod", Path: "app/db", Items: api.VariableItems{"k": "v"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Variables().Create(&api.Variable{Namespace: "staging", Path: "app/db", Items: api.VariableItems{"k": "v"}},
		&api.WriteOptions{Namespace: "staging"}); !strings.Contains(errText(err), `nonexistent namespace "staging"`) {
		t.Fatalf("a variable in a namespace that does not exist: %v", err)
	}
	if _, err := c.Namespaces().Delete("prod", nil); err == nil || !strings.Contains(err.Error(), "at least one variable") {
		t.Fatalf("delete with a variable: %v", err)
	}
	if _, err := c.Variables().Delete("app/db", &api.WriteOptions{Namespace: "prod"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Namespaces().Delete("prod", nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, _, err := c.Namespaces().Info("prod", nil); err == nil || !strings.Contains(err.Error(), "404") ||
		!strings.Contains(err.Error(), "Namespace not found") {
		t.Fatalf("deleted namespace: %v", err)
	}
	// The purge's eval concludes in the background, by an entry of its
	// own, as does the end of the job's deployment: wait for both, so
	// that the index moves below only if the delete writes one (under
	// -race an entry came between the two reads once).
	servertest.WaitFor(t, "the purge's eval and deployment to end", func() bool {
		snap := srv.Store().Snapshot()
		for _, e := range snap.Evals() {
			if !e.TerminalStatus() {
				return false
			}
		}
		for _, d := range snap.Deployments() {
			if d.Active() {
				return false
			}
		}
		return true
	})
	before := srv.Store().LatestIndex()
	if _, err := c.Namespaces().Delete("prod", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("deleted again: %v", err)
	}
	if after := srv.Store().LatestIndex(); after != before {
		t.Fatalf("deleting a namespace that is not there wrote an entry (index %d, then %d)", before, after)
	}
	// Written without Meta, read back without (null), as Nomad's.
	if _, err := c.Namespaces().Register(&api.Namespace{Name: "bare"}, nil); err != nil {
		t.Fatal(err)
	}
	if resp, body := do(t, "GET", ts.URL+"/v1/namespace/bare", ""); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"Meta":null`) {
		t.Fatalf("a namespace written without meta: %d %s", resp.StatusCode, body)
	}

	// default: written, never deleted.
	if _, err := c.Namespaces().Register(&api.Namespace{Name: "default", Description: "ours"}, nil); err != nil {
		t.Fatal(err)
	}
	if d, _, err := c.Namespaces().Info("default", nil); err != nil || d.Description != "ours" || d.CreateIndex != 1 {
		t.Fatalf("default: %v %+v", err, d)
	}
	if _, err := c.Namespaces().Delete("default", nil); err == nil || !strings.Contains(err.Error(), "400") ||
		!strings.Contains(err.Error(), "can not delete default namespace") {
		t.Fatalf("delete default: %v", err)
	}

	for _, tc := range []struct{ path, body, want string }{
		{"/v1/namespace", `{"Name": "q", "Quota": "small"}`, "Quota"},
		{"/v1/namespace", `{"Name": "q", "NodePoolConfiguration": {"Default": "gpu"}}`, "NodePoolConfiguration"},
		// A later version's restriction is refused, not dropped: the
		// namespace would allow what its writer meant to forbid.
		{"/v1/namespace", `{"Name": "q", "Capabilities": {"DisabledNetworkModes": ["host"]}}`, "Capabilities.DisabledNetworkModes"},
		{"/v1/namespace", `{"Name": "q", "Capabilities": {"EnabledNetworkModes": ["bridge"]}}`, "Capabilities.EnabledNetworkModes"},
		{"/v1/namespace/other", `{"Name": "q"}`, "does not match request path"},
		{"/v1/namespace", `{"Name": "no spaces"}`, "invalid name"},
		{"/v1/namespace", `{"Name": "q", "Description": "` + strings.Repeat("x", 257) + `"}`, "description longer than 256"},
	} {
		if resp, out := do(t, "PUT", ts.URL+tc.path, tc.body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), tc.want) {
			t.Errorf("PUT %s %.40s: %d %s, want a 400 %q", tc.path, tc.body, resp.StatusCode, out, tc.want)
		}
	}
}

// Node pools through Nomad's client: written and read back; a job needs
// its pool; a node registering makes its pool; a pool with nodes or a
// job is not deleted, nor are the built-ins written or deleted; the
// NodePool event topic reports writes and deletions to a management token.
func TestNomadClient_NodePoolWrites(t *testing.T) {
	ts, srv := newAPI(t, 0)
	c := nomadClient(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := c.EventStream().Stream(ctx, map[api.Topic][]string{"NodePool": {"*"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodePools().Register(&api.NodePool{Name: "gpu", Description: "GPUs", Meta: map[string]string{"cuda": "12"}}, nil); err != nil {
		t.Fatal(err)
	}
	if p, _, err := c.NodePools().Info("gpu", nil); err != nil || p.Description != "GPUs" || p.Meta["cuda"] != "12" {
		t.Fatalf("info: %v %+v", err, p)
	}
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	job.NodePool = new("tpu")
	if _, _, err := c.Jobs().Register(job, nil); !strings.Contains(errText(err), `job "web" is in nonexistent node pool "tpu"`) {
		t.Fatalf("job in a pool that does not exist: %v", err)
	}
	job.NodePool = new("gpu")
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodePools().Delete("gpu", nil); err == nil || !strings.Contains(err.Error(), "non-terminal jobs") {
		t.Fatalf("delete with a job: %v", err)
	}
	edge := servertest.Node(1, 4000, 8192)
	edge.NodePool = "edge"
	if _, _, err := srv.RegisterNode(edge); err != nil {
		t.Fatal(err)
	}
	if p, _, err := c.NodePools().Info("edge", nil); err != nil || p.Name != "edge" {
		t.Fatalf("a node's pool: %v %+v", err, p)
	}
	if _, err := c.NodePools().Delete("edge", nil); err == nil || !strings.Contains(err.Error(), "has nodes") {
		t.Fatalf("delete with a node: %v", err)
	}
	for _, name := range []string{"all", "default"} {
		if _, err := c.NodePools().Register(&api.NodePool{Name: name, Description: "mine"}, nil); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("write %s: %v", name, err)
		}
		if _, err := c.NodePools().Delete(name, nil); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("delete %s: %v", name, err)
		}
	}
	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NodePools().Delete("gpu", nil); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for _, tc := range []struct{ method, path, body, want string }{
		{"PUT", "/v1/node/pools", `{"Name": "x", "SchedulerConfiguration": {"SchedulerAlgorithm": "spread"}}`, "SchedulerConfiguration"},
		{"PUT", "/v1/node/pool/other", `{"Name": "x"}`, "does not match request path"},
		{"POST", "/v1/node/pools", `{"Name": "no/slash"}`, "invalid name"},
	} {
		if resp, out := do(t, tc.method, ts.URL+tc.path, tc.body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s %s: %d %s, want a 400 %q", tc.method, tc.path, resp.StatusCode, out, tc.want)
		}
	}

	// The stream: gpu written, edge made by its node, gpu deleted.
	var got []string
	for len(got) < 3 {
		select {
		case ev := <-stream:
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			for _, e := range ev.Events {
				p, err := e.NodePool()
				if err != nil || p == nil || p.Name != e.Key {
					t.Fatalf("event %+v: %v %+v", e, err, p)
				}
				got = append(got, e.Type+" "+e.Key)
			}
		case <-ctx.Done():
			t.Fatalf("events: %v", got)
		}
	}
	if want := "NodePoolUpserted gpu,NodePoolUpserted edge,NodePoolDeleted gpu"; strings.Join(got, ",") != want {
		t.Fatalf("events %v, want %s", got, want)
	}
}

// Node pool writes need the pool's write capability, deletes its delete;
// namespace writes a management token; the NodePool topic a management
// token, as Nomad's.
func TestACL_NamespaceAndNodePoolWrites(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 0)
	root := withToken(t, ts.URL, rootSecret)
	ops := withToken(t, ts.URL, makeToken(t, root, "gpu-ops", `
node_pool "gpu-*" { policy = "write" }
node_pool "gpu-legacy" { capabilities = ["read", "write"] }
namespace "*" { policy = "write" }
node { policy = "read" }`))
	if _, err := ops.NodePools().Register(&api.NodePool{Name: "gpu-a"}, nil); err != nil {
		t.Fatalf("write a pool the token may write: %v", err)
	}
	if _, err := ops.NodePools().Register(&api.NodePool{Name: "cpu"}, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("write another pool: %v", err)
	}
	if _, err := root.NodePools().Register(&api.NodePool{Name: "gpu-legacy"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.NodePools().Delete("gpu-legacy", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("delete without delete: %v", err)
	}
	if _, err := ops.NodePools().Delete("gpu-a", nil); err != nil {
		t.Fatalf("delete with write (which grants delete): %v", err)
	}
	if _, err := ops.Namespaces().Register(&api.Namespace{Name: "team"}, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("namespace write without management: %v", err)
	}
	if _, err := root.Namespaces().Register(&api.Namespace{Name: "team"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Namespaces().Delete("team", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("namespace delete without management: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := ops.EventStream().Stream(ctx, map[api.Topic][]string{"NodePool": {"*"}}, 0, nil)
	if err == nil {
		ev := <-stream
		err = ev.Err
	}
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("NodePool topic without management: %v", err)
	}
}
