package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/nomad/api"
)

// The variables endpoints, Nomad's: /v1/vars lists variables' metadata,
// /v1/var/:path reads, writes (with ?cas=) and deletes one. Each checks
// the token's variables capability on the path (list, read, write,
// destroy) in the request's namespace, as Nomad's do. And the keyring's,
// /v1/operator/keyring/keys, rotate and key/:id, which need a management
// token.

func (a *API) registerVariables() {
	a.on(http.MethodGet, "/v1/vars", anyToken, a.variableList)
	a.on(http.MethodGet, "/v1/var/{path...}", anyToken, a.variableRead)
	a.write("/v1/var/{path...}", anyToken, a.variableWrite)
	a.on(http.MethodDelete, "/v1/var/{path...}", anyToken, a.variableDelete)

	a.on(http.MethodGet, "/v1/operator/keyring/keys", management, a.keyringList)
	a.write("/v1/operator/keyring/rotate", management, a.keyringRotate)
	a.on(http.MethodDelete, "/v1/operator/keyring/key/{id}", management, a.keyringDelete)
}

// allowVariable reports whether the request's token holds capability op
// on the variable at path in namespace ns.
func allowVariable(r *http.Request, ns, path, op string) bool {
	z := authzOf(r)
	return z == nil || z.acl.AllowVariableOperation(ns, path, op)
}

// variableMeta is a variable's metadata, as Nomad's VariableMetadata, its
// lock as the request may see it (lockSeen; held: the lock ID the request
// carries).
func variableMeta(r *http.Request, v *state.Variable, held string) *api.VariableMetadata {
	return &api.VariableMetadata{Namespace: v.Namespace, Path: v.Path, CreateIndex: v.CreateIndex,
		ModifyIndex: v.ModifyIndex, CreateTime: v.CreateTime, ModifyTime: v.ModifyTime, Lock: lockSeen(r, v.Lock, held)}
}

// lockSeen is a variable's lock as Nomad's API shows it to the request,
// durations as Go duration strings. A lock's ID is what lets a write
// change the variable it locks, so, as in Nomad, only its holder (a
// request carrying it as held; an acquisition's answer) and a management
// token (any request, with ACLs disabled) see the lock: a token that may
// read, list or write the variable does not.
func lockSeen(r *http.Request, l *state.VariableLock, held string) *api.VariableLock {
	if l == nil || l.ID != held && !allowed(r, (*acl.ACL).IsManagement) {
		return nil
	}
	return &api.VariableLock{ID: l.ID, TTL: time.Duration(l.TTL).String(), LockDelay: time.Duration(l.LockDelay).String()}
}

// variableWithItems is v, with items (none: only its metadata), its lock
// as the request may see it (lockSeen).
func variableWithItems(r *http.Request, v *state.Variable, items map[string]string, held string) *api.Variable {
	return &api.Variable{Namespace: v.Namespace, Path: v.Path, CreateIndex: v.CreateIndex, ModifyIndex: v.ModifyIndex,
		CreateTime: v.CreateTime, ModifyTime: v.ModifyTime, Items: items, Lock: lockSeen(r, v.Lock, held)}
}

// variableOut is v with its items decrypted, its lock as the request may
// see it (lockSeen).
func (a *API) variableOut(r *http.Request, snap *state.Snapshot, v *state.Variable, held string) (*api.Variable, error) {
	items, err := a.srv.DecryptVariable(snap, v)
	if err != nil {
		return nil, err
	}
	return variableWithItems(r, v, items, held), nil
}

// variableList serves GET /v1/vars: the metadata of the variables of the
// request's namespace ("*": all) under ?prefix= that the token may list,
// ordered by namespace and path, with filter and paging as Nomad's.
func (a *API) variableList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	ns := requestNamespace(r)
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		var vars []*api.VariableMetadata
		for _, v := range snap.Variables(ns, o.prefix) {
			if allowVariable(r, v.Namespace, v.Path, acl.VariablesCapabilityList) {
				vars = append(vars, variableMeta(r, v, ""))
			}
		}
		out, next, err := page(o, vars, func(v *api.VariableMetadata) string { return nsIDToken(v.Namespace, v.Path) },
			func(v *api.VariableMetadata, tok string) int { return nsIDSeek(v.Namespace, v.Path, tok) })
		if err != nil {
			return nil, 0, err
		}
		return &listed{items: out, next: next}, snap.TableIndex(state.TableVariables), nil
	})
}

