package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// applyEntry encodes msg and applies it as raft would, returning the FSM's
// answer.
func applyEntry(t *testing.T, f *FSM, index uint64, typ MessageType, msg msgp.Marshaler) error {
	t.Helper()
	data, err := Encode(typ, msg)
	if err != nil {
		t.Fatal(err)
	}
	if res := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}); res != nil {
		return res.(error)
	}
	return nil
}

func mgmtToken(id string) *state.ACLToken {
	return &state.ACLToken{AccessorID: id + "-acc", SecretID: id + "-sec", Name: "Bootstrap Token",
		Type: state.ACLManagementToken, Global: true, CreateTime: 42}
}

// Each ACL entry, applied through the log, writes what it says; a delete
// naming something unknown is refused whole.
func TestFSM_ACLEntries(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	steps := []struct {
		typ  MessageType
		msg  msgp.Marshaler
		want error
	}{
		{ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{
			{Name: "readonly", Rules: `node { policy = "read" }`}, {Name: "ops", Rules: `operator { policy = "write" }`}}}, nil},
		{ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{{AccessorID: "c-acc", SecretID: "c-sec",
			Name: "ci", Type: state.ACLClientToken, Policies: []string{"readonly"}, CreateTime: 5, ExpirationTime: 99}}}, nil},
		{ACLPolicyDeleteRequestType, &ACLPolicyDeleteRequest{Names: []string{"ops", "nope"}}, state.ErrNotFound},
		{ACLPolicyDeleteRequestType, &ACLPolicyDeleteRequest{Names: []string{"ops"}}, nil},
		// An update built on the token created at index 2.
		{ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{{AccessorID: "c-acc", SecretID: "c-sec",
			Name: "ci2", Type: state.ACLClientToken, Policies: []string{"readonly"}, CreateIndex: 2}}}, nil},
		// An update built on a token that is not the stored one.
		{ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{{AccessorID: "c-acc", SecretID: "c-sec",
			Name: "ci3", Type: state.ACLClientToken, Policies: []string{"readonly"}, CreateIndex: 1}}}, state.ErrNotFound},
		{ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{"nope"}}, state.ErrNotFound},
	}
	for i, st := range steps {
		if err := applyEntry(t, f, uint64(i+1), st.typ, st.msg); !errors.Is(err, st.want) {
			t.Fatalf("step %d (%T): err = %v, want %v", i+1, st.msg, err, st.want)
		}
	}
	snap := store.Snapshot()
	if snap.ACLPolicy("ops") != nil || snap.ACLPolicy("readonly") == nil {
		t.Error("policies not as written")
	}
	tok := snap.ACLTokenBySecret("c-sec")
	if tok == nil || tok.Name != "ci2" || tok.CreateIndex != 2 || tok.ModifyIndex != 5 || tok.ExpirationTime != 99 || tok.CreateTime != 5 {
		t.Fatalf("token = %+v", tok)
	}
	if err := applyEntry(t, f, 8, ACLTokenDeleteRequestType, &ACLTokenDeleteRequest{AccessorIDs: []string{"c-acc"}}); err != nil {
		t.Fatal(err)
	}
	if store.Snapshot().ACLTokenByAccessor("c-acc") != nil {
		t.Error("token not deleted")
	}
}

