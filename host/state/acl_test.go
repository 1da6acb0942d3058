package state

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

func aclStore(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Policies are kept by name with their create and modify indexes, listed
// by name and prefix, and deleted by name; a delete naming an unknown
// policy deletes none. The table's index follows every change (blocking
// queries).
func TestACLPolicies_UpsertListDelete(t *testing.T) {
	s := aclStore(t)
	must := func(index uint64, fn func(tx *Txn) error) {
		t.Helper()
		if err := s.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	must(5, func(tx *Txn) error {
		return tx.UpsertACLPolicies([]*ACLPolicy{{Name: "readonly", Rules: `node { policy = "read" }`},
			{Name: "ops", Description: "operators", Rules: `operator { policy = "write" }`}})
	})
	must(7, func(tx *Txn) error {
		return tx.UpsertACLPolicies([]*ACLPolicy{{Name: "readonly", Description: "changed", Rules: `node { policy = "write" }`}})
	})
	snap := s.Snapshot()
	p := snap.ACLPolicy("readonly")
	if p == nil || p.CreateIndex != 5 || p.ModifyIndex != 7 || p.Description != "changed" {
		t.Fatalf("readonly = %+v, want created at 5, modified at 7", p)
	}
	if got := names(snap.ACLPolicies("")); got != "ops,readonly" {
		t.Errorf("policies = %s, want ops,readonly (by name)", got)
	}
	if got := names(snap.ACLPolicies("re")); got != "readonly" {
		t.Errorf("policies with prefix re = %s", got)
	}
	if snap.TableIndex(TableACLPolicies) != 7 {
		t.Errorf("table index = %d, want 7", snap.TableIndex(TableACLPolicies))
	}
	err := s.Write(8, func(tx *Txn) error { return tx.DeleteACLPolicies([]string{"ops", "nope"}) })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting an unknown policy: %v, want ErrNotFound", err)
	}
	if s.Snapshot().ACLPolicy("ops") == nil {
		t.Fatal("a refused delete deleted a policy")
	}
	must(9, func(tx *Txn) error { return tx.DeleteACLPolicies([]string{"ops"}) })
	snap = s.Snapshot()
	if snap.ACLPolicy("ops") != nil || snap.TableIndex(TableACLPolicies) != 9 {
		t.Errorf("ops not deleted, or table index %d not 9", snap.TableIndex(TableACLPolicies))
	}
}

func names(ps []*ACLPolicy) string {
	out := ""
	for i, p := range ps {
		if i > 0 {
			out += ","
		}
		out += p.Name
	}
	return out
}

// Tokens are found by accessor and by secret; an update keeps what is
// fixed at creation; a secret another token has is refused; a delete
// naming an unknown accessor deletes none.
func TestACLTokens_UpsertLookupDelete(t *testing.T) {
	s := aclStore(t)
	exp := time.Unix(1000, 0).UnixNano()
	if err := s.Write(3, func(tx *Txn) error {
		return tx.UpsertACLTokens([]*ACLToken{
			{AccessorID: "b-acc", SecretID: "b-sec", Name: "b", Type: ACLClientToken, Policies: []string{"readonly"},
				Global: true, CreateTime: 10, ExpirationTime: exp},
			{AccessorID: "a-acc", SecretID: "a-sec", Name: "a", Type: ACLManagementToken, CreateTime: 11},
		})
	}); err != nil {
		t.Fatal(err)
	}
	// An update tries to change what is fixed at creation.
	if err := s.Write(4, func(tx *Txn) error {
		return tx.UpsertACLTokens([]*ACLToken{{AccessorID: "b-acc", SecretID: "other", Name: "b2", Type: ACLClientToken,
			Policies: []string{"ops"}, CreateTime: 99, ExpirationTime: 1}})
	}); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	b := snap.ACLTokenBySecret("b-sec")
	if b == nil || b.AccessorID != "b-acc" || b.Name != "b2" || b.Policies[0] != "ops" {
		t.Fatalf("token by secret = %+v", b)
	}
	if !b.Global || b.CreateTime != 10 || b.ExpirationTime != exp || b.CreateIndex != 3 || b.ModifyIndex != 4 {
		t.Errorf("an update changed what is fixed at creation: %+v", b)
	}
	if snap.ACLTokenBySecret("other") != nil {
		t.Error("the update's secret finds a token")
	}
	if a := snap.ACLTokenByAccessor("a-acc"); a == nil || a.SecretID != "a-sec" {
		t.Errorf("token by accessor = %+v", a)
	}
	if snap.ACLTokenByAccessor("") != nil || snap.ACLTokenBySecret("") != nil {
		t.Error("an empty ID finds a token")
	}
	if list := snap.ACLTokens(""); len(list) != 2 || list[0].AccessorID != "a-acc" {
		t.Errorf("tokens not listed by accessor: %v", list)
	}
	if list := snap.ACLTokens("b"); len(list) != 1 || list[0].AccessorID != "b-acc" {
		t.Errorf("tokens with prefix b: %v", list)
	}
	if snap.TableIndex(TableACLTokens) != 4 {
		t.Errorf("table index = %d, want 4", snap.TableIndex(TableACLTokens))
	}

	err := s.Write(5, func(tx *Txn) error {
		return tx.UpsertACLTokens([]*ACLToken{{AccessorID: "c-acc", SecretID: "a-sec", Type: ACLManagementToken}})
	})
	if !errors.Is(err, ErrSecretInUse) {
		t.Fatalf("a second token with a's secret: %v, want ErrSecretInUse", err)
	}
	err = s.Write(6, func(tx *Txn) error { return tx.DeleteACLTokens([]string{"a-acc", "nope"}) })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting an unknown token: %v, want ErrNotFound", err)
	}
	if err := s.Write(7, func(tx *Txn) error { return tx.DeleteACLTokens([]string{"a-acc"}) }); err != nil {
		t.Fatal(err)
	}
	snap = s.Snapshot()
	if snap.ACLTokenByAccessor("a-acc") != nil || snap.ACLTokenBySecret("a-sec") != nil {
		t.Error("deleted token still found")
	}
	if snap.TableIndex(TableACLTokens) != 7 {
		t.Errorf("table index = %d, want 7", snap.TableIndex(TableACLTokens))
	}
}

