package httpapi

import (
	"net/http"
	"time"

	"github.com/drover-sched/drover/host/server"
)

// DrainSpec is how to drain a node (Nomad's api.DrainSpec).
type DrainSpec struct {
	// Deadline in nanoseconds: 0 no deadline, negative at once.
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// NodeDrainRequest is the body of PUT /v1/node/:id/drain: a DrainSpec
// starts a drain, none cancels it.
type NodeDrainRequest struct {
	NodeID       string
	DrainSpec    *DrainSpec
	MarkEligible bool
	Meta         map[string]string
	WriteRequest
}

// NodeDrainResponse answers a drain change.
type NodeDrainResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	Index           uint64
}

func (a *API) nodeDrain(w http.ResponseWriter, r *http.Request) (any, error) {
	var req NodeDrainRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.NodeID != "" && req.NodeID != r.PathValue("id") {
		return nil, errorf(http.StatusBadRequest, "the request's NodeID %q does not match the path's %q", req.NodeID, r.PathValue("id"))
	}
	var spec *server.DrainSpec
	if d := req.DrainSpec; d != nil {
		spec = &server.DrainSpec{Deadline: d.Deadline, IgnoreSystemJobs: d.IgnoreSystemJobs}
	}
	index, err := a.srv.UpdateNodeDrain(r.PathValue("id"), spec, req.MarkEligible)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &NodeDrainResponse{NodeModifyIndex: index, Index: index}, nil
}

// JobScaleRequest is the body of POST /v1/job/:id/scale (Nomad's
// api.ScalingRequest): Target names the group, Count its new count.
type JobScaleRequest struct {
	Count          *int64
	Target         map[string]string
	Message        string
	Error          bool
	Meta           map[string]any
	PolicyOverride bool
	JobModifyIndex uint64
	WriteRequest
}

func (a *API) jobScale(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobScaleRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	group := req.Target["Group"]
	if group == "" {
		return nil, errorf(http.StatusBadRequest, "the scaling target names no group (Target.Group)")
	}
	if req.Count == nil {
		// Nomad records scaling events without a count; Drover keeps no
		// scaling events, so there is nothing to do.
		return nil, errorf(http.StatusBadRequest, "a scaling request needs a Count")
	}
	evalID, index, err := a.srv.ScaleJob(requestNamespace(r), r.PathValue("id"), group, int(*req.Count))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &JobRegisterResponse{EvalID: evalID, EvalCreateIndex: index, JobModifyIndex: index, Index: index}, nil
}
