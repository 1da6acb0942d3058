package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
)

// aclServer is a dev server with ACLs on.
func aclServer(t *testing.T, modify func(*server.Config)) *server.Server {
	t.Helper()
	return servertest.New(t, nil, func(c *server.Config) {
		c.ACLEnabled = true
		if modify != nil {
			modify(c)
		}
	})
}

// nodeRead is a policy's rules that parse.
const nodeRead = `node { policy = "read" }`

func wantErr(t *testing.T, what string, err, want error, text string) {
	t.Helper()
	if !errors.Is(err, want) || !strings.Contains(fmt.Sprint(err), text) {
		t.Fatalf("%s: err = %v, want %v saying %q", what, err, want, text)
	}
}

// The bootstrap makes one global management token, once; it is done again
// only with the reset index, which is the index it was done at.
func TestACL_BootstrapOnce(t *testing.T) {
	s := aclServer(t, nil)
	tok, index, err := s.BootstrapACL(0, "")
	if err != nil {
		t.Fatal(err)
	}
	if tok.Type != state.ACLManagementToken || !tok.Global || tok.Name != "Bootstrap Token" || len(tok.SecretID) != 36 ||
		len(tok.AccessorID) != 36 || tok.CreateIndex != index || tok.CreateTime == 0 || tok.ExpirationTime != 0 {
		t.Fatalf("bootstrap token = %+v at %d", tok, index)
	}
	if got := s.Store().Snapshot().ACLTokenBySecret(tok.SecretID); got == nil || got.AccessorID != tok.AccessorID {
		t.Fatalf("bootstrap token not stored: %+v", got)
	}
	_, _, err = s.BootstrapACL(0, "")
	wantErr(t, "second bootstrap", err, server.ErrForbidden, fmt.Sprintf("ACL bootstrap already done (reset index: %d)", index))
	_, _, err = s.BootstrapACL(index+1, "")
	wantErr(t, "reset with another index", err, server.ErrForbidden,
		fmt.Sprintf("Invalid bootstrap reset index (specified %d, reset index: %d)", index+1, index))

	secret := "3f1c6f0e-1b7c-4d8f-9d53-2b1f3b6c0a11"
	again, index2, err := s.BootstrapACL(index, secret)
	if err != nil {
		t.Fatal(err)
	}
	if again.SecretID != secret || again.AccessorID == tok.AccessorID || index2 <= index {
		t.Fatalf("reset bootstrap token = %+v at %d", again, index2)
	}
	if s.Store().Snapshot().ACLBootstrapIndex() != index2 {
		t.Fatalf("bootstrap index = %d, want %d", s.Store().Snapshot().ACLBootstrapIndex(), index2)
	}
	_, _, err = s.BootstrapACL(index, "")
	wantErr(t, "reset with the old index", err, server.ErrForbidden, "Invalid bootstrap reset index")
	_, _, err = s.BootstrapACL(index2, "not-a-uuid")
	wantErr(t, "bootstrap with a secret that is not a UUID", err, server.ErrInvalid, "invalid acl token")
	_, _, err = s.BootstrapACL(index2, secret)
	wantErr(t, "bootstrap with another token's secret", err, server.ErrInvalid, "invalid acl token")
}

// Of bootstraps racing, exactly one wins; the others are refused as done.
func TestACL_BootstrapRaceHasOneWinner(t *testing.T) {
	s := aclServer(t, nil)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = s.BootstrapACL(0, "")
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, server.ErrForbidden) && strings.Contains(err.Error(), "ACL bootstrap already done"):
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if won != 1 || len(s.Store().Snapshot().ACLTokens("")) != 1 {
		t.Fatalf("%d bootstraps won, %d tokens", won, len(s.Store().Snapshot().ACLTokens("")))
	}
}

// Every ACL write is refused while ACLs are off.
func TestACL_DisabledRefusesWrites(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if s.ACLEnabled() {
		t.Fatal("ACLs on by default")
	}
	_, _, err := s.BootstrapACL(0, "")
	wantErr(t, "bootstrap", err, server.ErrInvalid, "ACL support disabled")
	_, err = s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "p", Rules: nodeRead}})
	wantErr(t, "policy", err, server.ErrInvalid, "ACL support disabled")
	_, _, err = s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken}, 0)
	wantErr(t, "token", err, server.ErrInvalid, "ACL support disabled")
	_, err = s.DeleteACLTokens([]string{"x"})
	wantErr(t, "token delete", err, server.ErrInvalid, "ACL support disabled")
	_, err = s.DeleteACLPolicies([]string{"x"})
	wantErr(t, "policy delete", err, server.ErrInvalid, "ACL support disabled")
	_, _, err = s.UpsertACLRoles([]*state.ACLRole{{Name: "r", Policies: []string{"p"}}})
	wantErr(t, "role", err, server.ErrInvalid, "ACL support disabled")
	_, err = s.DeleteACLRoles([]string{"x"})
	wantErr(t, "role delete", err, server.ErrInvalid, "ACL support disabled")
}

