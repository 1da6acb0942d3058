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

// A token's ACL is the union of its policies and its roles' policies, as
// they are now: a role given another policy, or a policy of a role
// changed, changes what the token resolves to at once (roles are
// flattened into policy names, which key the cache with their indexes); a
// deleted role or a role's deleted policy grants nothing. Two tokens with
// the same policies, one through a role, share the cached ACL.
func TestResolveToken_Roles(t *testing.T) {
	s := aclServer(t, nil)
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
	submit := func(a *acl.ACL) bool { return a.AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob) }
	writePolicy("nodes", `node { policy = "read" }`)
	writePolicy("jobs", `namespace "default" { policy = "write" }`)
	writePolicy("agent", `agent { policy = "read" }`)
	roles, _, err := s.UpsertACLRoles([]*state.ACLRole{{Name: "jobs", Policies: []string{"jobs"}}})
	if err != nil {
		t.Fatal(err)
	}
	role := roles[0]
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"nodes"}}, 0,
		server.ACLRoleLink{Name: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	a := resolve(tok.SecretID)
	if !a.AllowNodeRead() || !submit(a) || a.AllowAgentRead() {
		t.Fatal("the token's ACL is not its policy and its role's")
	}
	same, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"jobs", "nodes"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if resolve(same.SecretID) != a {
		t.Error("the same policies, one through a role, are computed again")
	}

	// The role gains a policy: the token's key changes.
	if _, _, err := s.UpsertACLRoles([]*state.ACLRole{{ID: role.ID, Name: "jobs", Policies: []string{"jobs", "agent"}}}); err != nil {
		t.Fatal(err)
	}
	if !resolve(tok.SecretID).AllowAgentRead() {
		t.Fatal("a policy added to the role is not seen")
	}
	// A policy of the role changes.
	writePolicy("agent", `agent { policy = "write" }`)
	if !resolve(tok.SecretID).AllowAgentWrite() {
		t.Fatal("a changed policy of the role is not seen")
	}
	// The role loses a policy.
	if _, _, err := s.UpsertACLRoles([]*state.ACLRole{{ID: role.ID, Name: "jobs", Policies: []string{"agent"}}}); err != nil {
		t.Fatal(err)
	}
	if submit(resolve(tok.SecretID)) {
		t.Fatal("a policy taken from the role still grants")
	}
	// A role's policy deleted.
	if _, err := s.DeleteACLPolicies([]string{"agent"}); err != nil {
		t.Fatal(err)
	}
	if resolve(tok.SecretID).AllowAgentRead() {
		t.Fatal("a deleted policy of the role still grants")
	}
	// The role deleted: the token keeps its own policy, nothing more.
	writePolicy("agent", `agent { policy = "read" }`)
	if !resolve(tok.SecretID).AllowAgentRead() {
		t.Fatal("a policy of the role written again is not seen")
	}
	if _, err := s.DeleteACLRoles([]string{role.ID}); err != nil {
		t.Fatal(err)
	}
	a = resolve(tok.SecretID)
	if a.AllowAgentRead() || !a.AllowNodeRead() {
		t.Fatal("a deleted role still grants, or the token lost its own policy")
	}
	// A role of the same name made again is another role: the token does
	// not hold it.
	if _, _, err := s.UpsertACLRoles([]*state.ACLRole{{Name: "jobs", Policies: []string{"agent"}}}); err != nil {
		t.Fatal(err)
	}
	if resolve(tok.SecretID).AllowAgentRead() {
		t.Fatal("a new role of a deleted role's name grants to its tokens")
	}
}

// BenchmarkResolveToken is what checking a request's token costs once its
// policies' ACL is cached: a state read by secret and the cache's lookup.
func BenchmarkResolveToken(b *testing.B) {
	s := servertest.New(b, nil, func(c *server.Config) { c.ACLEnabled = true })
	for _, p := range []string{"nodes", "jobs"} {
		if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: p,
			Rules: `node { policy = "read" }` + "\nnamespace \"prod-*\" { policy = \"write\" }"}}); err != nil {
			b.Fatal(err)
		}
	}
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"nodes", "jobs"}}, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		a, _, err := s.ResolveToken(tok.SecretID)
		if err != nil || !a.AllowNamespaceOperation("prod-web", acl.NamespaceCapabilitySubmitJob) {
			b.Fatal("not resolved", err)
		}
	}
}
