package abi

import "github.com/drover-sched/drover/sdk"

// Info describes a plugin; a wasm plugin returns it from drover_info and a
// go-plugin binary from its Info RPC.
type Info struct {
	// Name is the plugin's name, unique in an agent.
	Name string
	// Types are the job types the plugin serves by default. A plugin with
	// no types is picked only by jobs that name it (Job.Scheduler).
	Types []string
	// PluginVersion is the plugin's own version.
	PluginVersion string
	// ABI is the ABI version the plugin speaks, packed as Version.
	ABI uint32
	// MirrorEvals asks the host to include evaluations in the plugin's
	// state syncs (ABI 1.1; the core scheduler needs them).
	MirrorEvals bool
}

// ProcessRequest asks the plugin to process one evaluation.
type ProcessRequest struct {
	Eval      *sdk.Evaluation
	EvalToken string
	// Sync brings the plugin's state mirror to Sync.Index, the eval's
	// snapshot index.
	Sync *StateSync
	// Now is the host's time, Unix nanoseconds.
	Now int64
	// Config is the plugin's configuration from the agent config.
	Config map[string]string
	// HostABI (ABI 1.4) is the host's ABI version, packed as Version; zero
	// from older hosts. From 1.4 the host takes a deferred eval update in
	// the response (ProcessResponse.UpdateEval).
	HostABI uint32 `msg:",omitempty"`
}

// ProcessResponse is the plugin's answer to a ProcessRequest.
type ProcessResponse struct {
	Code    Code
	Message string
	// Index is the plugin mirror's index after the call.
	Index uint64
	// UpdateEval (ABI 1.4, only to hosts whose ProcessRequest.HostABI is
	// 1.4 or later) is the plugin's last eval update, deferred rather than
	// sent through OpUpdateEval: the host applies it as that operation
	// before it reads the rest of the response. A plugin defers an update
	// only while it makes no other planner call after it.
	UpdateEval *sdk.Evaluation `msg:",omitempty"`
}

// ConfigRequest (ABI 1.7) asks a plugin, as the host loads it, whether it
// accepts its configuration: the Config every ProcessRequest to it will
// carry. The answer is a Status: CodeOK accepts, CodeConfigRefused refuses
// (Message says what is wrong), and any other code is a failure of the
// check, which refuses the load too. The host asks only plugins that
// declare 1.7 or later (Version.ChecksConfig), on an instance of their
// own that processes no eval.
type ConfigRequest struct {
	Config map[string]string
}

// StateSync changes a state mirror. A full sync (Full set) replaces the
// whole mirror with the state at Index. A delta (Full unset) applies to a
// mirror at FromIndex and leaves it at Index: every object that changed
// between the two indexes is either upserted (with its value at Index) or
// listed as deleted. FromIndex may be above Index (a mirror that ran ahead
// is brought back).
type StateSync struct {
	Full      bool
	FromIndex uint64
	Index     uint64

	Nodes        []*sdk.Node
	DeletedNodes []string

	Jobs        []*sdk.Job
	DeletedJobs []sdk.NamespacedID
	// JobStatuses (ABI 1.3, deltas only) change jobs whose specification
	// the mirror already holds: only fields the server sets changed.
	// CompactJobs moves such jobs here from Jobs.
	JobStatuses []*JobStatus `msg:",omitempty"`
	// JobVersions are older job versions referenced by Allocs (by
	// Namespace, JobID and JobVersion) and not equal to the job's current
	// version. Each appears once.
	JobVersions []*sdk.Job

	// Allocs are sent without their Job; the mirror links them to the job
	// version they name.
	Allocs        []*sdk.Allocation
	DeletedAllocs []string

	Deployments        []*sdk.Deployment
	DeletedDeployments []string

	// SchedulerConfig is set when it changed (always in a full sync).
	SchedulerConfig *sdk.SchedulerConfiguration

	// Evals and DeletedEvals are sent only to plugins that set
	// Info.MirrorEvals (ABI 1.1).
	Evals        []*sdk.Evaluation
	DeletedEvals []string

	// CSIVolumes and DeletedCSIVolumes (ABI 1.11) are the CSI volumes,
	// with their claims; a host sends them to plugins whose ABI is 1.11 or
	// later.
	CSIVolumes        []*sdk.CSIVolume   `msg:",omitempty"`
	DeletedCSIVolumes []sdk.NamespacedID `msg:",omitempty"`

	// Kept (ABI 1.2), in a delta only, says that the allocations the
	// plugin kept from its last wholly committed plan (PlanResponse.Whole)
	// are part of this delta as KeptAlloc derives them, and are left out
	// of Allocs. Without it the plugin forgets them: any of them that
	// changed in the delta's range is in Allocs or DeletedAllocs.
	Kept *Kept `msg:",omitempty"`
}

