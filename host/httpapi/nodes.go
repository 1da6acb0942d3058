package httpapi

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// NodeListStub is the short form of a node in listings.
type NodeListStub struct {
	Address               string
	ID                    string
	Attributes            map[string]string `json:",omitempty"`
	Datacenter            string
	Name                  string
	NodeClass             string
	NodePool              string
	Version               string
	Drain                 bool
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	Drivers               map[string]*sdk.DriverInfo
	HostVolumes           map[string]sdk.Opaque
	LastDrain             sdk.Opaque
	NodeResources         *sdk.NodeResources         `json:",omitempty"`
	ReservedResources     *sdk.NodeReservedResources `json:",omitempty"`
	CreateIndex           uint64
	ModifyIndex           uint64
}

// NodeRegisterRequest is the body of PUT /v1/nodes: Nomad's Node JSON.
type NodeRegisterRequest struct {
	Node *RegisteredNode
}

// RegisteredNode is a node as a node agent registers it: Nomad's Node JSON,
// with the node's secret. Fields of Nomad's Node that Drover does not use
// (the legacy Resources and Reserved, the cgroup parent) are accepted and
// dropped.
type RegisteredNode struct {
	sdk.Node
	// SecretID authenticates the node's later heartbeats, registrations
	// and allocation reports; it is never returned.
	SecretID          string          `json:",omitempty"`
	Resources         json.RawMessage `json:",omitempty"`
	Reserved          json.RawMessage `json:",omitempty"`
	CgroupParent      string          `json:",omitempty"`
	GCVolumesOnNodeGC bool            `json:",omitempty"`
}

// NodeUpdateResponse answers node registrations, heartbeats, purges and
// forced evaluations.
type NodeUpdateResponse struct {
	// HeartbeatTTL is how long the server waits for the next heartbeat, in
	// nanoseconds (Nomad's time.Duration).
	HeartbeatTTL    time.Duration
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	Index           uint64
}

// NodeHeartbeatRequest is the optional body of PUT /v1/node/:id/heartbeat.
type NodeHeartbeatRequest struct {
	SecretID string
}

// NodeEligibilityRequest is the body of PUT /v1/node/:id/eligibility.
type NodeEligibilityRequest struct {
	NodeID      string
	Eligibility string
	WriteRequest
}

// NodeEligibilityResponse answers an eligibility change.
type NodeEligibilityResponse struct {
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	Index           uint64
}

// nodeStub is Nomad's Node.Stub: its Address is the host of the node's
// HTTP address.
func nodeStub(n *sdk.Node, resources, os bool) *NodeListStub {
	addr, _, err := net.SplitHostPort(n.HTTPAddr)
	if err != nil {
		addr = n.HTTPAddr
	}
	s := &NodeListStub{Address: addr, ID: n.ID, Datacenter: n.Datacenter, Name: n.Name,
		NodeClass: n.NodeClass, NodePool: n.NodePool, Version: n.Attributes["nomad.version"], Drain: n.DrainStrategy != nil,
		SchedulingEligibility: n.SchedulingEligibility, Status: n.Status, StatusDescription: n.StatusDescription,
		Drivers: n.Drivers, HostVolumes: n.HostVolumes, LastDrain: n.LastDrain, CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex}
	if resources {
		s.NodeResources, s.ReservedResources = n.NodeResources, n.ReservedResources
	}
	if os {
		s.Attributes = map[string]string{"os.name": n.Attributes["os.name"], "os.version": n.Attributes["os.version"]}
	}
	return s
}

// nodeStubFields reads what a node list adds to its stubs: ?resources
// (NodeResources and ReservedResources) and ?os (the OS attributes).
func nodeStubFields(r *http.Request) (resources, os bool, err error) {
	if resources, err = boolParam(r, "resources"); err != nil {
		return false, false, err
	}
	os, err = boolParam(r, "os")
	return resources, os, err
}

// filterable returns copies of nodes without their secrets, for a list's
// filter to read: Nomad's filter reads a node's SecretID too, behind an ACL
// that Drover does not have, and a filter such as `SecretID matches "^a"`
// would give the secret away.
func filterable(o *listOptions, nodes []*sdk.Node) []*sdk.Node {
	if o.filter == nil {
		return nodes // nothing reads the secrets: the stubs leave them out
	}
	out := make([]*sdk.Node, len(nodes))
	for i, n := range nodes {
		c := *n
		c.SecretID = ""
		out[i] = &c
	}
	return out
}

func (a *API) nodeList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	resources, os, err := nodeStubFields(r)
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		l, err := pageNodes(o, snap.NodesByPrefix(o.prefix), resources, os)
		return l, snap.TableIndex(state.TableNodes), err
	})
}

