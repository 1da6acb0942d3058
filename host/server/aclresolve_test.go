package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
)

// A token resolves to what its policies allow as they are now: a changed
// policy changes it at once (the cached ACL is keyed by the policies'
// indexes), a deleted one grants nothing; an unknown, expired or deleted
// token does not resolve; no token gets the anonymous policy.
func TestResolveToken(t *testing.T) {
	s := aclServer(t, func(c *server.Config) { c.ACLTokenMinExpirationTTL = time.Millisecond })
	writePolicy := func(name, rules string) {
		t.Helper()
		if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: name, Rules: rules}}); err != nil {
			t.Fatal(err)
		}
	}
	resolve := func(secret string) *acl.ACL {
		t.Helper()
		a, _, err := s.ResolveToken(secret)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		return a
	}
	writePolicy("nodes", `node { policy = "read" }`)
	writePolicy("jobs", `namespace "default" { policy = "write" }`)
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"nodes", "jobs"}}, 0)
	if err != nil {
		t.Fatal(err)
	}

	a := resolve(tok.SecretID)
	if !a.AllowNodeRead() || a.AllowNodeWrite() || !a.AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob) {
		t.Fatal("the token's policies are not what it resolves to")
	}
	if resolve(tok.SecretID) != a {
		t.Fatal("the ACL of an unchanged set of policies is computed again")
	}
	writePolicy("nodes", `node { policy = "write" }`)
	if !resolve(tok.SecretID).AllowNodeWrite() {
		t.Fatal("a changed policy is not seen")
	}
	if _, err := s.DeleteACLPolicies([]string{"jobs"}); err != nil {
		t.Fatal(err)
	}
	if resolve(tok.SecretID).AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob) {
		t.Fatal("a deleted policy still grants")
	}

	// No token: the anonymous policy, once there is one.
	if resolve("").AllowNodeRead() {
		t.Fatal("anonymous allowed without an anonymous policy")
	}
	writePolicy(server.AnonymousPolicy, `node { policy = "read" }`)
	if !resolve("").AllowNodeRead() {
		t.Fatal("the anonymous policy is not applied")
	}

	mgmt, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken}, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !resolve(mgmt.SecretID).IsManagement() {
		t.Fatal("a management token is not management")
	}
	time.Sleep(40 * time.Millisecond)
	if _, _, err := s.ResolveToken(mgmt.SecretID); !errors.Is(err, server.ErrTokenExpired) {
		t.Fatalf("expired token: %v", err)
	}
	if _, err := s.DeleteACLTokens([]string{tok.AccessorID}); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{tok.SecretID, "3c1a0d2e-0000-4000-8000-000000000000"} {
		if _, _, err := s.ResolveToken(secret); !errors.Is(err, server.ErrTokenNotFound) {
			t.Fatalf("deleted or unknown token: %v", err)
		}
	}
}

// Without ACLs every request may do everything.
func TestResolveToken_ACLsDisabled(t *testing.T) {
	s := servertest.New(t, nil, nil)
	a, tok, err := s.ResolveToken("")
	if err != nil || tok != nil || !a.IsManagement() {
		t.Fatalf("ACLs disabled: %v %v %v", a, tok, err)
	}
}