func TestACL_PolicyValidation(t *testing.T) {
	s := aclServer(t, nil)
	index, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "read-only-1", Description: "reads", Rules: `node { policy = "read" }`}})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Store().Snapshot().ACLPolicy("read-only-1"); p == nil || p.CreateIndex != index || p.Description != "reads" {
		t.Fatalf("policy = %+v", p)
	}
	for _, tc := range []struct {
		name string
		p    *state.ACLPolicy
		want string
	}{
		{"empty name", &state.ACLPolicy{Rules: nodeRead}, "invalid name ''"},
		{"underscore", &state.ACLPolicy{Name: "a_b", Rules: nodeRead}, "invalid name 'a_b'"},
		{"long name", &state.ACLPolicy{Name: strings.Repeat("a", 129), Rules: nodeRead}, "invalid name"},
		{"long description", &state.ACLPolicy{Name: "p", Description: strings.Repeat("d", 257), Rules: nodeRead}, "description longer than 256"},
		{"rules refused", &state.ACLPolicy{Name: "p", Rules: "node {\n  policy = \"sudo\"\n}"}, `failed to parse rules: p:2:`},
	} {
		_, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "fine", Rules: nodeRead}, tc.p})
		wantErr(t, tc.name, err, server.ErrInvalid, tc.want)
	}
	if s.Store().Snapshot().ACLPolicy("fine") != nil {
		t.Fatal("a refused request wrote a policy")
	}
	if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: strings.Repeat("a", 128), Description: strings.Repeat("d", 256), Rules: nodeRead}}); err != nil {
		t.Fatalf("longest name and description: %v", err)
	}
	_, err = s.UpsertACLPolicies(nil)
	wantErr(t, "no policy", err, server.ErrInvalid, "at least one policy")
	_, err = s.DeleteACLPolicies([]string{"read-only-1", "nope"})
	wantErr(t, "delete unknown", err, server.ErrNotFound, `"nope"`)
	if _, err := s.DeleteACLPolicies([]string{"read-only-1"}); err != nil {
		t.Fatal(err)
	}
	if s.Store().Snapshot().ACLPolicy("read-only-1") != nil {
		t.Fatal("policy not deleted")
	}
}

