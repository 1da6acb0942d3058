package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// Nomad's own client follows the event stream: a job registered through
// the API shows as its JobRegistered event, the eval it made and the
// allocations its plan placed (PlanResult), each payload decoding into
// Nomad's types; a stream started later from an index replays from there.
func TestNomadClient_EventStream(t *testing.T) {
	ts, _ := newAPI(t, 3)
	c := nomadClient(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := c.EventStream().Stream(ctx, map[api.Topic][]string{
		api.TopicJob: {"web"}, api.TopicAllocation: {"web"}, api.TopicEvaluation: {"*"}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: webHCL, Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}

	var registered uint64
	placed, complete := 0, false
	for placed < 2 || !complete {
		var evs *api.Events
		select {
		case evs = <-stream:
		case <-ctx.Done():
			t.Fatalf("stream: registered at %d, %d placed, eval complete %v", registered, placed, complete)
		}
		if evs.Err != nil {
			t.Fatal(evs.Err)
		}
		for _, e := range evs.Events {
			switch {
			case e.Topic == api.TopicJob:
				// JobRegistered, then PlanResult as the plan sets its status.
				j, err := e.Job()
				if err != nil || *j.ID != "web" || e.Index != evs.Index || (e.Type != "JobRegistered" && e.Type != "PlanResult") {
					t.Fatalf("job event %+v: %v", e, err)
				}
				if e.Type == "JobRegistered" {
					registered = e.Index
				}
			case e.Topic == api.TopicAllocation:
				a, err := e.Allocation()
				// Nomad's legacy Resources, as GET /v1/allocation/:id has them.
				if err != nil || a.JobID != "web" || a.NodeID == "" || e.Type != "PlanResult" || a.Job != nil ||
					a.Resources == nil || a.Resources.CPU == nil || *a.Resources.CPU == 0 {
					t.Fatalf("allocation event %+v: %+v %v", e, a, err)
				}
				placed++
			case e.Topic == api.TopicEvaluation:
				ev, err := e.Evaluation()
				if err != nil || ev.JobID != "web" {
					t.Fatalf("eval event %+v: %v", e, err)
				}
				complete = complete || (ev.ID == reg.EvalID && ev.Status == "complete")
			default:
				t.Fatalf("event of a topic not asked for: %+v", e)
			}
		}
	}

	// From the registration's index, on another stream: the same job event first.
	again, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicJob: {"*"}}, registered, nil)
	if err != nil {
		t.Fatal(err)
	}
	if evs := <-again; evs.Err != nil || evs.Index != registered || evs.Events[0].Key != "web" {
		t.Fatalf("replay from %d: %+v", registered, evs)
	}

	// A stop and a purge are both JobDeregistered; only the purge's job
	// is deleted (DeregisteredJob reads the payload's "Deleted").
	if _, _, err := c.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Deregister("web", true, nil); err != nil {
		t.Fatal(err)
	}
	var deleted []bool
	for len(deleted) < 2 {
		var evs *api.Events
		select {
		case evs = <-again:
		case <-ctx.Done():
			t.Fatalf("deregistrations seen: %v", deleted)
		}
		if evs.Err != nil {
			t.Fatal(evs.Err)
		}
		for _, e := range evs.Events {
			if e.Type == "JobDeregistered" {
				j, del, err := e.DeregisteredJob()
				if err != nil || *j.ID != "web" {
					t.Fatalf("deregistration %+v: %v", e, err)
				}
				deleted = append(deleted, del)
			}
		}
	}
	if deleted[0] || !deleted[1] {
		t.Fatalf("deleted: stop %v, purge %v; want false, true", deleted[0], deleted[1])
	}
}

// A node event's payload is the node as GET /v1/node/:id answers it:
// with Nomad's legacy Resources and Reserved, which Nomad's nodes report
// and its events carry, and without the node's secret.
func TestNomadClient_NodeEventsHaveLegacyResources(t *testing.T) {
	ts, _ := newAPI(t, 1)
	c := nomadClient(t, ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicNode: nil}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var evs *api.Events
	select {
	case evs = <-stream: // the registration, from the buffer
	case <-ctx.Done():
		t.Fatal("no node event")
	}
	if evs.Err != nil {
		t.Fatal(evs.Err)
	}
	n, err := evs.Events[0].Node()
	if err != nil || evs.Events[0].Type != "NodeRegistration" || n.Resources == nil || n.Reserved == nil ||
		n.Resources.CPU == nil || *n.Resources.CPU != 4000 {
		t.Fatalf("node event %+v: node %+v (Resources %+v), %v", evs.Events[0], n, n.Resources, err)
	}
	if _, ok := evs.Events[0].Payload["Node"].(map[string]any)["SecretID"]; ok {
		t.Fatalf("the node event gives the node's secret away: %+v", evs.Events[0].Payload)
	}
}

