package server

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/google/uuid"
	"github.com/tinylib/msgp/msgp"
)

// ACLs, as Nomad's: policies (rules in Nomad's policy language), roles
// (named sets of policies), client and management tokens (with an
// optional expiration, holding policies and roles), and a bootstrap that
// makes the first management token once. The HTTP API resolves the token
// of each request and enforces it; these are the writes it calls. Auth
// methods, binding rules, one-time tokens and replication are left out
// (Global is stored as given).

// ACL limits, as Nomad's.
const (
	maxACLPolicyDescriptionLength = 256
	maxACLRoleDescriptionLength   = 256
	maxACLTokenNameLength         = 256
	// maxExpiredACLTokenBatch bounds the expired tokens one entry deletes
	// (Nomad's ACLMaxExpiredBatchSize).
	maxExpiredACLTokenBatch = 4096
)

// validACLPolicyName is what an ACL policy's name may be (Nomad's
// ValidPolicyName).
var validACLPolicyName = regexp.MustCompile("^[a-zA-Z0-9-]{1,128}$")

// validACLRoleName is what an ACL role's name may be (Nomad's
// ValidACLRoleName).
var validACLRoleName = regexp.MustCompile("^[a-zA-Z0-9-]{1,128}$")

// ErrACLDisabled refuses the ACL endpoints and writes of a server without
// ACLs, in Nomad's words (aclDisabled); it is ErrInvalid.
var ErrACLDisabled = badRequest(errors.New("ACL support disabled"))

// ACLEnabled reports whether ACLs are on (Config.ACLEnabled).
func (s *Server) ACLEnabled() bool { return s.cfg.ACLEnabled }

// BootstrapACL makes the initial management token, "Bootstrap Token"
// (global), whose secret is secret (a UUID) or a new UUID. Once done it is
// refused (ErrForbidden: "ACL bootstrap already done (reset index: N)"),
// unless resetIndex is N, the index the bootstrap was done at (which the
// API reads from the data dir's acl-bootstrap-reset file); a resetIndex
// given before any bootstrap is ignored, as Nomad ignores it. Of two
// bootstraps racing, one is refused when its entry applies.
func (s *Server) BootstrapACL(resetIndex uint64, secret string) (*state.ACLToken, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if secret != "" && !isUUID(secret) {
		return nil, 0, badRequest(errors.New("invalid acl token"))
	}
	snap := s.store.Snapshot()
	req := &fsm.ACLTokenBootstrapRequest{}
	if cur := snap.ACLBootstrapIndex(); cur != 0 {
		switch resetIndex {
		case 0:
			return nil, 0, forbidden(fmt.Errorf("ACL bootstrap already done (reset index: %d)", cur))
		case cur:
			req.ResetIndex = cur
		default:
			return nil, 0, forbidden(fmt.Errorf("Invalid bootstrap reset index (specified %d, reset index: %d)", resetIndex, cur))
		}
	}
	if secret == "" {
		secret = newID()
	} else if snap.ACLTokenBySecret(secret) != nil {
		return nil, 0, badRequest(errors.New("invalid acl token: the secret is another token's"))
	}
	req.Token = &state.ACLToken{AccessorID: newID(), SecretID: secret, Name: "Bootstrap Token",
		Type: state.ACLManagementToken, Global: true, CreateTime: s.now().UnixNano()}
	index, err := s.Apply(fsm.ACLTokenBootstrapRequestType, req)
	if errors.Is(err, fsm.ErrACLBootstrapped) {
		// Another bootstrap applied first.
		return nil, 0, forbidden(fmt.Errorf("ACL bootstrap already done (reset index: %d)", s.store.Snapshot().ACLBootstrapIndex()))
	}
	if err != nil {
		return nil, 0, err
	}
	return s.storedToken(req.Token.AccessorID, index)
}

