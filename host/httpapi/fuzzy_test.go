package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api/contexts"
	"github.com/rs/zerolog"
)

// newSearchAPI starts a dev server with search configured by modify, two
// ready nodes and a node named gpu-box-1, and its API.
func newSearchAPI(t *testing.T, modify func(*server.SearchConfig)) (*httptest.Server, *server.Server) {
	t.Helper()
	s := servertest.New(t, nil, func(c *server.Config) {
		if modify != nil {
			modify(&c.Search)
		}
	})
	gpu := servertest.Node(2, 4000, 8192)
	gpu.ID, gpu.Name = "0b5e7c1d-0000-4000-8000-000000000002", "gpu-box-1"
	for _, n := range []*sdk.Node{servertest.Node(0, 4000, 8192), servertest.Node(1, 4000, 8192), gpu} {
		if _, _, err := s.RegisterNode(n); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)), nil).Handler())
	t.Cleanup(ts.Close)
	return ts, s
}

// fuzzyAs makes a fuzzy search with token (none when empty) and decodes a
// 200's answer.
func fuzzyAs(t *testing.T, token, url, body string) (int, *httpapi.FuzzySearchResponse, string) {
	t.Helper()
	resp, b := doAs(t, token, "PUT", url, body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, string(b)
	}
	var out httpapi.FuzzySearchResponse
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return resp.StatusCode, &out, string(b)
}

type fm = httpapi.FuzzyMatch

