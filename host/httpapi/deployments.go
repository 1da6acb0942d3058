package httpapi

import (
	"net/http"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// DeploymentPromoteRequest is the body of PUT /v1/deployment/promote/:id:
// All promotes every group with canaries, Groups the named ones.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	WriteRequest
}

// DeploymentPauseRequest is the body of PUT /v1/deployment/pause/:id.
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
	WriteRequest
}

// DeploymentFailRequest is the optional body of PUT /v1/deployment/fail/:id.
type DeploymentFailRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentAllocHealthRequest is the body of PUT
// /v1/deployment/allocation-health/:id.
type DeploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	WriteRequest
}

// DeploymentUpdateResponse answers a deployment change (Nomad's shape).
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	Index                 uint64
}

func (a *API) checkDeploymentID(r *http.Request, body string) error {
	if body != "" && body != r.PathValue("id") {
		return errorf(http.StatusBadRequest, "the request's DeploymentID %q does not match the path's %q", body, r.PathValue("id"))
	}
	return nil
}

func (a *API) deploymentPromote(w http.ResponseWriter, r *http.Request) (any, error) {
	var req DeploymentPromoteRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if err := a.checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, err
	}
	if req.All == (len(req.Groups) > 0) {
		return nil, errorf(http.StatusBadRequest, "give either All or Groups")
	}
	evalID, index, err := a.srv.PromoteDeployment(r.PathValue("id"), req.Groups)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &DeploymentUpdateResponse{EvalID: evalID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
}

func (a *API) deploymentFail(w http.ResponseWriter, r *http.Request) (any, error) {
	var req DeploymentFailRequest
	if _, err := decodeOptional(w, r, &req); err != nil {
		return nil, err
	}
	if err := a.checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, err
	}
	evalID, reverted, index, err := a.srv.FailDeployment(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &DeploymentUpdateResponse{EvalID: evalID, EvalCreateIndex: index, DeploymentModifyIndex: index,
		RevertedJobVersion: reverted, Index: index}, nil
}

// deploymentAllocHealth sets allocations' health; the answer names the
// eval written with it and, when an unhealthy mark failed the deployment
// with an auto-revert, the version reverted to.
func (a *API) deploymentAllocHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var req DeploymentAllocHealthRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if err := a.checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, err
	}
	evalID, reverted, index, err := a.srv.SetAllocHealth(r.PathValue("id"), req.HealthyAllocationIDs, req.UnhealthyAllocationIDs)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return deploymentUpdated(evalID, reverted, index), nil
}

func (a *API) deploymentPause(w http.ResponseWriter, r *http.Request) (any, error) {
	var req DeploymentPauseRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if err := a.checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, err
	}
	evalID, index, err := a.srv.PauseDeployment(r.PathValue("id"), req.Pause)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return deploymentUpdated(evalID, nil, index), nil
}

// deploymentUpdated is the answer to a change written at index, with its
// eval if it made one (as Nomad's, EvalCreateIndex is set only then: a
// pause makes none) and the job version an auto-revert went back to.
func deploymentUpdated(evalID string, reverted *uint64, index uint64) *DeploymentUpdateResponse {
	resp := &DeploymentUpdateResponse{EvalID: evalID, DeploymentModifyIndex: index, RevertedJobVersion: reverted, Index: index}
	if evalID != "" {
		resp.EvalCreateIndex = index
	}
	return resp
}

// deploymentAllocations lists a deployment's allocations; as Nomad's, it
// does not look the deployment up: one that does not exist has none.
func (a *API) deploymentAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*sdk.AllocationListStub{}
		for _, al := range snap.AllocsByDeployment(r.PathValue("id")) {
			out = append(out, al.Stub())
		}
		return out, snap.TableIndex(state.TableAllocs), nil
	})
}