// storedToken returns the token as the write at index stored it.
func (s *Server) storedToken(accessor string, index uint64) (*state.ACLToken, uint64, error) {
	t := s.store.Snapshot().ACLTokenByAccessor(accessor)
	if t == nil {
		// Deleted by a write that committed right after.
		return nil, 0, fmt.Errorf("%w: ACL token %q", ErrNotFound, accessor)
	}
	return t, index, nil
}

// isUUID reports whether v is a UUID in its canonical, 36-character form
// (Nomad's helper.IsUUID).
func isUUID(v string) bool {
	_, err := uuid.Parse(v)
	return err == nil && len(v) == 36
}

// UpsertACLPolicies creates or replaces ACL policies. Each one's name must
// match ^[a-zA-Z0-9-]{1,128}$, its description be at most 256 characters,
// and its rules parse (ErrInvalid otherwise, naming the policy and where
// its rules are wrong).
func (s *Server) UpsertACLPolicies(ps []*state.ACLPolicy) (uint64, error) {
	if !s.cfg.ACLEnabled {
		return 0, ErrACLDisabled
	}
	if len(ps) == 0 {
		return 0, badRequest(errors.New("must specify at least one policy"))
	}
	req := &fsm.ACLPolicyUpsertRequest{Policies: make([]*state.ACLPolicy, 0, len(ps))}
	for i, p := range ps {
		if p == nil {
			return 0, badRequest(fmt.Errorf("policy %d is missing", i))
		}
		var errs []error
		if !validACLPolicyName.MatchString(p.Name) {
			errs = append(errs, fmt.Errorf("invalid name '%s'", p.Name))
		}
		if _, err := acl.Parse(p.Name, p.Rules); err != nil {
			errs = append(errs, fmt.Errorf("failed to parse rules: %w", err))
		}
		if len(p.Description) > maxACLPolicyDescriptionLength {
			errs = append(errs, fmt.Errorf("description longer than %d", maxACLPolicyDescriptionLength))
		}
		if len(errs) > 0 {
			return 0, badRequest(fmt.Errorf("policy %q invalid: %w", p.Name, errors.Join(errs...)))
		}
		req.Policies = append(req.Policies, &state.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules})
	}
	return s.Apply(fsm.ACLPolicyUpsertRequestType, req)
}

// DeleteACLPolicies deletes ACL policies by name; an unknown name is
// ErrNotFound and deletes none. Tokens keep naming a deleted policy, as
// in Nomad: it grants nothing unless a policy of that name comes back.
func (s *Server) DeleteACLPolicies(names []string) (uint64, error) {
	return s.deleteACL("policy", names, func(snap *state.Snapshot, name string) bool { return snap.ACLPolicy(name) != nil },
		fsm.ACLPolicyDeleteRequestType, &fsm.ACLPolicyDeleteRequest{Names: slices.Clone(names)})
}

// deleteACL applies msg, the entry that deletes the ACL objects (what:
// policy, role or token) keys names, once each of them exists (ErrNotFound
// otherwise, and none is deleted).
func (s *Server) deleteACL(what string, keys []string, exists func(*state.Snapshot, string) bool,
	t fsm.MessageType, msg msgp.Marshaler) (uint64, error) {
	if !s.cfg.ACLEnabled {
		return 0, ErrACLDisabled
	}
	if len(keys) == 0 {
		return 0, badRequest(fmt.Errorf("must specify at least one %s", what))
	}
	snap := s.store.Snapshot()
	for _, key := range keys {
		if !exists(snap, key) {
			return 0, fmt.Errorf("%w: ACL %s %q", ErrNotFound, what, key)
		}
	}
	return s.Apply(t, msg)
}

