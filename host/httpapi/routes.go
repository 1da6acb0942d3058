package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

func (a *API) routes() {
	a.handle("GET /v1/jobs", a.jobList)
	a.handle("PUT /v1/jobs", a.jobRegister)
	a.handle("POST /v1/jobs", a.jobRegister)
	a.handle("PUT /v1/jobs/parse", a.jobParse)
	a.handle("POST /v1/jobs/parse", a.jobParse)
	a.handle("GET /v1/job/{id}", a.jobRead)
	a.handle("PUT /v1/job/{id}", a.jobRegister)
	a.handle("POST /v1/job/{id}", a.jobRegister)
	a.handle("DELETE /v1/job/{id}", a.jobDeregister)
	a.handle("GET /v1/job/{id}/allocations", a.jobAllocations)
	a.handle("GET /v1/job/{id}/evaluations", a.jobEvaluations)
	a.handle("PUT /v1/job/{id}/evaluate", a.jobEvaluate)
	a.handle("POST /v1/job/{id}/evaluate", a.jobEvaluate)

	a.handle("GET /v1/evaluations", a.evalList)
	a.handle("GET /v1/evaluation/{id}", a.evalRead)
	a.handle("GET /v1/evaluation/{id}/allocations", a.evalAllocations)

	a.handle("GET /v1/allocations", a.allocList)
	a.handle("GET /v1/allocation/{id}", a.allocRead)
	a.handle("PUT /v1/allocation/{id}/stop", a.allocStop)
	a.handle("POST /v1/allocation/{id}/stop", a.allocStop)
	a.handle("PUT /v1/allocations/status", a.allocsStatus)

	a.handle("GET /v1/nodes", a.nodeList)
	a.handle("PUT /v1/nodes", a.nodeRegister)
	a.handle("GET /v1/node/{id}", a.nodeRead)
	a.handle("GET /v1/node/{id}/allocations", a.nodeAllocations)
	a.handle("PUT /v1/node/{id}/heartbeat", a.nodeHeartbeat)
	a.handle("PUT /v1/node/{id}/eligibility", a.nodeEligibility)
	a.handle("POST /v1/node/{id}/eligibility", a.nodeEligibility)

	a.handle("PUT /v1/system/gc", a.systemGC)

	a.handle("GET /v1/plugins/schedulers", a.pluginList)
	a.handle("GET /v1/status/leader", a.statusLeader)
	a.handle("GET /v1/agent/self", func(http.ResponseWriter, *http.Request) (any, error) { return a.self(), nil })
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
}

func namespace(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return sdk.DefaultNamespace
}

// JobRegisterRequest is the body of PUT /v1/jobs.
type JobRegisterRequest struct {
	Job *sdk.Job
	// EnforceIndex and JobModifyIndex implement check-and-set registration.
	EnforceIndex   bool
	JobModifyIndex uint64
	PolicyOverride bool
	PreserveCounts bool
	EvalPriority   int
	Namespace      string
	Region         string
	SecretID       string
}

// JobRegisterResponse answers a registration.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	Index           uint64
}

func (a *API) jobRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobRegisterRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.Job == nil {
		return nil, errorf(http.StatusBadRequest, "request has no Job")
	}
	if id := r.PathValue("id"); id != "" && id != req.Job.ID {
		return nil, errorf(http.StatusBadRequest, "job ID %q does not match the path's %q", req.Job.ID, id)
	}
	if req.EnforceIndex {
		cur := a.srv.Store().Snapshot().Job(req.Job.Namespace, req.Job.ID)
		var have uint64
		if cur != nil {
			have = cur.JobModifyIndex
		}
		if have != req.JobModifyIndex {
			return nil, errorf(http.StatusBadRequest, "enforcing job modify index %d: job exists with conflicting job modify index: %d", req.JobModifyIndex, have)
		}
	}
	evalID, index, err := a.srv.RegisterJob(req.Job)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	resp := &JobRegisterResponse{EvalID: evalID, JobModifyIndex: index, Index: index}
	if evalID != "" {
		resp.EvalCreateIndex = index
	}
	if j := a.srv.Store().Snapshot().Job(req.Job.Namespace, req.Job.ID); j != nil {
		resp.JobModifyIndex = j.JobModifyIndex
	}
	return resp, nil
}

// JobParseRequest is the body of /v1/jobs/parse.
type JobParseRequest struct {
	JobHCL       string
	Canonicalize bool
	HCLv1        bool `json:"hclv1,omitempty"`
	Variables    string
}

func (a *API) jobParse(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobParseRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	job, diags := jobspec.Parse("input.hcl", []byte(req.JobHCL))
	if diags.HasErrors() {
		return nil, errorf(http.StatusBadRequest, "%s", diags.Error())
	}
	if req.Canonicalize {
		jobspec.Canonicalize(job)
	}
	return job, nil
}

func (a *API) jobRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	j := snap.Job(namespace(r), r.PathValue("id"))
	if j == nil {
		return nil, errorf(http.StatusNotFound, "job not found")
	}
	setIndex(w, snap.TableIndex(state.TableJobs))
	return j, nil
}

