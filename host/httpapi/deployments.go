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
	evalID, index, err := a.srv.FailDeployment(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &DeploymentUpdateResponse{EvalID: evalID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
}

// deploymentAllocHealth sets allocations' health; the deployment watcher
// makes the evals (and any failure and revert) that follow, so the answer
// carries no eval.
func (a *API) deploymentAllocHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var req DeploymentAllocHealthRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if err := a.checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, err
	}
	evalID, index, err := a.srv.SetAllocHealth(r.PathValue("id"), req.HealthyAllocationIDs, req.UnhealthyAllocationIDs)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	resp := &DeploymentUpdateResponse{EvalID: evalID, DeploymentModifyIndex: index, Index: index}
	if evalID != "" {
		resp.EvalCreateIndex = index
	}
	return resp, nil
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
	return &DeploymentUpdateResponse{EvalID: evalID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
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