// Nomad's fuzzy search, context by context: jobs by their name and their
// groups', tasks', services' names and their tasks' image, command or
// class, with Nomad's scopes; allocations, nodes, node pools and
// namespaces by name; evaluations by ID prefix; each context sorted as
// Nomad sorts it (the match nearest the start, then the shortest, so an
// exact match first).
func TestFuzzySearch_Contexts(t *testing.T) {
	ts, s := newSearchAPI(t, nil)
	py := servertest.Job("example-python", sdk.JobTypeService, 1, 100, 64)
	py.Name = "example-python"
	g := py.TaskGroups[0]
	g.Name, g.Services = "my-spy-app", []sdk.Opaque{{"Name": "super-spy-service"}}
	g.Tasks[0].Name, g.Tasks[0].Config, g.Tasks[0].Services = "my-python-task", sdk.Opaque{"image": "python:3"},
		[]sdk.Opaque{{"Name": "python-logger"}}
	evalID := mustRegister(t, s, py)
	servertest.WaitForEval(t, s, evalID)
	mustRegister(t, s, servertest.Job("py", sdk.JobTypeBatch, 0, 100, 64)) // no Name: its ID is its name
	tools := servertest.Job("tools", sdk.JobTypeBatch, 0, 100, 64)
	tools.TaskGroups[0].Tasks = []*sdk.Task{
		{Name: "runner", Driver: "raw_exec", Config: sdk.Opaque{"command": "/usr/bin/pyrun"}},
		{Name: "main", Driver: "java", Config: sdk.Opaque{"class": "org.example.PyMain"}},
	}
	mustRegister(t, s, tools)
	servertest.Namespaces(t, s, "prod")
	mustRegister(t, s, jobIn("prod", "prod-python"))
	allocs := s.Store().Snapshot().AllocsByJob("default", "example-python")
	if len(allocs) != 1 {
		t.Fatalf("example-python has %d allocations", len(allocs))
	}
	alloc := allocs[0]

	pyJobs := map[string][]fm{
		"jobs":     {{ID: "py", Scope: []string{"default", "py"}}, {ID: "example-python", Scope: []string{"default", "example-python"}}},
		"groups":   {{ID: "my-spy-app", Scope: []string{"default", "example-python"}}},
		"tasks":    {{ID: "my-python-task", Scope: []string{"default", "example-python", "my-spy-app"}}},
		"services": {{ID: "python-logger", Scope: []string{"default", "example-python", "my-spy-app", "my-python-task"}}, {ID: "super-spy-service", Scope: []string{"default", "example-python", "my-spy-app"}}},
		"images":   {{ID: "python:3", Scope: []string{"default", "example-python", "my-spy-app", "my-python-task"}}},
		"commands": {{ID: "/usr/bin/pyrun", Scope: []string{"default", "tools", "g", "runner"}}},
		"classes":  {{ID: "org.example.PyMain", Scope: []string{"default", "tools", "g", "main"}}},
	}
	pythonEverywhere := map[string][]fm{
		"jobs":     {{ID: "prod-python", Scope: []string{"prod", "prod-python"}}, {ID: "example-python", Scope: []string{"default", "example-python"}}},
		"tasks":    pyJobs["tasks"],
		"services": pyJobs["services"][:1],
		"images":   pyJobs["images"],
	}
	jobsOnly := map[string]bool{"jobs": false}
	none := map[string][]fm{}
	// Context all: every context Nomad knows; those matched by ID prefix
	// with a list even when empty, as Nomad's.
	allTruncations := map[string]bool{}
	for _, c := range []string{"allocs", "jobs", "nodes", "node_pools", "evals", "deployment", "plugins", "volumes", "scaling_policy", "vars", "namespaces"} {
		allTruncations[c] = false
	}
	spyAll := map[string][]fm{
		"groups":   pyJobs["groups"],
		"services": pyJobs["services"][1:],
		"allocs":   {{ID: alloc.Name, Scope: []string{"default", alloc.ID}}},
		"evals":    {}, "deployment": {}, "scaling_policy": {}, "volumes": {},
	}

	cases := []struct {
		name, query, body string
		matches           map[string][]fm
		truncations       map[string]bool
	}{
		{"a job's name and parts", "", `{"Text": "py", "Context": "jobs"}`, pyJobs, jobsOnly},
		{"case-insensitive", "", `{"Text": "PY", "Context": "jobs"}`, pyJobs, jobsOnly},
		{"every namespace", "?namespace=*", `{"Text": "python", "Context": "jobs"}`, pythonEverywhere, jobsOnly},
		{"the namespace in the body, as the web UI sends it", "", `{"Text": "python", "Context": "jobs", "Namespace": "*"}`, pythonEverywhere, jobsOnly},
		{"the query's namespace before the body's", "?namespace=prod", `{"Text": "python", "Context": "jobs", "Namespace": "*"}`,
			map[string][]fm{"jobs": pythonEverywhere["jobs"][:1]}, jobsOnly},
		{"all contexts", "", `{"Text": "spy", "Context": "all"}`, spyAll, allTruncations},
		{"nodes by name", "", `{"Text": "GPU-box", "Context": "nodes"}`,
			map[string][]fm{"nodes": {{ID: "gpu-box-1", Scope: []string{"0b5e7c1d-0000-4000-8000-000000000002"}}}}, map[string]bool{"nodes": false}},
		{"namespaces, whatever the request's", "", `{"Text": "rod", "Context": "namespaces"}`,
			map[string][]fm{"namespaces": {{ID: "prod"}}}, map[string]bool{"namespaces": false}},
		{"node pools", "", `{"Text": "defa", "Context": "node_pools"}`,
			map[string][]fm{"node_pools": {{ID: "default", Scope: []string{"default"}}}}, map[string]bool{"node_pools": false}},
		{"an evaluation by its ID's prefix", "", `{"Text": "` + evalID[:8] + `", "Context": "evals"}`,
			map[string][]fm{"evals": {{ID: evalID}}}, map[string]bool{"evals": false}},
		{"an evaluation by a name", "", `{"Text": "example", "Context": "evals"}`, map[string][]fm{"evals": {}}, map[string]bool{"evals": false}},
		{"plugins: none here", "", `{"Text": "csi", "Context": "plugins"}`, none, map[string]bool{"plugins": false}},
		{"variables: none here", "", `{"Text": "secret", "Context": "vars"}`, none, map[string]bool{"vars": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, got, body := fuzzyAs(t, "", ts.URL+"/v1/search/fuzzy"+tc.query, tc.body)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			if !reflect.DeepEqual(got.Matches, tc.matches) || !reflect.DeepEqual(got.Truncations, tc.truncations) {
				t.Fatalf("got  %s\nwant %+v %+v", body, tc.matches, tc.truncations)
			}
		})
	}

	// Nomad's client reads the answer.
	res, _, err := nomadClient(t, ts.URL).Search().FuzzySearch("spy", contexts.All, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Matches[contexts.Allocs]; len(got) != 1 || got[0].ID != alloc.Name || got[0].Scope[1] != alloc.ID {
		t.Fatalf("allocations through Nomad's client: %+v", res.Matches)
	}
	if got := res.Matches[contexts.Groups]; len(got) != 1 || got[0].ID != "my-spy-app" {
		t.Fatalf("groups through Nomad's client: %+v", res.Matches)
	}
}

// What Nomad refuses, it refuses: text under min_term_length, a context it
// does not know (a job's parts are answered, not asked for), a body that
// is not JSON; a GET is not the endpoint's.
func TestFuzzySearch_Refusals(t *testing.T) {
	ts, _ := newSearchAPI(t, nil)
	for _, tc := range []struct {
		name, method, body string
		code               int
		says               string
	}{
		{"text too short", "PUT", `{"Text": "w", "Context": "all"}`, 400, "fuzzy search query must be at least 2 characters, got 1"},
		{"no context", "PUT", `{"Text": "web"}`, 400, "context must be one of"},
		{"a job's part as the context", "POST", `{"Text": "web", "Context": "groups"}`, 400, `got \"groups\"`},
		{"not JSON", "PUT", `{"Text": `, 400, "fuzzy search request"},
		{"GET", "GET", "", 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, ts.URL+"/v1/search/fuzzy", tc.body)
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.says) {
				t.Fatalf("%d %s, want %d saying %q", resp.StatusCode, body, tc.code, tc.says)
			}
		})
	}
}

