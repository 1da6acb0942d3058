package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// Namespaces and node pools are implicit in Drover: a namespace is in use
// while a job is in it (default always is), a node pool while a node is in
// it (all and default always are). These endpoints read them in Nomad's
// shapes, so that Nomad's CLI and client can list them; they cannot be
// created, changed or deleted.

// Namespace is a namespace as Nomad's API shows one.
type Namespace struct {
	Name        string
	Description string
	Quota       string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// NodePool is a node pool as Nomad's API shows one.
type NodePool struct {
	Name        string
	Description string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// Built-in node pools (Nomad's).
const nodePoolAll = "all"

// namespaces are the namespaces in use, by name: the default one and those
// of the jobs, each created with its first job.
func namespaces(snap *state.Snapshot) map[string]*Namespace {
	byName := map[string]*Namespace{sdk.DefaultNamespace: {Name: sdk.DefaultNamespace, Description: "Default shared namespace"}}
	for _, j := range snap.Jobs("*") {
		ns := byName[j.Namespace]
		if ns == nil {
			ns = &Namespace{Name: j.Namespace, CreateIndex: j.CreateIndex}
			byName[j.Namespace] = ns
		}
		ns.CreateIndex = min(ns.CreateIndex, j.CreateIndex)
		ns.ModifyIndex = max(ns.ModifyIndex, j.ModifyIndex)
	}
	return byName
}

// nodePools are the node pools in use, by name: all, default and those of
// the nodes.
func nodePools(snap *state.Snapshot) map[string]*NodePool {
	byName := map[string]*NodePool{
		nodePoolAll:         {Name: nodePoolAll, Description: "Node pool with all nodes in the cluster."},
		sdk.DefaultNodePool: {Name: sdk.DefaultNodePool, Description: "Default node pool."},
	}
	for _, n := range snap.Nodes() {
		p := byName[n.NodePool]
		if p == nil {
			p = &NodePool{Name: n.NodePool, CreateIndex: n.CreateIndex}
			byName[n.NodePool] = p
		}
		p.CreateIndex = min(p.CreateIndex, n.CreateIndex)
		p.ModifyIndex = max(p.ModifyIndex, n.ModifyIndex)
	}
	return byName
}

func (a *API) namespaceList(w http.ResponseWriter, r *http.Request) (any, error) {
	return listByName(a, w, r, state.TableJobs, namespaces, func(ns *Namespace) string { return ns.Name },
		func(name string) bool { return namespaceVisible(r, name) })
}

// listByName answers a list of named objects, in name order: ?prefix= on
// the name, then the list parameters; only those visible (to the request's
// ACL token) are listed.
func listByName[T any](a *API, w http.ResponseWriter, r *http.Request, table string,
	all func(*state.Snapshot) map[string]*T, name func(*T) string, visible func(name string) bool) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		var in []*T
		for n, v := range all(snap) {
			if strings.HasPrefix(n, o.prefix) && visible(n) {
				in = append(in, v)
			}
		}
		slices.SortFunc(in, func(a, b *T) int { return strings.Compare(name(a), name(b)) })
		out, next, err := page(o, in, name, nil)
		return &listed{out, next}, snap.TableIndex(table), err
	})
}

func (a *API) namespaceRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if !namespaceVisible(r, r.PathValue("name")) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		if ns := namespaces(snap)[r.PathValue("name")]; ns != nil {
			return ns, snap.TableIndex(state.TableJobs), nil
		}
		return nil, snap.TableIndex(state.TableJobs), errorf(http.StatusNotFound, "namespace %q not found (Drover's namespaces are those its jobs use)", r.PathValue("name"))
	})
}

func (a *API) nodePoolList(w http.ResponseWriter, r *http.Request) (any, error) {
	return listByName(a, w, r, state.TableNodes, nodePools, func(p *NodePool) string { return p.Name },
		func(name string) bool { return poolReadable(r, name) })
}

// nodePool returns the named pool, or a 404.
func nodePool(snap *state.Snapshot, name string) (*NodePool, error) {
	if p := nodePools(snap)[name]; p != nil {
		return p, nil
	}
	return nil, errorf(http.StatusNotFound, "node pool %q not found (Drover's node pools are those its nodes are in)", name)
}

func (a *API) nodePoolRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if !poolReadable(r, r.PathValue("name")) {
		return nil, errPermissionDenied
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		p, err := nodePool(snap, r.PathValue("name"))
		return p, snap.TableIndex(state.TableNodes), err
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
			if name == nodePoolAll || n.NodePool == name {
				nodes = append(nodes, n)
			}
		}
		l, err := pageNodes(o, nodes, resources, os)
		return l, index, err
	})
}

// nodePoolJobs lists the jobs that run in a pool, in the request's
// namespace (every job for all), paged and filtered as /v1/jobs, as
// Nomad's NodePool.ListJobs. Jobs may name a pool no node is in yet (one
// Drover's implicit pools do not list): they are listed all the same.
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
			if namespaced(r, j.Namespace) && (name == nodePoolAll || j.NodePool == name) {
				jobs = append(jobs, j)
			}
		}
		l, err := pageJobs(o, snap, jobs, meta)
		return l, jobsIndex(snap), err
	})
}

// implicit refuses writes to namespaces and node pools.
func implicit(what string) handler {
	return func(http.ResponseWriter, *http.Request) (any, error) {
		return nil, errorf(http.StatusBadRequest, "Drover's %ss are implicit: they exist while in use and cannot be written", what)
	}
}
