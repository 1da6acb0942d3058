// Package fsm is the host's finite state machine: it applies raft log
// entries to the state store and tells the leader's evaluation machinery
// (broker, blocked evals) what each committed entry means for it.
package fsm

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// Notifier hears what committed entries mean for the leader's machinery.
// Committed is called on the FSM's goroutine right after each entry
// commits, in log order, and must not block.
type Notifier interface {
	Committed(c *Commit)
}

// Commit is what one committed entry means for the leader.
type Commit struct {
	Index uint64
	// Evals are the evaluations the entry wrote (created or updated).
	Evals []*sdk.Evaluation
	// DeletedEvals were removed (garbage collection, eval delete).
	DeletedEvals []string
	// Classes are the computed node classes (sorted) whose nodes may now
	// fit more: a node registered or became ready or eligible, or
	// allocations on one ended.
	Classes []string
	// Jobs were registered, stopped or removed.
	Jobs []sdk.NamespacedID
}

func (c *Commit) empty() bool {
	return len(c.Evals)+len(c.DeletedEvals)+len(c.Classes)+len(c.Jobs) == 0
}

// FSM applies log entries to a state store. It reads no clock and no random
// source: every time and ID it writes comes from the entry, so replaying the
// log rebuilds the same state.
type FSM struct {
	store   *state.Store
	notify  Notifier
	publish Publisher
	// cluster hears the cluster's identity when an entry or a snapshot
	// brings it.
	cluster func(*state.ClusterMeta)
	log     zerolog.Logger
}

// SetClusterHook sets who hears the cluster's identity when an entry or a
// snapshot brings it; set it before raft starts.
func (f *FSM) SetClusterHook(h func(*state.ClusterMeta)) { f.cluster = h }

// Publisher hears about every commit, for the event stream: the event type
// of the entry's message ("" when it makes no events), the state just after
// it and what it changed. Restore says the state was replaced.
type Publisher interface {
	Publish(eventType string, snap *state.Snapshot, changes []state.Change)
	Reset(snap *state.Snapshot)
}

// SetPublisher sets who publishes commits as events; set it before raft
// starts.
func (f *FSM) SetPublisher(p Publisher) { f.publish = p }

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

// ErrBadEntry is returned for a log entry that cannot be decoded.
var ErrBadEntry = errors.New("fsm: undecodable log entry")

// Check decodes an encoded entry without applying it: a data dir check
// uses it to refuse a log it could not replay.
func Check(data []byte) error {
	_, err := decodeEntry(data)
	return err
}

// effects collect what an entry means for the leader, delivered after
// commit.
type effects struct {
	Commit
	classes map[string]bool
}

func (e *effects) unblock(class string) {
	if e.classes == nil {
		e.classes = map[string]bool{}
	}
	e.classes[class] = true
}

// unblockCSI unblocks the evals blocked on the classes of the nodes that
// run the plugins of volumes just registered or freed: an eval whose
// placements found no volume, or no free claim, may place now.
func unblockCSI(tx *state.Txn, fx *effects, vols ...*sdk.CSIVolume) {
	plugins := map[string]bool{}
	for _, v := range vols {
		if v != nil {
			plugins[v.PluginID] = true
		}
	}
	for n := range tx.EachNode() {
		for id := range n.CSINodePlugins {
			if plugins[id] {
				fx.unblock(n.ComputedClass)
				break
			}
		}
	}
}

func (e *effects) job(ns, id string) {
	e.Jobs = append(e.Jobs, sdk.NamespacedID{Namespace: ns, ID: id})
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
	msg, err := decodeEntry(data)
	if err != nil {
		f.log.Error().Err(err).Uint64("index", index).Msg("fsm: entry not applied")
		return err
	}
	if err := f.commit(index, msg); err != nil {
		ev := f.log.Error()
		if errors.Is(err, ErrConflict) || errors.Is(err, state.ErrNonexistent) || errors.Is(err, state.ErrInUse) ||
			errors.Is(err, state.ErrBuiltIn) {
			// A check-and-set that lost a race, or a write the state
			// refuses (a namespace deleted with a job in it): its writer
			// hears of it; nothing went wrong here.
			ev = f.log.Debug()
		}
		ev.Err(err).Uint64("index", index).Uint8("type", data[0]).Msg("fsm: entry not applied")
		return err
	}
	return nil
}

// commit applies a decoded entry in one transaction and tells the notifier.
func (f *FSM) commit(index uint64, msg msgp.Unmarshaler) error {
	fx := &effects{Commit: Commit{Index: index}}
	if err := f.store.Write(index, func(tx *state.Txn) error { return safeApply(tx, msg, fx) }); err != nil {
		return err
	}
	if _, ok := msg.(*ClusterMetaRequest); ok && f.cluster != nil {
		if m := f.store.Snapshot().ClusterMeta(); m != nil {
			f.cluster(m)
		}
	}
	if f.publish != nil {
		typ := eventType(msg)
		var changes []state.Change
		if typ != "" {
			changes, _ = f.store.Journal().Between(index-1, index)
		}
		f.publish.Publish(typ, f.store.Snapshot(), changes)
	}
	if f.notify != nil {
		for class := range fx.classes {
			fx.Classes = append(fx.Classes, class)
		}
		slices.Sort(fx.Classes)
		if !fx.empty() {
			f.notify.Committed(&fx.Commit)
		}
	}
	return nil
}

// ErrConflict is the result of a check-and-set entry whose index no longer
// matches: the entry changes nothing.
var ErrConflict = errors.New("fsm: check-and-set index does not match")

// ErrApplyPanic wraps a panic raised while applying an entry. The entry's
// transaction is discarded, so the state is as before it; the panic is
// deterministic (the FSM reads no clock or random source), so every replica
// and every replay discards it alike, and a durable log holding such an
// entry still restarts.
var ErrApplyPanic = errors.New("fsm: applying the entry panicked")