func TestACLToken_Expiry(t *testing.T) {
	now := time.Unix(100, 0)
	s := aclStore(t)
	mk := func(id string, exp int64) *ACLToken {
		return &ACLToken{AccessorID: id, SecretID: id + "-s", Type: ACLManagementToken, ExpirationTime: exp}
	}
	toks := []*ACLToken{mk("never", 0), mk("later", now.Add(time.Second).UnixNano()), mk("now", now.UnixNano()),
		mk("old", now.Add(-time.Hour).UnixNano()), mk("older", now.Add(-2*time.Hour).UnixNano()),
		mk("just", now.Add(-time.Nanosecond).UnixNano())}
	if err := s.Write(1, func(tx *Txn) error { return tx.UpsertACLTokens(toks) }); err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		want := tok.AccessorID == "old" || tok.AccessorID == "older" || tok.AccessorID == "just"
		if tok.Expired(now) != want {
			t.Errorf("%s: Expired = %v, want %v", tok.AccessorID, !want, want)
		}
	}
	got := s.Snapshot().ExpiredACLTokens(now.UnixNano(), 0)
	if len(got) != 3 || got[0].AccessorID != "older" || got[1].AccessorID != "old" || got[2].AccessorID != "just" {
		t.Errorf("expired tokens = %v, want older, old, just", got)
	}
	if got := s.Snapshot().ExpiredACLTokens(now.UnixNano(), 2); len(got) != 2 || got[1].AccessorID != "old" {
		t.Errorf("expired tokens, at most 2 = %v", got)
	}
}

// The bootstrap index is 0 until set, and kept in the index table.
func TestACLBootstrapIndex(t *testing.T) {
	s := aclStore(t)
	if s.Snapshot().ACLBootstrapIndex() != 0 {
		t.Fatal("a new store is bootstrapped")
	}
	if err := s.Write(12, func(tx *Txn) error { return tx.SetACLBootstrap(tx.Index()) }); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().ACLBootstrapIndex(); got != 12 {
		t.Fatalf("bootstrap index = %d, want 12", got)
	}
}

