package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// Access control, as Nomad's: with ACLs enabled every request is made with
// a token (X-Nomad-Token, or Authorization: Bearer), or none, which is the
// anonymous policy's. Each route says what it needs of the token (access);
// dispatch resolves the token and checks it before the handler runs, and
// leaves the token's ACL in the request's context for the checks that
// depend on what the handler reads (a list's objects, a job's namespace in
// the body). With ACLs disabled every request may do everything.

// access is what a route needs of the request's token.
type access struct {
	// open: any request, with or without a token (Nomad's unauthenticated
	// endpoints: status, health, metrics, regions, bootstrap).
	open bool
	// cap is a namespace capability the token must hold in the request's
	// namespace (?namespace=, "default"); or one of also.
	cap  string
	also []string
	// lists: the route lists the objects of the request's namespace, or
	// with "*" those of every namespace where the token holds cap. Another
	// route checks "*" as the name of one namespace.
	lists bool
	// object names the object whose namespace cap is checked in, instead
	// of the request's (a route that names an allocation, an evaluation or
	// a deployment by ID); an object that is not found is left to the
	// handler to answer.
	object func(snap *state.Snapshot, r *http.Request) (ns string, ok bool)
	// body: the handler reads the namespace from the request's body and
	// checks cap there itself (a submitted job's: submittedJob).
	body bool
	// check is a permission outside namespaces (node, agent, operator...).
	check func(*acl.ACL) bool
	// pluginRead: the token must have plugin read too, beside cap (Nomad's
	// CSI volume register and detach need it).
	pluginRead bool
	// token: any known token, or none (the anonymous policy); the handler
	// decides (the ACL endpoints, search, the event stream).
	token bool
}

// declared reports whether acc says anything: the zero access would let
// any token do what the route does.
func (acc access) declared() bool {
	return acc.open || acc.token || acc.cap != "" || acc.check != nil
}

// Access constructors, for the route table.
var (
	open       = access{open: true}
	anyToken   = access{token: true}
	nodeRead   = needs((*acl.ACL).AllowNodeRead)
	nodeWrite  = needs((*acl.ACL).AllowNodeWrite)
	agentRead  = needs((*acl.ACL).AllowAgentRead)
	opRead     = needs((*acl.ACL).AllowOperatorRead)
	opWrite    = needs((*acl.ACL).AllowOperatorWrite)
	management = needs((*acl.ACL).IsManagement)
)

func inNS(capability string) access { return access{cap: capability} }

// inNSEither needs either capability in the request's namespace.
func inNSEither(capability, also string) access { return access{cap: capability, also: []string{also}} }

// inNSAny needs any of capabilities in the request's namespace; with
// lists, a list of every namespace lists the objects of those where the
// token holds one of them.
func inNSAny(lists bool, capabilities ...string) access {
	return access{cap: capabilities[0], also: capabilities[1:], lists: lists}
}

// listIn is inNS for a list, which with ?namespace=* lists the objects of
// the namespaces where the token holds capability.
func listIn(capability string) access { return access{cap: capability, lists: true} }

func inBody(capability string) access { return access{cap: capability, body: true} }

func needs(check func(*acl.ACL) bool) access { return access{check: check} }

// nodeReadListing needs node read, and lists the allocations of the
// namespaces where the token holds capability (listable).
func nodeReadListing(capability string) access {
	return access{check: (*acl.ACL).AllowNodeRead, cap: capability}
}

// ofObject checks capability in the namespace of the object get finds
// by the path's {id}.
func ofObject[T any](capability string, get func(*state.Snapshot, string) *T, namespace func(*T) string) access {
	return access{cap: capability, object: func(snap *state.Snapshot, r *http.Request) (string, bool) {
		if o := get(snap, r.PathValue("id")); o != nil {
			return namespace(o), true
		}
		return "", false
	}}
}

func ofAlloc(capability string) access {
	return ofObject(capability, (*state.Snapshot).Alloc, func(a *sdk.Allocation) string { return a.Namespace })
}

func ofEval(capability string) access {
	return ofObject(capability, (*state.Snapshot).Eval, func(e *sdk.Evaluation) string { return e.Namespace })
}

func ofDeployment(capability string) access {
	return ofObject(capability, (*state.Snapshot).Deployment, func(d *sdk.Deployment) string { return d.Namespace })
}

func ofScalingPolicy(capability string) access {
	return ofObject(capability, (*state.Snapshot).ScalingPolicy, func(p *sdk.ScalingPolicy) string { return p.Target["Namespace"] })
}

// authz is what dispatch leaves in a request's context: the token's ACL
// and the capability objects of the route's namespace are listed by.
type authz struct {
	acl   *acl.ACL
	token *state.ACLToken // nil: the anonymous token
	cap   string
	also  []string // capabilities that list as well as cap
	// object is the route's (access.object): a blocking read checks the
	// object it answers with again (objectDenied), as it may have been
	// created while the read waited.
	object func(snap *state.Snapshot, r *http.Request) (ns string, ok bool)
}

