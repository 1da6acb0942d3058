// Package fsm is the host's finite state machine: it applies raft log
// entries to the state store and tells the leader's evaluation machinery
// (broker, blocked evals) what each committed entry means for it.
package fsm

import (
	"fmt"
	"io"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// Notifier hears what committed entries mean for scheduling. Its methods
// are called on the FSM's goroutine right after each commit and must not
// block.
type Notifier interface {
	// EvalsCommitted receives the evaluations an entry wrote.
	EvalsCommitted(evals []*sdk.Evaluation)
	// CapacityChanged says nodes of a computed class may now fit more: a
	// node became ready or eligible, or allocations on it ended.
	CapacityChanged(computedClass string, index uint64)
}

// FSM applies log entries to a state store.
type FSM struct {
	store  *state.Store
	notify Notifier
	log    zerolog.Logger
}

var _ raft.BatchingFSM = (*FSM)(nil)

// New returns an FSM over store. notify may be nil.
func New(store *state.Store, notify Notifier, log zerolog.Logger) *FSM {
	return &FSM{store: store, notify: notify, log: log}
}

// Store returns the FSM's state store.
func (f *FSM) Store() *state.Store { return f.store }

// SetNotifier sets who hears about commits; set it before raft starts.
func (f *FSM) SetNotifier(n Notifier) { f.notify = n }

// Encode tags and encodes a log entry.
func Encode(t MessageType, msg msgp.Marshaler) ([]byte, error) {
	return msg.MarshalMsg([]byte{byte(t)})
}

// effects are what an entry means for the leader, delivered after commit.
type effects struct {
	evals   []*sdk.Evaluation
	classes map[string]bool
}

func (e *effects) unblock(class string) {
	if e.classes == nil {
		e.classes = map[string]bool{}
	}
	e.classes[class] = true
}

// Apply applies one entry; the result is nil or an error.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	return f.applyCommand(l.Index, l.Data)
}

// ApplyBatch applies consecutive entries; raft hands them over together
// when it commits several at once.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		out[i] = f.Apply(l)
	}
	return out
}

func (f *FSM) applyCommand(index uint64, data []byte) any {
	if len(data) == 0 {
		return fmt.Errorf("fsm: empty entry at index %d", index)
	}
	var fx effects
	err := f.store.Write(index, func(tx *state.Txn) error {
		return f.dispatch(tx, MessageType(data[0]), data[1:], &fx)
	})
	if err != nil {
		f.log.Error().Err(err).Uint64("index", index).Uint8("type", data[0]).Msg("fsm: entry not applied")
		return err
	}
	if f.notify != nil {
		if len(fx.evals) > 0 {
			f.notify.EvalsCommitted(fx.evals)
		}
		for class := range fx.classes {
			f.notify.CapacityChanged(class, index)
		}
	}
	return nil
}

func decode(body []byte, msg msgp.Unmarshaler) error {
	if _, err := msg.UnmarshalMsg(body); err != nil {
		return fmt.Errorf("fsm: decode %T: %w", msg, err)
	}
	return nil
}