// Roles are kept by ID and found by name too, listed by ID and prefix,
// keep their create index on update, may be renamed, and are refused a
// name another role has or a policy that does not exist (the whole write
// is refused). A delete naming an unknown role deletes none.
func TestACLRoles_UpsertLookupDelete(t *testing.T) {
	s := aclStore(t)
	must := func(index uint64, fn func(tx *Txn) error) {
		t.Helper()
		if err := s.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	must(2, func(tx *Txn) error {
		return tx.UpsertACLPolicies([]*ACLPolicy{{Name: "readonly", Rules: `node { policy = "read" }`},
			{Name: "ops", Rules: `operator { policy = "write" }`}})
	})
	must(3, func(tx *Txn) error {
		return tx.UpsertACLRoles([]*ACLRole{{ID: "b-role", Name: "readers", Policies: []string{"readonly"}},
			{ID: "a-role", Name: "operators", Description: "ops", Policies: []string{"ops", "readonly"}}})
	})
	must(4, func(tx *Txn) error {
		return tx.UpsertACLRoles([]*ACLRole{{ID: "b-role", Name: "viewers", Policies: []string{"readonly"}}})
	})
	snap := s.Snapshot()
	b := snap.ACLRoleByID("b-role")
	if b == nil || b.Name != "viewers" || b.CreateIndex != 3 || b.ModifyIndex != 4 {
		t.Fatalf("role b = %+v, want renamed viewers, created at 3, modified at 4", b)
	}
	if snap.ACLRoleByName("readers") != nil {
		t.Error("the old name still finds the renamed role")
	}
	if r := snap.ACLRoleByName("viewers"); r == nil || r.ID != "b-role" {
		t.Errorf("role by name = %+v", r)
	}
	if snap.ACLRoleByID("") != nil || snap.ACLRoleByName("") != nil {
		t.Error("an empty ID or name finds a role")
	}
	if list := snap.ACLRoles(""); len(list) != 2 || list[0].ID != "a-role" || list[1].ID != "b-role" {
		t.Errorf("roles not listed by ID: %v", list)
	}
	if list := snap.ACLRoles("b"); len(list) != 1 || list[0].ID != "b-role" {
		t.Errorf("roles with prefix b: %v", list)
	}
	if snap.TableIndex(TableACLRoles) != 4 {
		t.Errorf("table index = %d, want 4", snap.TableIndex(TableACLRoles))
	}

	err := s.Write(5, func(tx *Txn) error {
		return tx.UpsertACLRoles([]*ACLRole{{ID: "c-role", Name: "fine", Policies: []string{"ops"}},
			{ID: "d-role", Name: "operators", Policies: []string{"ops"}}})
	})
	if !errors.Is(err, ErrRoleNameInUse) {
		t.Fatalf("a second role named operators: %v, want ErrRoleNameInUse", err)
	}
	err = s.Write(5, func(tx *Txn) error {
		return tx.UpsertACLRoles([]*ACLRole{{ID: "c-role", Name: "fine", Policies: []string{"ops", "nope"}}})
	})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("a role with an unknown policy: %v, want ErrNotFound", err)
	}
	if s.Snapshot().ACLRoleByID("c-role") != nil {
		t.Fatal("a refused write wrote a role")
	}

	err = s.Write(6, func(tx *Txn) error { return tx.DeleteACLRoles([]string{"a-role", "nope"}) })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting an unknown role: %v, want ErrNotFound", err)
	}
	if s.Snapshot().ACLRoleByID("a-role") == nil {
		t.Fatal("a refused delete deleted a role")
	}
	must(7, func(tx *Txn) error { return tx.DeleteACLRoles([]string{"a-role"}) })
	snap = s.Snapshot()
	if snap.ACLRoleByID("a-role") != nil || snap.ACLRoleByName("operators") != nil {
		t.Error("deleted role still found")
	}
	if snap.TableIndex(TableACLRoles) != 7 {
		t.Errorf("table index = %d, want 7", snap.TableIndex(TableACLRoles))
	}
	// The name is free again.
	must(8, func(tx *Txn) error {
		return tx.UpsertACLRoles([]*ACLRole{{ID: "e-role", Name: "operators", Policies: []string{"ops"}}})
	})
}

