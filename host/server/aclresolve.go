package server

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/state"
)

// Errors of a token that does not resolve, in Nomad's words (the API
// answers them with a 403).
var (
	ErrTokenNotFound = errors.New("ACL token not found")
	ErrTokenExpired  = errors.New("ACL token expired")
)

// AnonymousPolicy is the policy of requests made without a token, as
// Nomad's: until an operator writes it, they may do nothing.
const AnonymousPolicy = "anonymous"

// ResolveToken returns what the token whose secret is secret may do, and
// the token (nil for a request without one, which gets the anonymous
// policy's ACL). With ACLs disabled every request may do everything.
// Tokens are read from this server's state, so a follower resolves them
// as the leader does once it has the write.
func (s *Server) ResolveToken(secret string) (*acl.ACL, *state.ACLToken, error) {
	if !s.cfg.ACLEnabled {
		return acl.Management, nil, nil
	}
	snap := s.store.Snapshot()
	if secret == "" {
		return s.acls.of(snap, []string{AnonymousPolicy}), nil, nil
	}
	t := snap.ACLTokenBySecret(secret)
	switch {
	case t == nil:
		return nil, nil, ErrTokenNotFound
	case t.Expired(s.now()):
		return nil, nil, ErrTokenExpired
	case t.Type == state.ACLManagementToken:
		return acl.Management, t, nil
	}
	return s.acls.of(snap, tokenPolicies(snap, t)), t, nil
}

// tokenPolicies is the names of the policies a client token grants: its
// own and its roles', as Nomad's. A role deleted since grants nothing.
// Roles are flattened into policy names before the cache is asked, so its
// key (policy names and modify indexes) changes when a role's policies do.
func tokenPolicies(snap *state.Snapshot, t *state.ACLToken) []string {
	if len(t.Roles) == 0 {
		return t.Policies
	}
	names := slices.Clone(t.Policies)
	for _, id := range t.Roles {
		if r := snap.ACLRoleByID(id); r != nil {
			names = append(names, r.Policies...)
		}
	}
	return names
}

// aclCache keeps the ACLs of the policy sets tokens hold, so that a
// request parses no policy: an ACL is kept under its policies' names and
// modify indexes, and a changed policy makes a new key. A snapshot
// restored from another cluster may bring a policy of the same name and
// index with other rules, so an entry keeps the rules it was computed
// from and is used only while they are the policies' (the same strings,
// most often the same memory, which compares at once). The cache is
// emptied when it grows past maxCachedACLs (old keys are never asked for
// again).
type aclCache struct {
	mu   sync.Mutex
	acls map[string]*cachedACL
}

// cachedACL is an ACL and the rules of the policies it was computed from,
// in the order of its key.
type cachedACL struct {
	rules []string
	acl   *acl.ACL
}

const maxCachedACLs = 1024

// of returns the ACL of the named policies as snap has them. A policy
// that does not exist (deleted since the token was made) grants nothing,
// as in Nomad, and so does one whose rules no longer parse (written by an
// older version).
func (c *aclCache) of(snap *state.Snapshot, names []string) *acl.ACL {
	var policies []*state.ACLPolicy
	var rules []string
	var key strings.Builder
	for _, name := range slices.Compact(slices.Sorted(slices.Values(names))) {
		if p := snap.ACLPolicy(name); p != nil {
			policies = append(policies, p)
			rules = append(rules, p.Rules)
			key.WriteString(name + "@" + strconv.FormatUint(p.ModifyIndex, 10) + "\n")
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.acls[key.String()]; ok && slices.Equal(e.rules, rules) {
		return e.acl
	}
	var parsed []*acl.Policy
	for _, p := range policies {
		if pol, err := acl.Parse(p.Name, p.Rules); err == nil {
			parsed = append(parsed, pol)
		}
	}
	a := acl.New(parsed)
	if c.acls == nil || len(c.acls) >= maxCachedACLs {
		c.acls = map[string]*cachedACL{}
	}
	c.acls[key.String()] = &cachedACL{rules: rules, acl: a}
	return a
}
