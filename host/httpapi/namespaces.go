package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// Namespaces and node pools, as Nomad's: written by an operator (a node
// registering in a pool makes it), read in Nomad's shapes, so that
// Nomad's CLI and client work with them.

// Namespace is a namespace as Nomad 1.6's API shows one. Quota and
// NodePoolConfiguration are Nomad Enterprise's: never set, and refused in
// a write (namespaceWrite).
type Namespace struct {
	Name                  string
	Description           string
	Quota                 string
	Capabilities          *NamespaceCapabilities
	NodePoolConfiguration *api.NamespaceNodePoolConfiguration
	Meta                  map[string]string
	CreateIndex           uint64
	ModifyIndex           uint64
}

// NamespaceCapabilities are a namespace's capabilities as Nomad 1.6's
// API shows them: task drivers alone (later versions' network modes are
// refused in a write).
type NamespaceCapabilities struct {
	EnabledTaskDrivers  []string
	DisabledTaskDrivers []string
}

// NodePool is a node pool as Nomad's API shows one; its
// SchedulerConfiguration is Nomad Enterprise's, never set, and refused in
// a write.
type NodePool struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	SchedulerConfiguration *api.NodePoolSchedulerConfiguration
	CreateIndex            uint64
	ModifyIndex            uint64
}

func namespaceOut(ns *state.Namespace) *Namespace {
	out := &Namespace{Name: ns.Name, Description: ns.Description, Meta: noneIfEmpty(ns.Meta),
		CreateIndex: ns.CreateIndex, ModifyIndex: ns.ModifyIndex}
	if c := ns.Capabilities; c != nil {
		out.Capabilities = &NamespaceCapabilities{EnabledTaskDrivers: c.EnabledTaskDrivers, DisabledTaskDrivers: c.DisabledTaskDrivers}
	}
	return out
}

func nodePoolOut(p *state.NodePool) *NodePool {
	return &NodePool{Name: p.Name, Description: p.Description, Meta: noneIfEmpty(p.Meta), CreateIndex: p.CreateIndex,
		ModifyIndex: p.ModifyIndex}
}

// noneIfEmpty is m, nil when empty: a namespace or pool written without
// Meta reads back as one never given any (null), whatever the log's
// encoding made of it.
func noneIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func (a *API) namespaceList(w http.ResponseWriter, r *http.Request) (any, error) {
	return listByName(a, w, r, state.TableNamespaces, (*state.Snapshot).Namespaces, namespaceOut,
		func(ns *Namespace) string { return ns.Name }, func(name string) bool { return namespaceVisible(r, name) })
}

// listByName answers a list of named objects, in name order (the order
// rows gives them in), shown as out shows them: ?prefix= on the name, then
// the list parameters; only those visible (to the request's ACL token)
// are listed.
func listByName[S, T any](a *API, w http.ResponseWriter, r *http.Request, table string, rows func(*state.Snapshot) []*S,
	out func(*S) *T, name func(*T) string, visible func(name string) bool) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		var in []*T
		for _, row := range rows(snap) {
			if v := out(row); strings.HasPrefix(name(v), o.prefix) && visible(name(v)) {
				in = append(in, v)
			}
		}
		items, next, err := page(o, in, name, nil)
		return &listed{items, next}, snap.TableIndex(table), err
	})
}

func (a *API) namespaceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if !namespaceVisible(r, r.PathValue("name")) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		if ns := snap.Namespace(r.PathValue("name")); ns != nil {
			return namespaceOut(ns), snap.TableIndex(state.TableNamespaces), nil
		}
		return nil, snap.TableIndex(state.TableNamespaces), errorf(http.StatusNotFound, "Namespace not found")
	})
}

func (a *API) nodePoolList(w http.ResponseWriter, r *http.Request) (any, error) {
	return listByName(a, w, r, state.TableNodePools, (*state.Snapshot).NodePools, nodePoolOut,
		func(p *NodePool) string { return p.Name }, func(name string) bool { return poolReadable(r, name) })
}

func (a *API) nodePoolRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if !poolReadable(r, r.PathValue("name")) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		if p := snap.NodePool(r.PathValue("name")); p != nil {
			return nodePoolOut(p), snap.TableIndex(state.TableNodePools), nil
		}
		return nil, snap.TableIndex(state.TableNodePools), errorf(http.StatusNotFound, "node pool not found")
	})
}

// poolListParams reads the list parameters of a pool's nodes or jobs:
// those of any list, without prefix, which Nomad refuses there as
// ambiguous (the pool's name, or the IDs listed?).
func poolListParams(r *http.Request) (*listOptions, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	if o.prefix != "" {
		return nil, errorf(http.StatusBadRequest, "prefix argument not allowed")
	}
	return o, nil
}