// UpsertACLRoles creates roles (ID empty: each gets a new UUID) or
// updates them (by ID; ErrInvalid "cannot find role" for an unknown one,
// as Nomad answers). Each role's name must match ^[a-zA-Z0-9-]{1,128}$
// and be no other role's (nor another's in the request), its description
// be at most 256 characters, and it must name at least one policy, each
// of which exists (duplicates are dropped). It returns the roles as
// stored, in the request's order.
func (s *Server) UpsertACLRoles(rs []*state.ACLRole) ([]*state.ACLRole, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if len(rs) == 0 {
		return nil, 0, badRequest(errors.New("must specify at least one role"))
	}
	snap := s.store.Snapshot()
	req := &fsm.ACLRoleUpsertRequest{Roles: make([]*state.ACLRole, 0, len(rs))}
	names := map[string]string{} // name -> the ID of the role in the request that takes it
	for i, r := range rs {
		if r == nil {
			return nil, 0, badRequest(fmt.Errorf("role %d is missing", i))
		}
		var errs []error
		if !validACLRoleName.MatchString(r.Name) {
			errs = append(errs, fmt.Errorf("invalid name '%s'", r.Name))
		}
		if len(r.Description) > maxACLRoleDescriptionLength {
			errs = append(errs, fmt.Errorf("description longer than %d", maxACLRoleDescriptionLength))
		}
		if len(r.Policies) < 1 {
			errs = append(errs, errors.New("at least one policy should be specified"))
		}
		if len(errs) > 0 {
			return nil, 0, badRequest(fmt.Errorf("role %d invalid: %w", i, errors.Join(errs...)))
		}
		role := &state.ACLRole{ID: r.ID, Name: r.Name, Description: r.Description}
		if r.ID == "" {
			role.ID = newID()
		} else {
			existing := snap.ACLRoleByID(r.ID)
			if existing == nil {
				return nil, 0, badRequest(fmt.Errorf("cannot find role %s", r.ID))
			}
			// The FSM applies the update only to this role (not one
			// deleted and made again since).
			role.CreateIndex = existing.CreateIndex
		}
		if other := snap.ACLRoleByName(r.Name); other != nil && other.ID != role.ID {
			return nil, 0, badRequest(fmt.Errorf("role with name %s already exists", r.Name))
		}
		if id, ok := names[r.Name]; ok && id != role.ID {
			return nil, 0, badRequest(fmt.Errorf("role with name %s already exists", r.Name))
		}
		names[r.Name] = role.ID
		for _, p := range r.Policies {
			if snap.ACLPolicy(p) == nil {
				return nil, 0, badRequest(fmt.Errorf("cannot find policy %s", p))
			}
			if !slices.Contains(role.Policies, p) {
				role.Policies = append(role.Policies, p)
			}
		}
		req.Roles = append(req.Roles, role)
	}
	index, err := s.Apply(fsm.ACLRoleUpsertRequestType, req)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(req.Roles))
	for i, r := range req.Roles {
		ids[i] = r.ID
	}
	out, err := storedACL(s, "role", ids, (*state.Snapshot).ACLRoleByID)
	return out, index, err
}

// storedACL returns the ACL objects (what: role, auth method, binding
// rule) keys name as a write just stored them, in keys' order: ErrNotFound
// if one was deleted by a write that committed right after.
func storedACL[T any](s *Server, what string, keys []string, get func(*state.Snapshot, string) *T) ([]*T, error) {
	snap := s.store.Snapshot()
	out := make([]*T, 0, len(keys))
	for _, k := range keys {
		stored := get(snap, k)
		if stored == nil {
			return nil, fmt.Errorf("%w: ACL %s %q", ErrNotFound, what, k)
		}
		out = append(out, stored)
	}
	return out, nil
}

// DeleteACLRoles deletes roles by ID; an unknown ID is ErrNotFound and
// deletes none. Tokens keep holding a deleted role's ID, as Nomad's keep
// the link: it grants nothing.
func (s *Server) DeleteACLRoles(ids []string) (uint64, error) {
	return s.deleteACL("role", ids, func(snap *state.Snapshot, id string) bool { return snap.ACLRoleByID(id) != nil },
		fsm.ACLRoleDeleteRequestType, &fsm.ACLRoleDeleteRequest{IDs: slices.Clone(ids)})
}

