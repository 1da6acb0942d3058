package fsm

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

func jwtMethod(name string, def bool) *state.ACLAuthMethod {
	return &state.ACLAuthMethod{Name: name, Type: state.ACLAuthMethodTypeJWT, TokenLocality: state.ACLTokenLocalityLocal,
		MaxTokenTTL: 36e11, Default: def, CreateTime: 10, ModifyTime: 10,
		Config: &state.ACLAuthMethodConfig{JWKSURL: "https://idp.example/jwks"}}
}

// The auth method, binding rule and one-time token entries, applied
// through the log: one default method at most, checked at apply; a rule
// needs its method and goes with it; an update applies only to the rule
// it was read from; a one-time token is spent once, and not once expired.
func TestFSM_ACLAuthEntries(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	later := jwtMethod("ci", false)
	later.CreateTime = 20
	steps := []struct {
		typ  MessageType
		msg  msgp.Marshaler
		want error
	}{
		/* 1 */ {ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{mgmtToken("m")}}, nil},
		/* 2 */ {ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{jwtMethod("ci", true)}}, nil},
		// Two servers each saw no default: the second write is refused.
		/* 3 */ {ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{jwtMethod("okta", true)}}, state.ErrDefaultAuthMethod},
		/* 4 */ {ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{jwtMethod("okta", false)}}, nil},
		/* 5 */ {ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
			{ID: "b-ci", AuthMethod: "ci", BindType: state.ACLBindTypeManagement, CreateTime: 10}}}, nil},
		/* 6 */ {ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
			{ID: "b-okta", AuthMethod: "okta", BindType: state.ACLBindTypePolicy, BindName: "readonly"}}}, nil},
		// A rule of a method that does not exist; a create with an ID in use.
		/* 7 */ {ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
			{ID: "b-x", AuthMethod: "nope", BindType: state.ACLBindTypeManagement}}}, state.ErrNotFound},
		/* 8 */ {ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
			{ID: "b-ci", AuthMethod: "ci", BindType: state.ACLBindTypeManagement}}}, ErrConflict},
		// An update of the rule created at 5, then one read from another.
		/* 9 */ {ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
			{ID: "b-ci", AuthMethod: "ci", BindType: state.ACLBindTypeRole, BindName: "ops", CreateIndex: 5, CreateTime: 99}}}, nil},
		/* 10 */ {ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
			{ID: "b-ci", AuthMethod: "ci", BindType: state.ACLBindTypeRole, BindName: "ops", CreateIndex: 4}}}, state.ErrNotFound},
		// A method written again keeps its creation.
		/* 11 */ {ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{later}}, nil},
		/* 12 */ {ACLAuthMethodDeleteRequestType, &ACLAuthMethodDeleteRequest{Names: []string{"ci", "nope"}}, state.ErrNotFound},
		/* 13 */ {ACLAuthMethodDeleteRequestType, &ACLAuthMethodDeleteRequest{Names: []string{"ci"}}, nil},
		/* 14 */ {ACLBindingRuleDeleteRequestType, &ACLBindingRuleDeleteRequest{IDs: []string{"b-ci"}}, state.ErrNotFound},
		// One-time tokens: for a token that exists only.
		/* 15 */ {OneTimeTokenUpsertRequestType, &OneTimeTokenUpsertRequest{Token: &state.OneTimeToken{OneTimeSecretID: "o-1", AccessorID: "nope", ExpiresAt: 100}}, state.ErrNotFound},
		/* 16 */ {OneTimeTokenUpsertRequestType, &OneTimeTokenUpsertRequest{Token: &state.OneTimeToken{OneTimeSecretID: "o-1", AccessorID: "m-acc", ExpiresAt: 100}}, nil},
		/* 17 */ {OneTimeTokenUpsertRequestType, &OneTimeTokenUpsertRequest{Token: &state.OneTimeToken{OneTimeSecretID: "o-2", AccessorID: "m-acc", ExpiresAt: 100}}, nil},
		/* 18 */ {OneTimeTokenUpsertRequestType, &OneTimeTokenUpsertRequest{Token: &state.OneTimeToken{OneTimeSecretID: "o-3", AccessorID: "m-acc", ExpiresAt: 50}}, nil},
		// Spent once: the second exchange of o-1 loses; o-2 is expired at 101.
		/* 19 */ {OneTimeTokenExchangeRequestType, &OneTimeTokenExchangeRequest{OneTimeSecretID: "o-1", Now: 90}, nil},
		/* 20 */ {OneTimeTokenExchangeRequestType, &OneTimeTokenExchangeRequest{OneTimeSecretID: "o-1", Now: 91}, state.ErrNotFound},
		/* 21 */ {OneTimeTokenExchangeRequestType, &OneTimeTokenExchangeRequest{OneTimeSecretID: "o-2", Now: 101}, state.ErrNotFound},
		// Expiry at 60 takes o-3, not o-2.
		/* 22 */ {OneTimeTokenExpireRequestType, &OneTimeTokenExpireRequest{Now: 60}, nil},
	}
	for i, st := range steps {
		if err := applyEntry(t, f, uint64(i+1), st.typ, st.msg); !errors.Is(err, st.want) {
			t.Fatalf("step %d (%T): err = %v, want %v", i+1, st.msg, err, st.want)
		}
	}
	snap := store.Snapshot()
	if m := snap.ACLAuthMethod("okta"); m == nil || m.Default || snap.DefaultACLAuthMethod() != nil {
		t.Fatalf("okta = %+v, default = %+v", m, snap.DefaultACLAuthMethod())
	}
	if snap.ACLAuthMethod("ci") != nil || snap.ACLBindingRule("b-ci") != nil {
		t.Fatal("the deleted method or its rule is still there")
	}
	if r := snap.ACLBindingRule("b-okta"); r == nil || r.CreateIndex != 6 {
		t.Fatalf("another method's rule = %+v", r)
	}
	if got := snap.OneTimeTokens(); len(got) != 1 || got[0].OneTimeSecretID != "o-2" {
		t.Fatalf("one-time tokens = %+v, want o-2 alone", got)
	}
	// The token goes: its one-time tokens expire with it, whatever their time.
	if err := applyEntry(t, f, 23, ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{"m-acc"}}); err != nil {
		t.Fatal(err)
	}
	if err := applyEntry(t, f, 24, OneTimeTokenExpireRequestType, &OneTimeTokenExpireRequest{Now: 1}); err != nil {
		t.Fatal(err)
	}
	if got := store.Snapshot().OneTimeTokens(); len(got) != 0 {
		t.Fatalf("one-time tokens of a deleted token = %+v", got)
	}
}