func TestACL_TokenCreateUpdateDelete(t *testing.T) {
	s := aclServer(t, nil)
	if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "readonly", Rules: nodeRead}, {Name: "ops", Rules: nodeRead}}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	tok, index, err := s.UpsertACLToken(&state.ACLToken{AccessorID: "", SecretID: "mine", Name: "ci", Type: state.ACLClientToken,
		Policies: []string{"readonly", "readonly"}, Global: true}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.AccessorID) != 36 || len(tok.SecretID) != 36 || tok.SecretID == "mine" || !tok.Global || tok.CreateIndex != index ||
		len(tok.Policies) != 1 || tok.Name != "ci" {
		t.Fatalf("created token = %+v", tok)
	}
	created := time.Unix(0, tok.CreateTime)
	if created.Before(before.Add(-time.Second)) || time.Unix(0, tok.ExpirationTime).Sub(created) != time.Hour {
		t.Fatalf("create time %v, expiration %v", created, time.Unix(0, tok.ExpirationTime))
	}

	// An update changes name, type and policies; the rest stays.
	upd, index2, err := s.UpsertACLToken(&state.ACLToken{AccessorID: tok.AccessorID, Name: "ci-2", Type: state.ACLClientToken,
		Policies: []string{"ops", "readonly"}, Global: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if upd.SecretID != tok.SecretID || upd.CreateTime != tok.CreateTime || upd.ExpirationTime != tok.ExpirationTime ||
		upd.CreateIndex != index || upd.ModifyIndex != index2 || upd.Name != "ci-2" || len(upd.Policies) != 2 {
		t.Fatalf("updated token = %+v", upd)
	}
	mgmt, _, err := s.UpsertACLToken(&state.ACLToken{AccessorID: tok.AccessorID, Name: "ci-2", Type: state.ACLManagementToken, Global: true}, 0)
	if err != nil || mgmt.Type != state.ACLManagementToken || len(mgmt.Policies) != 0 {
		t.Fatalf("made management: %+v, %v", mgmt, err)
	}

	_, _, err = s.UpsertACLToken(&state.ACLToken{AccessorID: "no-such-accessor", Type: state.ACLManagementToken}, 0)
	wantErr(t, "update of an unknown token", err, server.ErrNotFound, "no-such-accessor")
	for _, tc := range []struct {
		name string
		tok  state.ACLToken
		ttl  time.Duration
		want string
	}{
		{"toggle global", state.ACLToken{AccessorID: tok.AccessorID, Type: state.ACLManagementToken}, 0, "cannot toggle global mode"},
		{"ttl on update", state.ACLToken{AccessorID: tok.AccessorID, Type: state.ACLManagementToken, Global: true}, time.Hour, "cannot update expiration TTL"},
		{"expiration on update", state.ACLToken{AccessorID: tok.AccessorID, Type: state.ACLManagementToken, Global: true,
			ExpirationTime: tok.ExpirationTime + 1}, 0, "cannot update expiration time"},
		{"no type", state.ACLToken{}, 0, "token type must be client or management"},
		{"client without policy", state.ACLToken{Type: state.ACLClientToken}, 0, "client token missing policies"},
		{"unknown policy", state.ACLToken{Type: state.ACLClientToken, Policies: []string{"readonly", "nope"}}, 0, `cannot find policy "nope"`},
		{"management with policy", state.ACLToken{Type: state.ACLManagementToken, Policies: []string{"readonly"}}, 0,
			"management token cannot be associated with policies"},
		{"long name", state.ACLToken{Type: state.ACLManagementToken, Name: strings.Repeat("n", 257)}, 0, "token name too long"},
		{"negative ttl", state.ACLToken{Type: state.ACLManagementToken}, -time.Minute, "should not be negative"},
		{"ttl too short", state.ACLToken{Type: state.ACLManagementToken}, 59 * time.Second, "cannot be less than 1m0s"},
		{"ttl too long", state.ACLToken{Type: state.ACLManagementToken}, 25 * time.Hour, "cannot be more than 24h0m0s"},
		{"expiration in the past", state.ACLToken{Type: state.ACLManagementToken, ExpirationTime: time.Now().Add(-time.Hour).UnixNano()}, 0,
			"expiration time cannot be before create time"},
		{"ttl and expiration", state.ACLToken{Type: state.ACLManagementToken, ExpirationTime: time.Now().Add(time.Hour).UnixNano()}, time.Hour,
			"cannot both be set"},
	} {
		c := tc.tok
		_, _, err := s.UpsertACLToken(&c, tc.ttl)
		wantErr(t, tc.name, err, server.ErrInvalid, tc.want)
	}
	if n := len(s.Store().Snapshot().ACLTokens("")); n != 1 {
		t.Fatalf("%d tokens after refused requests, want 1", n)
	}
	if _, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken, Name: strings.Repeat("n", 256)}, 24*time.Hour); err != nil {
		t.Fatalf("longest name, longest TTL: %v", err)
	}
	at := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	abs, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken, ExpirationTime: at.UnixNano()}, 0)
	if err != nil || abs.ExpirationTime != at.UnixNano() {
		t.Fatalf("token with an expiration time: %+v, %v", abs, err)
	}

	_, err = s.DeleteACLTokens([]string{tok.AccessorID, "nope"})
	wantErr(t, "delete unknown", err, server.ErrNotFound, `"nope"`)
	if _, err := s.DeleteACLTokens([]string{tok.AccessorID}); err != nil {
		t.Fatal(err)
	}
	if s.Store().Snapshot().ACLTokenByAccessor(tok.AccessorID) != nil {
		t.Fatal("token not deleted")
	}
	_, err = s.DeleteACLTokens(nil)
	wantErr(t, "delete none", err, server.ErrInvalid, "at least one token")
}