// variableNamespace is the namespace a variable request names: ?namespace=,
// else the body's, else "default".
func variableNamespace(r *http.Request, body string) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	if body != "" {
		return body
	}
	return requestNamespace(r)
}

// variableRead serves GET /v1/var/:path: the variable with its items, a
// 404 "variable not found" if there is none (a blocking read waits for
// one).
func (a *API) variableRead(w http.ResponseWriter, r *http.Request) (any, error) {
	ns, path := variableNamespace(r, ""), r.PathValue("path")
	if !allowVariable(r, ns, path, acl.VariablesCapabilityRead) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		v := snap.Variable(ns, path)
		if v == nil {
			return nil, snap.TableIndex(state.TableVariables), errorf(http.StatusNotFound, "variable not found")
		}
		out, err := a.variableOut(r, snap, v, "")
		if err != nil {
			return nil, 0, err
		}
		return out, v.ModifyIndex, nil
	})
}

// casParam reads ?cas=N: whether it is there, and N.
func casParam(r *http.Request) (bool, uint64, error) {
	raw := r.URL.Query().Get("cas")
	if raw == "" {
		return false, 0, nil
	}
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return true, 0, errorf(http.StatusBadRequest, "can not parse cas: %v", err)
	}
	return true, n, nil
}

// variableConflict answers a check-and-set that lost as Nomad's: a 409
// whose body is the variable as it is, its items only if the token may
// read them (and empty when there is no variable), its lock only to the
// lock's holder (held: the lock ID the request carries) or a management
// token.
func (a *API) variableConflict(w http.ResponseWriter, r *http.Request, ns, path, held string, c *server.VariableConflict) (any, error) {
	out := &api.Variable{Namespace: ns, Path: path}
	if cur := c.Current; cur != nil {
		out = variableWithItems(r, cur, nil, held)
		if allowVariable(r, ns, path, acl.VariablesCapabilityRead) {
			full, err := a.variableOut(r, a.srv.Store().Snapshot(), cur, held)
			if err != nil {
				return nil, err
			}
			out = full
		}
		setIndex(w, cur.ModifyIndex)
	}
	return written(func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(out)
	}), nil
}

// variableWrite serves PUT /v1/var/:path: the body is the variable (its
// Items; Namespace where ?namespace= is not given; Lock.ID to write a
// variable its holder locked), ?cas=N a check-and-set. It answers the
// variable as written. ?lock-acquire, ?lock-renew and ?lock-release are
// the lock operations (variableLock).
func (a *API) variableWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	var in api.Variable
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	ns, path := variableNamespace(r, in.Namespace), r.PathValue("path")
	if !allowVariable(r, ns, path, acl.VariablesCapabilityWrite) {
		return nil, errPermissionDenied
	}
	if op, err := lockOperation(r); err != nil || op != "" {
		if err != nil {
			return nil, err
		}
		return a.variableLock(w, r, op, ns, path, &in)
	}
	if len(in.Items) == 0 {
		return nil, errorf(http.StatusBadRequest, "variable missing required Items object")
	}
	cas, check, err := casParam(r)
	if err != nil {
		return nil, err
	}
	v, index, err := a.srv.SetVariable(ns, path, in.Items, server.VariableCheck{CAS: cas, Index: check, LockID: in.LockID()})
	if c := (*server.VariableConflict)(nil); errors.As(err, &c) {
		return a.variableConflict(w, r, ns, path, in.LockID(), c)
	}
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return variableWithItems(r, v, in.Items, in.LockID()), nil
}

// The lock operations of PUT /v1/var/:path, Nomad's query parameters.
var lockOperations = []string{"lock-acquire", "lock-renew", "lock-release"}

// lockOperation is the lock operation a write asks for ("" for none).
func lockOperation(r *http.Request) (string, error) {
	var op string
	for _, o := range lockOperations {
		if r.URL.Query().Has(o) {
			if op != "" {
				return "", errorf(http.StatusBadRequest, "only one lock operation at a time: ?%s and ?%s", op, o)
			}
			op = o
		}
	}
	return op, nil
}