// A rule updated and a method written again keep their creation.
func TestFSM_ACLAuthEntriesKeepCreation(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	m := jwtMethod("ci", false)
	for i, msg := range []msgp.Marshaler{
		&ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{m}},
		&ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{{ID: "b", AuthMethod: "ci", BindType: state.ACLBindTypeManagement, CreateTime: 10}}},
	} {
		typ := ACLAuthMethodUpsertRequestType
		if i == 1 {
			typ = ACLBindingRuleUpsertRequestType
		}
		if err := applyEntry(t, f, uint64(i+1), typ, msg); err != nil {
			t.Fatal(err)
		}
	}
	again := jwtMethod("ci", false)
	again.CreateTime, again.ModifyTime = 30, 30
	if err := applyEntry(t, f, 3, ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{again}}); err != nil {
		t.Fatal(err)
	}
	if err := applyEntry(t, f, 4, ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{
		{ID: "b", AuthMethod: "ci", BindType: state.ACLBindTypePolicy, BindName: "p", CreateIndex: 2, CreateTime: 40, ModifyTime: 40}}}); err != nil {
		t.Fatal(err)
	}
	snap := store.Snapshot()
	if got := snap.ACLAuthMethod("ci"); got.CreateIndex != 1 || got.CreateTime != 10 || got.ModifyIndex != 3 || got.ModifyTime != 30 {
		t.Errorf("method = %+v", got)
	}
	if got := snap.ACLBindingRule("b"); got.CreateIndex != 2 || got.CreateTime != 10 || got.ModifyIndex != 4 || got.ModifyTime != 40 || got.BindName != "p" {
		t.Errorf("rule = %+v", got)
	}
}

// Entries with null objects are refused when decoded.
func TestFSM_ACLAuthEntriesWithNullsAreRefused(t *testing.T) {
	for _, m := range []struct {
		typ MessageType
		msg msgp.Marshaler
	}{
		{ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{nil}}},
		{ACLAuthMethodUpsertRequestType, &ACLAuthMethodUpsertRequest{Methods: []*state.ACLAuthMethod{{Name: "x"}}}},
		{ACLBindingRuleUpsertRequestType, &ACLBindingRuleUpsertRequest{Rules: []*state.ACLBindingRule{nil}}},
		{OneTimeTokenUpsertRequestType, &OneTimeTokenUpsertRequest{}},
	} {
		data, err := Encode(m.typ, m.msg)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(data); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%T: Check = %v, want ErrBadEntry", m.msg, err)
		}
	}
}
