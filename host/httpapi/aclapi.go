package httpapi

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/nomad/api"
)

// The ACL endpoints, Nomad's: /v1/acl/bootstrap, policies, roles and
// tokens. Their JSON is Nomad's api.ACLPolicy, api.ACLRole and
// api.ACLToken (and their list stubs).

// BootstrapResetFile is the file in a server's data directory whose
// content, the index an earlier bootstrap was done at, lets the bootstrap
// be done again (when its token is lost), as Nomad's acl-bootstrap-reset.
const BootstrapResetFile = "acl-bootstrap-reset"

func (a *API) registerACL() {
	write := a.write
	write("/v1/acl/bootstrap", open, a.aclBootstrap)
	a.on(http.MethodGet, "/v1/acl/policies", anyToken, a.aclPolicyList)
	a.on(http.MethodGet, "/v1/acl/policy/{name}", anyToken, a.aclPolicyRead)
	write("/v1/acl/policy/{name}", management, a.aclPolicyWrite)
	a.on(http.MethodDelete, "/v1/acl/policy/{name}", management, a.aclPolicyDelete)
	a.on(http.MethodGet, "/v1/acl/roles", anyToken, a.aclRoleList)
	write("/v1/acl/role", management, a.aclRoleWrite)
	a.on(http.MethodGet, "/v1/acl/role/{id}", anyToken, a.aclRoleRead)
	write("/v1/acl/role/{id}", management, a.aclRoleWrite)
	a.on(http.MethodDelete, "/v1/acl/role/{id}", management, a.aclRoleDelete)
	a.on(http.MethodGet, "/v1/acl/role/name/{name}", anyToken, a.aclRoleReadByName)
	a.on(http.MethodGet, "/v1/acl/tokens", management, a.aclTokenList)
	write("/v1/acl/token", management, a.aclTokenWrite)
	a.on(http.MethodGet, "/v1/acl/token/self", anyToken, a.aclTokenSelf)
	a.on(http.MethodGet, "/v1/acl/token/{accessor}", anyToken, a.aclTokenRead)
	write("/v1/acl/token/{accessor}", management, a.aclTokenWrite)
	a.on(http.MethodDelete, "/v1/acl/token/{accessor}", management, a.aclTokenDelete)
}

// aclEnabled refuses the ACL endpoints of a cluster without ACLs with the
// server's error (Nomad's words), as its ACL writes do.
func (a *API) aclEnabled() error {
	if !a.srv.ACLEnabled() {
		return server.ErrACLDisabled
	}
	return nil
}

func (a *API) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var req api.BootstrapRequest
	if _, err := decodeOptional(w, r, &req); err != nil {
		return nil, err
	}
	reset, err := a.bootstrapResetIndex()
	if err != nil {
		return nil, err
	}
	t, index, err := a.srv.BootstrapACL(reset, req.BootstrapSecret)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return tokenOut(a.srv.Store().Snapshot(), t), nil
}

// bootstrapResetIndex reads the data directory's BootstrapResetFile (0:
// none).
func (a *API) bootstrapResetIndex() (uint64, error) {
	dir := a.srv.Config().DataDir
	if dir == "" {
		return 0, nil
	}
	path := filepath.Join(dir, BootstrapResetFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		a.log.Error().Err(err).Msg("read the ACL bootstrap reset file")
		return 0, errorf(http.StatusInternalServerError, "the server could not read its %s file", BootstrapResetFile)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		// The caller may have no token: the file is named in the log,
		// not to it.
		a.log.Error().Str("path", path).Msg("the ACL bootstrap reset file does not hold an index")
		return 0, errorf(http.StatusBadRequest, "the server's %s file does not hold an index", BootstrapResetFile)
	}
	return n, nil
}

// holdsPolicy reports whether the request's token names policy, itself
// or through one of its roles as snap has them (a management token holds
// every one, and every request the anonymous policy), as Nomad's.
func holdsPolicy(snap *state.Snapshot, r *http.Request, policy string) bool {
	z := authzOf(r)
	if z == nil || z.acl.IsManagement() || policy == server.AnonymousPolicy {
		return true
	}
	if z.token == nil {
		return false
	}
	if slices.Contains(z.token.Policies, policy) {
		return true
	}
	for _, id := range z.token.Roles {
		if role := snap.ACLRoleByID(id); role != nil && slices.Contains(role.Policies, policy) {
			return true
		}
	}
	return false
}

// holdsRole reports whether the request's token holds the role of ID id
// (a management token holds every one).
func holdsRole(r *http.Request, id string) bool {
	z := authzOf(r)
	return isManagement(r) || z.token != nil && slices.Contains(z.token.Roles, id)
}

