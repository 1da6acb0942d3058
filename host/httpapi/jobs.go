package httpapi

import (
	"cmp"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/jobdiff"
	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// WriteRequest is what Nomad's clients send with every write.
type WriteRequest struct {
	Region    string `json:",omitempty"`
	Namespace string `json:",omitempty"`
	SecretID  string `json:",omitempty"`
}

// JobRegisterRequest is the body of PUT /v1/jobs and PUT /v1/job/:id.
type JobRegisterRequest struct {
	Job *jobspec.Job
	// Submission is the jobspec's source, kept with the job version the
	// registration makes current (GET /v1/job/:id/submission).
	Submission *api.JobSubmission `json:",omitempty"`
	// EnforceIndex and JobModifyIndex implement check-and-set
	// registration: 0 registers only a new job.
	EnforceIndex   bool   `json:",omitempty"`
	JobModifyIndex uint64 `json:",omitempty"`
	// PolicyOverride is accepted and has no effect: Drover has no Sentinel
	// policies to override.
	PolicyOverride bool `json:",omitempty"`
	// PreserveCounts and PreserveResources keep the counts of the job's
	// existing groups and the resources of its existing tasks.
	PreserveCounts    bool `json:",omitempty"`
	PreserveResources bool `json:",omitempty"`
	// EvalPriority is the priority of the registration's eval (0: the
	// job's).
	EvalPriority int `json:",omitempty"`
	// WriteRequest's fields are accepted; the region and ACL token have no
	// effect (one region, no ACLs).
	WriteRequest
}

// JobRegisterResponse answers a registration (and a forced evaluation).
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	Index           uint64
}

// JobDispatchRequest is the body of PUT /v1/job/:id/dispatch. JobID, when
// set, must be the path's. The idempotency token may also come as the
// idempotency_token query parameter, as Nomad's client sends it.
type JobDispatchRequest struct {
	JobID            string
	Payload          []byte
	Meta             map[string]string
	IdPrefixTemplate string
	Priority         int
	IdempotencyToken string
}

// JobDispatchResponse answers a dispatch. EvalID (and EvalCreateIndex) is
// empty when the dispatched job is periodic (launched on its schedule, not
// evaluated, as Nomad's), or when an idempotency token matched an earlier
// dispatch, whose job is returned.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	Index           uint64
}

// JobRevertRequest is the body of PUT /v1/job/:id/revert. JobID, when
// set, must be the path's.
type JobRevertRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
	ConsulToken         string
	VaultToken          string
	WriteRequest
}

// JobStabilityRequest is the body of PUT /v1/job/:id/stable. JobID, when
// set, must be the path's.
type JobStabilityRequest struct {
	JobID      string
	JobVersion uint64
	Stable     bool
	WriteRequest
}

// JobStabilityResponse answers PUT /v1/job/:id/stable.
type JobStabilityResponse struct {
	Index uint64
}

// PeriodicForceResponse answers PUT /v1/job/:id/periodic/force.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
}

// JobsParseRequest is the body of PUT /v1/jobs/parse.
type JobsParseRequest struct {
	JobHCL       string
	HCLv1        bool `json:"hclv1,omitempty"`
	Variables    string
	Canonicalize bool
}

// JobValidateRequest is the body of PUT /v1/validate/job.
type JobValidateRequest struct {
	Job *jobspec.Job
	WriteRequest
}

// JobValidateResponse answers a validation: every problem, one a line.
type JobValidateResponse struct {
	DriverConfigValidated bool
	ValidationErrors      []string
	Error                 string
	Warnings              string
}

// JobPlanRequest is the body of PUT /v1/job/:id/plan.
type JobPlanRequest struct {
	Job            *jobspec.Job
	Diff           bool
	PolicyOverride bool
	WriteRequest
}

// JobPlanResponse is what registering the job would do.
type JobPlanResponse struct {
	JobModifyIndex     uint64
	CreatedEvals       []*sdk.Evaluation
	Diff               *jobdiff.JobDiff
	Annotations        *sdk.PlanAnnotations
	FailedTGAllocs     map[string]*sdk.AllocMetric
	NextPeriodicLaunch time.Time
	Warnings           string
}

// JobEvaluateRequest is the optional body of PUT /v1/job/:id/evaluate.
type JobEvaluateRequest struct {
	JobID       string
	EvalOptions EvalOptions
	WriteRequest
}

