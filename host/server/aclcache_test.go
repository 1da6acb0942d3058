package server_test

import (
	"bytes"
	"testing"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/state"
)

// A snapshot restored from another cluster may hold a policy of the same
// name and index as one this server had, with other rules: tokens resolve
// to the restored rules, not to the ACL cached of the server's own. They
// resolved to the cached one, as its key was only the policies' names and
// indexes: a token the restored policy lets only read could write.
func TestResolveToken_RestoredPolicyOfTheSameIndex(t *testing.T) {
	a, b := aclServer(t, nil), aclServer(t, nil)
	policy := func(s interface {
		UpsertACLPolicies([]*state.ACLPolicy) (uint64, error)
	}, rules string) uint64 {
		t.Helper()
		index, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "jobs", Rules: rules}})
		if err != nil {
			t.Fatal(err)
		}
		return index
	}
	ia := policy(a, `namespace "default" { policy = "write" }`)
	ib := policy(b, `namespace "default" { policy = "read" }`)
	if ia != ib {
		t.Skipf("the policies were written at indexes %d and %d", ia, ib)
	}
	tokA, _, err := a.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"jobs"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	tokB, _, err := b.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"jobs"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := a.ResolveToken(tokA.SecretID); err != nil || !got.AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob) {
		t.Fatalf("a's token: %v", err)
	}

	snap, err := b.SaveSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := a.RestoreSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	got, _, err := a.ResolveToken(tokB.SecretID)
	if err != nil {
		t.Fatal(err)
	}
	if got.AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob) {
		t.Fatal("a token of the restored state resolves to the rules cached before the restore")
	}
	if !got.AllowNamespaceOperation("default", acl.NamespaceCapabilityReadJob) {
		t.Fatal("a token of the restored state does not get its policy's rules")
	}
}