// Expired tokens are deleted by the periodic collection; others stay.
func TestACL_ExpiredTokensAreCollected(t *testing.T) {
	s := aclServer(t, func(c *server.Config) {
		c.ACLTokenMinExpirationTTL = time.Millisecond
		c.ACLTokenGCInterval = 20 * time.Millisecond
	})
	short, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	long, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	forever, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken}, 0)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the expired token to be collected", func() bool {
		return s.Store().Snapshot().ACLTokenByAccessor(short.AccessorID) == nil
	})
	if !short.Expired(time.Now()) {
		t.Fatal("collected before it expired")
	}
	snap := s.Store().Snapshot()
	if snap.ACLTokenByAccessor(long.AccessorID) == nil || snap.ACLTokenByAccessor(forever.AccessorID) == nil {
		t.Fatal("a token that has not expired was collected")
	}
}

// A forced collection deletes expired tokens at once.
func TestACL_ForceGCCollectsExpiredTokens(t *testing.T) {
	s := aclServer(t, func(c *server.Config) {
		c.ACLTokenMinExpirationTTL = time.Millisecond
		c.ACLTokenGCInterval = 0
	})
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLManagementToken}, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if s.Store().Snapshot().ACLTokenByAccessor(tok.AccessorID) == nil {
		t.Fatal("collected without a collection")
	}
	_, _, _ = s.ForceGC() // without a core scheduler plugin it refuses the rest
	if s.Store().Snapshot().ACLTokenByAccessor(tok.AccessorID) != nil {
		t.Fatal("expired token not collected by a forced collection")
	}
}