// ACLRoleLink names a role a token is to hold, by ID or, if ID is empty,
// by name (Nomad's ACLTokenRoleLink).
type ACLRoleLink struct {
	ID   string
	Name string
}

// UpsertACLToken creates a token (t.AccessorID empty) or updates one.
//
// A new token gets new accessor and secret UUIDs (whatever t has), the
// server's time as CreateTime, and Global as t has it. It expires ttl
// after its creation if ttl > 0, or at t.ExpirationTime if that is set
// (not both); either must be within the configured minimum and maximum
// TTL.
//
// An update (ErrNotFound for an unknown accessor) changes Name, Type,
// Policies and roles; Global and the expiration are fixed at creation: an
// update with another Global, a ttl, or another ExpirationTime is refused.
//
// The token's roles are t.Roles (role IDs) and roles (by ID or name),
// each resolved to its ID and kept once; a role that does not exist is
// refused ("cannot find role", as Nomad's).
//
// Either way: Name is at most 256 characters; Type is "client", with at
// least one policy or role, each policy existing, or "management", with
// neither. Invalid requests are ErrInvalid.
func (s *Server) UpsertACLToken(t *state.ACLToken, ttl time.Duration, roles ...ACLRoleLink) (*state.ACLToken, uint64, error) {
	if !s.cfg.ACLEnabled {
		return nil, 0, ErrACLDisabled
	}
	if t == nil {
		return nil, 0, badRequest(errors.New("token is missing"))
	}
	snap := s.store.Snapshot()
	var existing *state.ACLToken
	if t.AccessorID != "" {
		if existing = snap.ACLTokenByAccessor(t.AccessorID); existing == nil {
			return nil, 0, fmt.Errorf("%w: ACL token %q", ErrNotFound, t.AccessorID)
		}
	}
	var errs []error
	if len(t.Name) > maxACLTokenNameLength {
		errs = append(errs, errors.New("token name too long"))
	}
	var policies []string
	for _, p := range t.Policies {
		if !slices.Contains(policies, p) {
			policies = append(policies, p)
		}
	}
	links := make([]ACLRoleLink, 0, len(t.Roles)+len(roles))
	for _, id := range t.Roles {
		links = append(links, ACLRoleLink{ID: id})
	}
	links = append(links, roles...)
	var roleIDs []string
	for _, l := range links {
		var r *state.ACLRole
		ident := l.ID
		if ident != "" {
			r = snap.ACLRoleByID(ident)
		} else {
			ident = l.Name
			r = snap.ACLRoleByName(ident)
		}
		switch {
		case r == nil:
			errs = append(errs, fmt.Errorf("cannot find role %s", ident))
		case !slices.Contains(roleIDs, r.ID):
			roleIDs = append(roleIDs, r.ID)
		}
	}
	switch t.Type {
	case state.ACLClientToken:
		if len(policies) == 0 && len(links) == 0 {
			errs = append(errs, errors.New("client token missing policies or roles"))
		}
		for _, p := range policies {
			if snap.ACLPolicy(p) == nil {
				errs = append(errs, fmt.Errorf("cannot find policy %q", p))
			}
		}
	case state.ACLManagementToken:
		if len(policies) != 0 || len(links) != 0 {
			errs = append(errs, errors.New("management token cannot be associated with policies or roles"))
		}
	default:
		errs = append(errs, errors.New("token type must be client or management"))
	}
	now := s.now()
	tok := &state.ACLToken{Name: t.Name, Type: t.Type, Policies: policies, Roles: roleIDs}
	if existing == nil {
		tok.AccessorID, tok.SecretID, tok.Global, tok.CreateTime = newID(), newID(), t.Global, now.UnixNano()
		minTTL, maxTTL := s.cfg.ACLTokenMinExpirationTTL, s.cfg.ACLTokenMaxExpirationTTL
		var expiresIn time.Duration
		switch {
		case ttl < 0:
			errs = append(errs, fmt.Errorf("token expiration TTL '%s' should not be negative", ttl))
		case ttl > 0 && t.ExpirationTime != 0:
			errs = append(errs, errors.New("expiration TTL and expiration time cannot both be set"))
		case ttl > 0:
			expiresIn = ttl
			tok.ExpirationTime = now.Add(ttl).UnixNano()
		case t.ExpirationTime != 0:
			expiresIn = time.Unix(0, t.ExpirationTime).Sub(now)
			tok.ExpirationTime = t.ExpirationTime
			if expiresIn < 0 {
				errs = append(errs, errors.New("expiration time cannot be before create time"))
			}
		}
		if tok.ExpirationTime != 0 && expiresIn >= 0 {
			if expiresIn > maxTTL {
				errs = append(errs, fmt.Errorf("expiration time cannot be more than %s in the future (was %s)", maxTTL, expiresIn))
			} else if expiresIn < minTTL {
				errs = append(errs, fmt.Errorf("expiration time cannot be less than %s in the future (was %s)", minTTL, expiresIn))
			}
		}
	} else {
		if t.Global != existing.Global {
			errs = append(errs, errors.New("cannot toggle global mode"))
		}
		if ttl != 0 {
			errs = append(errs, errors.New("cannot update expiration TTL"))
		}
		if t.ExpirationTime != 0 && t.ExpirationTime != existing.ExpirationTime {
			errs = append(errs, errors.New("cannot update expiration time"))
		}
		tok.AccessorID, tok.SecretID, tok.Global = existing.AccessorID, existing.SecretID, existing.Global
		tok.CreateTime, tok.ExpirationTime = existing.CreateTime, existing.ExpirationTime
		// The FSM applies the update only to this token (not one deleted
		// and made again since).
		tok.CreateIndex = existing.CreateIndex
	}
	if len(errs) > 0 {
		return nil, 0, badRequest(fmt.Errorf("token invalid: %w", errors.Join(errs...)))
	}
	index, err := s.Apply(fsm.ACLTokenUpsertRequestType, &fsm.ACLTokenUpsertRequest{Tokens: []*state.ACLToken{tok}})
	if err != nil {
		return nil, 0, err
	}
	return s.storedToken(tok.AccessorID, index)
}