// JobStatus is the part of a job the server sets (ABI 1.3): everything
// but its specification. A job's specification changes only with its
// JobModifyIndex, so a mirror that holds the job at JobModifyIndex gets
// the job as it now is by patching these fields onto it (Patch).
type JobStatus struct {
	Namespace         string
	ID                string
	JobModifyIndex    uint64
	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	SubmitTime        int64
	CreateIndex       uint64
	ModifyIndex       uint64
}

// StatusOf returns j's server-set fields.
func StatusOf(j *sdk.Job) *JobStatus {
	return &JobStatus{Namespace: j.Namespace, ID: j.ID, JobModifyIndex: j.JobModifyIndex,
		Status: j.Status, StatusDescription: j.StatusDescription, Stable: j.Stable, Version: j.Version,
		SubmitTime: j.SubmitTime, CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex}
}

// Patch returns a copy of spec, the job at s.JobModifyIndex, with the
// fields s carries. The copy shares spec's groups and other parts.
func (s *JobStatus) Patch(spec *sdk.Job) *sdk.Job {
	c := *spec
	c.Status, c.StatusDescription, c.Stable, c.Version = s.Status, s.StatusDescription, s.Stable, s.Version
	c.SubmitTime, c.CreateIndex, c.ModifyIndex = s.SubmitTime, s.CreateIndex, s.ModifyIndex
	return &c
}

// CompactJobs moves to JobStatuses every job of a forward delta whose
// specification a mirror at FromIndex already holds: one whose
// JobModifyIndex is at most FromIndex (registering a new specification
// raises it to the registration's index). The job's groups and tasks are
// then neither encoded nor decoded again when, say, only its status
// changed. Only plugins that declare ABI 1.3 or later understand the
// result. A full sync, or a delta that goes back, is left as it is.
func (s *StateSync) CompactJobs() {
	if s == nil || s.Full || s.FromIndex > s.Index || len(s.Jobs) == 0 {
		return
	}
	kept := s.Jobs[:0]
	for _, j := range s.Jobs {
		if j.JobModifyIndex != 0 && j.JobModifyIndex <= s.FromIndex {
			s.JobStatuses = append(s.JobStatuses, StatusOf(j))
			continue
		}
		kept = append(kept, j)
	}
	clear(s.Jobs[len(kept):])
	s.Jobs = kept
}

// Kept stamps a plugin's kept allocations: the index and the time at which
// the host stored them (ABI 1.2).
type Kept struct {
	Index uint64
	// Time is the allocations' CreateTime and ModifyTime, Unix ns.
	Time int64
}

// KeptAlloc returns the allocation the host stored for a, a new
// allocation of a wholly committed plan for job (the plan's Job), as a
// state sync would carry it: without Job and Metrics, created and modified
// at k.Index and k.Time, linked to job's version. The host sends Kept only
// after checking that every kept allocation derived so equals the stored
// one, so host and plugin must derive them with this one function.
func KeptAlloc(a *sdk.Allocation, job *sdk.Job, k *Kept) *sdk.Allocation {
	c := *a
	StampKept(&c, job, k)
	return &c
}

// StampKept makes c, a copy of a kept allocation, what KeptAlloc returns.
func StampKept(c *sdk.Allocation, job *sdk.Job, k *Kept) {
	c.Job, c.Metrics = nil, nil
	c.CreateIndex, c.ModifyIndex, c.AllocModifyIndex = k.Index, k.Index, k.Index
	c.CreateTime, c.ModifyTime = k.Time, k.Time
	if job != nil {
		c.JobVersion, c.JobModifyIndex = job.Version, job.JobModifyIndex
	}
}

