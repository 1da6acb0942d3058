package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// newACLAPI starts a dev server with ACLs enabled, n ready nodes and its
// API, and bootstraps it: it returns the management token's secret too.
func newACLAPI(t *testing.T, n int) (*httptest.Server, *server.Server, string) {
	t.Helper()
	s := servertest.New(t, nil, func(c *server.Config) { c.ACLEnabled = true })
	for i := 0; i < n; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)), nil).Handler())
	t.Cleanup(ts.Close)
	root, _, err := nomadClient(t, ts.URL).ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return ts, s, root.SecretID
}

// withToken is Nomad's client with token set.
func withToken(t *testing.T, addr, token string) *api.Client {
	c := nomadClient(t, addr)
	c.SetSecretID(token)
	return c
}

// doAs makes a request with token (none when empty).
func doAs(t *testing.T, token, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, []byte(b.String())
}

// makeToken writes policy name with rules and returns the secret of a new
// client token holding it.
func makeToken(t *testing.T, root *api.Client, name, rules string) string {
	t.Helper()
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
		t.Fatalf("policy %s: %v", name, err)
	}
	tok, _, err := root.ACLTokens().Create(&api.ACLToken{Name: name, Type: "client", Policies: []string{name}}, nil)
	if err != nil {
		t.Fatalf("token %s: %v", name, err)
	}
	return tok.SecretID
}