// isManagement reports whether the request may do everything: its token
// is a management token, or ACLs are disabled.
func isManagement(r *http.Request) bool {
	z := authzOf(r)
	return z == nil || z.acl.IsManagement()
}

// aclPolicyList lists the policies, all of them to a management token and
// those it holds to another, as Nomad's.
func (a *API) aclPolicyList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*api.ACLPolicyListStub{}
		for _, p := range snap.ACLPolicies(prefix) {
			if holdsPolicy(snap, r, p.Name) {
				out = append(out, &api.ACLPolicyListStub{Name: p.Name, Description: p.Description,
					CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
			}
		}
		return out, snap.TableIndex(state.TableACLPolicies), nil
	})
}

func (a *API) aclPolicyRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		if !holdsPolicy(snap, r, name) {
			return nil, 0, errPermissionDenied
		}
		p := snap.ACLPolicy(name)
		if p == nil {
			return nil, snap.TableIndex(state.TableACLPolicies), errorf(http.StatusNotFound, "ACL policy not found")
		}
		return policyOut(p), p.ModifyIndex, nil
	})
}

func (a *API) aclPolicyWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var p api.ACLPolicy
	if err := decode(w, r, &p); err != nil {
		return nil, err
	}
	if p.Name != r.PathValue("name") {
		return nil, errorf(http.StatusBadRequest, "Policy name does not match request path") // Nomad's words
	}
	if p.JobACL != nil {
		return nil, errorf(http.StatusBadRequest, "policies attached to jobs (JobACL) are not supported: Drover runs no workload identities")
	}
	index, err := a.srv.UpsertACLPolicies([]*state.ACLPolicy{{Name: p.Name, Description: p.Description, Rules: p.Rules}})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return nil, nil
}

func (a *API) aclPolicyDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	index, err := a.srv.DeleteACLPolicies([]string{r.PathValue("name")})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return nil, nil
}

func (a *API) aclTokenList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*api.ACLTokenListStub{}
		for _, t := range snap.ACLTokens(prefix) {
			full := tokenOut(snap, t)
			out = append(out, &api.ACLTokenListStub{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type,
				Policies: t.Policies, Roles: full.Roles, Global: t.Global, CreateTime: full.CreateTime, ExpirationTime: full.ExpirationTime,
				CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex})
		}
		return out, snap.TableIndex(state.TableACLTokens), nil
	})
}

// aclTokenSelf answers the request's own token (none for the anonymous
// one).
func (a *API) aclTokenSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	z := authzOf(r)
	if z == nil || z.token == nil {
		return nil, errorf(http.StatusNotFound, "ACL token not found")
	}
	setIndex(w, z.token.ModifyIndex)
	return tokenOut(a.srv.Store().Snapshot(), z.token), nil
}

// aclTokenRead answers a token to a management token, or to itself.
func (a *API) aclTokenRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	accessor := r.PathValue("accessor")
	if z := authzOf(r); z != nil && !z.acl.IsManagement() && (z.token == nil || z.token.AccessorID != accessor) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		t := snap.ACLTokenByAccessor(accessor)
		if t == nil {
			return nil, snap.TableIndex(state.TableACLTokens), errorf(http.StatusNotFound, "ACL token not found")
		}
		return tokenOut(snap, t), t.ModifyIndex, nil
	})
}

// aclTokenWrite creates a token (POST /v1/acl/token) or updates one (POST
// /v1/acl/token/:accessor).
func (a *API) aclTokenWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.ACLToken
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	accessor := r.PathValue("accessor")
	switch {
	case accessor == "" && in.AccessorID != "":
		return nil, errorf(http.StatusBadRequest, "a new token cannot be given an AccessorID; update a token at /v1/acl/token/:accessor")
	case accessor != "" && in.AccessorID != accessor:
		return nil, errorf(http.StatusBadRequest, "Token AccessorID does not match request path") // Nomad's words
	case accessor == "" && in.SecretID != "":
		// Nomad's Upload (a token with its own secret) is for replicating
		// tokens between regions, which Drover does not do. An update
		// carries the token as read, secret and times included, which
		// cannot change.
		return nil, errorf(http.StatusBadRequest, "a token's SecretID is made by the server and cannot be given")
	}
	t := &state.ACLToken{AccessorID: in.AccessorID, Name: in.Name, Type: in.Type, Policies: in.Policies, Global: in.Global}
	if in.ExpirationTime != nil {
		t.ExpirationTime = in.ExpirationTime.UnixNano()
	}
	// Roles by ID, or by name when the link has no ID, as Nomad's.
	var roles []server.ACLRoleLink
	for _, l := range in.Roles {
		if l != nil {
			roles = append(roles, server.ACLRoleLink{ID: l.ID, Name: l.Name})
		}
	}
	t, index, err := a.srv.UpsertACLToken(t, in.ExpirationTTL, roles...)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return tokenOut(a.srv.Store().Snapshot(), t), nil
}