func (f *FSM) dispatch(tx *state.Txn, t MessageType, body []byte, fx *effects) error {
	switch t {
	case NodeRegisterRequestType:
		var req NodeRegisterRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyNodeRegister(tx, &req, fx)
	case NodeDeregisterRequestType:
		var req NodeDeregisterRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		for _, id := range req.NodeIDs {
			if err := tx.DeleteNode(id); err != nil {
				return err
			}
		}
		return upsertEvals(tx, req.Evals, fx)
	case NodeUpdateStatusRequestType:
		var req NodeUpdateStatusRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyNodeStatus(tx, &req, fx)
	case NodeUpdateEligibilityRequestType:
		var req NodeUpdateEligibilityRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyNodeEligibility(tx, &req, fx)
	case JobRegisterRequestType:
		var req JobRegisterRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		if err := tx.UpsertJob(req.Job); err != nil {
			return err
		}
		if req.Eval != nil {
			req.Eval.JobModifyIndex = req.Job.JobModifyIndex
			return upsertEvals(tx, []*sdk.Evaluation{req.Eval}, fx)
		}
		return nil
	case JobDeregisterRequestType:
		var req JobDeregisterRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyJobDeregister(tx, &req, fx)
	case EvalUpdateRequestType:
		var req EvalUpdateRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return upsertEvals(tx, req.Evals, fx)
	case EvalDeleteRequestType:
		var req EvalDeleteRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		for _, id := range req.Evals {
			if err := tx.DeleteEval(id); err != nil {
				return err
			}
		}
		for _, id := range req.Allocs {
			if err := tx.DeleteAlloc(id); err != nil {
				return err
			}
		}
		return nil
	case AllocClientUpdateRequestType:
		var req AllocClientUpdateRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyAllocClientUpdate(tx, &req, fx)
	case AllocUpdateDesiredTransitionRequestType:
		var req AllocUpdateDesiredTransitionRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		for id, dt := range req.Allocs {
			old := tx.Alloc(id)
			if old == nil {
				continue
			}
			c := *old
			c.DesiredTransition = *dt
			if err := tx.UpsertAlloc(&c); err != nil {
				return err
			}
		}
		return upsertEvals(tx, req.Evals, fx)
	case ApplyPlanResultsRequestType:
		var req ApplyPlanResultsRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyPlanResults(tx, &req, fx)
	case SchedulerConfigRequestType:
		var req SchedulerConfigRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return tx.SetSchedulerConfig(req.Config)
	case DeploymentStatusUpdateRequestType:
		var req DeploymentStatusUpdateRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyDeploymentStatus(tx, &req, fx)
	case JobStabilityRequestType:
		var req JobStabilityRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyJobStability(tx, &req)
	case GarbageCollectRequestType:
		var req GarbageCollectRequest
		if err := decode(body, &req); err != nil {
			return err
		}
		return applyGarbageCollect(tx, &req)
	}
	return fmt.Errorf("fsm: unknown message type %d", t)
}

func upsertEvals(tx *state.Txn, evals []*sdk.Evaluation, fx *effects) error {
	for _, e := range evals {
		if err := tx.UpsertEval(e); err != nil {
			return err
		}
	}
	fx.evals = append(fx.evals, evals...)
	return nil
}

func applyNodeRegister(tx *state.Txn, req *NodeRegisterRequest, fx *effects) error {
	n := req.Node
	if err := tx.UpsertNode(n); err != nil {
		return err
	}
	if n.Ready() {
		fx.unblock(n.ComputedClass)
	}
	return upsertEvals(tx, req.Evals, fx)
}

func applyNodeStatus(tx *state.Txn, req *NodeUpdateStatusRequest, fx *effects) error {
	old := tx.Node(req.NodeID)
	if old == nil {
		return fmt.Errorf("%w: node %s", state.ErrNotFound, req.NodeID)
	}
	n := *old
	n.Status = req.Status
	n.StatusUpdatedAt = req.UpdatedAt
	if req.Event != nil {
		n.Events = appendEvent(old.Events, req.Event, tx.Index())
	}
	if err := tx.UpsertNode(&n); err != nil {
		return err
	}
	if n.Ready() && !old.Ready() {
		fx.unblock(n.ComputedClass)
	}
	return upsertEvals(tx, req.Evals, fx)
}

// maxNodeEvents is how many events a node keeps.
const maxNodeEvents = 10

func appendEvent(events []*sdk.NodeEvent, e *sdk.NodeEvent, index uint64) []*sdk.NodeEvent {
	e.CreateIndex = index
	out := append(append([]*sdk.NodeEvent(nil), events...), e)
	if len(out) > maxNodeEvents {
		out = out[len(out)-maxNodeEvents:]
	}
	return out
}