// The bootstrap is checked when its entry applies: of two made from the
// same state (both saw no bootstrap), the second is refused and writes
// nothing; a reset names the bootstrap's index, and only that index.
func TestFSM_ACLBootstrapRaceRefusedAtApply(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	if err := applyEntry(t, f, 3, ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: mgmtToken("first")}); err != nil {
		t.Fatal(err)
	}
	err := applyEntry(t, f, 4, ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: mgmtToken("second")})
	if !errors.Is(err, ErrACLBootstrapped) || !errors.Is(err, ErrConflict) {
		t.Fatalf("second bootstrap: err = %v, want ErrACLBootstrapped", err)
	}
	snap := store.Snapshot()
	if snap.ACLTokenByAccessor("second-acc") != nil {
		t.Fatal("the losing bootstrap wrote its token")
	}
	if snap.ACLBootstrapIndex() != 3 {
		t.Fatalf("bootstrap index = %d, want 3", snap.ACLBootstrapIndex())
	}
	if tok := snap.ACLTokenBySecret("first-sec"); tok == nil || tok.CreateIndex != 3 || tok.Type != state.ACLManagementToken {
		t.Fatalf("bootstrap token = %+v", tok)
	}
	// A wrong reset index is refused; the right one bootstraps again.
	if err := applyEntry(t, f, 5, ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: mgmtToken("wrong"), ResetIndex: 2}); !errors.Is(err, ErrACLBootstrapped) {
		t.Fatalf("reset index 2: err = %v, want ErrACLBootstrapped", err)
	}
	if err := applyEntry(t, f, 6, ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: mgmtToken("reset"), ResetIndex: 3}); err != nil {
		t.Fatal(err)
	}
	// Two resets from the same index: the second loses.
	if err := applyEntry(t, f, 7, ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: mgmtToken("again"), ResetIndex: 3}); !errors.Is(err, ErrACLBootstrapped) {
		t.Fatalf("second reset from 3: err = %v, want ErrACLBootstrapped", err)
	}
	snap = store.Snapshot()
	if snap.ACLBootstrapIndex() != 6 || snap.ACLTokenByAccessor("reset-acc") == nil || snap.ACLTokenByAccessor("again-acc") != nil {
		t.Fatalf("after reset: bootstrap index %d, tokens %v", snap.ACLBootstrapIndex(), snap.ACLTokens(""))
	}
	// A client token cannot be a bootstrap token.
	tok := mgmtToken("client")
	tok.Type = state.ACLClientToken
	if err := applyEntry(t, f, 8, ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{Token: tok, ResetIndex: 6}); err == nil {
		t.Fatal("a client bootstrap token was accepted")
	}
}