type authzKey struct{}

func authzOf(r *http.Request) *authz {
	z, _ := r.Context().Value(authzKey{}).(*authz)
	return z
}

// errPermissionDenied is Nomad's answer to a token that may not do what it
// asks.
var errPermissionDenied = errorf(http.StatusForbidden, "Permission denied")

// requestToken is the request's secret: X-Nomad-Token, or an
// Authorization bearer token.
func requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Nomad-Token"); t != "" {
		return t
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(t)
	}
	return ""
}

// authorize checks the request's token against acc, and returns the
// request carrying its ACL (unchanged when ACLs are disabled).
func (a *API) authorize(r *http.Request, acc access) (*http.Request, error) {
	if !acc.declared() {
		return nil, errorf(http.StatusInternalServerError, "%s %s: the route says nothing of what it needs of an ACL token", r.Method, r.URL.Path)
	}
	if !a.srv.ACLEnabled() || acc.open {
		return r, nil
	}
	aclObj, token, err := a.srv.ResolveToken(requestToken(r))
	if err != nil {
		if errors.Is(err, server.ErrTokenNotFound) || errors.Is(err, server.ErrTokenExpired) {
			return nil, errorf(http.StatusForbidden, "%v", err)
		}
		return nil, err
	}
	z := &authz{acl: aclObj, token: token, cap: acc.cap, also: acc.also, object: acc.object}
	r = r.WithContext(context.WithValue(r.Context(), authzKey{}, z))
	if acc.pluginRead && !aclObj.AllowPluginRead() {
		return nil, errPermissionDenied
	}
	switch {
	case acc.check != nil:
		if !acc.check(aclObj) {
			return nil, errPermissionDenied
		}
	case acc.object != nil:
		if objectDenied(a.srv.Store().Snapshot(), r) {
			return nil, errPermissionDenied
		}
	case acc.cap != "" && !acc.body:
		// A list of every namespace is filtered instead (listable); any
		// other route needs cap in the namespace named, "*" too.
		ns := requestNamespace(r)
		if (ns != "*" || !acc.lists) && !z.holds(ns) {
			return nil, errPermissionDenied
		}
	}
	return r, nil
}

// listable reports whether an object in namespace ns may be listed to the
// request: its token holds there the capability the route lists by.
func listable(r *http.Request, ns string) bool {
	z := authzOf(r)
	return z == nil || z.cap == "" || z.holds(ns)
}

// holds reports whether the token holds the route's capability in
// namespace ns, or one of those it takes instead.
func (z *authz) holds(ns string) bool {
	return z.acl.AllowNamespaceOperationIn(ns, z.cap) ||
		slices.ContainsFunc(z.also, func(c string) bool { return z.acl.AllowNamespaceOperationIn(ns, c) })
}

// allowedIn reports whether the request's token holds capability in
// namespace ns, an object's (always, with ACLs disabled).
func allowedIn(r *http.Request, ns, capability string) bool {
	z := authzOf(r)
	return z == nil || z.acl.AllowNamespaceOperationIn(ns, capability)
}

// allowed reports whether the request's token passes check (always, with
// ACLs disabled).
func allowed(r *http.Request, check func(*acl.ACL) bool) bool {
	z := authzOf(r)
	return z == nil || check(z.acl)
}

// objectDenied reports whether the object the request's route names is,
// in snap, in a namespace where its token lacks the route's capability.
func objectDenied(snap *state.Snapshot, r *http.Request) bool {
	z := authzOf(r)
	if z == nil || z.object == nil {
		return false
	}
	ns, ok := z.object(snap, r)
	return ok && !z.acl.AllowNamespaceOperationIn(ns, z.cap)
}

// namespaceVisible reports whether the request's token may see namespace
// name: it holds any capability there.
func namespaceVisible(r *http.Request, name string) bool {
	return allowed(r, func(a *acl.ACL) bool { return a.AllowNamespace(name) })
}

// poolReadable reports whether the request's token may read node pool
// name.
func poolReadable(r *http.Request, name string) bool {
	return allowed(r, func(a *acl.ACL) bool { return a.AllowNodePoolOperation(name, acl.NodePoolCapabilityRead) })
}

// currentACL resolves the request's token again, for a long-lived answer
// (an event stream) that must follow changes to it: its ACL as the state
// now has it (nil with ACLs disabled), and false once the token no longer
// resolves (deleted or expired).
func (a *API) currentACL(r *http.Request) (*acl.ACL, bool) {
	if authzOf(r) == nil {
		return nil, true
	}
	aclObj, _, err := a.srv.ResolveToken(requestToken(r))
	return aclObj, err == nil
}