func applyNodeEligibility(tx *state.Txn, req *NodeUpdateEligibilityRequest, fx *effects) error {
	old := tx.Node(req.NodeID)
	if old == nil {
		return fmt.Errorf("%w: node %s", state.ErrNotFound, req.NodeID)
	}
	n := *old
	n.SchedulingEligibility = req.Eligibility
	if err := tx.UpsertNode(&n); err != nil {
		return err
	}
	if n.Ready() && !old.Ready() {
		fx.unblock(n.ComputedClass)
	}
	return upsertEvals(tx, req.Evals, fx)
}

func applyJobDeregister(tx *state.Txn, req *JobDeregisterRequest, fx *effects) error {
	old := tx.Job(req.Namespace, req.JobID)
	if old == nil {
		return fmt.Errorf("%w: job %s/%s", state.ErrNotFound, req.Namespace, req.JobID)
	}
	if req.Purge {
		if err := tx.DeleteJob(req.Namespace, req.JobID); err != nil {
			return err
		}
	} else if !old.Stop {
		j := *old
		j.Stop = true
		if err := tx.UpsertJob(&j); err != nil {
			return err
		}
	}
	if req.Eval != nil {
		return upsertEvals(tx, []*sdk.Evaluation{req.Eval}, fx)
	}
	return nil
}

func applyAllocClientUpdate(tx *state.Txn, req *AllocClientUpdateRequest, fx *effects) error {
	for _, u := range req.Allocs {
		old := tx.Alloc(u.ID)
		if old == nil {
			continue // GC'd meanwhile: nothing to update
		}
		a := *old
		a.ClientStatus = u.ClientStatus
		a.ClientDescription = u.ClientDescription
		if u.TaskStates != nil {
			a.TaskStates = u.TaskStates
		}
		if u.DeploymentStatus != nil {
			a.DeploymentStatus = u.DeploymentStatus
		}
		a.ModifyTime = req.UpdatedAt
		if err := tx.UpsertAlloc(&a); err != nil {
			return err
		}
		if a.ClientTerminalStatus() && !old.TerminalStatus() {
			if n := tx.Node(a.NodeID); n != nil {
				fx.unblock(n.ComputedClass)
			}
		}
	}
	return upsertEvals(tx, req.Evals, fx)
}

func applyPlanResults(tx *state.Txn, req *ApplyPlanResultsRequest, fx *effects) error {
	now := req.UpdatedAt
	// Share the stored job version rather than keep a copy per plan.
	if j := req.Job; j != nil {
		if kept := tx.JobVersion(j.Namespace, j.ID, j.Version); kept != nil && kept.JobModifyIndex == j.JobModifyIndex {
			req.Job = kept
		}
	}
	freed := func(nodeID string) {
		if n := tx.Node(nodeID); n != nil {
			fx.unblock(n.ComputedClass)
		}
	}
	for _, s := range req.AllocsStopped {
		old := tx.Alloc(s.ID)
		if old == nil {
			continue
		}
		a := *old
		a.DesiredStatus = s.DesiredStatus
		if a.DesiredStatus == "" {
			a.DesiredStatus = sdk.AllocDesiredStatusStop
		}
		a.DesiredDescription = s.DesiredDescription
		if s.ClientStatus != "" {
			a.ClientStatus = s.ClientStatus
		}
		if s.FollowupEvalID != "" {
			a.FollowupEvalID = s.FollowupEvalID
		}
		a.ModifyTime = now
		a.AllocModifyIndex = tx.Index()
		if err := tx.UpsertAlloc(&a); err != nil {
			return err
		}
		if !old.TerminalStatus() {
			freed(a.NodeID)
		}
	}
	for _, p := range req.AllocsPreempted {
		old := tx.Alloc(p.ID)
		if old == nil {
			continue
		}
		a := *old
		a.DesiredStatus = sdk.AllocDesiredStatusEvict
		a.DesiredDescription = p.DesiredDescription
		a.PreemptedByAllocation = p.PreemptedByAllocation
		a.ModifyTime = now
		a.AllocModifyIndex = tx.Index()
		if err := tx.UpsertAlloc(&a); err != nil {
			return err
		}
	}
	for _, u := range req.AllocsUpdated {
		a := *u
		if old := tx.Alloc(a.ID); old != nil {
			// In-place update: the node's view of the allocation stays.
			a.ClientStatus = old.ClientStatus
			a.ClientDescription = old.ClientDescription
			a.TaskStates = old.TaskStates
			a.CreateTime = old.CreateTime
		} else {
			a.CreateTime = now
		}
		if a.Job == nil {
			a.Job = req.Job
		}
		a.ModifyTime = now
		a.AllocModifyIndex = tx.Index()
		if err := tx.UpsertAlloc(&a); err != nil {
			return err
		}
		// A replacement links its predecessor forward.
		if a.PreviousAllocation != "" {
			if prev := tx.Alloc(a.PreviousAllocation); prev != nil && prev.NextAllocation != a.ID {
				c := *prev
				c.NextAllocation = a.ID
				if err := tx.UpsertAlloc(&c); err != nil {
					return err
				}
			}
		}
	}
	if req.Deployment != nil {
		if err := tx.UpsertDeployment(req.Deployment); err != nil {
			return err
		}
	}
	for _, du := range req.DeploymentUpdates {
		if err := updateDeploymentStatus(tx, du, now); err != nil {
			return err
		}
	}
	return upsertEvals(tx, req.PreemptionEvals, fx)
}