// DeleteACLTokens deletes tokens by accessor ID; an unknown accessor is
// ErrNotFound and deletes none.
func (s *Server) DeleteACLTokens(accessors []string) (uint64, error) {
	return s.deleteACL("token", accessors, func(snap *state.Snapshot, id string) bool { return snap.ACLTokenByAccessor(id) != nil },
		fsm.ACLTokenDeleteRequestType, &fsm.ACLTokenDeleteRequest{AccessorIDs: slices.Clone(accessors)})
}

// collectExpiredACLTokens deletes the tokens expired by the server's clock,
// a batch per entry, as Nomad's core GC does (with ACLs on only). It
// returns how many it deleted.
func (s *Server) collectExpiredACLTokens() (int, error) {
	if !s.cfg.ACLEnabled {
		return 0, nil
	}
	n := 0
	for {
		expired := s.store.Snapshot().ExpiredACLTokens(s.now().UnixNano(), maxExpiredACLTokenBatch)
		if len(expired) == 0 {
			return n, nil
		}
		ids := make([]string, len(expired))
		for i, t := range expired {
			ids[i] = t.AccessorID
		}
		if _, err := s.Apply(fsm.ACLTokenDeleteRequestType, &fsm.ACLTokenDeleteRequest{AccessorIDs: ids}); err != nil {
			// An operator may have deleted one meanwhile: the next round
			// reads the state again.
			return n, fmt.Errorf("server: delete expired ACL tokens: %w", err)
		}
		n += len(ids)
		if len(expired) < maxExpiredACLTokenBatch {
			return n, nil
		}
	}
}