// Empty reports whether the sync changes nothing.
func (s *StateSync) Empty() bool {
	return s == nil || (!s.Full && s.FromIndex == s.Index && len(s.Nodes) == 0 && len(s.DeletedNodes) == 0 &&
		len(s.Jobs) == 0 && len(s.DeletedJobs) == 0 && len(s.JobStatuses) == 0 && len(s.Allocs) == 0 && len(s.DeletedAllocs) == 0 &&
		len(s.Deployments) == 0 && len(s.DeletedDeployments) == 0 && s.SchedulerConfig == nil &&
		len(s.Evals) == 0 && len(s.DeletedEvals) == 0 && s.Kept == nil)
}

// PlanRequest is the argument of OpSubmitPlan.
type PlanRequest struct {
	Plan *sdk.Plan
	// Shared and Placed (ABI 1.8, sent only to hosts whose
	// ProcessRequest.HostABI is 1.8 or later) carry new allocations of the
	// plan apart from Plan.NodeAllocation: each Placed entry is the
	// allocation Shared[Placed.Shared] with the entry's own fields set, and
	// belongs at the end of Plan.NodeAllocation[Placed.NodeID]. A plan's
	// placements differ mostly in their IDs, names, nodes and metrics, and
	// encoding the rest once is most of what encoding them cost. Expand
	// restores them; Placements.Split is the plugin's side.
	Shared []*sdk.Allocation `msg:",omitempty"`
	Placed []Placed          `msg:",omitempty"`
	// NodesAvailable (ABI 1.10, sent only to hosts whose
	// ProcessRequest.HostABI is 1.10 or later) is the
	// AllocMetric.NodesAvailable of every Placed entry whose Metrics come
	// without one. It counts the ready nodes of each datacenter, which is
	// the same for every placement of a pass, and one map per placement
	// was a large part of encoding its metrics. Expand restores it.
	NodesAvailable map[string]int `msg:",omitempty"`
}

// Placed is a new allocation of a plan, on the wire as the fields it does
// not share with its template (PlanRequest.Shared).
type Placed struct {
	// Shared is the index of its template in PlanRequest.Shared.
	Shared             uint32
	ID                 string
	Name               string
	NodeID             string
	NodeName           string
	PreviousAllocation string
	DeploymentStatus   *sdk.AllocDeploymentStatus
	RescheduleTracker  *sdk.RescheduleTracker
	Metrics            *sdk.AllocMetric
}

//msgp:tuple Placed

// PlanResponse answers OpSubmitPlan. On a partial commit Refresh brings the
// mirror to at least Result.RefreshIndex. Allocations in Result carry only
// ID, NodeID, Name and TaskGroup: the plugin has the rest.
type PlanResponse struct {
	Code    Code
	Message string
	Result  *sdk.PlanResult
	Refresh *StateSync
	// Whole (ABI 1.2, sent only to plugins that declare 1.2 or later) says
	// that the whole plan committed as submitted. Result then carries no
	// NodeUpdate, NodeAllocation or NodePreemptions: they are the plan's.
	// The plugin may keep the plan's new allocations until its next sync
	// (StateSync.Kept).
	Whole bool `msg:",omitempty"`
}

// EvalRequest is the argument of OpUpdateEval, OpCreateEval and
// OpReblockEval.
type EvalRequest struct {
	Eval *sdk.Evaluation
}

// GCRequest is the argument of OpGarbageCollect (ABI 1.1).
type GCRequest struct {
	Request *sdk.GCRequest
}

// Status answers the eval operations, OpGarbageCollect and (ABI 1.7) a
// ConfigRequest.
type Status struct {
	Code    Code
	Message string
}

// LogRecord is the argument of OpLog. It has no answer.
type LogRecord struct {
	// Level follows log/slog: -4 debug, 0 info, 4 warn, 8 error.
	Level   int
	Message string
	// Attrs are key/value pairs, flattened to strings.
	Attrs []string
}