func updateDeploymentStatus(tx *state.Txn, u *sdk.DeploymentStatusUpdate, now int64) error {
	old := tx.Deployment(u.DeploymentID)
	if old == nil {
		return nil
	}
	d := *old
	d.Status = u.Status
	d.StatusDescription = u.StatusDescription
	d.ModifyTime = now
	return tx.UpsertDeployment(&d)
}

func applyDeploymentStatus(tx *state.Txn, req *DeploymentStatusUpdateRequest, fx *effects) error {
	if err := updateDeploymentStatus(tx, req.Update, req.UpdatedAt); err != nil {
		return err
	}
	if req.Job != nil {
		if err := tx.UpsertJob(req.Job); err != nil {
			return err
		}
	}
	if req.Eval != nil {
		return upsertEvals(tx, []*sdk.Evaluation{req.Eval}, fx)
	}
	return nil
}

func applyJobStability(tx *state.Txn, req *JobStabilityRequest) error {
	v := tx.JobVersion(req.Namespace, req.JobID, req.Version)
	if v == nil {
		return fmt.Errorf("%w: job %s/%s version %d", state.ErrNotFound, req.Namespace, req.JobID, req.Version)
	}
	c := *v
	c.Stable = req.Stable
	if err := tx.UpsertJobVersion(&c); err != nil {
		return err
	}
	if cur := tx.Job(req.Namespace, req.JobID); cur != nil && cur.Version == req.Version {
		j := *cur
		j.Stable = req.Stable
		return tx.UpsertJob(&j)
	}
	return nil
}

// applyGarbageCollect deletes collected objects. Objects already gone are
// skipped: a GC entry may race with a purge.
func applyGarbageCollect(tx *state.Txn, req *GarbageCollectRequest) error {
	for _, id := range req.Allocs {
		if err := tx.DeleteAlloc(id); err != nil {
			return err
		}
	}
	for _, id := range req.Evals {
		if err := tx.DeleteEval(id); err != nil {
			return err
		}
	}
	for _, j := range req.Jobs {
		if tx.Job(j.Namespace, j.ID) == nil {
			continue
		}
		if err := tx.DeleteJob(j.Namespace, j.ID); err != nil {
			return err
		}
	}
	for _, id := range req.Nodes {
		if tx.Node(id) == nil {
			continue
		}
		if err := tx.DeleteNode(id); err != nil {
			return err
		}
	}
	for _, id := range req.Deployments {
		if err := tx.DeleteDeployment(id); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot implements raft.FSM.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{snap: f.store.Snapshot()}, nil
}

// Restore implements raft.FSM: it replaces the whole state with a snapshot.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return restore(f.store, rc)
}