// A token without roles encodes as before roles existed (no Roles key), so
// what older servers wrote and read is unchanged; one with roles keeps them.
func TestACLToken_RolesEncoding(t *testing.T) {
	old := &ACLToken{AccessorID: "a", SecretID: "s", Type: ACLClientToken, Policies: []string{"p"}}
	b, err := old.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("Roles")) {
		t.Error("a token without roles encodes a Roles key")
	}
	var got ACLToken
	if _, err := got.UnmarshalMsg(b); err != nil || got.Roles != nil || got.Policies[0] != "p" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	withRoles := &ACLToken{AccessorID: "a", SecretID: "s", Type: ACLClientToken, Roles: []string{"r1", "r2"}}
	if b, err = withRoles.MarshalMsg(nil); err != nil {
		t.Fatal(err)
	}
	got = ACLToken{}
	if _, err := got.UnmarshalMsg(b); err != nil || len(got.Roles) != 2 || got.Roles[1] != "r2" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}

// ACL writes are journaled, for the event stream, by kind and key (an auth
// method's deletion with the binding rules it takes along), and stay out
// of plugin deltas: a mirror synchronised before them gets an empty one.
func TestJournal_ACLChangesAreNotMirrored(t *testing.T) {
	s := aclStore(t)
	writes := []struct {
		name string
		fn   func(tx *Txn) error
		want []Change
	}{
		{"policy", func(tx *Txn) error { return tx.UpsertACLPolicies([]*ACLPolicy{{Name: "ops"}}) },
			[]Change{{Kind: KindACLPolicy, Key: "ops"}}},
		{"role", func(tx *Txn) error {
			return tx.UpsertACLRoles([]*ACLRole{{ID: "r1", Name: "ops", Policies: []string{"ops"}}})
		},
			[]Change{{Kind: KindACLRole, Key: "r1"}}},
		{"token", func(tx *Txn) error {
			return tx.UpsertACLTokens([]*ACLToken{{AccessorID: "a1", SecretID: "s1", Type: ACLClientToken, Roles: []string{"r1"}}})
		}, []Change{{Kind: KindACLToken, Key: "a1"}}},
		{"auth method and rule", func(tx *Txn) error {
			if err := tx.UpsertACLAuthMethods([]*ACLAuthMethod{{Name: "sso", Config: &ACLAuthMethodConfig{}}}); err != nil {
				return err
			}
			return tx.UpsertACLBindingRules([]*ACLBindingRule{{ID: "b1", AuthMethod: "sso"}})
		}, []Change{{Kind: KindACLAuthMethod, Key: "sso"}, {Kind: KindACLBindingRule, Key: "b1"}}},
		{"auth method deleted", func(tx *Txn) error { return tx.DeleteACLAuthMethods([]string{"sso"}) },
			[]Change{{Kind: KindACLAuthMethod, Key: "sso"}, {Kind: KindACLBindingRule, Key: "b1"}}},
		{"token deleted", func(tx *Txn) error { return tx.DeleteACLTokens([]string{"a1"}) },
			[]Change{{Kind: KindACLToken, Key: "a1"}}},
		{"role deleted", func(tx *Txn) error { return tx.DeleteACLRoles([]string{"r1"}) },
			[]Change{{Kind: KindACLRole, Key: "r1"}}},
		{"policy deleted", func(tx *Txn) error { return tx.DeleteACLPolicies([]string{"ops"}) },
			[]Change{{Kind: KindACLPolicy, Key: "ops"}}},
	}
	if err := s.Write(1, func(tx *Txn) error { return tx.UpsertNode(&sdk.Node{ID: "n1"}) }); err != nil {
		t.Fatal(err)
	}
	for i, w := range writes {
		index := uint64(i + 2)
		if err := s.Write(index, w.fn); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		got, _ := s.Journal().Between(index-1, index)
		for j := range w.want {
			w.want[j].Index = index
		}
		if !slices.Equal(got, w.want) {
			t.Fatalf("%s: journaled %+v, want %+v", w.name, got, w.want)
		}
		for _, c := range got {
			if c.Kind.mirrored() {
				t.Fatalf("%s: %+v is a kind plugins mirror", w.name, c)
			}
		}
	}
	snap := s.Snapshot()
	for _, evals := range []bool{false, true} {
		if sync := snap.Sync(1, evals); !reflect.DeepEqual(sync, &abi.StateSync{FromIndex: 1, Index: snap.Index()}) {
			t.Fatalf("a mirror at 1 (evals %v) is sent %+v, want an empty delta", evals, sync)
		}
	}
}