// As Nomad's, a stream starts with a heartbeat ({}), before any event,
// and then sends one every 30 s while idle.
func TestAPI_EventStreamStartsWithAHeartbeat(t *testing.T) {
	ts, _ := newAPI(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/event/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "{}\n" {
		t.Fatalf("first line %q, %v: want the heartbeat {}", line, err)
	}
	if httpapi.EventHeartbeat != 30*time.Second {
		t.Fatalf("heartbeat every %v, want Nomad's 30s", httpapi.EventHeartbeat)
	}
}

func TestAPI_EventStreamErrors(t *testing.T) {
	ts, _ := newAPI(t, 0)
	if resp, out := do(t, "GET", ts.URL+"/v1/event/stream?topic=Jobs:web", ""); resp.StatusCode != 400 || !strings.Contains(string(out), `unknown event topic`) {
		t.Fatalf("unknown topic: %d %s", resp.StatusCode, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/event/stream?topic=Service:web&topic=NodePool", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("Nomad's topics without objects here: %v %v, want an (empty) stream", resp, err)
	} else {
		resp.Body.Close()
	}
	twoKeys, stopTwoKeys := context.WithTimeout(context.Background(), 2*time.Second)
	defer stopTwoKeys()
	req, _ = http.NewRequestWithContext(twoKeys, "GET", ts.URL+"/v1/event/stream?topic=Job:web:v2", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("a topic with two keys: %v %v, want Nomad's 400", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp, out := do(t, "GET", ts.URL+"/v1/event/stream?index=soon", ""); resp.StatusCode != 400 {
		t.Fatalf("bad index: %d %s", resp.StatusCode, out)
	}
	off := servertest.New(t, nil, func(c *server.Config) { c.EventBufferSize = 0 })
	if off.Events() != nil {
		t.Fatal("event_buffer_size = 0 left the event stream on")
	}
}

// With ACLs on, a management token follows the ACL topics through Nomad's
// client: each write and deletion of a policy, role or token is an event
// whose payload is what the ACL endpoint answered for the object (its last
// state, for a deletion), a token's without its secret; a client token
// asking for an ACL topic is refused, as Nomad refuses any token but a
// management one.
func TestNomadClient_ACLEvents(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 0)
	root := withToken(t, ts.URL, rootSecret)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodeReader := makeToken(t, root, "node-reader", `node { policy = "read" }
namespace "default" { policy = "read" }`)
	for _, topic := range []api.Topic{"ACLToken", "ACLPolicy", "ACLRole", "ACLAuthMethod", "ACLBindingRule"} {
		_, err := withToken(t, ts.URL, nodeReader).EventStream().Stream(ctx, map[api.Topic][]string{topic: nil}, 0, nil)
		if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "Permission denied") {
			t.Fatalf("a client token streams %s: %v, want a 403 Permission denied", topic, err)
		}
	}

	from := s.Store().LatestIndex() + 1
	stream, err := root.EventStream().Stream(ctx, map[api.Topic][]string{"ACLToken": nil, "ACLPolicy": nil, "ACLRole": nil}, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	// answer is the endpoint's answer for an object, as JSON decodes it
	// into the client's payload maps.
	answer := func(path string) map[string]any {
		resp, body := doAs(t, rootSecret, "GET", ts.URL+path, "")
		var out map[string]any
		if err := json.Unmarshal(body, &out); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return out
	}
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "ops", Description: "ops", Rules: `node { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	policy := answer("/v1/acl/policy/ops")
	role, _, err := root.ACLRoles().Create(&api.ACLRole{Name: "deployers", Policies: []*api.ACLRolePolicyLink{{Name: "ops"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	roleAnswer := answer("/v1/acl/role/" + role.ID)
	tok, _, err := root.ACLTokens().Create(&api.ACLToken{Name: "ci", Type: "client", Policies: []string{"ops"},
		Roles: []*api.ACLTokenRoleLink{{ID: role.ID}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokenAnswer := answer("/v1/acl/token/" + tok.AccessorID)
	tokenAnswer["SecretID"] = "" // the one difference
	for _, del := range []func() error{
		func() error { _, err := root.ACLTokens().Delete(tok.AccessorID, nil); return err },
		func() error { _, err := root.ACLRoles().Delete(role.ID, nil); return err },
		func() error { _, err := root.ACLPolicies().Delete("ops", nil); return err },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	// The payload holds the object under its topic's name.
	wants := []struct {
		topic, typ, key string
		payload         map[string]any
	}{
		{"ACLPolicy", "ACLPolicyUpserted", "ops", policy},
		{"ACLRole", "ACLRoleUpserted", role.ID, roleAnswer},
		{"ACLToken", "ACLTokenUpserted", tok.AccessorID, tokenAnswer},
		{"ACLToken", "ACLTokenDeleted", tok.AccessorID, tokenAnswer},
		{"ACLRole", "ACLRoleDeleted", role.ID, roleAnswer},
		{"ACLPolicy", "ACLPolicyDeleted", "ops", policy},
	}

	for _, w := range wants {
		var evs *api.Events
		select {
		case evs = <-stream:
		case <-ctx.Done():
			t.Fatalf("no %s event", w.typ)
		}
		if evs.Err != nil || len(evs.Events) != 1 {
			t.Fatalf("waiting for %s: %+v", w.typ, evs)
		}
		e := evs.Events[0]
		raw, _ := json.Marshal(e)
		if strings.Contains(string(raw), tok.SecretID) || strings.Contains(string(raw), rootSecret) {
			t.Fatalf("the event gives a secret away: %s", raw)
		}
		name := string(e.Topic)
		if e.Topic != api.Topic(w.topic) || e.Type != w.typ || e.Key != w.key || !reflect.DeepEqual(e.Payload[name], w.payload) {
			t.Fatalf("event %s, want %s %s %q with the payload %s as the API answered it: %v", raw, w.topic, w.typ, w.key, name, w.payload)
		}
	}
}

// The auth method and binding rule topics carry what their endpoints
// answer, an auth method's event without its OIDC client secret; deleting
// a method is an event for it and for each of its rules.
func TestNomadClient_ACLAuthEvents(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 0)
	root := withToken(t, ts.URL, rootSecret)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := root.EventStream().Stream(ctx, map[api.Topic][]string{"ACLAuthMethod": nil, "ACLBindingRule": nil},
		s.Store().LatestIndex()+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-client-secret"
	method, _, err := root.ACLAuthMethods().Create(&api.ACLAuthMethod{Name: "okta", Type: "OIDC", TokenLocality: "local",
		MaxTokenTTL: time.Hour, Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://okta.example", OIDCClientID: "drover",
			OIDCClientSecret: secret, AllowedRedirectURIs: []string{"http://localhost:4649/oidc/callback"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rule, _, err := root.ACLBindingRules().Create(&api.ACLBindingRule{AuthMethod: "okta", BindType: "management"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.ACLAuthMethods().Delete("okta", nil); err != nil {
		t.Fatal(err)
	}
	// next is the stream's next event, whatever batch it came in (a
	// method's deletion comes with its rules').
	var pending []api.Event
	next := func(what string) api.Event {
		for len(pending) == 0 {
			select {
			case evs := <-stream:
				if evs.Err != nil {
					t.Fatalf("waiting for %s: %v", what, evs.Err)
				}
				pending = evs.Events
			case <-ctx.Done():
				t.Fatalf("no %s event", what)
			}
		}
		e := pending[0]
		pending = pending[1:]
		return e
	}
	for _, w := range []struct{ topic, typ, key string }{
		{"ACLAuthMethod", "ACLAuthMethodUpserted", "okta"},
		{"ACLBindingRule", "ACLBindingRuleUpserted", rule.ID},
		{"ACLAuthMethod", "ACLAuthMethodDeleted", "okta"},
		{"ACLBindingRule", "ACLBindingRuleDeleted", rule.ID},
	} {
		e := next(w.typ)
		raw, _ := json.Marshal(e)
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the event gives the client secret away: %s", raw)
		}
		if string(e.Topic) != w.topic || e.Type != w.typ || e.Key != w.key {
			t.Fatalf("event %s, want %s %s %q", raw, w.topic, w.typ, w.key)
		}
		switch w.topic {
		case "ACLAuthMethod":
			var got api.ACLAuthMethod
			if b, _ := json.Marshal(e.Payload["AuthMethod"]); json.Unmarshal(b, &got) != nil || got.Name != "okta" ||
				got.Config == nil || got.Config.OIDCClientID != "drover" || got.MaxTokenTTL != time.Hour || got.CreateIndex != method.CreateIndex {
				t.Fatalf("auth method payload = %s", raw)
			}
		case "ACLBindingRule":
			var got api.ACLBindingRule
			if b, _ := json.Marshal(e.Payload["ACLBindingRule"]); json.Unmarshal(b, &got) != nil || got.ID != rule.ID ||
				got.AuthMethod != "okta" || got.BindType != "management" || got.CreateIndex != rule.CreateIndex {
				t.Fatalf("binding rule payload = %s", raw)
			}
		}
	}
}