// JobListStub is the short form of a job in listings.
type JobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string
	Datacenters       []string
	NodePool          string
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	Scheduler         string
	Version           uint64
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
	Meta              map[string]string `json:",omitempty"`
}

func (a *API) jobList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	prefix := r.URL.Query().Get("prefix")
	out := []*JobListStub{}
	for _, j := range snap.Jobs(namespace(r)) {
		if !strings.HasPrefix(j.ID, prefix) {
			continue
		}
		out = append(out, &JobListStub{ID: j.ID, ParentID: j.ParentID, Name: j.Name, Namespace: j.Namespace,
			Datacenters: j.Datacenters, NodePool: j.NodePool, Type: j.Type, Priority: j.Priority,
			Periodic: j.Periodic != nil, ParameterizedJob: j.ParameterizedJob != nil, Stop: j.Stop,
			Status: j.Status, StatusDescription: j.StatusDescription, Scheduler: j.SchedulerName(), Version: j.Version,
			CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex, JobModifyIndex: j.JobModifyIndex,
			SubmitTime: j.SubmitTime, Meta: j.Meta})
	}
	setIndex(w, snap.TableIndex(state.TableJobs))
	return out, nil
}

// JobDeregisterResponse answers a deregistration.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}

func (a *API) jobDeregister(w http.ResponseWriter, r *http.Request) (any, error) {
	purge, _ := strconv.ParseBool(r.URL.Query().Get("purge"))
	evalID, index, err := a.srv.DeregisterJob(namespace(r), r.PathValue("id"), purge)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &JobDeregisterResponse{EvalID: evalID, EvalCreateIndex: index, JobModifyIndex: index, Index: index}, nil
}

// JobEvaluateResponse answers a forced evaluation.
type JobEvaluateResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}

func (a *API) jobEvaluate(w http.ResponseWriter, r *http.Request) (any, error) {
	evalID, index, err := a.srv.EvaluateJob(namespace(r), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &JobEvaluateResponse{EvalID: evalID, EvalCreateIndex: index, Index: index}, nil
}

func (a *API) jobAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	out := []*sdk.AllocationListStub{}
	for _, al := range snap.AllocsByJob(namespace(r), r.PathValue("id")) {
		out = append(out, al.Stub())
	}
	setIndex(w, snap.TableIndex(state.TableAllocs))
	return out, nil
}

func (a *API) jobEvaluations(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	out := []*sdk.Evaluation{}
	out = append(out, snap.EvalsByJob(namespace(r), r.PathValue("id"))...)
	setIndex(w, snap.TableIndex(state.TableEvals))
	return out, nil
}

func (a *API) evalList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	q := r.URL.Query()
	out := []*sdk.Evaluation{}
	for _, e := range snap.EvalsByPrefix(q.Get("prefix")) {
		if st := q.Get("status"); st != "" && e.Status != st {
			continue
		}
		if job := q.Get("job"); job != "" && e.JobID != job {
			continue
		}
		out = append(out, e)
	}
	setIndex(w, snap.TableIndex(state.TableEvals))
	return out, nil
}

// EvalResponse is an eval with Drover's view of its quasi-statuses.
type EvalResponse struct {
	*sdk.Evaluation
	// History lists the phases (pending, queued, delayed, scheduling,
	// applying, blocked, complete, ...) this leader saw the eval go through.
	History []server.PhaseEvent `json:",omitempty"`
}

func (a *API) evalRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	e := snap.Eval(r.PathValue("id"))
	if e == nil {
		return nil, errorf(http.StatusNotFound, "eval not found")
	}
	setIndex(w, snap.TableIndex(state.TableEvals))
	return &EvalResponse{Evaluation: e, History: a.srv.EvalHistory(e.ID)}, nil
}

func (a *API) evalAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	snap := a.srv.Store().Snapshot()
	out := []*sdk.AllocationListStub{}
	for _, al := range snap.AllocsByEval(r.PathValue("id")) {
		out = append(out, al.Stub())
	}
	setIndex(w, snap.TableIndex(state.TableAllocs))
	return out, nil
}

func (a *API) allocList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	out := []*sdk.AllocationListStub{}
	for _, al := range snap.AllocsByPrefix(r.URL.Query().Get("prefix")) {
		out = append(out, al.Stub())
	}
	setIndex(w, snap.TableIndex(state.TableAllocs))
	return out, nil
}

func (a *API) allocRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	al := snap.Alloc(r.PathValue("id"))
	if al == nil {
		return nil, errorf(http.StatusNotFound, "alloc not found")
	}
	setIndex(w, snap.TableIndex(state.TableAllocs))
	return al, nil
}

// AllocStopResponse answers an allocation stop.
type AllocStopResponse struct {
	EvalID string
	Index  uint64
}