// ACLs survive a restart, from a raft snapshot (bootstrap, policy) and
// from the log after it (token): the bootstrap stays done.
func TestDurable_ACLsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := durableConfig(dir)
	cfg.ACLEnabled = true
	start := func() *server.Server {
		s, err := servertest.Start(t, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	boot, bootIndex, err := s.BootstrapACL(0, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "readonly", Rules: nodeRead}}); err != nil {
		t.Fatal(err)
	}
	roles, _, err := s.UpsertACLRoles([]*state.ACLRole{{Name: "readers", Policies: []string{"readonly"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	client, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken, Policies: []string{"readonly"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Written after the snapshot: restored from the log.
	byRole, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken}, 0, server.ACLRoleLink{Name: "readers"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s = start()
	snap := s.Store().Snapshot()
	if got := snap.ACLTokenBySecret(boot.SecretID); got == nil || got.AccessorID != boot.AccessorID {
		t.Fatalf("bootstrap token lost: %+v", got)
	}
	if got := snap.ACLTokenBySecret(client.SecretID); got == nil || got.ExpirationTime != client.ExpirationTime {
		t.Fatalf("client token lost: %+v", got)
	}
	if r := snap.ACLRoleByName("readers"); r == nil || r.ID != roles[0].ID {
		t.Fatalf("role lost: %+v", r)
	}
	if got := snap.ACLTokenBySecret(byRole.SecretID); got == nil || len(got.Roles) != 1 || got.Roles[0] != roles[0].ID {
		t.Fatalf("token with a role lost: %+v", got)
	}
	if a, _, err := s.ResolveToken(byRole.SecretID); err != nil || !a.AllowNodeRead() {
		t.Fatalf("token with a role after restart: %v", err)
	}
	if snap.ACLPolicy("readonly") == nil || snap.ACLBootstrapIndex() != bootIndex {
		t.Fatalf("policy or bootstrap index (%d, want %d) lost", snap.ACLBootstrapIndex(), bootIndex)
	}
	_, _, err = s.BootstrapACL(0, "")
	wantErr(t, "bootstrap after restart", err, server.ErrForbidden, "ACL bootstrap already done")
}

func TestACL_ConfigDefaultsAndValidation(t *testing.T) {
	cfg := servertest.Config()
	if cfg.ACLEnabled || cfg.ACLTokenMinExpirationTTL != time.Minute || cfg.ACLTokenMaxExpirationTTL != 24*time.Hour ||
		cfg.ACLTokenGCInterval != 5*time.Minute {
		t.Fatalf("ACL defaults: %v %v %v %v", cfg.ACLEnabled, cfg.ACLTokenMinExpirationTTL, cfg.ACLTokenMaxExpirationTTL, cfg.ACLTokenGCInterval)
	}
	for name, modify := range map[string]func(*server.Config){
		"min above max":        func(c *server.Config) { c.ACLTokenMinExpirationTTL = 25 * time.Hour },
		"negative min":         func(c *server.Config) { c.ACLTokenMinExpirationTTL = -time.Second },
		"negative GC interval": func(c *server.Config) { c.ACLTokenGCInterval = -time.Second },
	} {
		c := servertest.Config()
		modify(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Roles are validated as Nomad's: name, description, at least one policy,
// each existing; a name no other role has; an update of a role that
// exists. A create gets a new UUID; an update keeps the ID and create
// index; duplicated policies are kept once. A delete naming an unknown
// role deletes none.
func TestACL_RoleCreateUpdateDelete(t *testing.T) {
	s := aclServer(t, nil)
	for _, name := range []string{"readonly", "ops"} {
		if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: name, Rules: nodeRead}}); err != nil {
			t.Fatal(err)
		}
	}
	roles, index, err := s.UpsertACLRoles([]*state.ACLRole{
		{Name: "readers", Description: "read", Policies: []string{"readonly", "readonly"}},
		{Name: "operators", Policies: []string{"ops", "readonly"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(roles) != 2 || roles[0].Name != "readers" || roles[1].Name != "operators" {
		t.Fatalf("roles = %+v, want in the request's order", roles)
	}
	r := roles[0]
	if len(r.ID) != 36 || r.ID == roles[1].ID || r.CreateIndex != index || r.ModifyIndex != index ||
		r.Description != "read" || len(r.Policies) != 1 || r.Policies[0] != "readonly" {
		t.Fatalf("created role = %+v at %d", r, index)
	}

	long := strings.Repeat("d", 257)
	for _, tc := range []struct {
		name string
		role *state.ACLRole
		want string
	}{
		{"bad name", &state.ACLRole{Name: "a b", Policies: []string{"ops"}}, "invalid name 'a b'"},
		{"empty name", &state.ACLRole{Policies: []string{"ops"}}, "invalid name ''"},
		{"long name", &state.ACLRole{Name: strings.Repeat("n", 129), Policies: []string{"ops"}}, "invalid name"},
		{"long description", &state.ACLRole{Name: "d", Description: long, Policies: []string{"ops"}}, "description longer than 256"},
		{"no policy", &state.ACLRole{Name: "none"}, "at least one policy should be specified"},
		{"unknown policy", &state.ACLRole{Name: "u", Policies: []string{"ops", "nope"}}, "cannot find policy nope"},
		{"name in use", &state.ACLRole{Name: "operators", Policies: []string{"ops"}}, "role with name operators already exists"},
		{"rename to a name in use", &state.ACLRole{ID: r.ID, Name: "operators", Policies: []string{"ops"}},
			"role with name operators already exists"},
		{"unknown ID", &state.ACLRole{ID: "3c1a0d2e-0000-4000-8000-000000000000", Name: "u", Policies: []string{"ops"}},
			"cannot find role 3c1a0d2e-0000-4000-8000-000000000000"},
	} {
		_, _, err := s.UpsertACLRoles([]*state.ACLRole{tc.role})
		wantErr(t, tc.name, err, server.ErrInvalid, tc.want)
	}
	_, _, err = s.UpsertACLRoles([]*state.ACLRole{{Name: "twice", Policies: []string{"ops"}}, {Name: "twice", Policies: []string{"ops"}}})
	wantErr(t, "two new roles of one name", err, server.ErrInvalid, "role with name twice already exists")
	_, _, err = s.UpsertACLRoles(nil)
	wantErr(t, "no roles", err, server.ErrInvalid, "must specify at least one role")
	if got := len(s.Store().Snapshot().ACLRoles("")); got != 2 {
		t.Fatalf("refused writes wrote roles: %d roles", got)
	}

	updated, index2, err := s.UpsertACLRoles([]*state.ACLRole{{ID: r.ID, Name: "viewers", Policies: []string{"ops"}}})
	if err != nil {
		t.Fatal(err)
	}
	u := updated[0]
	if u.ID != r.ID || u.Name != "viewers" || u.Description != "" || u.CreateIndex != index || u.ModifyIndex != index2 ||
		len(u.Policies) != 1 || u.Policies[0] != "ops" {
		t.Fatalf("updated role = %+v", u)
	}
	if s.Store().Snapshot().ACLRoleByName("readers") != nil {
		t.Error("the old name still finds the role")
	}

	_, err = s.DeleteACLRoles([]string{r.ID, "nope"})
	wantErr(t, "delete an unknown role", err, server.ErrNotFound, "nope")
	if s.Store().Snapshot().ACLRoleByID(r.ID) == nil {
		t.Fatal("a refused delete deleted a role")
	}
	if _, err := s.DeleteACLRoles([]string{r.ID}); err != nil {
		t.Fatal(err)
	}
	if s.Store().Snapshot().ACLRoleByID(r.ID) != nil {
		t.Error("role not deleted")
	}
	_, err = s.DeleteACLRoles(nil)
	wantErr(t, "delete no roles", err, server.ErrInvalid, "must specify at least one role")
}

// A token takes roles by ID or by name, stored as IDs once each; a client
// token needs a policy or a role; a management token takes neither; a role
// that does not exist is refused. An update replaces the roles.
func TestACL_TokenRoles(t *testing.T) {
	s := aclServer(t, nil)
	if _, err := s.UpsertACLPolicies([]*state.ACLPolicy{{Name: "readonly", Rules: nodeRead}}); err != nil {
		t.Fatal(err)
	}
	roles, _, err := s.UpsertACLRoles([]*state.ACLRole{{Name: "readers", Policies: []string{"readonly"}},
		{Name: "others", Policies: []string{"readonly"}}})
	if err != nil {
		t.Fatal(err)
	}
	readers, others := roles[0], roles[1]
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Type: state.ACLClientToken}, 0,
		server.ACLRoleLink{ID: readers.ID}, server.ACLRoleLink{Name: "readers"}, server.ACLRoleLink{Name: "others"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.Policies) != 0 || len(tok.Roles) != 2 || tok.Roles[0] != readers.ID || tok.Roles[1] != others.ID {
		t.Fatalf("token roles = %v, want %s, %s", tok.Roles, readers.ID, others.ID)
	}
	for _, tc := range []struct {
		name  string
		tok   *state.ACLToken
		links []server.ACLRoleLink
		want  string
	}{
		{"client without policies or roles", &state.ACLToken{Type: state.ACLClientToken}, nil, "client token missing policies or roles"},
		{"management with a role", &state.ACLToken{Type: state.ACLManagementToken}, []server.ACLRoleLink{{Name: "readers"}},
			"management token cannot be associated with policies or roles"},
		{"unknown role name", &state.ACLToken{Type: state.ACLClientToken}, []server.ACLRoleLink{{Name: "nope"}}, "cannot find role nope"},
		{"unknown role ID", &state.ACLToken{Type: state.ACLClientToken, Roles: []string{"missing-id"}}, nil, "cannot find role missing-id"},
	} {
		_, _, err := s.UpsertACLToken(tc.tok, 0, tc.links...)
		wantErr(t, tc.name, err, server.ErrInvalid, tc.want)
	}
	// An update replaces the roles: here with the ones the token has (by
	// ID, as stored) less one, and a policy.
	up, _, err := s.UpsertACLToken(&state.ACLToken{AccessorID: tok.AccessorID, Type: state.ACLClientToken,
		Policies: []string{"readonly"}, Roles: tok.Roles[1:]}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(up.Roles) != 1 || up.Roles[0] != others.ID || up.Policies[0] != "readonly" {
		t.Fatalf("updated token = %+v", up)
	}
	up, _, err = s.UpsertACLToken(&state.ACLToken{AccessorID: tok.AccessorID, Type: state.ACLClientToken,
		Policies: []string{"readonly"}}, 0)
	if err != nil || up.Roles != nil {
		t.Fatalf("an update without roles keeps %v (%v)", up.Roles, err)
	}
}

// The collection of an expired token is its deletion on the event stream,
// as Nomad's: an ACLTokenDeleted event with the token as it was, but for
// its secret.
func TestACL_CollectedTokenIsAnEvent(t *testing.T) {
	s := aclServer(t, func(c *server.Config) {
		c.ACLTokenMinExpirationTTL = time.Millisecond
		c.ACLTokenGCInterval = 0
	})
	tok, _, err := s.UpsertACLToken(&state.ACLToken{Name: "short", Type: state.ACLManagementToken}, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	sub := s.Events().Subscribe(events.Request{Topics: map[string][]string{events.TopicACLToken: nil}, Index: s.Store().LatestIndex() + 1})
	time.Sleep(20 * time.Millisecond)
	_, _, _ = s.ForceGC() // without a core scheduler plugin it refuses the rest
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	batch, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev := batch.Events[0]
	gone, _ := ev.Payload["ACLToken"].(*state.ACLToken)
	if len(batch.Events) != 1 || ev.Type != events.TypeACLTokenDeleted || ev.Key != tok.AccessorID || gone == nil ||
		gone.Name != "short" || gone.ExpirationTime != tok.ExpirationTime || gone.SecretID != "" {
		t.Fatalf("the collection's events: %+v (token %+v), want %s of %s as it was, without its secret", batch.Events, gone, events.TypeACLTokenDeleted, tok.AccessorID)
	}
}