// EvalOptions are the options of a forced evaluation.
type EvalOptions struct {
	ForceReschedule bool
}

// JobDeregisterResponse answers a deregistration.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}

// JobVersionsResponse lists a job's kept versions, newest first, and with
// ?diffs=true the difference of each from the one before it.
type JobVersionsResponse struct {
	Versions []*TaggedJob
	Diffs    []*jobdiff.JobDiff
	Index    uint64
}

// TaggedJob is a job version with its tag, if it has one (Nomad 1.9's
// VersionTag).
type TaggedJob struct {
	*sdk.Job
	VersionTag *JobVersionTag
}

// JobVersionTag is a version's tag as Nomad's API shows it.
type JobVersionTag struct {
	Name        string
	Description string
	TaggedTime  int64
}

// JobTagRequest is the body of PUT /v1/job/:id/versions/:name/tag
// (Nomad's TagVersionRequest): the version to tag, or Latest for the
// job's current one.
type JobTagRequest struct {
	Version     uint64
	Latest      bool
	Description string
	WriteRequest
}

// JobTagResponse answers a tag's write (Nomad's JobTagResponse).
type JobTagResponse struct {
	Name        string
	Description string
	TaggedTime  int64
	Index       uint64
}

// tagged is job version j with its tag among tags.
func tagged(j *sdk.Job, tags *state.JobVersionTags) *TaggedJob {
	out := &TaggedJob{Job: j}
	if t := tags.Of(j.Version); t != nil {
		out.VersionTag = &JobVersionTag{Name: t.Name, Description: t.Description, TaggedTime: t.TaggedTime}
	}
	return out
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
	// Scheduler is the scheduler plugin that runs the job (Drover's).
	Scheduler      string
	JobSummary     *server.Summary
	Version        uint64
	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
	SubmitTime     int64
	Meta           map[string]string `json:",omitempty"`
}

func jobStub(snap *state.Snapshot, j *sdk.Job, meta bool) *JobListStub {
	s := &JobListStub{ID: j.ID, ParentID: j.ParentID, Name: j.Name, Namespace: j.Namespace,
		Datacenters: j.Datacenters, NodePool: j.NodePool, Type: j.Type, Priority: j.Priority,
		Periodic: j.IsPeriodic(), ParameterizedJob: j.IsParameterized(), Stop: j.Stop,
		Status: j.Status, StatusDescription: j.StatusDescription, Scheduler: j.SchedulerName(),
		JobSummary: server.JobSummary(snap, j), Version: j.Version,
		CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex, JobModifyIndex: j.JobModifyIndex, SubmitTime: j.SubmitTime}
	if meta {
		s.Meta = j.Meta
	}
	return s
}

// jobsIndex is the index of what job listings and summaries reflect.
func jobsIndex(snap *state.Snapshot) uint64 {
	return max(snap.TableIndex(state.TableJobs), snap.TableIndex(state.TableAllocs), snap.TableIndex(state.TableEvals))
}

func (a *API) jobList(w http.ResponseWriter, r *http.Request) (any, error) {
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	meta, err := boolParam(r, "meta")
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		var jobs []*sdk.Job
		for _, j := range snap.Jobs("") {
			if namespaced(r, j.Namespace) && strings.HasPrefix(j.ID, o.prefix) {
				jobs = append(jobs, j)
			}
		}
		l, err := pageJobs(o, snap, jobs, meta)
		return l, jobsIndex(snap), err
	})
}

// pageJobs is a page of jobs as their list stubs, by namespace and ID.
func pageJobs(o *listOptions, snap *state.Snapshot, jobs []*sdk.Job, meta bool) (*listed, error) {
	out, next, err := page(o, jobs, func(j *sdk.Job) string { return nsIDToken(j.Namespace, j.ID) },
		func(j *sdk.Job, token string) int { return nsIDSeek(j.Namespace, j.ID, token) })
	return &listed{stubsOf(out, func(j *sdk.Job) *JobListStub { return jobStub(snap, j, meta) }), next}, err
}

