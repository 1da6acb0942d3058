package server

import (
	"errors"
	"fmt"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// ScaleRequest is a scaling request (Nomad's JobScaleRequest): a new count
// for a group, or, without Count, an event an autoscaler reports (Error for
// a failed policy). Either way it is recorded as a scaling event.
type ScaleRequest struct {
	Namespace string
	JobID     string
	Group     string
	Count     *int64
	Message   string
	Error     bool
	Meta      sdk.Opaque
}

// ScaleResult is what a scaling request did.
type ScaleResult struct {
	// EvalID is the job-scaling eval of a count change (none for an event
	// alone, or for a periodic or parameterized job).
	EvalID string
	// Index is the entry's index; JobModifyIndex the job's after it.
	Index          uint64
	JobModifyIndex uint64
}

// ScaleJob handles a scaling request as `nomad job scale` and the Nomad
// autoscaler expect: a count change is a new job version, evaluated by a
// job-scaling eval, within the group's scaling min and max and refused
// while a deployment of the job is active; every request leaves a scaling
// event (GET /v1/job/:id/scale).
//
// A count change is built on the job version read here and registered only
// over that version; if another registration replaced it in between, the
// change is built again on the new version rather than undoing it.
func (s *Server) ScaleJob(req ScaleRequest) (ScaleResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := s.scaleJob(req)
		if !errors.Is(err, ErrConflict) || attempt == registerAttempts {
			return res, err
		}
	}
}

// scaleJob is one attempt of ScaleJob.
func (s *Server) scaleJob(req ScaleRequest) (ScaleResult, error) {
	if err := registrationsAllowed(s.store.Snapshot()); err != nil {
		// Even a request without a count: Nomad refuses an autoscaler's
		// report too.
		return ScaleResult{}, err
	}
	if req.Group == "" {
		return ScaleResult{}, badRequest(errors.New("missing task group name for scaling action"))
	}
	if req.Count != nil && *req.Count < 0 {
		return ScaleResult{}, badRequest(fmt.Errorf("scaling action count can't be negative, got %d", *req.Count))
	}
	if req.Count != nil && req.Error {
		return ScaleResult{}, badRequest(errors.New("scaling action should not contain count if error is true"))
	}
	snap := s.store.Snapshot()
	cur := snap.Job(req.Namespace, req.JobID)
	if cur == nil {
		return ScaleResult{}, fmt.Errorf("%w: job %q", ErrNotFound, req.JobID)
	}
	// As Nomad, only a system job is refused: a sysbatch group runs its
	// count on each node.
	if cur.Type == sdk.JobTypeSystem {
		return ScaleResult{}, badRequest(fmt.Errorf("%s job %q has no count to scale", cur.Type, req.JobID))
	}
	tg := cur.LookupTaskGroup(req.Group)
	if tg == nil {
		return ScaleResult{}, badRequest(fmt.Errorf("task group %q specified for scaling does not exist in job %q", req.Group, req.JobID))
	}
	event := &fsm.ScalingEventRequest{Namespace: cur.Namespace, JobID: cur.ID, TaskGroup: req.Group,
		Event: &state.ScalingEvent{Time: s.now().UnixNano(), Count: req.Count, PreviousCount: int64(tg.Count),
			Message: req.Message, Error: req.Error, Meta: req.Meta}}
	if req.Count == nil {
		index, err := s.Apply(fsm.ScalingEventRequestType, event)
		return ScaleResult{Index: index, JobModifyIndex: cur.JobModifyIndex}, err
	}

	count := *req.Count
	if cur.Stop {
		return ScaleResult{}, badRequest(fmt.Errorf("job %q is stopped and cannot be scaled", req.JobID))
	}
	// The scaling block bounds the count whether or not it is enabled
	// (enabled is for the autoscaler), as Nomad's Job.Scale has it; max is
	// required, so a max of 0 allows no more than 0.
	if p := tg.Scaling; p != nil {
		if count < p.Min || count > p.Max {
			return ScaleResult{}, badRequest(fmt.Errorf("group %q: count %d is outside the scaling policy's range [%d, %d]", req.Group, count, p.Min, p.Max))
		}
	}
	if int64(int(count)) != count {
		return ScaleResult{}, badRequest(fmt.Errorf("count %d is too large", count))
	}
	if d := snap.LatestDeployment(cur.Namespace, cur.ID); d != nil && d.Active() && d.JobCreateIndex == cur.CreateIndex {
		return ScaleResult{}, badRequest(fmt.Errorf("job scaling blocked due to active deployment %s", d.ID))
	}
	job := cur.Copy()
	job.LookupTaskGroup(req.Group).Count = int(count)
	evalID, index, err := s.RegisterJobOpts(job, RegisterOptions{EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex,
		trigger: sdk.EvalTriggerScaling, scaling: event})
	if err != nil {
		return ScaleResult{}, err
	}
	// The job's JobModifyIndex after the write: the entry's index if it
	// made a new version. A count the group has already changes no spec,
	// and such a registration leaves the job as it is (applyJobRegister);
	// the index enforced above says the job was still cur's version then.
	// (Nomad's Job.Scale makes a new, identical, version even so.)
	jmi := index
	if !state.SpecChanged(cur, job) {
		jmi = cur.JobModifyIndex
	}
	return ScaleResult{EvalID: evalID, Index: index, JobModifyIndex: jmi}, nil
}
