package sdk

import "time"

// Evaluation is a request to reconcile a job's desired state with the
// cluster. Its life is Nomad's: created pending (or blocked), it ends
// complete, failed or canceled; PreviousEval, NextEval and BlockedEval chain
// it to the evaluations it caused.
type Evaluation struct {
	ID          string `msg:",omitempty"`
	Namespace   string `msg:",omitempty"`
	Priority    int    `msg:",omitempty"`
	Type        string `msg:",omitempty"`
	TriggeredBy string `msg:",omitempty"`
	JobID       string `msg:",omitempty"`
	// JobModifyIndex is the job's modify index when the eval was created.
	JobModifyIndex    uint64 `msg:",omitempty"`
	NodeID            string `msg:",omitempty"`
	NodeModifyIndex   uint64 `msg:",omitempty"`
	DeploymentID      string `msg:",omitempty"`
	Status            string `msg:",omitempty"`
	StatusDescription string `msg:",omitempty"`
	// Wait and WaitUntil delay the eval in the broker.
	Wait      time.Duration `msg:",omitempty"`
	WaitUntil time.Time     `msg:",omitempty"`
	// NextEval is the follow-up eval (rolling-update, failed-follow-up).
	NextEval string `msg:",omitempty"`
	// PreviousEval is the eval that created this one.
	PreviousEval string `msg:",omitempty"`
	// BlockedEval is the blocked eval this one created.
	BlockedEval string `msg:",omitempty"`
	// RelatedEvals is filled by the API on request.
	RelatedEvals []*EvaluationStub `msg:",omitempty"`
	// FailedTGAllocs explains, per task group, why allocations could not be
	// placed.
	FailedTGAllocs map[string]*AllocMetric `msg:",omitempty"`
	// ClassEligibility records, for a blocked eval, which computed node
	// classes were feasible; EscapedComputedClass is set when feasibility
	// depended on more than the class (then any node change may unblock).
	ClassEligibility     map[string]bool  `msg:",omitempty"`
	EscapedComputedClass bool             `msg:",omitempty"`
	QuotaLimitReached    string           `msg:",omitempty"`
	AnnotatePlan         bool             `msg:",omitempty"`
	PlanAnnotations      *PlanAnnotations `msg:",omitempty"`
	// QueuedAllocations counts, per task group, allocations not yet placed.
	QueuedAllocations map[string]int `msg:",omitempty"`
	// LeaderACL is unused; kept for wire compatibility with Nomad's eval.
	LeaderACL string `json:"-" msg:"-"`
	// SnapshotIndex is the state index the scheduler worked from.
	SnapshotIndex uint64 `msg:",omitempty"`
	CreateIndex   uint64 `msg:",omitempty"`
	ModifyIndex   uint64 `msg:",omitempty"`
	CreateTime    int64  `msg:",omitempty"`
	ModifyTime    int64  `msg:",omitempty"`
}

// EvaluationStub is the short form of an evaluation.
type EvaluationStub struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string
	TriggeredBy       string
	JobID             string
	NodeID            string
	DeploymentID      string
	Status            string
	StatusDescription string
	WaitUntil         time.Time
	NextEval          string
	PreviousEval      string
	BlockedEval       string
	CreateIndex       uint64
	ModifyIndex       uint64
	CreateTime        int64
	ModifyTime        int64
}

// TerminalStatus reports whether the eval has finished its life.
func (e *Evaluation) TerminalStatus() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCanceled:
		return true
	}
	return false
}

// ShouldEnqueue reports whether the eval goes to the broker.
func (e *Evaluation) ShouldEnqueue() bool { return e.Status == EvalStatusPending }

// ShouldBlock reports whether the eval goes to the blocked-evals tracker.
func (e *Evaluation) ShouldBlock() bool { return e.Status == EvalStatusBlocked }

// Copy returns a deep-enough copy for a scheduler to modify and update.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	c := *e
	if e.FailedTGAllocs != nil {
		c.FailedTGAllocs = make(map[string]*AllocMetric, len(e.FailedTGAllocs))
		for k, v := range e.FailedTGAllocs {
			c.FailedTGAllocs[k] = v
		}
	}
	if e.ClassEligibility != nil {
		c.ClassEligibility = make(map[string]bool, len(e.ClassEligibility))
		for k, v := range e.ClassEligibility {
			c.ClassEligibility[k] = v
		}
	}
	if e.QueuedAllocations != nil {
		c.QueuedAllocations = make(map[string]int, len(e.QueuedAllocations))
		for k, v := range e.QueuedAllocations {
			c.QueuedAllocations[k] = v
		}
	}
	return &c
}

// Stub returns the eval's short form.
func (e *Evaluation) Stub() *EvaluationStub {
	return &EvaluationStub{
		ID: e.ID, Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
		TriggeredBy: e.TriggeredBy, JobID: e.JobID, NodeID: e.NodeID,
		DeploymentID: e.DeploymentID, Status: e.Status, StatusDescription: e.StatusDescription,
		WaitUntil: e.WaitUntil, NextEval: e.NextEval, PreviousEval: e.PreviousEval,
		BlockedEval: e.BlockedEval, CreateIndex: e.CreateIndex, ModifyIndex: e.ModifyIndex,
		CreateTime: e.CreateTime, ModifyTime: e.ModifyTime,
	}
}

// NextRollingEval returns a pending rolling-update eval that follows e after
// wait (system jobs' stagger). The caller sets e.NextEval.
func (e *Evaluation) NextRollingEval(id string, wait time.Duration) *Evaluation {
	return &Evaluation{
		ID: id, Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
		TriggeredBy: EvalTriggerRollingUpdate, JobID: e.JobID,
		JobModifyIndex: e.JobModifyIndex, Status: EvalStatusPending,
		Wait: wait, PreviousEval: e.ID,
	}
}

// CreateBlockedEval returns a blocked eval that follows e, capturing which
// classes were feasible. Trigger is queued-allocs, or max-plan-attempts when
// planFailure is set. The caller sets e.BlockedEval.
func (e *Evaluation) CreateBlockedEval(id string, classEligibility map[string]bool, escaped bool, quotaReached string, failedTGAllocs map[string]*AllocMetric, planFailure bool) *Evaluation {
	trigger := EvalTriggerQueuedAllocs
	if planFailure {
		trigger = EvalTriggerMaxPlans
	}
	return &Evaluation{
		ID: id, Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
		TriggeredBy: trigger, JobID: e.JobID, JobModifyIndex: e.JobModifyIndex,
		Status: EvalStatusBlocked, PreviousEval: e.ID, FailedTGAllocs: failedTGAllocs,
		ClassEligibility: classEligibility, EscapedComputedClass: escaped,
		QuotaLimitReached: quotaReached,
	}
}

// CreateFailedFollowUpEval returns a pending eval that retries a failed e
// after wait. The caller sets e.NextEval.
func (e *Evaluation) CreateFailedFollowUpEval(id string, wait time.Duration) *Evaluation {
	return &Evaluation{
		ID: id, Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
		TriggeredBy: EvalTriggerFailedFollowUp, JobID: e.JobID,
		JobModifyIndex: e.JobModifyIndex, Status: EvalStatusPending,
		Wait: wait, PreviousEval: e.ID,
	}
}