// submittedJob converts a submitted job to the server's model; the job's
// namespace defaults to the request's. Its region is the request's (the
// body's, else ?region=), else its own, as Nomad's agents take it
// (regionForJob): "global" or none is this cluster's region, and another
// is refused, there being no path to it.
func (a *API) submittedJob(r *http.Request, job *jobspec.Job, wr WriteRequest) (*sdk.Job, error) {
	if job == nil {
		return nil, errorf(http.StatusBadRequest, "the request has no Job")
	}
	region := cmp.Or(wr.Region, r.URL.Query().Get("region"), deref(job.Region))
	if err := a.regionError(region); err != nil {
		return nil, err
	}
	if own := a.srv.Config().Region; region == "" || region == jobspec.DefaultGlobalRegion {
		region = own
	}
	job.Region = &region
	if job.Namespace == nil || *job.Namespace == "" {
		ns := wr.Namespace
		if ns == "" {
			ns = requestNamespace(r)
		}
		job.Namespace = &ns
	}
	// The route's capability (submit-job, read-job to validate) in the
	// job's namespace.
	if z := authzOf(r); z != nil && !z.acl.AllowNamespaceOperationIn(*job.Namespace, z.cap) {
		return nil, errPermissionDenied
	}
	if id := r.PathValue("id"); id != "" && (job.ID == nil || *job.ID != id) {
		return nil, errorf(http.StatusBadRequest, "the job's ID %q does not match the path's %q", deref(job.ID), id)
	}
	sj, err := job.SDK()
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	return sj, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (a *API) jobRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobRegisterRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	job, err := a.submittedJob(r, req.Job, req.WriteRequest)
	if err != nil {
		return nil, err
	}
	// Warned about as submitted, before preserved counts and resources
	// change it, as by Nomad.
	warnings := a.srv.JobWarnings(job)
	sub, warning := a.srv.AdmitSubmission(submission(req.Submission))
	evalID, index, err := a.srv.RegisterJobOpts(job, server.RegisterOptions{EnforceIndex: req.EnforceIndex,
		JobModifyIndex: req.JobModifyIndex, PreserveCounts: req.PreserveCounts, PreserveResources: req.PreserveResources,
		EvalPriority: req.EvalPriority, Submission: sub})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	if warning != "" {
		warnings = append(warnings, warning)
	}
	resp := &JobRegisterResponse{EvalID: evalID, JobModifyIndex: index, Warnings: jobspec.FormatWarnings(warnings), Index: index}
	if evalID != "" {
		resp.EvalCreateIndex = index
	}
	if j := a.srv.Store().Snapshot().Job(job.Namespace, job.ID); j != nil {
		resp.JobModifyIndex = j.JobModifyIndex
	}
	return resp, nil
}

// submission is what the server keeps of a registration's submission.
func submission(s *api.JobSubmission) *state.JobSubmission {
	if s == nil {
		return nil
	}
	return &state.JobSubmission{Source: s.Source, Format: s.Format, VariableFlags: s.VariableFlags, Variables: s.Variables}
}

// jobSubmission answers GET /v1/job/:id/submission?version=N, as Nomad's:
// the source the version was registered from, 404 when it came with none.
func (a *API) jobSubmission(w http.ResponseWriter, r *http.Request) (any, error) {
	version, err := strconv.ParseUint(r.URL.Query().Get("version"), 10, 64)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Unable to parse job submission version parameter")
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		sub := snap.JobSubmission(requestNamespace(r), r.PathValue("id"), version)
		if sub == nil {
			return nil, snap.TableIndex(state.TableSubmissions), errorf(http.StatusNotFound, "job source not found")
		}
		return sub, sub.JobModifyIndex, nil
	})
}

func (a *API) jobParse(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobsParseRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.HCLv1 {
		return nil, errorf(http.StatusBadRequest, "HCL1 jobspecs are not supported; Drover reads HCL2 jobspecs")
	}
	release, err := a.parses.acquire(r.Context(), w)
	if err != nil {
		return nil, err
	}
	defer release()
	// As in Nomad, Variables may set variables the jobspec does not declare.
	p, diags := jobspec.Parse(jobspec.Config{Path: "input.hcl", Body: []byte(req.JobHCL), VarContent: req.Variables,
		IgnoreUndeclaredVars: true})
	if diags.HasErrors() {
		return nil, errorf(http.StatusBadRequest, "%s", jobspec.FormatDiagnostics(p.Sources, diags))
	}
	if !req.Canonicalize {
		return p.Job, nil
	}
	c, err := p.Job.Canonicalized()
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	return c, nil
}

