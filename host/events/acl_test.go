package events_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// aclEvent is what an ACL event must be: last is the index of the write
// that left its object in the state the payload holds (for a deletion, the
// object's last write).
type aclEvent struct {
	topic, typ, key string
	filter          []string
	payload         string
	last            uint64
}

// Each ACL write, applied through the FSM as raft commits it, makes the
// events Nomad's makes: an upsert or a deletion of each object it wrote,
// keyed by accessor ID, name or ID, a deletion with the object's last
// state, and none for the bootstrap or a one-time token, as in Nomad. No
// secret is anywhere in an event.
func TestBroker_ACLEvents(t *testing.T) {
	store, err := state.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	f := fsm.New(store, nil, zerolog.Nop())
	b := events.New(100)
	f.SetPublisher(b)
	all := b.Subscribe(events.Request{Topics: map[string][]string{events.TopicAll: nil}, Namespace: "*"})
	secrets := []string{"boot-secret", "ci-secret", "exp1-secret", "exp2-secret", "ott-secret"}
	token := func(name string, expires int64, roles ...string) *state.ACLToken {
		return &state.ACLToken{AccessorID: name + "-accessor", SecretID: name + "-secret", Name: name, Type: state.ACLClientToken,
			Policies: []string{"ops"}, Roles: roles, CreateTime: 1, ExpirationTime: expires}
	}
	tokenUpserted := func(name string, last uint64) aclEvent {
		return aclEvent{events.TopicACLToken, events.TypeACLTokenUpserted, name + "-accessor", nil, "ACLToken", last}
	}
	tokenDeleted := func(name string, last uint64) aclEvent {
		return aclEvent{events.TopicACLToken, events.TypeACLTokenDeleted, name + "-accessor", nil, "ACLToken", last}
	}
	steps := []struct {
		name string
		msg  msgp.Unmarshaler
		want []aclEvent
	}{
		{"bootstrap", &fsm.ACLTokenBootstrapRequest{Token: &state.ACLToken{AccessorID: "boot-accessor", SecretID: "boot-secret",
			Type: state.ACLManagementToken, Global: true, CreateTime: 1}}, nil},
		{"policy upsert", &fsm.ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{{Name: "ops", Rules: `node { policy = "read" }`}}},
			[]aclEvent{{events.TopicACLPolicy, events.TypeACLPolicyUpserted, "ops", nil, "ACLPolicy", 2}}},
		{"role upsert", &fsm.ACLRoleUpsertRequest{Roles: []*state.ACLRole{{ID: "r1", Name: "deployers", Policies: []string{"ops"}}}},
			[]aclEvent{{events.TopicACLRole, events.TypeACLRoleUpserted, "r1", []string{"deployers"}, "ACLRole", 3}}},
		{"token upsert", &fsm.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{token("ci", 0, "r1")}},
			[]aclEvent{tokenUpserted("ci", 4)}},
		{"expiring tokens", &fsm.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{token("exp1", 2), token("exp2", 2)}},
			[]aclEvent{tokenUpserted("exp1", 5), tokenUpserted("exp2", 5)}},
		// What the server's collection of expired tokens applies.
		{"expired tokens collected", &fsm.ACLTokenDeleteRequest{AccessorIDs: []string{"exp1-accessor", "exp2-accessor"}},
			[]aclEvent{tokenDeleted("exp1", 5), tokenDeleted("exp2", 5)}},
		{"one-time token", &fsm.OneTimeTokenUpsertRequest{Token: &state.OneTimeToken{OneTimeSecretID: "ott-secret",
			AccessorID: "ci-accessor", ExpiresAt: 10}}, nil},
		{"auth method upsert", &fsm.ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{{Name: "sso", Type: state.ACLAuthMethodTypeJWT,
			TokenLocality: "local", MaxTokenTTL: int64(time.Hour), Config: &state.ACLAuthMethodConfig{JWKSURL: "https://idp.example/jwks"}}}},
			[]aclEvent{{events.TopicACLAuthMethod, events.TypeACLAuthMethodUpserted, "sso", nil, "AuthMethod", 8}}},
		{"binding rule upsert", &fsm.ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{{ID: "b1", AuthMethod: "sso",
			BindType: "role", BindName: "deployers"}}},
			[]aclEvent{{events.TopicACLBindingRule, events.TypeACLBindingRuleUpserted, "b1", []string{"sso"}, "ACLBindingRule", 9}}},
		// Its rules go with the method: they are deleted too.
		{"auth method delete", &fsm.ACLAuthMethodDeleteRequest{Names: []string{"sso"}}, []aclEvent{
			{events.TopicACLAuthMethod, events.TypeACLAuthMethodDeleted, "sso", nil, "AuthMethod", 8},
			{events.TopicACLBindingRule, events.TypeACLBindingRuleDeleted, "b1", []string{"sso"}, "ACLBindingRule", 9}}},
		{"token delete", &fsm.ACLTokenDeleteRequest{AccessorIDs: []string{"ci-accessor"}}, []aclEvent{tokenDeleted("ci", 4)}},
		{"role delete", &fsm.ACLRoleDeleteRequest{IDs: []string{"r1"}},
			[]aclEvent{{events.TopicACLRole, events.TypeACLRoleDeleted, "r1", []string{"deployers"}, "ACLRole", 3}}},
		{"policy delete", &fsm.ACLPolicyDeleteRequest{Names: []string{"ops"}},
			[]aclEvent{{events.TopicACLPolicy, events.TypeACLPolicyDeleted, "ops", nil, "ACLPolicy", 2}}},
	}
	for i, st := range steps {
		index := uint64(i + 1)
		if err := f.ApplyDecoded(index, st.msg); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(st.want) == 0 {
			continue // the next batch read must be of a later step
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		batch, err := all.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if batch.Index != index || len(batch.Events) != len(st.want) {
			t.Fatalf("%s: batch at %d with %d events, want %d at %d: %+v", st.name, batch.Index, len(batch.Events), len(st.want), index, batch)
		}
		for j, ev := range batch.Events {
			checkACLEvent(t, st.name, ev, st.want[j], secrets)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if batch, err := all.Next(ctx); err == nil {
		t.Fatalf("an event no write made: %+v", batch)
	}
}

func checkACLEvent(t *testing.T, step string, ev events.Event, want aclEvent, secrets []string) {
	t.Helper()
	if ev.Topic != want.topic || ev.Type != want.typ || ev.Key != want.key || !slices.Equal(ev.FilterKeys, want.filter) || ev.Namespace != "" {
		t.Fatalf("%s: event %s %s %q (filter keys %q, namespace %q), want %s %s %q (filter keys %q)", step,
			ev.Topic, ev.Type, ev.Key, ev.FilterKeys, ev.Namespace, want.topic, want.typ, want.key, want.filter)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(raw), s) {
			t.Fatalf("%s: the event gives a secret away: %s", step, raw)
		}
	}
	var out struct {
		Payload map[string]struct{ ModifyIndex uint64 }
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if p, ok := out.Payload[want.payload]; len(out.Payload) != 1 || !ok || p.ModifyIndex != want.last {
		t.Fatalf("%s: payload %s, want {%q: ...} as written at %d", step, raw, want.payload, want.last)
	}
}
