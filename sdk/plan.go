package sdk

// Plan is what a scheduler asks the host to commit for one evaluation:
// allocations to stop (NodeUpdate), to place or update (NodeAllocation) and
// to preempt (NodePreemptions), per node. The host never trusts it: the plan
// applier re-checks every node against the latest state.
type Plan struct {
	EvalID string `msg:",omitempty"`
	// EvalToken is the broker's dequeue token; a plan whose token is not the
	// outstanding one is rejected.
	EvalToken string `msg:",omitempty"`
	Priority  int    `msg:",omitempty"`
	AllAtOnce bool   `msg:",omitempty"`
	// Job is the job version new allocations run. Allocations in
	// NodeAllocation leave Job nil; the applier attaches this one.
	Job *Job `msg:",omitempty"`
	// NodeUpdate stops or evicts existing allocations. Entries need only ID,
	// DesiredDescription and, for lost allocations, ClientStatus.
	NodeUpdate map[string][]*Allocation `msg:",omitempty"`
	// NodeAllocation places new allocations or updates existing ones in place.
	NodeAllocation map[string][]*Allocation `msg:",omitempty"`
	// NodePreemptions evicts lower-priority allocations of other jobs.
	NodePreemptions   map[string][]*Allocation  `msg:",omitempty"`
	Annotations       *PlanAnnotations          `msg:",omitempty"`
	Deployment        *Deployment               `msg:",omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate `msg:",omitempty"`
	SnapshotIndex     uint64                    `msg:",omitempty"`
}

// AppendStoppedAlloc adds a stop of alloc to the plan.
func (p *Plan) AppendStoppedAlloc(alloc *Allocation, desc, clientStatus string) {
	stop := &Allocation{
		ID: alloc.ID, Namespace: alloc.Namespace, NodeID: alloc.NodeID, JobID: alloc.JobID,
		TaskGroup: alloc.TaskGroup, Name: alloc.Name, EvalID: alloc.EvalID,
		DesiredStatus: AllocDesiredStatusStop, DesiredDescription: desc,
		ClientStatus: clientStatus, FollowupEvalID: alloc.FollowupEvalID,
	}
	if p.NodeUpdate == nil {
		p.NodeUpdate = map[string][]*Allocation{}
	}
	p.NodeUpdate[alloc.NodeID] = append(p.NodeUpdate[alloc.NodeID], stop)
}

// AppendAlloc adds a placement (or in-place update) of alloc to the plan.
func (p *Plan) AppendAlloc(alloc *Allocation) {
	if p.NodeAllocation == nil {
		p.NodeAllocation = map[string][]*Allocation{}
	}
	p.NodeAllocation[alloc.NodeID] = append(p.NodeAllocation[alloc.NodeID], alloc)
}

// AppendPreemptedAlloc adds an eviction of alloc, preempted by the
// allocation with ID by, to the plan.
func (p *Plan) AppendPreemptedAlloc(alloc *Allocation, by string) {
	ev := &Allocation{
		ID: alloc.ID, Namespace: alloc.Namespace, NodeID: alloc.NodeID, JobID: alloc.JobID,
		TaskGroup: alloc.TaskGroup, Name: alloc.Name,
		DesiredStatus: AllocDesiredStatusEvict, PreemptedByAllocation: by,
		DesiredDescription: "Preempted by alloc ID " + by,
	}
	if p.NodePreemptions == nil {
		p.NodePreemptions = map[string][]*Allocation{}
	}
	p.NodePreemptions[alloc.NodeID] = append(p.NodePreemptions[alloc.NodeID], ev)
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 && len(p.NodePreemptions) == 0 &&
		p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// PlanResult is what the applier committed. When it committed only part of
// the plan, RefreshIndex is the index the scheduler must refresh its state
// to before retrying.
type PlanResult struct {
	NodeUpdate        map[string][]*Allocation
	NodeAllocation    map[string][]*Allocation
	NodePreemptions   map[string][]*Allocation
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	// RejectedNodes are the nodes whose part of the plan did not fit.
	RejectedNodes []string
	// RefreshIndex is set when part of the plan was rejected.
	RefreshIndex uint64
	// AllocIndex is the index at which the plan was committed.
	AllocIndex uint64
	// Whole is set by the SDK when the host committed the plan as it was
	// submitted (abi.PlanResponse.Whole): the result's lists are the
	// plan's, so what was committed need not be looked up allocation by
	// allocation. It does not travel.
	Whole bool `msg:"-" json:"-"`
}

// FullCommit reports whether everything in plan was committed, and counts
// the placements expected and actually committed.
func (r *PlanResult) FullCommit(plan *Plan) (bool, int, int) {
	expected, actual := 0, 0
	for node, allocs := range plan.NodeAllocation {
		expected += len(allocs)
		if !r.Whole {
			actual += len(r.NodeAllocation[node])
		}
	}
	if r.Whole {
		actual = expected
	}
	return expected == actual, expected, actual
}

// PlanAnnotations explain a plan: what each group would do.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates `msg:",omitempty"`
	PreemptedAllocs  []*AllocationListStub      `msg:",omitempty"`
}

// DesiredUpdates counts what a plan does to one task group.
type DesiredUpdates struct {
	Ignore            uint64 `msg:",omitempty"`
	Place             uint64 `msg:",omitempty"`
	Migrate           uint64 `msg:",omitempty"`
	Stop              uint64 `msg:",omitempty"`
	InPlaceUpdate     uint64 `msg:",omitempty"`
	DestructiveUpdate uint64 `msg:",omitempty"`
	Canary            uint64 `msg:",omitempty"`
	Preemptions       uint64 `msg:",omitempty"`
	Reconnect         uint64 `msg:",omitempty"`
	Disconnect        uint64 `msg:",omitempty"`
	RescheduleNow     uint64 `msg:",omitempty"`
	RescheduleLater   uint64 `msg:",omitempty"`
}

// AllocationListStub is the short form of an allocation.
type AllocationListStub struct {
	ID                    string
	EvalID                string
	Name                  string
	Namespace             string
	NodeID                string
	NodeName              string
	JobID                 string
	JobType               string
	JobVersion            uint64
	TaskGroup             string
	AllocatedResources    *AllocatedResources `json:",omitempty"`
	DesiredStatus         string
	DesiredDescription    string
	ClientStatus          string
	ClientDescription     string
	DesiredTransition     DesiredTransition
	TaskStates            map[string]Opaque
	DeploymentStatus      *AllocDeploymentStatus
	FollowupEvalID        string
	NextAllocation        string
	RescheduleTracker     *RescheduleTracker
	PreemptedAllocations  []string
	PreemptedByAllocation string
	CreateIndex           uint64
	ModifyIndex           uint64
	CreateTime            int64
	ModifyTime            int64
}

// Stub returns the allocation's short form.
func (a *Allocation) Stub() *AllocationListStub {
	s := &AllocationListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace, NodeID: a.NodeID,
		NodeName: a.NodeName, JobID: a.JobID, JobVersion: a.JobVersion, TaskGroup: a.TaskGroup,
		AllocatedResources: a.AllocatedResources, DesiredStatus: a.DesiredStatus,
		DesiredDescription: a.DesiredDescription, ClientStatus: a.ClientStatus,
		ClientDescription: a.ClientDescription, DesiredTransition: a.DesiredTransition, TaskStates: a.TaskStates,
		DeploymentStatus: a.DeploymentStatus, FollowupEvalID: a.FollowupEvalID,
		NextAllocation: a.NextAllocation, RescheduleTracker: a.RescheduleTracker,
		PreemptedAllocations: a.PreemptedAllocations, PreemptedByAllocation: a.PreemptedByAllocation,
		CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex, CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
	if a.Job != nil {
		s.JobType = a.Job.Type
	}
	return s
}
