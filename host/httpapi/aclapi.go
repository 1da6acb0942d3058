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

	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/nomad/api"
)

// The ACL endpoints, Nomad's: /v1/acl/bootstrap, policies and tokens. Their
// JSON is Nomad's api.ACLPolicy and api.ACLToken (and their list stubs).

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
	a.on(http.MethodGet, "/v1/acl/tokens", management, a.aclTokenList)
	write("/v1/acl/token", management, a.aclTokenWrite)
	a.on(http.MethodGet, "/v1/acl/token/self", anyToken, a.aclTokenSelf)
	a.on(http.MethodGet, "/v1/acl/token/{accessor}", anyToken, a.aclTokenRead)
	write("/v1/acl/token/{accessor}", management, a.aclTokenWrite)
	a.on(http.MethodDelete, "/v1/acl/token/{accessor}", management, a.aclTokenDelete)
}

// errACLDisabled answers the ACL endpoints of a cluster without ACLs, in
// Nomad's words.
var errACLDisabled = errorf(http.StatusBadRequest, "ACL support disabled")

func (a *API) aclEnabled() error {
	if !a.srv.ACLEnabled() {
		return errACLDisabled
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
	return tokenOut(t), nil
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
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, errorf(http.StatusBadRequest, "%s: %q is not an index", path, strings.TrimSpace(string(raw)))
	}
	return n, nil
}

// holdsPolicy reports whether the request's token names policy (a
// management token holds every one).
func holdsPolicy(r *http.Request, policy string) bool {
	z := authzOf(r)
	if z == nil || z.acl.IsManagement() {
		return true
	}
	return z.token != nil && slices.Contains(z.token.Policies, policy)
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
			if holdsPolicy(r, p.Name) {
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
	if !holdsPolicy(r, name) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		p := snap.ACLPolicy(name)
		if p == nil {
			return nil, snap.TableIndex(state.TableACLPolicies), errorf(http.StatusNotFound, "ACL policy not found")
		}
		return &api.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules,
			CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}, p.ModifyIndex, nil
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
			full := tokenOut(t)
			out = append(out, &api.ACLTokenListStub{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type,
				Policies: t.Policies, Global: t.Global, CreateTime: full.CreateTime, ExpirationTime: full.ExpirationTime,
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
	return tokenOut(z.token), nil
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
		return tokenOut(t), t.ModifyIndex, nil
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
	case len(in.Roles) > 0:
		return nil, errorf(http.StatusBadRequest, "ACL roles are not supported by Drover: give the token its policies")
	}
	t := &state.ACLToken{AccessorID: in.AccessorID, Name: in.Name, Type: in.Type, Policies: in.Policies, Global: in.Global}
	if in.ExpirationTime != nil {
		t.ExpirationTime = in.ExpirationTime.UnixNano()
	}
	t, index, err := a.srv.UpsertACLToken(t, in.ExpirationTTL)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return tokenOut(t), nil
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

// tokenOut is a stored token as Nomad's API gives it.
func tokenOut(t *state.ACLToken) *api.ACLToken {
	out := &api.ACLToken{AccessorID: t.AccessorID, SecretID: t.SecretID, Name: t.Name, Type: t.Type,
		Policies: t.Policies, Global: t.Global, CreateTime: time.Unix(0, t.CreateTime).UTC(),
		CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex}
	if t.ExpirationTime != 0 {
		exp := time.Unix(0, t.ExpirationTime).UTC()
		out.ExpirationTime = &exp
	}
	return out
}