// The search block's limits: limit_query objects examined per context
// (the contexts they feed truncated when more are left), limit_results
// matches answered (the best of them); fuzzy_enabled = false refuses
// every search.
func TestFuzzySearch_Limits(t *testing.T) {
	register := func(s *server.Server, ids ...string) {
		for _, id := range ids {
			mustRegister(t, s, servertest.Job(id, sdk.JobTypeBatch, 0, 100, 64))
		}
	}
	allJobContexts := func(v bool) map[string]bool {
		m := map[string]bool{}
		for _, c := range []string{"jobs", "groups", "services", "tasks", "images", "commands", "classes"} {
			m[c] = v
		}
		return m
	}
	web := func(ids ...string) map[string][]fm {
		var ms []fm
		for _, id := range ids {
			ms = append(ms, fm{ID: id, Scope: []string{"default", id}})
		}
		return map[string][]fm{"jobs": ms}
	}
	cases := []struct {
		name        string
		cfg         func(*server.SearchConfig)
		jobs        []string
		matches     map[string][]fm
		truncations map[string]bool
	}{
		{"limit_query reached, more left", func(c *server.SearchConfig) { c.LimitQuery = 2 }, []string{"web-1", "web-2", "web-3"},
			web("web-1", "web-2"), allJobContexts(true)},
		{"limit_query reached, none left", func(c *server.SearchConfig) { c.LimitQuery = 3 }, []string{"web-1", "web-2", "web-3"},
			web("web-1", "web-2", "web-3"), map[string]bool{"jobs": false}},
		// aweb comes first, by ID; the exact match is kept.
		{"limit_results keeps the best", func(c *server.SearchConfig) { c.LimitResults = 1 }, []string{"aweb", "web"},
			web("web"), map[string]bool{"jobs": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, s := newSearchAPI(t, tc.cfg)
			register(s, tc.jobs...)
			code, got, body := fuzzyAs(t, "", ts.URL+"/v1/search/fuzzy", `{"Text": "web", "Context": "jobs"}`)
			if code != http.StatusOK || !reflect.DeepEqual(got.Matches, tc.matches) || !reflect.DeepEqual(got.Truncations, tc.truncations) {
				t.Fatalf("%d %s\nwant %+v %+v", code, body, tc.matches, tc.truncations)
			}
		})
	}
	t.Run("min_term_length", func(t *testing.T) {
		ts, _ := newSearchAPI(t, func(c *server.SearchConfig) { c.MinTermLength = 4 })
		if code, _, body := fuzzyAs(t, "", ts.URL+"/v1/search/fuzzy", `{"Text": "web", "Context": "all"}`); code != 400 ||
			!strings.Contains(body, "at least 4 characters, got 3") {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("fuzzy_enabled = false", func(t *testing.T) {
		ts, _ := newSearchAPI(t, func(c *server.SearchConfig) { c.FuzzyEnabled = false })
		if code, _, body := fuzzyAs(t, "", ts.URL+"/v1/search/fuzzy", `{"Text": "web", "Context": "all"}`); code != 404 ||
			!strings.Contains(body, "fuzzy search is not enabled") {
			t.Fatalf("%d %s", code, body)
		}
	})
}

// A token finds what it may read: jobs and allocations where it may
// read-job, nodes with node read, namespaces and node pools it holds
// anything in. With ?namespace=* each object is checked; in one
// namespace, a context it may not search there is left out of "all" and
// refused when asked for, as Nomad's.
func TestACL_FuzzySearchFindsWhatTheTokenMayRead(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 1)
	dev := makeToken(t, withToken(t, ts.URL, rootSecret), "dev-reader", `namespace "dev" { policy = "read" }`)
	mustRegister(t, s, jobIn("default", "web-default"))
	servertest.Namespaces(t, s, "dev")
	mustRegister(t, s, jobIn("dev", "web-dev"))
	url := ts.URL + "/v1/search/fuzzy"
	webDev := fm{ID: "web-dev", Scope: []string{"dev", "web-dev"}}
	webDefault := fm{ID: "web-default", Scope: []string{"default", "web-default"}}

	for _, tc := range []struct {
		name, token, query, body string
		code                     int
		matches                  map[string][]fm // of the contexts named in it
		absent                   []string        // contexts neither in Matches nor in Truncations
	}{
		{"every namespace: only dev's job", dev, "?namespace=*", `{"Text": "web", "Context": "all"}`, 200,
			map[string][]fm{"jobs": {webDev}}, nil},
		{"management, every namespace", rootSecret, "?namespace=*", `{"Text": "web", "Context": "all"}`, 200,
			map[string][]fm{"jobs": {webDev, webDefault}}, nil},
		{"dev's own namespace", dev, "?namespace=dev", `{"Text": "web", "Context": "jobs"}`, 200,
			map[string][]fm{"jobs": {webDev}}, nil},
		{"another namespace's jobs", dev, "?namespace=default", `{"Text": "web", "Context": "jobs"}`, 403, nil, nil},
		{"another namespace, all: what it may not search is left out", dev, "?namespace=default", `{"Text": "web", "Context": "all"}`, 200,
			map[string][]fm{}, []string{"jobs", "allocs", "evals", "deployment", "nodes", "node_pools", "namespaces"}},
		{"nodes without node read", dev, "?namespace=*", `{"Text": "node", "Context": "nodes"}`, 200,
			map[string][]fm{"nodes": nil}, nil},
		{"nodes without node read, in one namespace", dev, "?namespace=dev", `{"Text": "node", "Context": "nodes"}`, 403, nil, nil},
		{"management finds nodes", rootSecret, "?namespace=*", `{"Text": "node", "Context": "nodes"}`, 200,
			map[string][]fm{"nodes": {{ID: "node-0000", Scope: []string{"node-0000"}}}}, nil},
		{"namespaces it holds something in", dev, "?namespace=*", `{"Text": "de", "Context": "namespaces"}`, 200,
			map[string][]fm{"namespaces": {{ID: "dev"}}}, nil},
		{"node pools without a node pool rule", dev, "?namespace=dev", `{"Text": "default", "Context": "node_pools"}`, 403, nil, nil},
		{"no token: nothing", "", "?namespace=*", `{"Text": "web", "Context": "all"}`, 200,
			map[string][]fm{"jobs": nil, "nodes": nil}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got, body := fuzzyAs(t, tc.token, url+tc.query, tc.body)
			if code != tc.code {
				t.Fatalf("%d %s, want %d", code, body, tc.code)
			}
			if code != http.StatusOK {
				return
			}
			for c, want := range tc.matches {
				if !reflect.DeepEqual(got.Matches[c], want) {
					t.Errorf("%s: %+v, want %+v (%s)", c, got.Matches[c], want, body)
				}
			}
			for _, c := range tc.absent {
				_, matched := got.Matches[c]
				_, truncated := got.Truncations[c]
				if matched || truncated {
					t.Errorf("%s answered: %s", c, body)
				}
			}
		})
	}
}