func (a *API) allocStop(w http.ResponseWriter, r *http.Request) (any, error) {
	evalID, index, err := a.srv.StopAlloc(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &AllocStopResponse{EvalID: evalID, Index: index}, nil
}

// AllocStatusRequest is the body of PUT /v1/allocations/status: what a
// node agent reports about its allocations.
type AllocStatusRequest struct {
	Allocs []server.AllocUpdate
}

// IndexResponse answers writes that return only an index.
type IndexResponse struct{ Index uint64 }

func (a *API) allocsStatus(w http.ResponseWriter, r *http.Request) (any, error) {
	var req AllocStatusRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	index, err := a.srv.UpdateAllocsFromClient(req.Allocs)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &IndexResponse{Index: index}, nil
}

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
	NodeResources         *sdk.NodeResources         `json:",omitempty"`
	ReservedResources     *sdk.NodeReservedResources `json:",omitempty"`
	CreateIndex           uint64
	ModifyIndex           uint64
}

func (a *API) nodeList(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	resources, _ := strconv.ParseBool(r.URL.Query().Get("resources"))
	out := []*NodeListStub{}
	for _, n := range snap.NodesByPrefix(r.URL.Query().Get("prefix")) {
		st := &NodeListStub{Address: n.HTTPAddr, ID: n.ID, Datacenter: n.Datacenter, Name: n.Name,
			NodeClass: n.NodeClass, NodePool: n.NodePool, Version: n.Attributes["nomad.version"], Drain: n.DrainStrategy != nil,
			SchedulingEligibility: n.SchedulingEligibility, Status: n.Status, StatusDescription: n.StatusDescription,
			Drivers: n.Drivers, CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex}
		if resources {
			st.NodeResources, st.ReservedResources = n.NodeResources, n.ReservedResources
		}
		out = append(out, st)
	}
	setIndex(w, snap.TableIndex(state.TableNodes))
	return out, nil
}

func (a *API) nodeRead(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.blockingQuery(r); err != nil {
		return nil, err
	}
	snap := a.srv.Store().Snapshot()
	n := snap.Node(r.PathValue("id"))
	if n == nil {
		return nil, errorf(http.StatusNotFound, "node not found")
	}
	setIndex(w, snap.TableIndex(state.TableNodes))
	return n, nil
}

func (a *API) nodeAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	snap := a.srv.Store().Snapshot()
	out := []*sdk.Allocation{}
	out = append(out, snap.AllocsByNode(r.PathValue("id"))...)
	setIndex(w, snap.TableIndex(state.TableAllocs))
	return out, nil
}

// NodeRegisterRequest is the body of PUT /v1/nodes.
type NodeRegisterRequest struct {
	Node *sdk.Node
}

// NodeUpdateResponse answers node registration and heartbeats.
type NodeUpdateResponse struct {
	// HeartbeatTTL is how long the server waits for the next heartbeat.
	HeartbeatTTL int64
	Index        uint64
}

func (a *API) nodeRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var req NodeRegisterRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.Node == nil {
		return nil, errorf(http.StatusBadRequest, "request has no Node")
	}
	ttl, index, err := a.srv.RegisterNode(req.Node)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &NodeUpdateResponse{HeartbeatTTL: int64(ttl), Index: index}, nil
}

func (a *API) nodeHeartbeat(w http.ResponseWriter, r *http.Request) (any, error) {
	ttl, index, err := a.srv.NodeHeartbeat(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &NodeUpdateResponse{HeartbeatTTL: int64(ttl), Index: index}, nil
}

// NodeEligibilityRequest is the body of /v1/node/:id/eligibility.
type NodeEligibilityRequest struct {
	NodeID      string
	Eligibility string
}

func (a *API) nodeEligibility(w http.ResponseWriter, r *http.Request) (any, error) {
	var req NodeEligibilityRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	index, err := a.srv.UpdateNodeEligibility(r.PathValue("id"), req.Eligibility)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &IndexResponse{Index: index}, nil
}

// PluginStub describes a registered scheduler plugin.
type PluginStub struct {
	Name          string
	Types         []string
	Runtime       string
	ABIVersion    string
	PluginVersion string
	Path          string `json:",omitempty"`
}

func (a *API) pluginList(http.ResponseWriter, *http.Request) (any, error) {
	out := []*PluginStub{}
	for _, e := range a.srv.Plugins().List() {
		info := e.Plugin.Info()
		out = append(out, &PluginStub{Name: info.Name, Types: info.Types, Runtime: e.Runtime,
			ABIVersion: abi.Version(info.ABI).String(), PluginVersion: info.PluginVersion, Path: e.Path})
	}
	return out, nil
}

func (a *API) statusLeader(http.ResponseWriter, *http.Request) (any, error) {
	return a.srv.Leader(), nil
}

// GCResponse answers a forced garbage collection with the core eval it
// created.
type GCResponse struct {
	EvalID string
	Index  uint64
}

func (a *API) systemGC(w http.ResponseWriter, _ *http.Request) (any, error) {
	evalID, index, err := a.srv.ForceGC()
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &GCResponse{EvalID: evalID, Index: index}, nil
}
