package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
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
	nw, err := a.srv.UpdateNodeDrain(r.PathValue("id"), spec, req.MarkEligible, req.Meta)
	if err != nil {
		return nil, err
	}
	setIndex(w, nw.Index)
	return &NodeDrainResponse{NodeModifyIndex: nw.Index, EvalIDs: nw.EvalIDs, EvalCreateIndex: evalCreateIndex(nw), Index: nw.Index}, nil
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
	ns := requestNamespace(r)
	if t := req.Target["Namespace"]; t != "" && t != ns {
		return nil, errorf(http.StatusBadRequest, "namespace in payload did not match header")
	}
	if t := req.Target["Job"]; t != "" && t != r.PathValue("id") {
		return nil, errorf(http.StatusBadRequest, "job ID in payload did not match URL")
	}
	res, err := a.srv.ScaleJob(server.ScaleRequest{Namespace: ns, JobID: r.PathValue("id"), Group: req.Target["Group"],
		Count: req.Count, Message: req.Message, Error: req.Error, Meta: req.Meta})
	if err != nil {
		return nil, err
	}
	setIndex(w, res.Index)
	resp := &JobRegisterResponse{EvalID: res.EvalID, JobModifyIndex: res.JobModifyIndex, Index: res.Index}
	if res.EvalID != "" {
		resp.EvalCreateIndex = res.Index
	}
	return resp, nil
}

// JobScaleStatusResponse answers GET /v1/job/:id/scale, as Nomad's does
// (the autoscaler reads it): per group, the count asked for, the
// placements and health the latest deployment counted, the allocations
// running, and the latest scaling events, newest first (the autoscaler's
// cooldown starts from the newest).
type JobScaleStatusResponse struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]*TaskGroupScaleStatus
}

// TaskGroupScaleStatus is one group's part of a JobScaleStatusResponse.
type TaskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	Events    []*state.ScalingEvent
}

func (a *API) jobScaleStatus(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		ns, id := requestNamespace(r), r.PathValue("id")
		job := snap.Job(ns, id)
		if job == nil {
			return nil, 0, errorf(http.StatusNotFound, "job %q not found", id)
		}
		resp := &JobScaleStatusResponse{JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex,
			JobModifyIndex: job.JobModifyIndex, JobStopped: job.Stop, TaskGroups: map[string]*TaskGroupScaleStatus{}}
		d := snap.LatestDeploymentByJobInstance(ns, id)
		events := snap.ScalingEvents(ns, id)
		for _, tg := range job.TaskGroups {
			st := &TaskGroupScaleStatus{Desired: tg.Count, Events: []*state.ScalingEvent{}}
			if events != nil && len(events.ScalingEvents[tg.Name]) > 0 {
				st.Events = events.ScalingEvents[tg.Name]
			}
			if d != nil {
				if ds := d.TaskGroups[tg.Name]; ds != nil {
					st.Placed, st.Healthy, st.Unhealthy = ds.PlacedAllocs, ds.HealthyAllocs, ds.UnhealthyAllocs
				}
			}
			resp.TaskGroups[tg.Name] = st
		}
		for _, al := range snap.AllocsByJobInstance(ns, id) {
			if st := resp.TaskGroups[al.TaskGroup]; st != nil && al.ClientStatus == sdk.AllocClientStatusRunning &&
				al.DesiredStatus == sdk.AllocDesiredStatusRun {
				st.Running++
			}
		}
		return resp, max(snap.TableIndex(state.TableJobs), snap.TableIndex(state.TableAllocs), snap.TableIndex(state.TableDeployments),
			snap.TableIndex(state.TableScaling)), nil
	})
}

// ScalingPolicyListStub is a scaling policy in GET /v1/scaling/policies
// (Nomad's ScalingPolicyListStub).
type ScalingPolicyListStub struct {
	ID          string
	Enabled     bool
	Type        string
	Target      map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// scalingPolicyList serves GET /v1/scaling/policies: the group scaling
// policies of the request's namespace ("*" for all, ordered by ID as
// Nomad's), narrowed by job (its ID), type (a prefix: "vertical" is both
// vertical types) and prefix (of the policy ID). Nomad applies only one of
// the three in a namespace and ignores job across namespaces; Drover
// applies all that are given.
func (a *API) scalingPolicyList(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	job, typ, prefix := q.Get("job"), q.Get("type"), q.Get("prefix")
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		ns := requestNamespace(r)
		ps := snap.ScalingPolicies(ns)
		if ns == "*" {
			slices.SortFunc(ps, func(a, b *sdk.ScalingPolicy) int { return strings.Compare(a.ID, b.ID) })
		}
		out := []*ScalingPolicyListStub{}
		// A store restored from a snapshot written before policies had
		// an index gave them their jobs' (state.restoreScalingPolicies).
		index := max(1, snap.TableIndex(state.TableScalingPolicies))
		for _, p := range ps {
			index = max(index, p.ModifyIndex)
			if (job == "" || p.Target["Job"] == job) && strings.HasPrefix(p.Type, typ) && strings.HasPrefix(p.ID, prefix) &&
				listable(r, p.Target["Namespace"]) {
				out = append(out, &ScalingPolicyListStub{ID: p.ID, Enabled: p.Enabled, Type: p.Type, Target: p.Target,
					CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
			}
		}
		return out, index, nil
	})
}

// scalingPolicyRead serves GET /v1/scaling/policy/:id, in any namespace,
// as Nomad's.
func (a *API) scalingPolicyRead(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		p := snap.ScalingPolicy(r.PathValue("id"))
		if p == nil {
			return nil, max(1, snap.TableIndex(state.TableScalingPolicies)), errorf(http.StatusNotFound, "policy not found")
		}
		return p, p.ModifyIndex, nil
	})
}