// TestACL_EveryEndpointChecksTheToken drives every endpoint, naming real
// objects of namespace default, with no token, with a token of another
// namespace (and no node, agent or operator rights) and with the
// management token: only the open endpoints answer the first two, and
// lists of every namespace leave out what the token may not see.
func TestACL_EveryEndpointChecksTheToken(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 3)
	root := withToken(t, ts.URL, rootSecret)
	outsider := makeToken(t, root, "other-ns", `namespace "other" { policy = "write" }`)

	job := servertest.Job("web", sdk.JobTypeService, 2, 100, 64)
	job.TaskGroups[0].Scaling = &sdk.ScalingPolicy{Min: 1, Max: 5, Enabled: true}
	job.TaskGroups[0].Update = &sdk.UpdateStrategy{MaxParallel: 1, HealthCheck: "checks", Stagger: 30 * time.Second,
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute}
	evalID := mustRegister(t, s, job)
	servertest.WaitFor(t, "the eval to finish", func() bool {
		e := s.Store().Snapshot().Eval(evalID)
		return e != nil && e.Status == sdk.EvalStatusComplete
	})
	snap := s.Store().Snapshot()
	allocs := snap.AllocsByJob(sdk.DefaultNamespace, "web")
	if len(allocs) == 0 {
		t.Fatal("no allocations placed")
	}
	allocID, nodeID := allocs[0].ID, allocs[0].NodeID
	d := snap.LatestDeploymentByJobInstance(sdk.DefaultNamespace, "web")
	if d == nil {
		t.Fatal("no deployment")
	}
	deploymentID := d.ID
	// A role the outsider does not hold, of a policy of its own.
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "role-pol", Rules: `node { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	role, _, err := root.ACLRoles().Create(&api.ACLRole{Name: "readers", Policies: []*api.ACLRolePolicyLink{{Name: "role-pol"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	roleBody := `{"ID": "` + role.ID + `", "Name": "readers", "Policies": [{"Name": "role-pol"}]}`
	// The role list answers anyone, with the roles their token holds.
	for _, tok := range []string{"", outsider} {
		resp, body := doAs(t, tok, "GET", ts.URL+"/v1/acl/roles", "")
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
			t.Errorf("GET /v1/acl/roles with token %q: %d %s, want 200 []", tok, resp.StatusCode, body)
		}
	}
	if roles, _, err := root.ACLRoles().List(nil); err != nil || len(roles) != 1 || roles[0].ID != role.ID {
		t.Errorf("management lists roles: %+v %v", roles, err)
	}
	// Variables: one the management token deletes below, one it lists at
	// the end; the key their first write made.
	for _, path := range []string{"app/db", "app/keep"} {
		if _, _, err := root.Variables().Create(&api.Variable{Path: path, Items: api.VariableItems{"k": "v"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	keyID := s.Store().Snapshot().ActiveRootKey().KeyID
	// An auth method and a binding rule (the management token deletes
	// them below).
	authMethodBody := `{"Name": "ci", "Type": "JWT", "TokenLocality": "local", "MaxTokenTTL": "1h",
		"Config": {"JWKSURL": "https://ci.example/jwks"}}`
	if resp, body := doAs(t, rootSecret, "PUT", ts.URL+"/v1/acl/auth-method", authMethodBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("create an auth method: %d %s", resp.StatusCode, body)
	}
	rule, _, err := root.ACLBindingRules().Create(&api.ACLBindingRule{AuthMethod: "ci", BindType: "management"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ruleID := rule.ID
	// A CSI plugin's node, and two volumes (the management token
	// deregisters one below).
	if _, _, err := s.RegisterNode(csiNode(9, map[string]bool{"ebs": true}, "ebs")); err != nil {
		t.Fatal(err)
	}
	volBody := func(id string) string {
		return `{"Volumes": [{"ID": "` + id + `", "PluginID": "ebs", "RequestedCapabilities": [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]}]}`
	}
	for _, id := range []string{"vol", "keep"} {
		if resp, body := doAs(t, rootSecret, "PUT", ts.URL+"/v1/volume/csi/"+id, volBody(id)); resp.StatusCode != http.StatusOK {
			t.Fatalf("register volume %s: %d %s", id, resp.StatusCode, body)
		}
	}
	jobJSON, _ := json.Marshal(map[string]any{"Job": map[string]any{"ID": "web", "Name": "web", "Type": "service",
		"TaskGroups": []any{map[string]any{"Name": "g", "Count": 1, "Tasks": []any{map[string]any{"Name": "t", "Driver": "docker"}}}}}})

	// denied: answered 403 to the outsider and to no token.
	denied := []struct{ method, path, body string }{
		{"GET", "/v1/jobs", ""},
		{"PUT", "/v1/jobs", string(jobJSON)},
		{"PUT", "/v1/jobs/parse", `{"JobHCL": "job \"x\" {}"}`},
		{"PUT", "/v1/validate/job", string(jobJSON)},
		{"GET", "/v1/job/web", ""},
		{"PUT", "/v1/job/web", string(jobJSON)},
		{"DELETE", "/v1/job/web", ""},
		{"GET", "/v1/job/web/allocations", ""},
		{"GET", "/v1/job/web/evaluations", ""},
		{"PUT", "/v1/job/web/evaluate", "{}"},
		{"PUT", "/v1/job/web/plan", string(jobJSON)},
		{"GET", "/v1/job/web/summary", ""},
		{"GET", "/v1/job/web/versions", ""},
		{"GET", "/v1/job/web/deployments", ""},
		{"GET", "/v1/job/web/deployment", ""},
		{"GET", "/v1/job/web/scale", ""},
		{"PUT", "/v1/job/web/scale", `{"Count": 3, "Target": {"Group": "g"}}`},
		{"PUT", "/v1/job/web/dispatch", "{}"},
		{"PUT", "/v1/job/web/revert", `{"JobVersion": 0}`},
		{"PUT", "/v1/job/web/periodic/force", ""},
		{"PUT", "/v1/job/web/stable", `{"JobVersion": 0, "Stable": true}`},
		{"PUT", "/v1/job/web/versions/golden/tag", `{"Version": 0}`},
		{"DELETE", "/v1/job/web/versions/golden/tag", ""},
		{"GET", "/v1/job/web/submission?version=0", ""},
		{"GET", "/v1/evaluations", ""},
		{"GET", "/v1/evaluations/count", ""},
		{"DELETE", "/v1/evaluations", `{"EvalIDs": ["` + evalID + `"]}`},
		{"GET", "/v1/evaluation/" + evalID, ""},
		{"GET", "/v1/evaluation/" + evalID + "/allocations", ""},
		{"GET", "/v1/allocations", ""},
		{"PUT", "/v1/allocations/status", "{}"},
		{"GET", "/v1/allocation/" + allocID, ""},
		{"PUT", "/v1/allocation/" + allocID + "/stop", ""},
		{"GET", "/v1/nodes", ""},
		{"PUT", "/v1/nodes", "{}"},
		{"GET", "/v1/node/" + nodeID, ""},
		{"GET", "/v1/node/" + nodeID + "/allocations", ""},
		{"PUT", "/v1/node/" + nodeID + "/heartbeat", ""},
		{"PUT", "/v1/node/" + nodeID + "/eligibility", `{"Eligibility": "ineligible"}`},
		{"PUT", "/v1/node/" + nodeID + "/purge", ""},
		{"PUT", "/v1/node/" + nodeID + "/evaluate", ""},
		{"PUT", "/v1/node/" + nodeID + "/drain", "{}"},
		{"GET", "/v1/deployments", ""},
		{"GET", "/v1/scaling/policies", ""},
		{"PUT", "/v1/system/gc", ""},
		{"PUT", "/v1/system/reconcile/summaries", ""},
		{"GET", "/v1/namespace/default", ""},
		{"PUT", "/v1/namespace/x", "{}"},
		{"PUT", "/v1/namespace", `{"Name": "y"}`},
		{"DELETE", "/v1/namespace/y", ""},
		{"PUT", "/v1/node/pools", `{"Name": "p"}`},
		{"POST", "/v1/node/pool/p", `{"Name": "p"}`},
		{"DELETE", "/v1/node/pool/p", ""},
		{"GET", "/v1/node/pool/default", ""},
		{"GET", "/v1/node/pool/default/nodes", ""},
		{"GET", "/v1/node/pool/default/jobs", ""},
		{"GET", "/v1/operator/scheduler/configuration", ""},
		{"PUT", "/v1/operator/scheduler/configuration", "{}"},
		{"GET", "/v1/plugins/schedulers", ""},
		{"GET", "/v1/plugins/refused", ""},
		{"GET", "/v1/plugin/scheduler/service", ""},
		{"GET", "/v1/plugins?type=csi", ""},
		{"GET", "/v1/plugin/csi/ebs", ""},
		{"GET", "/v1/volumes?type=csi", ""},
		{"GET", "/v1/volume/csi/vol", ""},
		{"PUT", "/v1/volume/csi/vol", volBody("vol")},
		{"POST", "/v1/volumes", volBody("vol")},
		{"DELETE", "/v1/volume/csi/vol/detach?node=node-0009", ""},
		{"PUT", "/v1/volume/csi/vol/detach?node=node-0009", ""},
		{"DELETE", "/v1/volume/csi/vol", ""},
		{"GET", "/v1/agent/members", ""},
		{"GET", "/v1/operator/raft/configuration", ""},
		{"DELETE", "/v1/operator/raft/peer?id=x", ""},
		{"PUT", "/v1/operator/raft/transfer-leadership", ""},
		{"GET", "/v1/operator/snapshot", ""},
		{"PUT", "/v1/operator/snapshot", ""},
		// A context named outright, in a namespace the token may not
		// search; with "all" or "*" it answers (below).
		{"PUT", "/v1/search/fuzzy", `{"Text": "web", "Context": "jobs"}`},
		{"GET", "/v1/agent/monitor", ""},
		{"GET", "/v1/agent/self", ""},
		{"GET", "/v1/event/stream?topic=Job", ""},
		{"GET", "/v1/event/stream", ""},
		{"GET", "/v1/acl/policy/nope", ""}, // a policy the token does not hold (anyone reads "anonymous")
		{"PUT", "/v1/acl/policy/x", `{"Name": "x", "Rules": "node { policy = \"read\" }"}`},
		{"DELETE", "/v1/acl/policy/other-ns", ""},
		{"GET", "/v1/acl/tokens", ""},
		{"PUT", "/v1/acl/token", `{"Type": "management"}`},
		{"GET", "/v1/acl/role/" + role.ID, ""},
		{"GET", "/v1/acl/role/name/readers", ""},
		{"GET", "/v1/acl/role/name/nope", ""},
		{"PUT", "/v1/acl/role", `{"Name": "more", "Policies": [{"Name": "role-pol"}]}`},
		{"POST", "/v1/acl/role", `{"Name": "more2", "Policies": [{"Name": "role-pol"}]}`},
		{"PUT", "/v1/acl/role/" + role.ID, roleBody},
		{"POST", "/v1/acl/role/" + role.ID, roleBody},
		{"DELETE", "/v1/acl/role/" + role.ID, ""},
		{"GET", "/v1/operator/autopilot/configuration", ""},
		{"PUT", "/v1/operator/autopilot/configuration", `{"CleanupDeadServers": true}`},
		{"GET", "/v1/operator/autopilot/health", ""},
		{"GET", "/v1/services", ""},
		{"GET", "/v1/service/web", ""},
		{"DELETE", "/v1/service/web/x", ""},
		{"GET", "/v1/job/web/services", ""},
		{"GET", "/v1/allocation/" + allocID + "/services", ""},
		{"GET", "/v1/var/app/db", ""},
		{"PUT", "/v1/var/app/db", `{"Items": {"k": "w"}}`},
		{"PUT", "/v1/var/app/new?cas=0", `{"Items": {"k": "w"}}`},
		{"DELETE", "/v1/var/app/db", ""},
		{"GET", "/v1/operator/keyring/keys", ""},
		{"PUT", "/v1/operator/keyring/rotate", ""},
		{"DELETE", "/v1/operator/keyring/key/" + keyID, ""},
		{"GET", "/v1/agent/pprof/goroutine", ""},
		{"GET", "/v1/acl/auth-method/ci", ""},
		{"PUT", "/v1/acl/auth-method", authMethodBody},
		{"POST", "/v1/acl/auth-method/ci", authMethodBody},
		{"DELETE", "/v1/acl/auth-method/ci", ""},
		{"GET", "/v1/acl/binding-rules", ""},
		{"GET", "/v1/acl/binding-rule/" + ruleID, ""},
		{"PUT", "/v1/acl/binding-rule", `{"AuthMethod": "ci", "BindType": "management"}`},
		{"POST", "/v1/acl/binding-rule/" + ruleID, `{"ID": "` + ruleID + `", "AuthMethod": "ci", "BindType": "management"}`},
		{"DELETE", "/v1/acl/binding-rule/" + ruleID, ""},
	}
	for _, p := range []string{"/v1/deployment/", "/v1/deployment/allocations/"} {
		denied = append(denied, struct{ method, path, body string }{"GET", p + deploymentID, ""})
	}
	for _, p := range []string{"promote", "fail", "pause", "allocation-health"} {
		denied = append(denied, struct{ method, path, body string }{"PUT", "/v1/deployment/" + p + "/" + deploymentID,
			`{"DeploymentID": "` + deploymentID + `"}`})
	}
	for _, tok := range []struct{ name, secret string }{{"no token", ""}, {"another namespace's", outsider}} {
		for _, c := range denied {
			resp, body := doAs(t, tok.secret, c.method, ts.URL+c.path, c.body)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s, %s %s: %d %s, want 403", tok.name, c.method, c.path, resp.StatusCode, body)
			}
		}
	}
	// The same requests with the management token are not refused (the
	// event streams and the monitor stream: only their status is read).
	for _, c := range denied {
		if strings.HasPrefix(c.path, "/v1/event/") || strings.HasPrefix(c.path, "/v1/agent/monitor") {
			continue
		}
		if resp, body := doAs(t, rootSecret, c.method, ts.URL+c.path, c.body); resp.StatusCode == http.StatusForbidden {
			t.Errorf("management, %s %s: 403 %s", c.method, c.path, body)
		}
	}

	// Lists of every namespace leave out what the token may not see.
	for _, path := range []string{"/v1/jobs?namespace=*", "/v1/allocations?namespace=*", "/v1/evaluations?namespace=*",
		"/v1/deployments?namespace=*", "/v1/scaling/policies?namespace=*", "/v1/namespaces", "/v1/node/pools",
		"/v1/vars?namespace=*", "/v1/vars", "/v1/volumes?type=csi&namespace=*"} {
		resp, body := doAs(t, outsider, "GET", ts.URL+path, "")
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
			t.Errorf("outsider, GET %s: %d %s, want 200 []", path, resp.StatusCode, body)
		}
		resp, body = doAs(t, rootSecret, "GET", ts.URL+path, "")
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) == "[]" {
			t.Errorf("management, GET %s: %d %s, want a list", path, resp.StatusCode, body)
		}
	}
	resp, body := doAs(t, outsider, "PUT", ts.URL+"/v1/search?namespace=*", `{"Prefix": "", "Context": "all"}`)
	var found httpapi.SearchResponse
	if err := json.Unmarshal(body, &found); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("outsider search: %d %s", resp.StatusCode, body)
	}
	for ctx, ids := range found.Matches {
		if len(ids) > 0 {
			t.Errorf("outsider search finds %s %v", ctx, ids)
		}
	}
	resp, body = doAs(t, outsider, "PUT", ts.URL+"/v1/search/fuzzy?namespace=*", `{"Text": "web", "Context": "all"}`)
	var fuzzy httpapi.FuzzySearchResponse
	if err := json.Unmarshal(body, &fuzzy); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("outsider fuzzy search: %d %s", resp.StatusCode, body)
	}
	for ctx, ms := range fuzzy.Matches {
		if len(ms) > 0 {
			t.Errorf("outsider fuzzy search finds %s %v", ctx, ms)
		}
	}
	resp, body = doAs(t, rootSecret, "PUT", ts.URL+"/v1/search/fuzzy?namespace=*", `{"Text": "web", "Context": "all"}`)
	if fuzzy = (httpapi.FuzzySearchResponse{}); json.Unmarshal(body, &fuzzy) != nil || len(fuzzy.Matches["jobs"]) != 1 {
		t.Errorf("management fuzzy search: %d %s, want job web", resp.StatusCode, body)
	}

	// The open endpoints answer anyone.
	for _, path := range []string{"/v1/status/leader", "/v1/status/peers", "/v1/agent/health", "/v1/regions", "/v1/metrics"} {
		if resp, body := doAs(t, "", "GET", ts.URL+path, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("no token, GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	// A token that does not exist is refused in Nomad's words.
	if resp, body := doAs(t, "00000000-0000-0000-0000-000000000000", "GET", ts.URL+"/v1/jobs", ""); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(string(body), "ACL token not found") {
		t.Errorf("unknown token: %d %s", resp.StatusCode, body)
	}
}

// TestACL_NamespacePolicies: what a namespace's policy and capabilities
// let a token do there, through Nomad's client, and the anonymous policy.
func TestACL_NamespacePolicies(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 3)
	root := withToken(t, ts.URL, rootSecret)
	mustRegister(t, s, servertest.Job("web", sdk.JobTypeService, 1, 100, 64))

	reader := withToken(t, ts.URL, makeToken(t, root, "reader", `namespace "default" { policy = "read" }`))
	if jobs, _, err := reader.Jobs().List(nil); err != nil || len(jobs) != 1 {
		t.Fatalf("reader lists jobs: %v %v", jobs, err)
	}
	if _, _, err := reader.Jobs().Deregister("web", false, nil); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("reader deregisters: %v", err)
	}

	// A glob, and a capability alone.
	stopper := withToken(t, ts.URL, makeToken(t, root, "stopper", `namespace "def*" { capabilities = ["submit-job"] }`))
	if _, _, err := stopper.Jobs().List(nil); err == nil {
		t.Fatal("submit-job alone lists jobs")
	}
	if _, _, err := stopper.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatalf("submit-job deregisters: %v", err)
	}
	// As Nomad's: submit-job serves to parse, as parse-job does.
	if _, err := stopper.Jobs().ParseHCL(`job "x" {}`, false); err != nil {
		t.Fatalf("submit-job parses: %v", err)
	}

	// Without an anonymous policy a request without a token is refused;
	// with one, it may do what the policy says.
	anon := nomadClient(t, ts.URL)
	if _, _, err := anon.Jobs().List(nil); err == nil {
		t.Fatal("anonymous lists jobs without an anonymous policy")
	}
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: server.AnonymousPolicy,
		Rules: `namespace "default" { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := anon.Jobs().List(nil); err != nil {
		t.Fatalf("anonymous lists jobs with an anonymous policy: %v", err)
	}
	// Anyone reads the anonymous policy, as in Nomad; not another.
	if p, _, err := anon.ACLPolicies().Info(server.AnonymousPolicy, nil); err != nil || p.Name != server.AnonymousPolicy {
		t.Fatalf("anonymous reads the anonymous policy: %+v %v", p, err)
	}
	if _, _, err := anon.ACLPolicies().Info("reader", nil); err == nil {
		t.Fatal("anonymous reads another policy")
	}
}

