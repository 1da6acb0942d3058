package server

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/sdk"
)

// DispatchLaunchSuffix joins a parameterized job's ID, the dispatch time
// and a random suffix into the dispatched job's ID, as Nomad does
// ("parent/dispatch-1700000000-0a1b2c3d").
const DispatchLaunchSuffix = "/dispatch-"

// DispatchPayloadLimit is the largest payload a dispatch may carry, as in
// Nomad.
const DispatchPayloadLimit = 16 * 1024

// DispatchRequest is what a dispatch of a parameterized job supplies.
type DispatchRequest struct {
	Payload []byte
	Meta    map[string]string
	// IdempotencyToken, when set, makes retries safe: while a job
	// dispatched with the same token exists, it is returned instead of
	// dispatching another.
	IdempotencyToken string
	// IDPrefix goes between the launch suffix and the time in the
	// dispatched job's ID ("parent/dispatch-PREFIX-1700000000-0a1b2c3d").
	IDPrefix string
	// Priority overrides the parent's priority for the dispatched job
	// (0 keeps it).
	Priority int
}

// DispatchResult names the dispatched job and its eval.
type DispatchResult struct {
	DispatchedJobID string
	// EvalID is empty for a dispatched job that is periodic (it is
	// launched, not evaluated) and for a repeated idempotency token.
	EvalID string
	// Index is the raft index of the dispatch (or of the existing job's
	// last change, for a repeated idempotency token).
	Index uint64
	// JobCreateIndex is the dispatched job's create index.
	JobCreateIndex uint64
}

// DispatchJob launches a child of a parameterized job with the request's
// payload and metadata (merged over the parent's) and evaluates it. The
// child of a periodic parameterized job is a periodic job, as in Nomad:
// it gets no eval, and the periodic launcher launches it on its schedule.
func (s *Server) DispatchJob(namespace, id string, req DispatchRequest) (DispatchResult, error) {
	// Dispatches run one at a time so that two retries with the same
	// idempotency token cannot both miss the other's job.
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	snap := s.store.Snapshot()
	if err := registrationsAllowed(snap); err != nil {
		return DispatchResult{}, err
	}
	parent := snap.Job(namespace, id)
	if parent == nil {
		return DispatchResult{}, fmt.Errorf("%w: job %q", ErrNotFound, id)
	}
	if !parent.IsParameterized() {
		return DispatchResult{}, badRequest(fmt.Errorf("job %q is not a parameterized job", id))
	}
	if parent.Stop {
		return DispatchResult{}, badRequest(fmt.Errorf("job %q is stopped", id))
	}
	if err := checkDispatch(parent.ParameterizedJob, req); err != nil {
		return DispatchResult{}, badRequest(fmt.Errorf("dispatching job %q: %w", id, err))
	}
	if req.IdempotencyToken != "" {
		for _, c := range snap.JobsByIDPrefix(namespace, id+DispatchLaunchSuffix) {
			if c.ParentID == id && c.DispatchIdempotencyToken == req.IdempotencyToken {
				return DispatchResult{DispatchedJobID: c.ID, Index: c.ModifyIndex, JobCreateIndex: c.CreateIndex}, nil
			}
		}
	}
	now := s.now()
	child := dispatchChild(parent, req, now.Unix(), newID()[:8])
	child.SubmitTime = now.UnixNano()
	reg := &fsm.JobRegisterRequest{Job: child, RefsMustExist: true}
	if !child.IsPeriodic() {
		reg.Eval = s.newEval(child, sdk.EvalTriggerJobRegister)
	}
	index, err := s.Apply(fsm.JobRegisterRequestType, reg)
	if err != nil {
		return DispatchResult{}, err
	}
	res := DispatchResult{DispatchedJobID: child.ID, Index: index, JobCreateIndex: index}
	if reg.Eval != nil {
		res.EvalID = reg.Eval.ID
	}
	return res, nil
}

// checkDispatch checks a dispatch against the parameterized block: the
// payload as it is required, optional or forbidden, and no larger than
// DispatchPayloadLimit; every required metadata key given, and no key
// neither required nor optional. The priority, if set, must be one, and
// the ID prefix must hold no slash.
func checkDispatch(p *sdk.ParameterizedJobConfig, req DispatchRequest) error {
	var errs []string
	if pr := req.Priority; pr != 0 && (pr < sdk.JobMinPriority || pr > sdk.JobMaxPriority) {
		errs = append(errs, fmt.Sprintf("priority must be between %d and %d, not %d", sdk.JobMinPriority, sdk.JobMaxPriority, pr))
	}
	if strings.Contains(req.IDPrefix, "/") {
		errs = append(errs, fmt.Sprintf("the ID prefix %q holds a slash", req.IDPrefix))
	}
	switch p.Payload {
	case sdk.DispatchPayloadRequired:
		if len(req.Payload) == 0 {
			errs = append(errs, "the job requires a payload and none was given")
		}
	case sdk.DispatchPayloadForbidden:
		if len(req.Payload) != 0 {
			errs = append(errs, "the job forbids a payload and one was given")
		}
	}
	if n := len(req.Payload); n > DispatchPayloadLimit {
		errs = append(errs, fmt.Sprintf("the payload is %d bytes, over the limit of %d", n, DispatchPayloadLimit))
	}
	var missing, unknown []string
	for _, k := range p.MetaRequired {
		if _, ok := req.Meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range req.Meta {
		if !slices.Contains(p.MetaRequired, k) && !slices.Contains(p.MetaOptional, k) {
			unknown = append(unknown, k)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, "required metadata not given: "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		errs = append(errs, fmt.Sprintf("metadata neither required nor optional: %s (allowed: %s)",
			strings.Join(unknown, ", "), allowedMeta(p)))
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

func allowedMeta(p *sdk.ParameterizedJobConfig) string {
	keys := append(slices.Clone(p.MetaRequired), p.MetaOptional...)
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// dispatchChild derives the job a dispatch of parent launches at unix
// seconds, suffix making its ID unique within the second. The parent,
// as stored, is shared, not changed: the child gets its own metadata.
func dispatchChild(parent *sdk.Job, req DispatchRequest, unix int64, suffix string) *sdk.Job {
	c := *parent
	c.ID = parent.ID + DispatchLaunchSuffix
	if req.IDPrefix != "" {
		c.ID += req.IDPrefix + "-"
	}
	c.ID += strconv.FormatInt(unix, 10) + "-" + suffix
	if req.Priority != 0 {
		c.Priority = req.Priority
	}
	c.Name = c.ID
	c.ParentID = parent.ID
	c.Dispatched = true
	c.DispatchIdempotencyToken = req.IdempotencyToken
	c.Payload = slices.Clone(req.Payload)
	if len(parent.Meta)+len(req.Meta) > 0 {
		c.Meta = maps.Clone(parent.Meta)
		if c.Meta == nil {
			c.Meta = make(map[string]string, len(req.Meta))
		}
		maps.Copy(c.Meta, req.Meta)
	}
	c.Status, c.StatusDescription = "", ""
	c.Stable, c.Version = false, 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	return &c
}