// safeApply is apply with a panic turned into ErrApplyPanic.
func safeApply(tx *state.Txn, msg msgp.Unmarshaler, fx *effects) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %T: %v", ErrApplyPanic, msg, r)
		}
	}()
	return apply(tx, msg, fx)
}

// decodeEntry decodes a tagged entry into its request message.
func decodeEntry(data []byte) (msgp.Unmarshaler, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadEntry)
	}
	var msg msgp.Unmarshaler
	switch MessageType(data[0]) {
	case NodeRegisterRequestType:
		msg = &NodeRegisterRequest{}
	case NodeDeregisterRequestType:
		msg = &NodeDeregisterRequest{}
	case NodeUpdateStatusRequestType:
		msg = &NodeUpdateStatusRequest{}
	case NodeUpdateEligibilityRequestType:
		msg = &NodeUpdateEligibilityRequest{}
	case JobRegisterRequestType:
		msg = &JobRegisterRequest{}
	case JobDeregisterRequestType:
		msg = &JobDeregisterRequest{}
	case EvalUpdateRequestType:
		msg = &EvalUpdateRequest{}
	case EvalDeleteRequestType:
		msg = &EvalDeleteRequest{}
	case AllocClientUpdateRequestType:
		msg = &AllocClientUpdateRequest{}
	case AllocUpdateDesiredTransitionRequestType:
		msg = &AllocUpdateDesiredTransitionRequest{}
	case ApplyPlanResultsRequestType:
		msg = &ApplyPlanResultsRequest{}
	case SchedulerConfigRequestType:
		msg = &SchedulerConfigRequest{}
	case DeploymentStatusUpdateRequestType:
		msg = &DeploymentStatusUpdateRequest{}
	case JobStabilityRequestType:
		msg = &JobStabilityRequest{}
	case GarbageCollectRequestType:
		msg = &GarbageCollectRequest{}
	case DeploymentPromoteRequestType:
		msg = &DeploymentPromoteRequest{}
	case NodeUpdateDrainRequestType:
		msg = &NodeUpdateDrainRequest{}
	case ScalingEventRequestType:
		msg = &ScalingEventRequest{}
	case ClusterMetaRequestType:
		msg = &ClusterMetaRequest{}
	case ACLPolicyUpsertRequestType:
		msg = &ACLPolicyUpsertRequest{}
	case ACLPolicyDeleteRequestType:
		msg = &ACLPolicyDeleteRequest{}
	case ACLTokenUpsertRequestType:
		msg = &ACLTokenUpsertRequest{}
	case ACLTokenDeleteRequestType:
		msg = &ACLTokenDeleteRequest{}
	case ACLTokenBootstrapRequestType:
		msg = &ACLTokenBootstrapRequest{}
	case ACLRoleUpsertRequestType:
		msg = &ACLRoleUpsertRequest{}
	case ACLRoleDeleteRequestType:
		msg = &ACLRoleDeleteRequest{}
	case VariableApplyRequestType:
		msg = &VariableApplyRequest{}
	case RootKeyUpsertRequestType:
		msg = &RootKeyUpsertRequest{}
	case RootKeyDeleteRequestType:
		msg = &RootKeyDeleteRequest{}
	case AutopilotConfigRequestType:
		msg = &AutopilotConfigRequest{}
	case ACLAuthMethodUpsertRequestType:
		msg = &ACLAuthMethodUpsertRequest{}
	case ACLAuthMethodDeleteRequestType:
		msg = &ACLAuthMethodDeleteRequest{}
	case ACLBindingRuleUpsertRequestType:
		msg = &ACLBindingRuleUpsertRequest{}
	case ACLBindingRuleDeleteRequestType:
		msg = &ACLBindingRuleDeleteRequest{}
	case OneTimeTokenUpsertRequestType:
		msg = &OneTimeTokenUpsertRequest{}
	case OneTimeTokenExchangeRequestType:
		msg = &OneTimeTokenExchangeRequest{}
	case OneTimeTokenExpireRequestType:
		msg = &OneTimeTokenExpireRequest{}
	case NamespaceUpsertRequestType:
		msg = &NamespaceUpsertRequest{}
	case NamespaceDeleteRequestType:
		msg = &NamespaceDeleteRequest{}
	case NodePoolUpsertRequestType:
		msg = &NodePoolUpsertRequest{}
	case NodePoolDeleteRequestType:
		msg = &NodePoolDeleteRequest{}
	case JobVersionTagRequestType:
		msg = &JobVersionTagRequest{}
	case CSIVolumeRegisterRequestType:
		msg = &CSIVolumeRegisterRequest{}
	case CSIVolumeDeregisterRequestType:
		msg = &CSIVolumeDeregisterRequest{}
	case CSIVolumeDetachRequestType:
		msg = &CSIVolumeDetachRequest{}
	default:
		return nil, fmt.Errorf("%w: unknown message type %d", ErrBadEntry, data[0])
	}
	if _, err := msgp.Skip(data[1:]); err != nil {
		return nil, fmt.Errorf("%w: %T: malformed: %v", ErrBadEntry, msg, err)
	}
	rest, err := msg.UnmarshalMsg(data[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %T: %v", ErrBadEntry, msg, err)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %T: %d trailing bytes", ErrBadEntry, msg, len(rest))
	}
	if err := checkShape(msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// apply writes one decoded entry.
func apply(tx *state.Txn, msg msgp.Unmarshaler, fx *effects) error {
	switch req := msg.(type) {
	case *NodeRegisterRequest:
		return applyNodeRegister(tx, req, fx)
	case *NodeDeregisterRequest:
		for _, id := range req.NodeIDs {
			if err := tx.DeleteNode(id); err != nil {
				return err
			}
		}
		return upsertEvals(tx, req.Evals, fx)
	case *NodeUpdateStatusRequest:
		return applyNodeStatus(tx, req, fx)
	case *NodeUpdateEligibilityRequest:
		return applyNodeEligibility(tx, req, fx)
	case *JobRegisterRequest:
		return applyJobRegister(tx, req, fx)
	case *ScalingEventRequest:
		return applyScalingEvent(tx, req)
	case *JobDeregisterRequest:
		return applyJobDeregister(tx, req, fx)
	case *EvalUpdateRequest:
		return upsertEvals(tx, req.Evals, fx)
	case *EvalDeleteRequest:
		return applyGarbageCollect(tx, &GarbageCollectRequest{Evals: req.Evals, Allocs: req.Allocs}, fx)
	case *AllocClientUpdateRequest:
		return applyAllocClientUpdate(tx, req, fx)
	case *AllocUpdateDesiredTransitionRequest:
		for id, dt := range req.Allocs {
			old := tx.Alloc(id)
			if old == nil {
				continue
			}
			c := *old
			c.DesiredTransition.Merge(*dt) // one mark does not clear another, as in Nomad
			if err := tx.UpsertAlloc(&c); err != nil {
				return err
			}
		}
		return upsertEvals(tx, req.Evals, fx)
	case *ApplyPlanResultsRequest:
		return applyPlanResults(tx, req, fx)
	case *SchedulerConfigRequest:
		if cur := tx.SchedulerConfig(); req.CAS && cur.ModifyIndex != req.ModifyIndex {
			return fmt.Errorf("%w: scheduler configuration is at modify index %d, not %d", ErrConflict, cur.ModifyIndex, req.ModifyIndex)
		}
		return tx.SetSchedulerConfig(req.Config)
	case *DeploymentStatusUpdateRequest:
		return applyDeploymentStatus(tx, req, fx)
	case *JobStabilityRequest:
		return applyJobStability(tx, req)
	case *GarbageCollectRequest:
		return applyGarbageCollect(tx, req, fx)
	case *DeploymentPromoteRequest:
		return applyDeploymentPromote(tx, req, fx)
	case *NodeUpdateDrainRequest:
		return applyNodeDrain(tx, req, fx)
	case *ClusterMetaRequest:
		return tx.SetClusterMeta(&state.ClusterMeta{ClusterID: req.ClusterID, CreateTime: req.CreateTime})
	case *ACLPolicyUpsertRequest:
		return tx.UpsertACLPolicies(req.Policies)
	case *ACLPolicyDeleteRequest:
		return tx.DeleteACLPolicies(req.Names)
	case *ACLTokenUpsertRequest:
		return applyACLTokenUpsert(tx, req)
	case *ACLTokenDeleteRequest:
		return tx.DeleteACLTokens(req.AccessorIDs)
	case *ACLTokenBootstrapRequest:
		return applyACLBootstrap(tx, req)
	case *ACLRoleUpsertRequest:
		return applyACLRoleUpsert(tx, req)
	case *ACLRoleDeleteRequest:
		return tx.DeleteACLRoles(req.IDs)
	case *VariableApplyRequest:
		return applyVariable(tx, req)
	case *RootKeyUpsertRequest:
		return applyRootKeyUpsert(tx, req)
	case *RootKeyDeleteRequest:
		return applyRootKeyDelete(tx, req)
	case *AutopilotConfigRequest:
		var cur uint64
		if c := tx.AutopilotConfig(); c != nil {
			cur = c.ModifyIndex
		}
		if req.CAS && cur != req.ModifyIndex {
			return fmt.Errorf("%w: autopilot configuration is at modify index %d, not %d", ErrConflict, cur, req.ModifyIndex)
		}
		c := *req.Config
		return tx.SetAutopilotConfig(&c)
	case *ACLAuthMethodUpsertRequest:
		return tx.UpsertACLAuthMethods(req.Methods)
	case *ACLAuthMethodDeleteRequest:
		return tx.DeleteACLAuthMethods(req.Names)
	case *NamespaceUpsertRequest, *NamespaceDeleteRequest, *NodePoolUpsertRequest, *NodePoolDeleteRequest:
		return applyRefsWrite(tx, msg)
	case *JobVersionTagRequest:
		if req.Tag == nil {
			return tx.UntagJobVersion(req.Namespace, req.JobID, req.Name)
		}
		return tx.TagJobVersion(req.Namespace, req.JobID, req.Tag)
	case *CSIVolumeRegisterRequest:
		if err := tx.RegisterCSIVolumes(req.Volumes); err != nil {
			return err
		}
		unblockCSI(tx, fx, req.Volumes...)
		return nil
	case *CSIVolumeDeregisterRequest:
		return tx.DeregisterCSIVolumes(req.Namespace, req.IDs)
	case *CSIVolumeDetachRequest:
		if err := tx.DetachCSIVolume(req.Namespace, req.ID, req.NodeID); err != nil {
			return err
		}
		unblockCSI(tx, fx, tx.CSIVolume(req.Namespace, req.ID))
		return nil
	case *ACLBindingRuleUpsertRequest:
		return applyACLBindingRuleUpsert(tx, req)
	case *ACLBindingRuleDeleteRequest:
		return tx.DeleteACLBindingRules(req.IDs)
	case *OneTimeTokenUpsertRequest:
		return tx.UpsertOneTimeToken(req.Token)
	case *OneTimeTokenExchangeRequest:
		if o := tx.OneTimeToken(req.OneTimeSecretID); o == nil || o.ExpiresAt < req.Now {
			return fmt.Errorf("%w: one-time token spent or expired", state.ErrNotFound)
		}
		return tx.DeleteOneTimeTokens([]string{req.OneTimeSecretID})
	case *OneTimeTokenExpireRequest:
		_, err := tx.ExpireOneTimeTokens(req.Now)
		return err
	}
	return fmt.Errorf("%w: no handler for %T", ErrBadEntry, msg)
}

// applyACLTokenUpsert writes tokens; an update (CreateIndex set) applies
// only to the token it was made from.
func applyACLTokenUpsert(tx *state.Txn, req *ACLTokenUpsertRequest) error {
	for _, t := range req.Tokens {
		if t.CreateIndex == 0 {
			continue
		}
		if old := tx.ACLTokenByAccessor(t.AccessorID); old == nil || old.CreateIndex != t.CreateIndex {
			return fmt.Errorf("%w: ACL token %q", state.ErrNotFound, t.AccessorID)
		}
	}
	return tx.UpsertACLTokens(req.Tokens)
}

// applyACLRoleUpsert writes roles; a create (CreateIndex 0) is refused an
// ID in use, an update (CreateIndex set) applies only to the role it was
// made from.
func applyACLRoleUpsert(tx *state.Txn, req *ACLRoleUpsertRequest) error {
	for _, r := range req.Roles {
		old := tx.ACLRoleByID(r.ID)
		if r.CreateIndex == 0 {
			if old != nil {
				return fmt.Errorf("%w: ACL role ID %s is in use", ErrConflict, r.ID)
			}
			continue
		}
		if old == nil || old.CreateIndex != r.CreateIndex {
			return fmt.Errorf("%w: ACL role %q", state.ErrNotFound, r.ID)
		}
	}
	return tx.UpsertACLRoles(req.Roles)
}

// applyACLBindingRuleUpsert writes binding rules; a create (CreateIndex 0)
// is refused an ID in use, an update (CreateIndex set) applies only to the
// rule it was made from.
func applyACLBindingRuleUpsert(tx *state.Txn, req *ACLBindingRuleUpsertRequest) error {
	for _, r := range req.Rules {
		old := tx.ACLBindingRule(r.ID)
		if r.CreateIndex == 0 {
			if old != nil {
				return fmt.Errorf("%w: ACL binding rule ID %s is in use", ErrConflict, r.ID)
			}
			continue
		}
		if old == nil || old.CreateIndex != r.CreateIndex {
			return fmt.Errorf("%w: ACL binding rule %q", state.ErrNotFound, r.ID)
		}
	}
	return tx.UpsertACLBindingRules(req.Rules)
}

// ErrACLBootstrapped refuses an ACL bootstrap whose reset index is not the
// state's bootstrap index: another bootstrap was applied first. It is an
// ErrConflict too (a check-and-set that lost).
var ErrACLBootstrapped = errors.New("ACL bootstrap already done")

// applyACLBootstrap writes the bootstrap token if the bootstrap index is
// still the request's reset index, and records this entry's index as the
// new one.
func applyACLBootstrap(tx *state.Txn, req *ACLTokenBootstrapRequest) error {
	if cur := tx.ACLBootstrapIndex(); cur != req.ResetIndex {
		return fmt.Errorf("%w: %w (reset index: %d)", ErrConflict, ErrACLBootstrapped, cur)
	}
	if req.Token.Type != state.ACLManagementToken {
		return fmt.Errorf("fsm: the ACL bootstrap token must be a management token, not %q", req.Token.Type)
	}
	if tx.ACLTokenByAccessor(req.Token.AccessorID) != nil {
		return fmt.Errorf("fsm: the ACL bootstrap token's accessor %s is in use", req.Token.AccessorID)
	}
	if err := tx.UpsertACLTokens([]*state.ACLToken{req.Token}); err != nil {
		return err
	}
	return tx.SetACLBootstrap(tx.Index())
}

func upsertEvals(tx *state.Txn, evals []*sdk.Evaluation, fx *effects) error {
	for _, e := range evals {
		if err := tx.UpsertEval(e); err != nil {
			return err
		}
	}
	fx.Evals = append(fx.Evals, evals...)
	return nil
}

func applyJobRegister(tx *state.Txn, req *JobRegisterRequest, fx *effects) error {
	j := req.Job
	if err := jobRefs(tx, j, req.RefsMustExist); err != nil {
		return err
	}
	if req.EnforceIndex {
		var have uint64
		if cur := tx.Job(j.Namespace, j.ID); cur != nil {
			have = cur.JobModifyIndex
		}
		if have != req.JobModifyIndex {
			return fmt.Errorf("%w: job %q is at job modify index %d, not %d", ErrConflict, j.ID, have, req.JobModifyIndex)
		}
	}
	if cur := tx.Job(j.Namespace, j.ID); cur != nil && !state.SpecChanged(cur, j) {
		// A registration that changes nothing of the spec leaves the job
		// as it is (its indexes, submit time and kept version), as Nomad's
		// Job.Register writes only the eval then: the rest of the entry
		// (scaling event, eval) still applies, against the job's version.
		j = cur
	} else {
		if err := tx.UpsertJob(j); err != nil {
			return err
		}
		if req.Submission != nil {
			if err := tx.UpsertJobSubmission(j.Namespace, j.ID, req.Submission); err != nil {
				return err
			}
		}
		fx.job(j.Namespace, j.ID)
	}
	// An active periodic job's registration counts as its first launch, so
	// a new leader can tell whether a launch was missed since. (Enabling a
	// disabled job later counts then, as in Nomad.)
	if j.IsPeriodicActive() && tx.PeriodicLaunch(j.Namespace, j.ID) == nil {
		if err := tx.UpsertPeriodicLaunch(&state.PeriodicLaunch{Namespace: j.Namespace, ID: j.ID, Launch: j.SubmitTime}); err != nil {
			return err
		}
	}
	if req.LaunchTime != 0 && j.ParentID != "" {
		if err := tx.UpsertPeriodicLaunch(&state.PeriodicLaunch{Namespace: j.Namespace, ID: j.ParentID, Launch: req.LaunchTime}); err != nil {
			return err
		}
	}
	if req.Scaling != nil {
		if err := applyScalingEvent(tx, req.Scaling); err != nil {
			return err
		}
	}
	if req.Eval == nil {
		return nil
	}
	req.Eval.JobModifyIndex = j.JobModifyIndex
	return upsertEvals(tx, []*sdk.Evaluation{req.Eval}, fx)
}

// applyRefsWrite applies a namespace or node pool write, the first of
// which makes them written objects (state.Txn.MakeRefsExplicit). Their
// entries are written only once every server applies them (server's
// gate.go), so no server that keeps older rows applies one.
func applyRefsWrite(tx *state.Txn, msg msgp.Unmarshaler) error {
	if err := tx.MakeRefsExplicit(); err != nil {
		return err
	}
	switch req := msg.(type) {
	case *NamespaceUpsertRequest:
		return tx.UpsertNamespaces(req.Namespaces)
	case *NamespaceDeleteRequest:
		return tx.DeleteNamespaces(req.Names)
	case *NodePoolUpsertRequest:
		return tx.UpsertNodePools(req.NodePools)
	case *NodePoolDeleteRequest:
		return tx.DeleteNodePools(req.Names)
	}
	return fmt.Errorf("%w: %T is no namespace or node pool write", ErrBadEntry, msg)
}

// jobRefs checks that j's namespace and node pool exist (mustExist, once
// they are written objects: state.Txn.MakeRefsExplicit), or makes them
// (an older version's entry: see JobRegisterRequest).
func jobRefs(tx *state.Txn, j *sdk.Job, mustExist bool) error {
	if mustExist && tx.RefsExplicit() {
		return tx.CheckJobRefs(j)
	}
	if err := tx.EnsureNamespace(j.Namespace); err != nil {
		return err
	}
	return tx.EnsureNodePool(j.NodePool)
}

// applyScalingEvent records a scaling event of an existing job.
func applyScalingEvent(tx *state.Txn, req *ScalingEventRequest) error {
	if tx.Job(req.Namespace, req.JobID) == nil {
		return fmt.Errorf("%w: job %s/%s", state.ErrNotFound, req.Namespace, req.JobID)
	}
	e := *req.Event
	return tx.AddScalingEvent(req.Namespace, req.JobID, req.TaskGroup, &e)
}

// applyNodeRegister writes a node as its agent registers it. What the
// servers own is kept from the node as stored, as in Nomad: its drain,
// eligibility, last drain and events (a node registering for the first
// time gets a "Node registered" event).
func applyNodeRegister(tx *state.Txn, req *NodeRegisterRequest, fx *effects) error {
	n := req.Node
	if old := tx.Node(n.ID); old != nil {
		n.DrainStrategy, n.SchedulingEligibility, n.LastDrain = old.DrainStrategy, old.SchedulingEligibility, old.LastDrain
		n.Events = old.Events
		if old.Status == sdk.NodeStatusDown && n.Status != sdk.NodeStatusDown {
			n.Events = appendEvent(n.Events, &sdk.NodeEvent{Message: "Node re-registered", Subsystem: "Cluster",
				Timestamp: time.Unix(n.StatusUpdatedAt, 0)}, tx.Index())
		}
	} else {
		n.Events = appendEvent(nil, &sdk.NodeEvent{Message: "Node registered", Subsystem: "Cluster",
			Timestamp: time.Unix(n.StatusUpdatedAt, 0)}, tx.Index())
	}
	if err := tx.EnsureNodePool(n.NodePool); err != nil {
		return err
	}
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

// ErrNodeDraining refuses an entry that makes a draining node eligible,
// as Nomad's state store does: a drain keeps its node ineligible until it
// ends.
var ErrNodeDraining = errors.New("fsm: can not set node's scheduling eligibility to eligible while it is draining")

// applyNodeEligibility sets a node's eligibility, with the request's event.
// It leaves StatusUpdatedAt alone (Nomad's sets it): the heartbeats count a
// disconnected node's window from it, and garbage collection a down node's
// age.
func applyNodeEligibility(tx *state.Txn, req *NodeUpdateEligibilityRequest, fx *effects) error {
	old := tx.Node(req.NodeID)
	if old == nil {
		return fmt.Errorf("%w: node %s", state.ErrNotFound, req.NodeID)
	}
	if old.DrainStrategy != nil && req.Eligibility == sdk.NodeSchedulingEligible {
		return fmt.Errorf("%w: node %s", ErrNodeDraining, req.NodeID)
	}
	n := *old
	n.SchedulingEligibility = req.Eligibility
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

func applyNodeDrain(tx *state.Txn, req *NodeUpdateDrainRequest, fx *effects) error {
	old := tx.Node(req.NodeID)
	if old == nil {
		return fmt.Errorf("%w: node %s", state.ErrNotFound, req.NodeID)
	}
	n := *old
	n.DrainStrategy = req.DrainStrategy
	if ds := req.DrainStrategy; ds != nil && old.DrainStrategy != nil && !ds.StartedAt.Equal(old.DrainStrategy.StartedAt) {
		// An update of a drain keeps its start, as the state has it now
		// (the server decided from a snapshot, and the drain may have
		// ended and started since).
		c := *ds
		c.StartedAt = old.DrainStrategy.StartedAt
		n.DrainStrategy = &c
	}
	n.Drain = req.DrainStrategy != nil
	if n.Drain {
		n.SchedulingEligibility = sdk.NodeSchedulingIneligible
	} else if req.MarkEligible {
		n.SchedulingEligibility = sdk.NodeSchedulingEligible
	}
	if old.DrainStrategy != nil || req.DrainStrategy != nil {
		n.LastDrain = lastDrain(old, req)
	}
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

// lastDrain is a node's LastDrain after req, as Nomad's
// updateNodeDrainImpl keeps it: a drain starting gets a new one
// ("draining", StartedAt), each change of it refreshes UpdatedAt and the
// status ("draining", "complete" or "canceled"), and the operator's Meta
// stays until a request gives some. AccessorID is Nomad's ACL token
// accessor, always empty here (no ACLs).
func lastDrain(old *sdk.Node, req *NodeUpdateDrainRequest) sdk.Opaque {
	at := time.Unix(0, req.UpdatedAt).UTC()
	var ld sdk.Opaque
	switch {
	case old.DrainStrategy == nil:
		ld = sdk.Opaque{"StartedAt": at, "AccessorID": ""}
	case old.LastDrain["Status"] == "draining":
		ld = maps.Clone(old.LastDrain)
	default:
		// A drain started before LastDrain was recorded at the start: what
		// the node has is the previous drain's.
		ld = sdk.Opaque{"StartedAt": old.DrainStrategy.StartedAt, "AccessorID": ""}
	}
	ld["UpdatedAt"] = at
	if len(req.Meta) > 0 {
		// As a snapshot restores it, whatever the request's map type.
		meta := make(map[string]any, len(req.Meta))
		for k, v := range req.Meta {
			meta[k] = v
		}
		ld["Meta"] = meta
	}
	switch {
	case req.DrainStrategy != nil:
		ld["Status"] = "draining"
	case req.Complete:
		ld["Status"] = "complete"
	default:
		ld["Status"] = "canceled"
	}
	return ld
}

func applyJobDeregister(tx *state.Txn, req *JobDeregisterRequest, fx *effects) error {
	old := tx.Job(req.Namespace, req.JobID)
	if old == nil {
		return fmt.Errorf("%w: job %s/%s", state.ErrNotFound, req.Namespace, req.JobID)
	}
	fx.job(req.Namespace, req.JobID)
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
		// An update without a client status sets health only (an
		// operator's, SetAllocHealth): what the node reported stays.
		if u.ClientStatus != "" {
			a.ClientStatus = u.ClientStatus
			a.ClientDescription = u.ClientDescription
		}
		if a.ClientStatus == sdk.AllocClientStatusUnknown && old.ClientStatus != sdk.AllocClientStatusUnknown {
			// Its lost_after counts from here, not from an earlier mark.
			a.AllocStates = old.MarkedUnknown(time.Unix(0, req.UpdatedAt), u.ClientDescription).AllocStates
		}
		if old.ClientStatus == sdk.AllocClientStatusUnknown && a.ClientStatus != sdk.AllocClientStatusUnknown {
			// Reported again, it is no longer waiting for its disconnect
			// timeout: the eval that would declare it lost no longer
			// stands for it. Kept, it would stand in for the reschedule
			// follow-up of an allocation that failed while away, which
			// would then wait for that timeout instead of its policy's
			// delay. Nomad keeps the ID; its reconciler replaces such an
			// allocation at the reconnect instead, whatever its policy.
			a.FollowupEvalID = ""
		}
		if u.TaskStates != nil {
			a.TaskStates = u.TaskStates
		}
		if u.DeploymentStatus != nil {
			a.DeploymentStatus = reportedHealth(old.DeploymentStatus, u.DeploymentStatus, tx.Index())
		}
		a.ModifyTime = req.UpdatedAt
		if err := tx.UpsertAlloc(&a); err != nil {
			return err
		}
		if err := countHealth(tx, old, &a, req.UpdatedAt); err != nil {
			return err
		}
		if a.ClientTerminalStatus() && !old.ClientTerminalStatus() {
			if n := tx.Node(a.NodeID); n != nil {
				fx.unblock(n.ComputedClass)
			}
		}
	}
	return upsertEvals(tx, req.Evals, fx)
}

// markedUnknown reports whether an in-place update marks its allocation
// unknown on a node that is disconnected: the one client status a
// scheduler may set on an allocation that exists, and only on one its node
// has not reported finished (a plan made from an older snapshot must not
// bring a failed allocation back).
func markedUnknown(tx *state.Txn, a, old *sdk.Allocation) bool {
	if a.ClientStatus != sdk.AllocClientStatusUnknown || old.ClientTerminalStatus() {
		return false
	}
	n := tx.Node(a.NodeID)
	return n != nil && n.Status == sdk.NodeStatusDisconnected
}

func applyPlanResults(tx *state.Txn, req *ApplyPlanResultsRequest, fx *effects) error {
	now := req.UpdatedAt
	// Share the stored job version rather than keep a copy per plan.
	if j := req.Job; j != nil {
		if kept := tx.JobVersion(j.Namespace, j.ID, j.Version); kept != nil && kept.JobModifyIndex == j.JobModifyIndex {
			req.Job = kept
		}
	}
	// A stopped or preempted allocation holds its room, as schedulers count
	// it, until its node reports it finished (AllocClientUpdate unblocks
	// then), so the plan frees room only where a stop marks an allocation
	// finished itself (lost, on a node that is down); a preemption never
	// does.
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
		if err := tx.UpsertAllocOver(&a, old); err != nil {
			return err
		}
		if a.ClientTerminalStatus() && !old.ClientTerminalStatus() {
			if n := tx.Node(a.NodeID); n != nil {
				fx.unblock(n.ComputedClass)
			}
		}
	}
	for _, p := range req.AllocsPreempted {
		// One stopped since the plan was evaluated keeps why it stops.
		old := tx.Alloc(p.ID)
		if old == nil || old.TerminalStatus() {
			continue
		}
		a := *old
		a.DesiredStatus = sdk.AllocDesiredStatusEvict
		a.DesiredDescription = p.DesiredDescription
		a.PreemptedByAllocation = p.PreemptedByAllocation
		a.ModifyTime = now
		a.AllocModifyIndex = tx.Index()
		if err := tx.UpsertAllocOver(&a, old); err != nil {
			return err
		}
	}
	var fresh []*sdk.Allocation // new to their deployment
	for _, u := range req.AllocsUpdated {
		a := *u
		old := tx.Alloc(a.ID)
		if old != nil {
			// In-place update: the node's view of the allocation stays,
			// except that an allocation on a disconnected node is marked
			// unknown by its scheduler (Nomad's), the node being unable to
			// say anything.
			if markedUnknown(tx, &a, old) {
				a.AllocStates = sdk.CommittedUnknown(old, &a, time.Unix(0, now))
			} else {
				a.ClientStatus = old.ClientStatus
				a.ClientDescription = old.ClientDescription
				a.AllocStates = old.AllocStates
			}
			a.TaskStates = old.TaskStates
			a.CreateTime = old.CreateTime
			// The host links replacements; a plugin's copy may predate the
			// link (made by a replacement earlier in this very plan).
			a.NextAllocation = old.NextAllocation
			if a.Metrics == nil {
				// Plugins never see Metrics (state syncs leave them out):
				// an update without them keeps the placement's.
				a.Metrics = old.Metrics
			}
			// Updated in place into another deployment, it is one of that
			// deployment's placements, as in Nomad; a finished one (an
			// annotation) places nothing.
			if a.DeploymentID != "" && a.DeploymentID != old.DeploymentID && !old.ClientTerminalStatus() {
				fresh = append(fresh, &a)
			}
		} else {
			a.CreateTime = now
			a.AllocStates = nil // the servers' record, which a new allocation has none of yet
			a.TaskStates = nil  // its node's report, none yet
			if a.DeploymentID != "" {
				fresh = append(fresh, &a)
			}
		}
		if a.Job == nil {
			a.Job = req.Job
			if old != nil && old.Job != nil && sdk.KeepsVersion(old, &a) {
				a.Job = old.Job // an annotation keeps the version the allocation runs
			} else if v, _ := verify.PlacedVersion(tx, req.Job, &a); v != nil && old == nil {
				a.Job = v // a kept version the plan applier validated
			}
		}
		a.ModifyTime = now
		a.AllocModifyIndex = tx.Index()
		if err := tx.UpsertAllocOver(&a, old); err != nil {
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
	if d := req.Deployment; d != nil {
		if d.CreateTime == 0 {
			d.CreateTime = now
		}
		d.ModifyTime = now
		if err := tx.UpsertDeployment(d); err != nil {
			return err
		}
	}
	if err := countPlacements(tx, fresh, now); err != nil {
		return err
	}
	for _, du := range req.DeploymentUpdates {
		if err := updateDeploymentStatus(tx, du, now); err != nil {
			return err
		}
	}
	// The plan's eval shows that its plan was committed (its ModifyIndex;
	// a PlanResult event), as in Nomad.
	if err := tx.TouchEval(req.EvalID); err != nil {
		return err
	}
	return upsertEvals(tx, req.PreemptionEvals, fx)
}

func updateDeploymentStatus(tx *state.Txn, u *sdk.DeploymentStatusUpdate, now int64) error {
	old := tx.Deployment(u.DeploymentID)
	if old == nil {
		return nil
	}
	d := old.Copy()
	d.Status = u.Status
	d.StatusDescription = u.StatusDescription
	d.ModifyTime = now
	// A paused deployment's deadline does not run: resumed, it has its
	// progress_deadline again (as Nomad does since hashicorp/nomad#27804;
	// 1.6 failed a paused deployment at its deadline).
	if old.Status == sdk.DeploymentStatusPaused && d.Status == sdk.DeploymentStatusRunning {
		for _, s := range d.TaskGroups {
			if s.ProgressDeadline > 0 && !s.RequireProgressBy.IsZero() {
				s.RequireProgressBy = time.Unix(0, now).Add(s.ProgressDeadline)
			}
		}
	}
	if err := tx.UpsertDeployment(d); err != nil {
		return err
	}
	// A successful deployment makes its job version stable in the same
	// entry, as in Nomad: an auto-revert decided right after must find
	// it.
	if d.Status == sdk.DeploymentStatusSuccessful && old.Status != sdk.DeploymentStatusSuccessful {
		if v := tx.JobVersion(d.Namespace, d.JobID, d.JobVersion); v != nil && !v.Stable {
			return tx.SetJobStability(d.Namespace, d.JobID, d.JobVersion, true)
		}
	}
	return nil
}

func applyDeploymentStatus(tx *state.Txn, req *DeploymentStatusUpdateRequest, fx *effects) error {
	// Decided on an active deployment: one that ended since (the watcher
	// and an operator racing) is not changed again.
	if d := tx.Deployment(req.Update.DeploymentID); d != nil && !d.Active() {
		return fmt.Errorf("%w: deployment %s is %s", ErrConflict, d.ID, d.Status)
	}
	if req.Health != nil {
		if err := applyAllocClientUpdate(tx, req.Health, fx); err != nil {
			return err
		}
	}
	// The auto-revert applies only over the version the deployment rolled
	// out: a job registered again since is the operator's, not the
	// failure's to undo; nor does it go back to a namespace or node pool
	// deleted since (once they are written objects, as a registration's
	// RefsMustExist). The deployment's description says which.
	update, revert := req.Update, false
	if j := req.Job; j != nil {
		d, cur := tx.Deployment(update.DeploymentID), tx.Job(j.Namespace, j.ID)
		revert = d != nil && cur != nil && cur.Version == d.JobVersion && cur.CreateIndex == d.JobCreateIndex
		why := "the job was registered again"
		if revert && tx.RefsExplicit() {
			if err := tx.CheckJobRefs(j); err != nil {
				revert, why = false, err.Error()
			}
		}
		if !revert {
			u := *update
			desc, _, _ := strings.Cut(u.StatusDescription, " - rolling back to job version")
			u.StatusDescription = desc + " - not rolled back: " + why
			update = &u
		}
	}
	if err := updateDeploymentStatus(tx, update, req.UpdatedAt); err != nil {
		return err
	}
	if revert {
		// The version reverted to keeps its source for the new version.
		j := req.Job
		sub := tx.JobSubmission(j.Namespace, j.ID, j.Version)
		if err := tx.UpsertJob(j); err != nil {
			return err
		}
		if sub != nil {
			if err := tx.UpsertJobSubmission(j.Namespace, j.ID, sub); err != nil {
				return err
			}
		}
	}
	if req.Eval != nil {
		return upsertEvals(tx, []*sdk.Evaluation{req.Eval}, fx)
	}
	return nil
}

func applyJobStability(tx *state.Txn, req *JobStabilityRequest) error {
	return tx.SetJobStability(req.Namespace, req.JobID, req.Version, req.Stable)
}

// applyGarbageCollect deletes collected objects. Objects already gone are
// skipped: a GC entry may race with a purge.
func applyGarbageCollect(tx *state.Txn, req *GarbageCollectRequest, fx *effects) error {
	for _, id := range req.Allocs {
		if err := tx.DeleteAlloc(id); err != nil {
			return err
		}
	}
	for _, id := range req.Evals {
		if tx.Eval(id) == nil {
			continue
		}
		if err := tx.DeleteEval(id); err != nil {
			return err
		}
		fx.DeletedEvals = append(fx.DeletedEvals, id)
	}
	for _, j := range req.Jobs {
		if tx.Job(j.Namespace, j.ID) == nil {
			continue
		}
		if err := tx.DeleteJob(j.Namespace, j.ID); err != nil {
			return err
		}
		fx.job(j.Namespace, j.ID)
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
	if err := restore(f.store, rc); err != nil {
		return err
	}
	snap := f.store.Snapshot()
	if f.publish != nil {
		f.publish.Reset(snap)
	}
	if m := snap.ClusterMeta(); m != nil && f.cluster != nil {
		f.cluster(m)
	}
	return nil
}

// eventType is the event type of what an entry's message does, as Nomad
// maps its messages; "" for those that make no events (garbage collection,
// scheduler configuration, job stability and scaling records, the ACL
// bootstrap and one-time tokens, as in Nomad). An ACL write's type only
// says it makes events: each of them says whether its object was written
// or deleted (the binding rules an auth method's deletion takes along are
// events.TypeACLBindingRuleDeleted).
func eventType(msg msgp.Unmarshaler) string {
	switch m := msg.(type) {
	case *NodeRegisterRequest:
		return events.TypeNodeRegistration
	case *NodeDeregisterRequest:
		return events.TypeNodeDeregistration
	case *NodeUpdateStatusRequest:
		return events.TypeNodeEvent
	case *NodeUpdateEligibilityRequest, *NodeUpdateDrainRequest:
		return events.TypeNodeDrain
	case *JobRegisterRequest:
		return events.TypeJobRegistered
	case *JobDeregisterRequest:
		return events.TypeJobDeregistered
	case *EvalUpdateRequest:
		return events.TypeEvalUpdated
	case *AllocClientUpdateRequest:
		if m.Operator { // as Nomad's PUT /v1/deployment/allocation-health/:id
			return events.TypeDeploymentAllocHealth
		}
		return events.TypeAllocationUpdated
	case *AllocUpdateDesiredTransitionRequest:
		return events.TypeAllocationUpdateDesiredStatus
	case *ApplyPlanResultsRequest:
		return events.TypePlanResult
	case *DeploymentStatusUpdateRequest:
		if m.Health != nil { // an operator's unhealthy mark fails it (SetAllocHealth)
			return events.TypeDeploymentAllocHealth
		}
		return events.TypeDeploymentUpdate
	case *DeploymentPromoteRequest:
		return events.TypeDeploymentPromotion
	case *ACLTokenUpsertRequest:
		return events.TypeACLTokenUpserted
	case *ACLTokenDeleteRequest: // an operator's, or the collection of expired tokens
		return events.TypeACLTokenDeleted
	case *ACLPolicyUpsertRequest:
		return events.TypeACLPolicyUpserted
	case *ACLPolicyDeleteRequest:
		return events.TypeACLPolicyDeleted
	case *ACLRoleUpsertRequest:
		return events.TypeACLRoleUpserted
	case *ACLRoleDeleteRequest:
		return events.TypeACLRoleDeleted
	case *ACLAuthMethodUpsertRequest:
		return events.TypeACLAuthMethodUpserted
	case *ACLAuthMethodDeleteRequest:
		return events.TypeACLAuthMethodDeleted
	case *ACLBindingRuleUpsertRequest:
		return events.TypeACLBindingRuleUpserted
	case *ACLBindingRuleDeleteRequest:
		return events.TypeACLBindingRuleDeleted
	case *NodePoolUpsertRequest:
		return events.TypeNodePoolUpserted
	case *NodePoolDeleteRequest:
		return events.TypeNodePoolDeleted
	}
	return ""
}