// pageNodes is a page of nodes as their list stubs, filtered without
// their secrets.
func pageNodes(o *listOptions, nodes []*sdk.Node, resources, os bool) (*listed, error) {
	out, next, err := page(o, filterable(o, nodes), func(n *sdk.Node) string { return n.ID }, nil)
	return &listed{stubsOf(out, func(n *sdk.Node) *NodeListStub { return nodeStub(n, resources, os) }), next}, err
}

func (a *API) nodeRead(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		n := snap.Node(r.PathValue("id"))
		if n == nil {
			return nil, snap.TableIndex(state.TableNodes), errorf(http.StatusNotFound, "node %q not found", r.PathValue("id"))
		}
		return withLegacyNode(n), n.ModifyIndex, nil
	})
}

func (a *API) nodeAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		allocs := slices.DeleteFunc(snap.AllocsByNode(r.PathValue("id")),
			func(al *sdk.Allocation) bool { return !listable(r, al.Namespace) })
		// As Nomad's Node.GetAllocs: the highest ModifyIndex of the
		// node's allocations, so that a blocking read (a node agent's)
		// wakes when one of them changes, not on every allocation write;
		// the allocations table's index when the node has none.
		var index uint64
		for _, al := range allocs {
			index = max(index, al.ModifyIndex)
		}
		if len(allocs) == 0 {
			index = snap.TableIndex(state.TableAllocs)
		}
		return withLegacyAllocs(allocs), index, nil
	})
}

func (a *API) nodeRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var req NodeRegisterRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.Node == nil {
		return nil, errorf(http.StatusBadRequest, "the request has no Node")
	}
	n := req.Node.Node
	n.SecretID = req.Node.SecretID
	ttl, nw, err := a.srv.RegisterNode(&n)
	if err != nil {
		return nil, err
	}
	setIndex(w, nw.Index)
	return &NodeUpdateResponse{HeartbeatTTL: ttl, EvalIDs: nw.EvalIDs, EvalCreateIndex: evalCreateIndex(nw),
		NodeModifyIndex: nw.Index, Index: nw.Index}, nil
}

// evalCreateIndex is the index of a node write's evals, zero without any.
func evalCreateIndex(nw server.NodeWrite) uint64 {
	if len(nw.EvalIDs) == 0 {
		return 0
	}
	return nw.Index
}

func (a *API) nodeHeartbeat(w http.ResponseWriter, r *http.Request) (any, error) {
	var req NodeHeartbeatRequest
	if _, err := decodeOptional(w, r, &req); err != nil {
		return nil, err
	}
	if err := checkNodeSecret(a.srv.Store().Snapshot(), r.PathValue("id"), req.SecretID); err != nil {
		return nil, err
	}
	ttl, nw, err := a.srv.NodeHeartbeat(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	index := nw.Index
	if index == 0 {
		index = a.srv.Store().LatestIndex()
	}
	setIndex(w, index)
	return &NodeUpdateResponse{HeartbeatTTL: ttl, EvalIDs: nw.EvalIDs, EvalCreateIndex: evalCreateIndex(nw),
		NodeModifyIndex: nw.Index, Index: index}, nil
}

func (a *API) nodeEligibility(w http.ResponseWriter, r *http.Request) (any, error) {
	var req NodeEligibilityRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.NodeID != "" && req.NodeID != r.PathValue("id") {
		return nil, errorf(http.StatusBadRequest, "the request's NodeID %q does not match the path's %q", req.NodeID, r.PathValue("id"))
	}
	nw, err := a.srv.UpdateNodeEligibility(r.PathValue("id"), req.Eligibility)
	if err != nil {
		return nil, err
	}
	setIndex(w, nw.Index)
	return &NodeEligibilityResponse{EvalIDs: nw.EvalIDs, EvalCreateIndex: evalCreateIndex(nw), NodeModifyIndex: nw.Index,
		Index: nw.Index}, nil
}

// nodeEvaluate forces the evaluation of a node's jobs, as Nomad's
// Node.Evaluate: the answer is Nomad's NodeUpdateResponse, whose Index is
// the evals' (0 without any) and NodeModifyIndex 0 (the node is not
// written).
func (a *API) nodeEvaluate(w http.ResponseWriter, r *http.Request) (any, error) {
	nw, err := a.srv.EvaluateNode(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, nw.Index)
	return &NodeUpdateResponse{EvalIDs: nw.EvalIDs, EvalCreateIndex: evalCreateIndex(nw), Index: nw.Index}, nil
}

func (a *API) nodePurge(w http.ResponseWriter, r *http.Request) (any, error) {
	nw, err := a.srv.DeregisterNode(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, nw.Index)
	return &NodeUpdateResponse{EvalIDs: nw.EvalIDs, EvalCreateIndex: evalCreateIndex(nw), NodeModifyIndex: nw.Index,
		Index: nw.Index}, nil
}
