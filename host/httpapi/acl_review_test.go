package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// streamEvents opens an event stream with token and sends each event's
// namespace and key on the returned channel, or "error: ..." for an
// error line; the channel closes when the stream ends.
func streamEvents(t *testing.T, ctx context.Context, token, url string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("X-Nomad-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("stream %s: %d", url, resp.StatusCode)
	}
	out := make(chan string, 256)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var line struct {
				Error  string
				Events []struct{ Namespace, Key string }
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line.Error != "" {
				out <- "error: " + line.Error
			}
			for _, e := range line.Events {
				out <- e.Namespace + "/" + e.Key
			}
		}
	}()
	return out
}

func jobIn(ns, id string) *sdk.Job {
	j := servertest.Job(id, sdk.JobTypeService, 1, 100, 64)
	j.Namespace = ns
	return j
}

// A token that may read jobs in one namespace, streaming the events of
// every namespace (?namespace=*), is sent only that namespace's: it was
// sent every namespace's, as a policy in any namespace let it ask for "*".
func TestACL_EventStreamOfEveryNamespaceIsFiltered(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 1)
	root := withToken(t, ts.URL, rootSecret)
	dev := makeToken(t, root, "dev", `namespace "dev" { policy = "read" }`)
	servertest.Namespaces(t, s, "dev")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events := streamEvents(t, ctx, dev, ts.URL+"/v1/event/stream?topic=Job&namespace=*")
	mustRegister(t, s, jobIn("default", "secret-web"))
	mustRegister(t, s, jobIn("dev", "dev-web"))
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev != "dev/dev-web" {
				t.Fatalf("a dev token is sent %q", ev)
			}
			return
		case <-ctx.Done():
			t.Fatal("no event of namespace dev")
		}
	}
}

// A stream whose token's policy changes so that it may no longer read
// what it streams ends; it went on sending what the token may no longer
// read.
func TestACL_EventStreamEndsWhenThePolicyNoLongerAllows(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 1)
	root := withToken(t, ts.URL, rootSecret)
	reader := makeToken(t, root, "reader", `namespace "default" { policy = "read" }`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events := streamEvents(t, ctx, reader, ts.URL+"/v1/event/stream?topic=Job")
	mustRegister(t, s, jobIn("default", "first"))
	if ev := <-events; ev != "default/first" {
		t.Fatalf("first event %q", ev)
	}
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "reader", Rules: `namespace "other" { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, jobIn("default", "second"))
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev == "default/second" {
				t.Fatal("the stream sends what the token's policy no longer allows")
			}
		case <-ctx.Done():
			t.Fatal("the stream did not end")
		}
	}
}

// ?namespace=* names every namespace only to the lists, which filter what
// each namespace shows: a route of one object checks the token in the
// namespace named "*" itself (a job an older version let be registered
// there). Any capability in any namespace let a token read, stop or
// dispatch such a job, as "*" passed the check when any namespace did.
func TestACL_AllNamespacesOnlyForLists(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 1)
	root := withToken(t, ts.URL, rootSecret)
	dev := makeToken(t, root, "dev", `namespace "dev" { policy = "write" }`)
	everywhere := makeToken(t, root, "everywhere", `namespace "*" { policy = "write" }`)
	old := jobIn("*", "old")
	if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: old}); err != nil {
		t.Fatal(err)
	}
	if s.Store().Snapshot().Job("*", "old") == nil {
		t.Fatal("no job in namespace *")
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/job/old?namespace=*", ""},
		{"GET", "/v1/job/old/versions?namespace=*", ""},
		{"GET", "/v1/job/old/scale?namespace=*", ""},
		{"PUT", "/v1/job/old/evaluate?namespace=*", ""},
		{"DELETE", "/v1/job/old?namespace=*", ""},
	} {
		if resp, body := doAs(t, dev, c.method, ts.URL+c.path, c.body); resp.StatusCode != http.StatusForbidden {
			t.Errorf("dev token, %s %s: %d %s, want 403", c.method, c.path, resp.StatusCode, body)
		}
		if resp, body := doAs(t, everywhere, c.method, ts.URL+c.path, c.body); resp.StatusCode == http.StatusForbidden {
			t.Errorf("token of namespace *, %s %s: 403 %s", c.method, c.path, body)
		}
	}
	// The lists of every namespace are still open to the dev token, and
	// filtered.
	for _, path := range []string{"/v1/jobs?namespace=*", "/v1/allocations?namespace=*", "/v1/evaluations?namespace=*",
		"/v1/evaluations/count?namespace=*", "/v1/deployments?namespace=*", "/v1/scaling/policies?namespace=*"} {
		if resp, body := doAs(t, dev, "GET", ts.URL+path, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("dev token, GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
}

// A parse is no list: ?namespace=* names no namespace it could filter, so
// it needs parse-job in the namespace named "*", as any route of one
// object. Anyone, with or without a token, could parse with it.
func TestACL_ParseOfEveryNamespaceNeedsTheCapability(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 1)
	root := withToken(t, ts.URL, rootSecret)
	dev := makeToken(t, root, "dev", `namespace "dev" { policy = "read" }`)
	body := `{"JobHCL": "job \"x\" {}"}`
	for _, token := range []string{"", dev} {
		if resp, out := doAs(t, token, "PUT", ts.URL+"/v1/jobs/parse?namespace=*", body); resp.StatusCode != http.StatusForbidden {
			t.Errorf("token %q, PUT /v1/jobs/parse?namespace=*: %d %s, want 403", token, resp.StatusCode, out)
		}
	}
	if resp, out := doAs(t, dev, "PUT", ts.URL+"/v1/jobs/parse?namespace=dev", body); resp.StatusCode == http.StatusForbidden {
		t.Errorf("dev token, PUT /v1/jobs/parse?namespace=dev: 403 %s", out)
	}
}