func (a *API) aclTokenDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	index, err := a.srv.DeleteACLTokens([]string{r.PathValue("accessor")})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return nil, nil
}

// tokenOut is a stored token as Nomad's API gives it: its roles as links
// with their current names (from snap), a role deleted since left out, as
// Nomad's state leaves out the links of deleted roles.
func tokenOut(snap *state.Snapshot, t *state.ACLToken) *api.ACLToken {
	out := &api.ACLToken{AccessorID: t.AccessorID, SecretID: t.SecretID, Name: t.Name, Type: t.Type,
		Policies: t.Policies, Global: t.Global, CreateTime: time.Unix(0, t.CreateTime).UTC(),
		CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex}
	for _, id := range t.Roles {
		if r := snap.ACLRoleByID(id); r != nil {
			out.Roles = append(out.Roles, &api.ACLTokenRoleLink{ID: r.ID, Name: r.Name})
		}
	}
	if t.ExpirationTime != 0 {
		exp := time.Unix(0, t.ExpirationTime).UTC()
		out.ExpirationTime = &exp
	}
	return out
}

// policyOut is a stored policy as Nomad's API gives it.
func policyOut(p *state.ACLPolicy) *api.ACLPolicy {
	return &api.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules,
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

// roleOut is a stored role as Nomad's API gives it.
func roleOut(r *state.ACLRole) *api.ACLRole {
	out := &api.ACLRole{ID: r.ID, Name: r.Name, Description: r.Description, Policies: []*api.ACLRolePolicyLink{},
		CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, &api.ACLRolePolicyLink{Name: p})
	}
	return out
}

// aclRoleList lists the roles whose ID starts with ?prefix=, all of them
// to a management token and those it holds to another, as Nomad's.
func (a *API) aclRoleList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*api.ACLRoleListStub{}
		for _, role := range snap.ACLRoles(prefix) {
			if holdsRole(r, role.ID) {
				full := roleOut(role)
				out = append(out, &api.ACLRoleListStub{ID: full.ID, Name: full.Name, Description: full.Description,
					Policies: full.Policies, CreateIndex: full.CreateIndex, ModifyIndex: full.ModifyIndex})
			}
		}
		return out, snap.TableIndex(state.TableACLRoles), nil
	})
}

// aclRoleRead answers a role by ID to a management token, or to a token
// that holds it.
func (a *API) aclRoleRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if !holdsRole(r, id) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		role := snap.ACLRoleByID(id)
		if role == nil {
			return nil, snap.TableIndex(state.TableACLRoles), errorf(http.StatusNotFound, "ACL role not found")
		}
		return roleOut(role), role.ModifyIndex, nil
	})
}

// aclRoleReadByName answers a role by name to a management token, or to a
// token that holds it (another token is refused whether or not a role of
// that name exists).
func (a *API) aclRoleReadByName(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		role := snap.ACLRoleByName(name)
		if role == nil {
			if !isManagement(r) {
				return nil, 0, errPermissionDenied
			}
			return nil, snap.TableIndex(state.TableACLRoles), errorf(http.StatusNotFound, "ACL role not found")
		}
		if !holdsRole(r, role.ID) {
			return nil, 0, errPermissionDenied
		}
		return roleOut(role), role.ModifyIndex, nil
	})
}

// aclRoleWrite creates a role (POST/PUT /v1/acl/role) or updates one
// (POST/PUT /v1/acl/role/:id), answering it as stored.
func (a *API) aclRoleWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	var in api.ACLRole
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	switch {
	case id == "" && in.ID != "":
		return nil, errorf(http.StatusBadRequest, "a new role cannot be given an ID; update a role at /v1/acl/role/:id")
	case id != "" && in.ID != id:
		return nil, errorf(http.StatusBadRequest, "ACL role ID does not match request path") // Nomad's words
	}
	role := &state.ACLRole{ID: in.ID, Name: in.Name, Description: in.Description}
	for _, p := range in.Policies {
		if p != nil {
			role.Policies = append(role.Policies, p.Name)
		}
	}
	roles, index, err := a.srv.UpsertACLRoles([]*state.ACLRole{role})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return roleOut(roles[0]), nil
}

func (a *API) aclRoleDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.aclEnabled(); err != nil {
		return nil, err
	}
	index, err := a.srv.DeleteACLRoles([]string{r.PathValue("id")})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return nil, nil
}