func (a *API) jobValidate(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobValidateRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	// DriverConfigValidated is true as from Nomad's servers, whose drivers'
	// configurations are checked by the node that runs the task: Nomad's
	// CLI reads false as "no agent reachable" and says so.
	resp := &JobValidateResponse{DriverConfigValidated: true}
	job, err := a.submittedJob(r, req.Job, req.WriteRequest)
	if errors.Is(err, errPermissionDenied) {
		return nil, err
	}
	if err == nil {
		// Alongside any validation errors, as Nomad's answer has them.
		resp.Warnings = jobspec.FormatWarnings(a.srv.JobWarnings(job))
		err = a.srv.ValidateJob(job)
	}
	if err != nil {
		var ve *jobspec.ValidationError
		if errors.As(err, &ve) {
			for _, p := range ve.Problems {
				resp.ValidationErrors = append(resp.ValidationErrors, p.Error())
			}
		} else {
			resp.ValidationErrors = []string{err.Error()}
		}
		resp.Error = err.Error()
	}
	return resp, nil
}

func (a *API) jobRead(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		j := snap.Job(requestNamespace(r), r.PathValue("id"))
		if j == nil {
			return nil, snap.TableIndex(state.TableJobs), errorf(http.StatusNotFound, "job %q not found", r.PathValue("id"))
		}
		// Its tags' index too: the read shows the current version's tag,
		// and a blocking read wakes when it changes.
		index, tags := j.ModifyIndex, snap.JobVersionTags(j.Namespace, j.ID)
		if tags != nil {
			index = max(index, tags.ModifyIndex)
		}
		return tagged(j, tags), index, nil
	})
}

func (a *API) jobDeregister(w http.ResponseWriter, r *http.Request) (any, error) {
	purge, err := boolParam(r, "purge")
	if err != nil {
		return nil, err
	}
	prio, err := intParam(r, "eval_priority")
	if err != nil {
		return nil, err
	}
	for _, unsupported := range []struct{ param, why string }{
		{"global", "Drover has one region"},
		{"no_shutdown_delay", "Drover has no shutdown delays to skip"},
	} {
		if on, err := boolParam(r, unsupported.param); err != nil {
			return nil, err
		} else if on {
			return nil, errorf(http.StatusBadRequest, "%s is not supported: %s", unsupported.param, unsupported.why)
		}
	}
	evalID, index, err := a.srv.DeregisterJobOpts(requestNamespace(r), r.PathValue("id"),
		server.DeregisterOptions{Purge: purge, EvalPriority: prio})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &JobDeregisterResponse{EvalID: evalID, EvalCreateIndex: index, JobModifyIndex: index, Index: index}, nil
}

func (a *API) jobEvaluate(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobEvaluateRequest
	if _, err := decodeOptional(w, r, &req); err != nil {
		return nil, err
	}
	evalID, index, err := a.srv.EvaluateJobOpts(requestNamespace(r), r.PathValue("id"),
		server.EvaluateOptions{ForceReschedule: req.EvalOptions.ForceReschedule})
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	resp := &JobRegisterResponse{EvalID: evalID, EvalCreateIndex: index, Index: index}
	if j := a.srv.Store().Snapshot().Job(requestNamespace(r), r.PathValue("id")); j != nil {
		resp.JobModifyIndex = j.JobModifyIndex
	}
	return resp, nil
}

// pathJobID is the path's job ID; a body that names a job (JobID, when
// set) must name that one.
func pathJobID(r *http.Request, body string) (string, error) {
	id := r.PathValue("id")
	if body != "" && body != id {
		return "", errorf(http.StatusBadRequest, "the body's JobID %q is not the path's %q", body, id)
	}
	return id, nil
}