// Entries with null objects are refused when decoded.
func TestFSM_ACLEntriesWithNullsAreRefused(t *testing.T) {
	for _, m := range []struct {
		typ MessageType
		msg msgp.Marshaler
	}{
		{ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{nil}}},
		{ACLTokenUpsertRequestType, &ACLTokenUpsertRequest{Tokens: []*state.ACLToken{nil}}},
		{ACLTokenBootstrapRequestType, &ACLTokenBootstrapRequest{}},
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

// aclState is a store with ACL policies, tokens and a bootstrap.
func aclState(t testing.TB) *state.Store {
	store, _ := state.NewStore()
	steps := []func(tx *state.Txn) error{
		func(tx *state.Txn) error {
			if err := tx.UpsertACLTokens([]*state.ACLToken{mgmtToken("boot")}); err != nil {
				return err
			}
			return tx.SetACLBootstrap(tx.Index())
		},
		func(tx *state.Txn) error {
			return tx.UpsertACLPolicies([]*state.ACLPolicy{{Name: "readonly", Description: "read", Rules: `node { policy = "read" }`}})
		},
		func(tx *state.Txn) error {
			return tx.UpsertACLTokens([]*state.ACLToken{{AccessorID: "c-acc", SecretID: "c-sec", Name: "ci",
				Type: state.ACLClientToken, Policies: []string{"readonly"}, CreateTime: 7, ExpirationTime: 9}})
		},
	}
	for i, st := range steps {
		if err := store.Write(uint64(i+1), st); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

// A snapshot keeps the ACL tables, their indexes and the bootstrap index.
func TestSnapshot_RoundTripKeepsACLs(t *testing.T) {
	src := aclState(t)
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	dst, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	a, b := src.Snapshot(), dst.Snapshot()
	if d := compare(a, b); d != "" {
		t.Fatal(d)
	}
	if b.ACLBootstrapIndex() != 1 {
		t.Errorf("bootstrap index = %d, want 1", b.ACLBootstrapIndex())
	}
	if b.TableIndex(state.TableACLPolicies) != 2 || b.TableIndex(state.TableACLTokens) != 3 {
		t.Errorf("table indexes %d, %d; want 2, 3", b.TableIndex(state.TableACLPolicies), b.TableIndex(state.TableACLTokens))
	}
	if tok := b.ACLTokenBySecret("c-sec"); tok == nil || tok.ExpirationTime != 9 || tok.Policies[0] != "readonly" {
		t.Errorf("client token = %+v", tok)
	}
}

// A snapshot written before the ACL tables existed (no ACL records, no
// index records for them) restores, with no ACLs and not bootstrapped.
func TestSnapshot_OldSnapshotWithoutACLsRestores(t *testing.T) {
	src := richStateOf(t, false, false)
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	old := withoutACLRecords(t, buf.Bytes())
	if len(old) >= buf.Len() {
		t.Fatal("found no ACL index records to leave out")
	}
	dst, err := ReadSnapshot(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	snap := dst.Snapshot()
	if d := compare(src.Snapshot(), snap); d != "" {
		t.Fatal(d)
	}
	if snap.ACLBootstrapIndex() != 0 || len(snap.ACLTokens("")) != 0 || len(snap.ACLPolicies("")) != 0 ||
		snap.TableIndex(state.TableACLTokens) != 0 {
		t.Error("an old snapshot restored with ACL state")
	}
}

// withoutACLRecords rewrites a snapshot as a version without ACLs wrote
// it: without ACL policy, token and role records, and without the index
// records of the ACL tables and of the bootstrap.
func withoutACLRecords(t *testing.T, b []byte) []byte {
	t.Helper()
	return withoutRecords(t, b, []byte{recACLPolicy, recACLToken, recACLRole},
		state.TableACLPolicies, state.TableACLTokens, state.TableACLRoles, state.ACLBootstrapIndexKey)
}

// withoutRecords rewrites a snapshot without the records of the given
// kinds and without the index records of the given keys.
func withoutRecords(t *testing.T, b []byte, kinds []byte, keys ...string) []byte {
	t.Helper()
	out := append([]byte(nil), b[:len(snapshotMagic)]...)
	rest := b[len(snapshotMagic):]
	for {
		kind := rest[0]
		if kind == recEnd {
			return append(out, recEnd)
		}
		n, w := binary.Uvarint(rest[1:])
		rec := rest[:1+w+int(n)]
		body := rec[1+w:]
		rest = rest[len(rec):]
		if bytes.IndexByte(kinds, kind) >= 0 {
			continue
		}
		if kind == recIndex {
			var e state.IndexEntry
			if _, err := e.UnmarshalMsg(body); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(keys, e.Key) {
				continue
			}
		}
		out = append(out, rec...)
	}
}

// Role entries, applied through the log: a create is refused an ID in
// use, an update applies only to the role it was made from, the state
// refuses a name in use or a policy that does not exist, and a delete
// naming an unknown role is refused whole.
func TestFSM_ACLRoleEntries(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	role := func(id, name string, createIndex uint64, policies ...string) *ACLRoleUpsertRequest {
		return &ACLRoleUpsertRequest{Roles: []*state.ACLRole{{ID: id, Name: name, Policies: policies, CreateIndex: createIndex}}}
	}
	steps := []struct {
		typ  MessageType
		msg  msgp.Marshaler
		want error
	}{
		{ACLPolicyUpsertRequestType, &ACLPolicyUpsertRequest{Policies: []*state.ACLPolicy{
			{Name: "readonly", Rules: `node { policy = "read" }`}, {Name: "ops", Rules: `operator { policy = "write" }`}}}, nil},
		{ACLRoleUpsertRequestType, role("r-1", "readers", 0, "readonly"), nil},
		{ACLRoleUpsertRequestType, role("r-1", "other", 0, "readonly"), ErrConflict},         // a create with an ID in use
		{ACLRoleUpsertRequestType, role("r-2", "readers", 0, "ops"), state.ErrRoleNameInUse}, // a name in use
		{ACLRoleUpsertRequestType, role("r-2", "ops", 0, "ops", "nope"), state.ErrNotFound},  // a policy that does not exist
		{ACLRoleUpsertRequestType, role("r-1", "viewers", 2, "readonly", "ops"), nil},        // an update made from index 2
		{ACLRoleUpsertRequestType, role("r-1", "stale", 1, "readonly"), state.ErrNotFound},   // made from another role
		{ACLRoleUpsertRequestType, role("r-9", "ghost", 3, "readonly"), state.ErrNotFound},   // an update of no role
		{ACLRoleDeleteRequestType, &ACLRoleDeleteRequest{IDs: []string{"r-1", "nope"}}, state.ErrNotFound},
	}
	for i, st := range steps {
		if err := applyEntry(t, f, uint64(i+1), st.typ, st.msg); !errors.Is(err, st.want) {
			t.Fatalf("step %d (%T): err = %v, want %v", i+1, st.msg, err, st.want)
		}
	}
	snap := store.Snapshot()
	r := snap.ACLRoleByID("r-1")
	if r == nil || r.Name != "viewers" || len(r.Policies) != 2 || r.CreateIndex != 2 || r.ModifyIndex != 6 {
		t.Fatalf("role = %+v", r)
	}
	if snap.ACLRoleByID("r-2") != nil || snap.ACLRoleByID("r-9") != nil || snap.TableIndex(state.TableACLRoles) != 6 {
		t.Fatalf("a refused entry wrote a role (table index %d)", snap.TableIndex(state.TableACLRoles))
	}
	if err := applyEntry(t, f, 20, ACLRoleDeleteRequestType, &ACLRoleDeleteRequest{IDs: []string{"r-1"}}); err != nil {
		t.Fatal(err)
	}
	if snap := store.Snapshot(); snap.ACLRoleByID("r-1") != nil || snap.TableIndex(state.TableACLRoles) != 20 {
		t.Error("role not deleted")
	}
}

// A snapshot keeps the roles, their table index and the roles tokens
// hold.
func TestSnapshot_RoundTripKeepsACLRoles(t *testing.T) {
	src := richState(t)
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	dst, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	a, b := src.Snapshot(), dst.Snapshot()
	if d := compare(a, b); d != "" {
		t.Fatal(d)
	}
	r := b.ACLRoleByName("readers")
	if r == nil || r.ID != "r-1" || r.Description != "read" || r.Policies[0] != "readonly" || r.CreateIndex == 0 {
		t.Fatalf("role = %+v", r)
	}
	if b.TableIndex(state.TableACLRoles) == 0 || b.TableIndex(state.TableACLRoles) != a.TableIndex(state.TableACLRoles) {
		t.Errorf("roles table index %d, want %d", b.TableIndex(state.TableACLRoles), a.TableIndex(state.TableACLRoles))
	}
	if tok := b.ACLTokenBySecret("r-sec"); tok == nil || len(tok.Roles) != 1 || tok.Roles[0] != "r-1" {
		t.Errorf("token with a role = %+v", tok)
	}
}

// A snapshot written with ACLs but before roles existed (no role records,
// no roles table index, tokens encoded without Roles) restores, with no
// roles.
func TestSnapshot_OldSnapshotWithoutRolesRestores(t *testing.T) {
	src := richStateOf(t, true, false)
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("Roles")) {
		t.Fatal("tokens without roles encode a Roles key")
	}
	old := withoutRecords(t, buf.Bytes(), []byte{recACLRole}, state.TableACLRoles)
	if len(old) >= buf.Len() {
		t.Fatal("found no roles index record to leave out")
	}
	dst, err := ReadSnapshot(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	snap := dst.Snapshot()
	if d := compare(src.Snapshot(), snap); d != "" {
		t.Fatal(d)
	}
	if len(snap.ACLRoles("")) != 0 || snap.TableIndex(state.TableACLRoles) != 0 || len(snap.ACLTokens("")) != 2 {
		t.Error("an old snapshot restored with roles, or without its tokens")
	}
}