// TestACL_PoliciesAndTokens drives the ACL endpoints with Nomad's client:
// bootstrap once, policies, and tokens created, read, updated, expired
// and deleted.
func TestACL_PoliciesAndTokens(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 0)
	root := withToken(t, ts.URL, rootSecret)

	if _, _, err := root.ACLTokens().Bootstrap(nil); err == nil || !strings.Contains(err.Error(), "bootstrap already done") {
		t.Fatalf("second bootstrap: %v", err)
	}
	self, _, err := root.ACLTokens().Self(nil)
	if err != nil || self.Type != "management" || self.SecretID != rootSecret {
		t.Fatalf("root's self: %+v %v", self, err)
	}

	// A policy that does not parse is refused, naming where.
	_, err = root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "bad", Rules: "namespace \"x\" {\n  policy = \"sudo\"\n}"}, nil)
	if err == nil || !strings.Contains(err.Error(), "bad:2:") {
		t.Fatalf("bad policy: %v", err)
	}
	rules := `node { policy = "read" }`
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "nodes", Description: "read nodes", Rules: rules}, nil); err != nil {
		t.Fatal(err)
	}
	if p, _, err := root.ACLPolicies().Info("nodes", nil); err != nil || p.Rules != rules || p.Description != "read nodes" {
		t.Fatalf("policy info: %+v %v", p, err)
	}

	tok, _, err := root.ACLTokens().Create(&api.ACLToken{Name: "ops", Type: "client", Policies: []string{"nodes"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessorID == "" || tok.SecretID == "" || tok.ExpirationTime != nil {
		t.Fatalf("created token: %+v", tok)
	}
	ops := withToken(t, ts.URL, tok.SecretID)
	if _, _, err := ops.Nodes().List(nil); err != nil {
		t.Fatalf("ops lists nodes: %v", err)
	}
	// A client token reads itself and the policies it holds, nothing else.
	if got, _, err := ops.ACLTokens().Self(nil); err != nil || got.AccessorID != tok.AccessorID {
		t.Fatalf("ops self: %+v %v", got, err)
	}
	if ps, _, err := ops.ACLPolicies().List(nil); err != nil || len(ps) != 1 || ps[0].Name != "nodes" {
		t.Fatalf("ops lists policies: %+v %v", ps, err)
	}
	if _, _, err := ops.ACLTokens().List(nil); err == nil {
		t.Fatal("a client token lists tokens")
	}

	// Update: a management token now.
	tok.Type, tok.Policies = "management", nil
	if _, _, err := root.ACLTokens().Update(tok, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ops.ACLTokens().List(nil); err != nil {
		t.Fatalf("updated to management, lists tokens: %v", err)
	}
	list, _, err := root.ACLTokens().List(nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("token list: %+v %v", list, err)
	}

	// Deleted, it is refused.
	if _, err := root.ACLTokens().Delete(tok.AccessorID, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ops.Nodes().List(nil); err == nil || !strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("deleted token: %v", err)
	}

	// A token with a TTL below the minimum is refused; one within it says
	// when it expires.
	if _, _, err := root.ACLTokens().Create(&api.ACLToken{Type: "client", Policies: []string{"nodes"}, ExpirationTTL: time.Second}, nil); err == nil {
		t.Fatal("a TTL under token_min_expiration_ttl accepted")
	}
	exp, _, err := root.ACLTokens().Create(&api.ACLToken{Type: "client", Policies: []string{"nodes"}, ExpirationTTL: time.Hour}, nil)
	if err != nil || exp.ExpirationTime == nil || exp.ExpirationTime.Sub(exp.CreateTime) != time.Hour {
		t.Fatalf("token with a TTL: %+v %v", exp, err)
	}
}

// TestACL_VariablePaths: a token's variables rules apply by path, as
// Nomad's: it lists, reads, writes and destroys where its capabilities
// say, and a check-and-set it loses shows it the items only if it may
// read them.
func TestACL_VariablePaths(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 0)
	root := withToken(t, ts.URL, rootSecret)
	for _, path := range []string{"app/a", "app/b", "secret/x"} {
		if _, _, err := root.Variables().Create(&api.Variable{Path: path, Items: api.VariableItems{"k": path}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	reader := withToken(t, ts.URL, makeToken(t, root, "app-reader", `namespace "default" {
  variables {
    path "app/*" { capabilities = ["read", "list"] }
  }
}`))
	if list, _, err := reader.Variables().List(nil); err != nil || len(list) != 2 || list[1].Path != "app/b" {
		t.Fatalf("reader lists = %+v, %v", list, err)
	}
	// Both searches find the paths it may list, and not the others.
	if res, _, err := reader.Search().PrefixSearch("", "vars", nil); err != nil || !slices.Equal(res.Matches["vars"], []string{"app/a", "app/b"}) {
		t.Fatalf("reader's prefix search of vars = %+v, %v", res, err)
	}
	fuzzy, _, err := reader.Search().FuzzySearch("ap", "vars", nil)
	if err != nil || len(fuzzy.Matches["vars"]) != 2 || fuzzy.Matches["vars"][0].ID != "app/a" ||
		!slices.Equal(fuzzy.Matches["vars"][0].Scope, []string{"default", "app/a"}) {
		t.Fatalf("reader's fuzzy search of vars = %+v, %v", fuzzy, err)
	}
	if res, _, err := root.Search().FuzzySearch("t/x", "vars", nil); err != nil || len(res.Matches["vars"]) != 1 || res.Matches["vars"][0].ID != "secret/x" {
		t.Fatalf("management's fuzzy search of vars = %+v, %v", res, err)
	}
	if v, _, err := reader.Variables().Read("app/a", nil); err != nil || v.Items["k"] != "app/a" {
		t.Fatalf("reader reads app/a: %+v, %v", v, err)
	}
	if _, _, err := reader.Variables().Read("secret/x", nil); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("reader reads secret/x: %v", err)
	}
	if _, _, err := reader.Variables().Update(&api.Variable{Path: "app/a", Items: api.VariableItems{"k": "w"}}, nil); err == nil ||
		!strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("reader writes: %v", err)
	}

	writer := withToken(t, ts.URL, makeToken(t, root, "app-writer", `namespace "default" {
  variables {
    path "app/*" { capabilities = ["write", "destroy"] }
    path "app/b" { capabilities = ["deny"] }
  }
}`))
	_, _, err = writer.Variables().CheckedCreate(&api.Variable{Path: "app/a", Items: api.VariableItems{"k": "w"}}, nil)
	var conflict api.ErrCASConflict
	if !errors.As(err, &conflict) || conflict.Conflict.ModifyIndex == 0 || len(conflict.Conflict.Items) != 0 {
		t.Fatalf("writer loses a check-and-set: err = %v (conflict %+v), want the variable without its items", err, conflict.Conflict)
	}
	if _, err := writer.Variables().Delete("app/b", nil); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("writer deletes a denied path: %v", err)
	}
	if _, err := writer.Variables().Delete("app/a", nil); err != nil {
		t.Fatalf("writer deletes app/a: %v", err)
	}
	if list, _, err := writer.Variables().List(nil); err != nil || len(list) != 0 {
		t.Fatalf("writer, without list, lists %+v, %v", list, err)
	}
}

// TestACL_VariableLockIDOnlyToItsHolder: a lock's ID is what lets a write
// change a locked variable, so no answer gives it to another token that
// may read, list or write the variable (not a read, a list, nor the 409 of
// a write or an acquisition that lost), as Nomad's; the holder, which got
// it from its acquisition, and a management token see it.
func TestACL_VariableLockIDOnlyToItsHolder(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 0)
	root := withToken(t, ts.URL, rootSecret)
	rules := `namespace "default" {
  variables {
    path "app/*" { capabilities = ["read", "list", "write", "destroy"] }
  }
}`
	holder := withToken(t, ts.URL, makeToken(t, root, "holder", rules))
	otherSecret := makeToken(t, root, "other", rules)
	writerSecret := makeToken(t, root, "writer", `namespace "default" {
  variables {
    path "app/*" { capabilities = ["write"] }
  }
}`)
	held, _, err := holder.Variables().AcquireLock(&api.Variable{Path: "app/leader", Items: api.VariableItems{"k": "v"}}, nil)
	if err != nil || held.LockID() == "" {
		t.Fatalf("the holder acquires: %+v, %v", held, err)
	}
	id := held.LockID()
	for _, c := range []struct {
		name, token, method, url, body string
		code                           int
	}{
		{"read", otherSecret, "GET", "/v1/var/app/leader", "", http.StatusOK},
		{"list", otherSecret, "GET", "/v1/vars?prefix=app/", "", http.StatusOK},
		{"write", otherSecret, "PUT", "/v1/var/app/leader", `{"Items":{"k":"mine"}}`, http.StatusConflict},
		{"write of a writer", writerSecret, "PUT", "/v1/var/app/leader", `{"Items":{"k":"mine"}}`, http.StatusConflict},
		{"check-and-set", otherSecret, "PUT", "/v1/var/app/leader?cas=1", `{"Items":{"k":"mine"}}`, http.StatusConflict},
		{"delete", otherSecret, "DELETE", "/v1/var/app/leader", "", http.StatusConflict},
		{"acquisition", otherSecret, "PUT", "/v1/var/app/leader?lock-acquire", `{}`, http.StatusConflict},
		{"renewal", otherSecret, "PUT", "/v1/var/app/leader?lock-renew", `{}`, http.StatusConflict},
		{"release", otherSecret, "PUT", "/v1/var/app/leader?lock-release", `{"Lock":{"ID":"not-it"}}`, http.StatusConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := doAs(t, c.token, c.method, ts.URL+c.url, c.body)
			if resp.StatusCode != c.code || strings.Contains(string(body), id) {
				t.Fatalf("%s %s = %d %s, want a %d without the lock's ID %s", c.method, c.url, resp.StatusCode, body, c.code, id)
			}
		})
	}
	if v, _, err := root.Variables().Read("app/leader", nil); err != nil || v.LockID() != id {
		t.Fatalf("management reads %+v, %v: want the lock", v, err)
	}
	mine, _, err := holder.Variables().Update(&api.Variable{Path: "app/leader", Items: api.VariableItems{"k": "w"},
		Lock: &api.VariableLock{ID: id}}, nil)
	if err != nil || mine.LockID() != id {
		t.Fatalf("the holder's write = %+v, %v", mine, err)
	}
	if _, _, err := holder.Variables().RenewLock(&api.Variable{Path: "app/leader", Lock: &api.VariableLock{ID: id}}, nil); err != nil {
		t.Fatalf("the holder renews: %v", err)
	}
}