func (a *API) jobDispatch(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobDispatchRequest
	if _, err := decodeOptional(w, r, &req); err != nil {
		return nil, err
	}
	id, err := pathJobID(r, req.JobID)
	if err != nil {
		return nil, err
	}
	if q := r.URL.Query().Get("idempotency_token"); q != "" {
		if req.IdempotencyToken != "" && req.IdempotencyToken != q {
			return nil, errorf(http.StatusBadRequest, "two idempotency tokens: %q in the body, %q in the query", req.IdempotencyToken, q)
		}
		req.IdempotencyToken = q
	}
	res, err := a.srv.DispatchJob(requestNamespace(r), id, server.DispatchRequest{Payload: req.Payload, Meta: req.Meta,
		IdempotencyToken: req.IdempotencyToken, IDPrefix: req.IdPrefixTemplate, Priority: req.Priority})
	if err != nil {
		return nil, err
	}
	setIndex(w, res.Index)
	resp := &JobDispatchResponse{DispatchedJobID: res.DispatchedJobID, EvalID: res.EvalID,
		JobCreateIndex: res.JobCreateIndex, Index: res.Index}
	if res.EvalID != "" {
		resp.EvalCreateIndex = res.Index
	}
	return resp, nil
}

func (a *API) jobRevert(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobRevertRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	id, err := pathJobID(r, req.JobID)
	if err != nil {
		return nil, err
	}
	evalID, index, err := a.srv.RevertJob(requestNamespace(r), id, req.JobVersion, req.EnforcePriorVersion)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	resp := &JobRegisterResponse{EvalID: evalID, EvalCreateIndex: index, Index: index}
	if j := a.srv.Store().Snapshot().Job(requestNamespace(r), id); j != nil {
		resp.JobModifyIndex = j.JobModifyIndex
	}
	return resp, nil
}

func (a *API) jobStability(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobStabilityRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	id, err := pathJobID(r, req.JobID)
	if err != nil {
		return nil, err
	}
	index, err := a.srv.SetJobStability(requestNamespace(r), id, req.JobVersion, req.Stable)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &JobStabilityResponse{Index: index}, nil
}

func (a *API) jobPeriodicForce(w http.ResponseWriter, r *http.Request) (any, error) {
	evalID, index, err := a.srv.ForcePeriodicRun(requestNamespace(r), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &PeriodicForceResponse{EvalID: evalID, EvalCreateIndex: index, Index: index}, nil
}

// jobAllocations lists the allocations of the job registered under the ID,
// or with all=true those of every instance of it (jobs purged and
// registered again), as Nomad's.
func (a *API) jobAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		ns, id := requestNamespace(r), r.PathValue("id")
		allocs := snap.AllocsByJobInstance(ns, id)
		if all {
			allocs = snap.AllocsByJob(ns, id)
		}
		out := []*sdk.AllocationListStub{}
		for _, al := range allocs {
			out = append(out, al.Stub())
		}
		return out, snap.TableIndex(state.TableAllocs), nil
	})
}

func (a *API) jobEvaluations(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		out := []*sdk.Evaluation{}
		out = append(out, snap.EvalsByJob(requestNamespace(r), r.PathValue("id"))...)
		return out, snap.TableIndex(state.TableEvals), nil
	})
}

func (a *API) jobSummary(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		j := snap.Job(requestNamespace(r), r.PathValue("id"))
		if j == nil {
			return nil, snap.TableIndex(state.TableJobs), errorf(http.StatusNotFound, "job %q not found", r.PathValue("id"))
		}
		return server.JobSummary(snap, j), jobsIndex(snap), nil
	})
}