// variableLock serves a lock operation: lock-acquire locks the variable
// (with the body's Lock TTL and LockDelay, Go durations, 15s each by
// default; writing its Items if any, which a new variable needs) and
// answers it with its lock's ID; lock-renew renews the body's Lock.ID for
// another TTL and answers the variable's metadata; lock-release takes it
// off. A variable locked by another, a lock not held, or a lost lock's
// delay is a 409 with the variable as it is.
func (a *API) variableLock(w http.ResponseWriter, r *http.Request, op, ns, path string, in *api.Variable) (any, error) {
	var v *state.Variable
	var index uint64
	var err error
	switch op {
	case "lock-acquire":
		var ttl, delay time.Duration
		if l := in.Lock; l != nil {
			if ttl, err = optionalDuration("Lock.TTL", l.TTL); err != nil {
				return nil, err
			}
			if delay, err = optionalDuration("Lock.LockDelay", l.LockDelay); err != nil {
				return nil, err
			}
		}
		v, index, err = a.srv.AcquireVariableLock(ns, path, in.Items, ttl, delay)
	case "lock-renew": // without a Lock.ID: a lock not held, a 409 as Nomad's client expects
		v, err = a.srv.RenewVariableLock(ns, path, in.LockID())
	case "lock-release":
		v, index, err = a.srv.ReleaseVariableLock(ns, path, in.LockID())
	}
	if c := (*server.VariableConflict)(nil); errors.As(err, &c) {
		return a.variableConflict(w, r, ns, path, in.LockID(), c)
	}
	if err != nil {
		return nil, err
	}
	held := in.LockID()
	switch op {
	case "lock-renew":
		setIndex(w, v.ModifyIndex)
		return variableMeta(r, v, held), nil
	case "lock-acquire":
		if v.Lock != nil {
			held = v.Lock.ID // the new lock, its holder's to know
		}
	}
	setIndex(w, index)
	if !allowVariable(r, ns, path, acl.VariablesCapabilityRead) {
		return variableWithItems(r, v, in.Items, held), nil // what it wrote, if anything
	}
	return a.variableOut(r, a.srv.Store().Snapshot(), v, held)
}

// optionalDuration reads a Go duration string ("" is 0).
func optionalDuration(field, raw string) (time.Duration, error) {
	if raw == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		return 0, errorf(http.StatusBadRequest, "%s: %v", field, err)
	}
	return d, nil
}

// variableDelete serves DELETE /v1/var/:path (?cas=N: a check-and-set);
// a 204, as Nomad's.
func (a *API) variableDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	ns, path := variableNamespace(r, ""), r.PathValue("path")
	if !allowVariable(r, ns, path, acl.VariablesCapabilityDestroy) {
		return nil, errPermissionDenied
	}
	cas, check, err := casParam(r)
	if err != nil {
		return nil, err
	}
	index, err := a.srv.DeleteVariable(ns, path, server.VariableCheck{CAS: cas, Index: check})
	if c := (*server.VariableConflict)(nil); errors.As(err, &c) {
		return a.variableConflict(w, r, ns, path, "", c)
	}
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return written(func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }), nil
}

// rootKeyMeta is a root key as the API shows it, without its material
// (Nomad's RootKeyMeta).
func rootKeyMeta(k *state.RootKey) *api.RootKeyMeta {
	return &api.RootKeyMeta{KeyID: k.KeyID, Algorithm: api.EncryptionAlgorithm(k.Algorithm), CreateTime: k.CreateTime,
		CreateIndex: k.CreateIndex, ModifyIndex: k.ModifyIndex, State: api.RootKeyState(k.State)}
}

func (a *API) keyringList(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		return stubsOf(snap.RootKeys(), rootKeyMeta), snap.TableIndex(state.TableRootKeys), nil
	})
}

// keyringRotate serves PUT /v1/operator/keyring/rotate (?algo=, ?full=):
// {"Key": the new key}.
func (a *API) keyringRotate(w http.ResponseWriter, r *http.Request) (any, error) {
	full, err := boolParam(r, "full")
	if err != nil {
		return nil, err
	}
	k, index, err := a.srv.RotateRootKey(r.URL.Query().Get("algo"), full)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return struct{ Key *api.RootKeyMeta }{rootKeyMeta(k)}, nil
}

// keyringDelete serves DELETE /v1/operator/keyring/key/:id. ?force is
// accepted and changes nothing: a key in use is never removed.
func (a *API) keyringDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := boolParam(r, "force"); err != nil {
		return nil, err
	}
	index, err := a.srv.DeleteRootKey(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return struct{}{}, nil
}
