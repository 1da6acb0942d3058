package httpapi

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// AllocStopResponse answers an allocation stop.
type AllocStopResponse struct {
	EvalID string
	Index  uint64
}

// AllocStatusRequest is the body of PUT /v1/allocations/status: what a
// node agent reports about its allocations. When NodeID is set, every
// allocation must be on that node, and SecretID must be the node's secret
// if it registered with one.
type AllocStatusRequest struct {
	NodeID   string `json:",omitempty"`
	SecretID string `json:",omitempty"`
	Allocs   []server.AllocUpdate
}

// IndexResponse answers writes that return only an index.
type IndexResponse struct{ Index uint64 }

func (a *API) allocList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	resources, err := boolParam(r, "resources")
	if err != nil {
		return nil, err
	}
	taskStates := true
	if r.URL.Query().Has("task_states") {
		if taskStates, err = boolParam(r, "task_states"); err != nil {
			return nil, err
		}
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		var allocs []*sdk.Allocation
		for _, al := range snap.AllocsByPrefix(o.prefix) {
			if namespaced(r, al.Namespace) {
				allocs = append(allocs, al)
			}
		}
		slices.SortFunc(allocs, func(x, y *sdk.Allocation) int {
			return strings.Compare(indexToken(x.CreateIndex, x.ID), indexToken(y.CreateIndex, y.ID))
		})
		pg, next, err := page(o, allocs, func(al *sdk.Allocation) string { return indexToken(al.CreateIndex, al.ID) }, nil)
		out := stubsOf(pg, func(al *sdk.Allocation) *sdk.AllocationListStub {
			s := al.Stub()
			if !resources {
				s.AllocatedResources = nil
			}
			if !taskStates {
				s.TaskStates = nil
			}
			return s
		})
		return &listed{out, next}, snap.TableIndex(state.TableAllocs), err
	})
}

func (a *API) allocRead(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		al := snap.Alloc(r.PathValue("id"))
		if al == nil {
			return nil, snap.TableIndex(state.TableAllocs), errorf(http.StatusNotFound, "allocation %q not found", r.PathValue("id"))
		}
		return withLegacyAlloc(al), al.ModifyIndex, nil
	})
}

func (a *API) allocStop(w http.ResponseWriter, r *http.Request) (any, error) {
	if on, err := boolParam(r, "no_shutdown_delay"); err != nil {
		return nil, err
	} else if on {
		return nil, errorf(http.StatusBadRequest, "no_shutdown_delay is not supported: Drover has no shutdown delays to skip")
	}
	evalID, index, err := a.srv.StopAlloc(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &AllocStopResponse{EvalID: evalID, Index: index}, nil
}

func (a *API) allocsStatus(w http.ResponseWriter, r *http.Request) (any, error) {
	var req AllocStatusRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if len(req.Allocs) == 0 {
		return nil, errorf(http.StatusBadRequest, "the request has no Allocs")
	}
	// Only a node reports its allocations: the request names the node (and
	// carries its secret, when it has one), and every allocation must be
	// on it. Otherwise anyone could free capacity a node still uses.
	if req.NodeID == "" {
		return nil, errorf(http.StatusBadRequest, "the request names no NodeID: a node reports its own allocations")
	}
	snap := a.srv.Store().Snapshot()
	if err := checkNodeSecret(snap, req.NodeID, req.SecretID); err != nil {
		return nil, err
	}
	for _, u := range req.Allocs {
		if al := snap.Alloc(u.ID); al != nil && al.NodeID != req.NodeID {
			return nil, errorf(http.StatusForbidden, "allocation %s is not on node %s", u.ID, req.NodeID)
		}
	}
	index, err := a.srv.UpdateAllocsFromClient(req.Allocs)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &IndexResponse{Index: index}, nil
}

// checkNodeSecret checks that secret is the node's, if it has one.
func checkNodeSecret(snap *state.Snapshot, nodeID, secret string) error {
	n := snap.Node(nodeID)
	if n == nil {
		return errorf(http.StatusNotFound, "node %q not found", nodeID)
	}
	if n.SecretID != "" && subtle.ConstantTimeCompare([]byte(n.SecretID), []byte(secret)) != 1 {
		return errorf(http.StatusForbidden, "node %s: secret ID does not match", nodeID)
	}
	return nil
}