// jobVersions serves GET /v1/job/:id/versions: the kept versions, newest
// first, each with its tag; with diffs=true, each version's difference
// from the one before it, or, with diff_version=N or diff_tag=NAME, from
// that version (every version then has one, that version's empty), as
// Nomad 1.9's.
func (a *API) jobVersions(w http.ResponseWriter, r *http.Request) (any, error) {
	diffs, err := boolParam(r, "diffs")
	if err != nil {
		return nil, err
	}
	diffTag, diffVersion := r.URL.Query().Get("diff_tag"), r.URL.Query().Get("diff_version")
	if diffTag != "" && diffVersion != "" {
		return nil, errorf(http.StatusBadRequest, "diff_tag and diff_version cannot both be given")
	}
	var against *uint64
	if diffVersion != "" {
		v, err := strconv.ParseUint(diffVersion, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid diff_version %q", diffVersion)
		}
		against = &v
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		ns, id := requestNamespace(r), r.PathValue("id")
		versions := snap.JobVersions(ns, id)
		if len(versions) == 0 {
			return nil, snap.TableIndex(state.TableJobs), errorf(http.StatusNotFound, "job %q not found", id)
		}
		tags := snap.JobVersionTags(ns, id)
		// The latest version's index (or its tags'), as Nomad's: a
		// blocking read wakes when this job changes, not on any job's
		// write.
		resp := &JobVersionsResponse{Index: versions[0].ModifyIndex}
		if tags != nil {
			resp.Index = max(resp.Index, tags.ModifyIndex)
		}
		for _, v := range versions {
			resp.Versions = append(resp.Versions, tagged(v, tags))
		}
		if !diffs {
			// As Nomad's: without diffs=true, diff_tag and diff_version
			// are ignored (its client sends diffs=false with them).
			return resp, resp.Index, nil
		}
		if diffTag != "" {
			t := tags.Named(diffTag)
			if t == nil {
				return nil, resp.Index, errorf(http.StatusNotFound, "tag %q of job %q not found", diffTag, id)
			}
			against = &t.Version
		}
		switch {
		case !diffs && against == nil:
		case against != nil:
			base := snap.JobVersion(ns, id, *against)
			if base == nil {
				return nil, resp.Index, errorf(http.StatusNotFound, "version %d of job %q not found", *against, id)
			}
			for _, v := range versions {
				resp.Diffs = append(resp.Diffs, jobdiff.Diff(base, v, true))
			}
		default:
			for i := 0; i+1 < len(versions); i++ {
				// Contextual, as Nomad's; only a plan's diff says
				// what the scheduler would do (Annotate).
				resp.Diffs = append(resp.Diffs, jobdiff.Diff(versions[i+1], versions[i], true))
			}
		}
		return resp, resp.Index, nil
	})
}

// jobVersionTag serves PUT and POST /v1/job/:id/versions/:name/tag, a
// version's tag, and DELETE, its removal (Nomad 1.9's).
func (a *API) jobVersionTag(w http.ResponseWriter, r *http.Request) (any, error) {
	ns, id, name := requestNamespace(r), r.PathValue("id"), r.PathValue("tag")
	if r.Method == http.MethodDelete {
		index, err := a.srv.UntagJobVersion(ns, id, name)
		if err != nil {
			return nil, err
		}
		setIndex(w, index)
		return noBody, nil
	}
	var req JobTagRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	tag, index, err := a.srv.TagJobVersion(ns, id, name, req.Version, req.Latest, req.Description)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return &JobTagResponse{Name: tag.Name, Description: tag.Description, TaggedTime: tag.TaggedTime, Index: index}, nil
}

func (a *API) jobPlan(w http.ResponseWriter, r *http.Request) (any, error) {
	var req JobPlanRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	job, err := a.submittedJob(r, req.Job, req.WriteRequest)
	if err != nil {
		return nil, err
	}
	res, err := a.srv.PlanJob(r.Context(), job)
	if err != nil {
		return nil, err
	}
	resp := &JobPlanResponse{JobModifyIndex: res.JobModifyIndex, CreatedEvals: res.CreatedEvals,
		Annotations: res.Annotations, FailedTGAllocs: res.FailedTGAllocs, Warnings: jobspec.FormatWarnings(a.srv.JobWarnings(job))}
	if req.Diff {
		resp.Diff = jobdiff.Diff(res.Current, res.Job, true).Annotate(res.Current, res.Job)
		if res.Annotations != nil {
			resp.Diff.Updates(res.Annotations.DesiredTGUpdates)
		}
	}
	resp.NextPeriodicLaunch = res.NextPeriodicLaunch
	setIndex(w, a.srv.Store().LatestIndex())
	return resp, nil
}

// jobDeployments lists the deployments of the job registered under the ID,
// or with all=true those of every instance of it, as Nomad's.
func (a *API) jobDeployments(w http.ResponseWriter, r *http.Request) (any, error) {
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		ns, id := requestNamespace(r), r.PathValue("id")
		out := []*sdk.Deployment{}
		if all {
			out = append(out, snap.DeploymentsByJob(ns, id)...)
		} else {
			out = append(out, snap.DeploymentsByJobInstance(ns, id)...)
		}
		slices.SortFunc(out, func(x, y *sdk.Deployment) int { return cmp.Compare(y.CreateIndex, x.CreateIndex) })
		return out, snap.TableIndex(state.TableDeployments), nil
	})
}