// nodePoolNodes lists the nodes of a pool (every node for all), paged and
// filtered as /v1/nodes, as Nomad's NodePool.ListNodes. A pool no node is
// in lists none, as Nomad's lists of a pool that does not exist: a
// blocking query waits for the pool's first node.
func (a *API) nodePoolNodes(w http.ResponseWriter, r *http.Request) (any, error) {
	if !poolReadable(r, r.PathValue("name")) {
		return nil, errPermissionDenied
	}
	o, err := poolListParams(r)
	if err != nil {
		return nil, err
	}
	resources, os, err := nodeStubFields(r)
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		name, index := r.PathValue("name"), snap.TableIndex(state.TableNodes)
		var nodes []*sdk.Node
		for _, n := range snap.Nodes() {
			if name == sdk.AllNodePool || n.NodePool == name {
				nodes = append(nodes, n)
			}
		}
		l, err := pageNodes(o, nodes, resources, os)
		return l, index, err
	})
}

// nodePoolJobs lists the jobs that run in a pool, in the request's
// namespace (every job for all), paged and filtered as /v1/jobs, as
// Nomad's NodePool.ListJobs.
func (a *API) nodePoolJobs(w http.ResponseWriter, r *http.Request) (any, error) {
	if !poolReadable(r, r.PathValue("name")) {
		return nil, errPermissionDenied
	}
	o, err := poolListParams(r)
	if err != nil {
		return nil, err
	}
	meta, err := boolParam(r, "meta")
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		name := r.PathValue("name")
		var jobs []*sdk.Job
		for _, j := range snap.Jobs("*") {
			if namespaced(r, j.Namespace) && (name == sdk.AllNodePool || j.NodePool == name) {
				jobs = append(jobs, j)
			}
		}
		l, err := pageJobs(o, snap, jobs, meta)
		return l, jobsIndex(snap), err
	})
}

// namespaceWrite serves PUT and POST /v1/namespace and
// /v1/namespace/:name, as Nomad's: the body is one namespace, named as
// the path names it.
func (a *API) namespaceWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	var in api.Namespace // what Nomad's clients send, later versions' fields too
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	if name := r.PathValue("name"); name != "" && in.Name != name {
		return nil, errorf(http.StatusBadRequest, "Namespace name does not match request path")
	}
	c := in.Capabilities
	if unsupported := setFields(map[string]bool{"Quota": in.Quota != "", "NodePoolConfiguration": in.NodePoolConfiguration != nil,
		"VaultConfiguration": in.VaultConfiguration != nil, "ConsulConfiguration": in.ConsulConfiguration != nil,
		"RequiredExtraClaims": len(in.RequiredExtraClaims) > 0, "OptionalExtraClaims": len(in.OptionalExtraClaims) > 0,
		"Capabilities.EnabledNetworkModes":  c != nil && len(c.EnabledNetworkModes) > 0,
		"Capabilities.DisabledNetworkModes": c != nil && len(c.DisabledNetworkModes) > 0}); unsupported != "" {
		return nil, errorf(http.StatusBadRequest, "Invalid namespace %q: %s: Nomad Enterprise's or a later version's, which Drover does not have", in.Name, unsupported)
	}
	ns := &state.Namespace{Name: in.Name, Description: in.Description, Meta: in.Meta}
	if c != nil {
		ns.Capabilities = &state.NamespaceCapabilities{EnabledTaskDrivers: c.EnabledTaskDrivers, DisabledTaskDrivers: c.DisabledTaskDrivers}
	}
	index, err := a.srv.UpsertNamespaces([]*state.Namespace{ns})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return noBody, nil
}

// setFields names, in order, the fields set that are true in set: those
// of a write Drover does not have.
func setFields(set map[string]bool) string {
	var names []string
	for name, ok := range set {
		if ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// namespaceDelete serves DELETE /v1/namespace/:name.
func (a *API) namespaceDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	index, err := a.srv.DeleteNamespace(r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return noBody, nil
}

// nodePoolWrite serves PUT and POST /v1/node/pools and
// /v1/node/pool/:name, as Nomad's: the body is one pool, named as the
// path names it; the token needs write in the pool.
func (a *API) nodePoolWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	var in api.NodePool // what Nomad's clients send, later versions' fields too
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	if name := r.PathValue("name"); name != "" && in.Name != name {
		return nil, errorf(http.StatusBadRequest, "Node pool name does not match request path")
	}
	if !allowed(r, func(a *acl.ACL) bool { return a.AllowNodePoolOperation(in.Name, acl.NodePoolCapabilityWrite) }) {
		return nil, errPermissionDenied
	}
	if unsupported := setFields(map[string]bool{"SchedulerConfiguration": in.SchedulerConfiguration != nil,
		"NodeIdentityTTL": in.NodeIdentityTTL != 0}); unsupported != "" {
		return nil, errorf(http.StatusBadRequest, "invalid node pool %q: %s: Nomad Enterprise's or a later version's, which Drover does not have", in.Name, unsupported)
	}
	index, err := a.srv.UpsertNodePools([]*state.NodePool{{Name: in.Name, Description: in.Description, Meta: in.Meta}})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return noBody, nil
}

// nodePoolDelete serves DELETE /v1/node/pool/:name; the token needs
// delete in the pool.
func (a *API) nodePoolDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	name := r.PathValue("name")
	if !allowed(r, func(a *acl.ACL) bool { return a.AllowNodePoolOperation(name, acl.NodePoolCapabilityDelete) }) {
		return nil, errPermissionDenied
	}
	index, err := a.srv.DeleteNodePool(name)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return noBody, nil
}