// jobLatestDeployment returns the latest deployment of the job registered
// under the ID, never one of an earlier instance of it (Nomad's takes no
// all parameter).
func (a *API) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, error) {
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		return snap.LatestDeploymentByJobInstance(requestNamespace(r), r.PathValue("id")), snap.TableIndex(state.TableDeployments), nil
	})
}

// versionTagPath reads the job ID and the tag's name of
// /v1/job/:id/versions/:name/tag, a version tag, from the escaped path:
// the last literal /versions/ (Nomad's client escapes the job's ID, so a
// job whose ID ends in /versions/x/tag is not read as a tag's path; a
// tag's name holds no slash).
func versionTagPath(escaped string) (id, name string, ok bool) {
	p, ok := strings.CutSuffix(strings.TrimPrefix(escaped, "/v1/job/"), "/tag")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(p, "/versions/")
	if i <= 0 || strings.Contains(p[i+len("/versions/"):], "/") {
		return "", "", false
	}
	id, err := url.PathUnescape(p[:i])
	if err != nil {
		return "", "", false
	}
	name, err = url.PathUnescape(p[i+len("/versions/"):])
	if err != nil {
		return "", "", false
	}
	return id, name, true
}

// jobPaths serves /v1/job/:id and its sub-paths. Job IDs may hold slashes
// (a dispatched job is "parent/dispatch-..."), so the sub-path is found by
// suffix, as Nomad does.
func (a *API) jobPaths(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/v1/job/")
	// What each route needs of the request's token, in the request's
	// namespace (the job's, in the body, for a registration or a plan).
	readJob, submit := inNS(acl.NamespaceCapabilityReadJob), inNS(acl.NamespaceCapabilitySubmitJob)
	submitBody, scale := inBody(acl.NamespaceCapabilitySubmitJob), inNS(acl.NamespaceCapabilityScaleJob)
	get := func(h handler) map[string]route { return map[string]route{"GET": {readJob, h}} }
	write := func(acc access, h handler) map[string]route {
		return map[string]route{"PUT": {acc, h}, "POST": {acc, h}}
	}
	subs := []struct {
		suffix string
		routes map[string]route
	}{
		{"/allocations", get(a.jobAllocations)},
		{"/evaluations", get(a.jobEvaluations)},
		{"/evaluate", write(submit, a.jobEvaluate)},
		{"/plan", write(submitBody, a.jobPlan)},
		{"/summary", get(a.jobSummary)},
		{"/versions", get(a.jobVersions)},
		{"/deployments", get(a.jobDeployments)},
		{"/deployment", get(a.jobLatestDeployment)},
		{"/scale", map[string]route{"GET": {inNS(acl.NamespaceCapabilityReadJobScaling), a.jobScaleStatus},
			"PUT": {scale, a.jobScale}, "POST": {scale, a.jobScale}}},
		{"/dispatch", write(inNS(acl.NamespaceCapabilityDispatchJob), a.jobDispatch)},
		{"/revert", write(submit, a.jobRevert)},
		{"/periodic/force", write(submit, a.jobPeriodicForce)},
		{"/stable", write(submit, a.jobStability)},
		{"/submission", get(a.jobSubmission)},
		{"/services", get(a.jobServices)},
	}
	routes := map[string]route{"GET": {readJob, a.jobRead}, "PUT": {submitBody, a.jobRegister},
		"POST": {submitBody, a.jobRegister}, "DELETE": {submit, a.jobDeregister}}
	matched := false
	for _, s := range subs {
		if id, ok := strings.CutSuffix(rest, s.suffix); ok && id != "" {
			rest, routes, matched = id, s.routes, true
			break
		}
	}
	if id, name, ok := versionTagPath(r.URL.EscapedPath()); ok && !matched {
		rest = id
		r.SetPathValue("tag", name)
		routes = map[string]route{"PUT": {submit, a.jobVersionTag}, "POST": {submit, a.jobVersionTag},
			"DELETE": {submit, a.jobVersionTag}}
	}
	if rest == "" {
		writeError(w, errorf(http.StatusBadRequest, "missing job ID"))
		return
	}
	r.SetPathValue("id", rest)
	a.dispatch(routes)(w, r)
}
