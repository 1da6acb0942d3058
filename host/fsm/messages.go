package fsm

import (
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

//go:generate go run github.com/tinylib/msgp@v1.6.5 -file messages.go -o messages_gen.go -tests=false -io=false

// MessageType tags a raft log entry.
type MessageType uint8

// Log entry types. New types go at the end: the numbers are on disk.
const (
	NodeRegisterRequestType MessageType = iota + 1
	NodeDeregisterRequestType
	NodeUpdateStatusRequestType
	NodeUpdateEligibilityRequestType
	JobRegisterRequestType
	JobDeregisterRequestType
	EvalUpdateRequestType
	EvalDeleteRequestType
	AllocClientUpdateRequestType
	AllocUpdateDesiredTransitionRequestType
	ApplyPlanResultsRequestType
	SchedulerConfigRequestType
	DeploymentStatusUpdateRequestType
	JobStabilityRequestType
	GarbageCollectRequestType
	DeploymentPromoteRequestType
	NodeUpdateDrainRequestType
	ScalingEventRequestType
	ClusterMetaRequestType
	ACLPolicyUpsertRequestType
	ACLPolicyDeleteRequestType
	ACLTokenUpsertRequestType
	ACLTokenDeleteRequestType
	ACLTokenBootstrapRequestType
	ACLRoleUpsertRequestType
	ACLRoleDeleteRequestType
	VariableApplyRequestType
	RootKeyUpsertRequestType
	RootKeyDeleteRequestType
	AutopilotConfigRequestType
	ACLAuthMethodUpsertRequestType
	ACLAuthMethodDeleteRequestType
	ACLBindingRuleUpsertRequestType
	ACLBindingRuleDeleteRequestType
	OneTimeTokenUpsertRequestType
	OneTimeTokenExchangeRequestType
	OneTimeTokenExpireRequestType
	NamespaceUpsertRequestType
	NamespaceDeleteRequestType
	NodePoolUpsertRequestType
	NodePoolDeleteRequestType
	JobVersionTagRequestType
	CSIVolumeRegisterRequestType
	CSIVolumeDeregisterRequestType
	CSIVolumeDetachRequestType

	// LastMessageType is the newest type this version applies.
	LastMessageType = CSIVolumeDetachRequestType
)

// NodeRegisterRequest registers or updates a node, with the evals the
// change causes.
type NodeRegisterRequest struct {
	Node  *sdk.Node
	Evals []*sdk.Evaluation
}

// NodeDeregisterRequest removes nodes.
type NodeDeregisterRequest struct {
	NodeIDs []string
	Evals   []*sdk.Evaluation
}

// NodeUpdateStatusRequest changes a node's status.
type NodeUpdateStatusRequest struct {
	NodeID    string
	Status    string
	UpdatedAt int64
	Event     *sdk.NodeEvent
	Evals     []*sdk.Evaluation
}

// NodeUpdateEligibilityRequest changes a node's scheduling eligibility,
// with the node event that says so. It is refused for a draining node
// made eligible (ErrNodeDraining).
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	UpdatedAt   int64
	Event       *sdk.NodeEvent
	Evals       []*sdk.Evaluation
}

// JobRegisterRequest registers a job version and its evaluation. A child
// launched by a periodic job carries its launch time (Unix nanoseconds),
// recorded as the parent's last launch.
type JobRegisterRequest struct {
	Job        *sdk.Job
	Eval       *sdk.Evaluation
	LaunchTime int64
	// Scaling is the scaling event of a job-scaling registration.
	Scaling *ScalingEventRequest `msg:",omitempty"`
	// EnforceIndex applies the registration only if the job's current
	// JobModifyIndex is JobModifyIndex (0: the job does not exist), checked
	// when the entry is applied, so that of two registrations built on the
	// same version only one is applied.
	EnforceIndex   bool   `msg:",omitempty"`
	JobModifyIndex uint64 `msg:",omitempty"`
	// Submission is the source the job was registered from, kept with the
	// version the registration makes current.
	Submission *state.JobSubmission `msg:",omitempty"`
	// RefsMustExist refuses the job if its namespace or node pool does
	// not exist as the entry applies (state.ErrNonexistent), once they
	// are written objects (state.Txn.MakeRefsExplicit: until then servers
	// may hold different rows, and the check made before the write
	// stands). Entries of versions before namespaces and node pools were
	// written objects lack it: they make the namespace and pool instead,
	// as those versions' implicit ones, so that a log written then
	// replays alike.
	RefsMustExist bool `msg:",omitempty"`
}

// ScalingEventRequest records a scaling event of a job's task group: alone
// for a request that changes no count (an autoscaler's report), or with the
// registration a count change makes.
type ScalingEventRequest struct {
	Namespace string
	JobID     string
	TaskGroup string
	Event     *state.ScalingEvent
}

// JobDeregisterRequest stops (or purges) a job.
type JobDeregisterRequest struct {
	Namespace string
	JobID     string
	Purge     bool
	Eval      *sdk.Evaluation
}

// EvalUpdateRequest creates or updates evaluations.
type EvalUpdateRequest struct {
	Evals []*sdk.Evaluation
}

// EvalDeleteRequest deletes evaluations and allocations (garbage
// collection).
type EvalDeleteRequest struct {
	Evals  []string
	Allocs []string
}

// AllocClientUpdateRequest carries what nodes report about allocations
// (ID, ClientStatus, ClientDescription, TaskStates, DeploymentStatus), and
// the evals that reports cause. An allocation without a ClientStatus sets
// its deployment health only (an operator's, as Nomad's SetAllocHealth).
type AllocClientUpdateRequest struct {
	Allocs    []*sdk.Allocation
	Evals     []*sdk.Evaluation
	UpdatedAt int64
	// Operator marks an operator's health update (PUT
	// /v1/deployment/allocation-health/:id), not a node's report: it is a
	// DeploymentAllocHealth write on the event stream, as in Nomad.
	Operator bool `msg:",omitempty"`
}

// AllocUpdateDesiredTransitionRequest marks allocations to migrate or
// reschedule, with the evals that act on it.
type AllocUpdateDesiredTransitionRequest struct {
	Allocs map[string]*sdk.DesiredTransition
	Evals  []*sdk.Evaluation
}

// ApplyPlanResultsRequest commits the verified part of a plan.
type ApplyPlanResultsRequest struct {
	Job    *sdk.Job
	EvalID string
	// AllocsStopped are stops (ID, DesiredDescription, ClientStatus).
	AllocsStopped []*sdk.Allocation
	// AllocsUpdated are new or in-place updated allocations.
	AllocsUpdated []*sdk.Allocation
	// AllocsPreempted are evictions (ID, PreemptedByAllocation).
	AllocsPreempted   []*sdk.Allocation
	Deployment        *sdk.Deployment
	DeploymentUpdates []*sdk.DeploymentStatusUpdate
	// PreemptionEvals are the evals for jobs whose allocations were preempted.
	PreemptionEvals []*sdk.Evaluation
	UpdatedAt       int64
}

// SchedulerConfigRequest replaces the scheduler configuration.
type SchedulerConfigRequest struct {
	Config *sdk.SchedulerConfiguration
	// CAS applies the change only if the configuration's ModifyIndex is
	// still ModifyIndex; the check is in the FSM, so two writers with the
	// same index cannot both win.
	CAS         bool
	ModifyIndex uint64
}

// DeploymentStatusUpdateRequest changes a deployment's status, optionally
// with an eval and a job version to revert to.
type DeploymentStatusUpdateRequest struct {
	Update    *sdk.DeploymentStatusUpdate
	Job       *sdk.Job
	Eval      *sdk.Evaluation
	UpdatedAt int64
	// Health is the allocation health that makes the change (an
	// operator's unhealthy mark), applied in the same entry, as Nomad's
	// ApplyDeploymentAllocHealthRequest.
	Health *AllocClientUpdateRequest `msg:",omitempty"`
}

// ClusterMetaRequest records the cluster's identity (state.ClusterMeta):
// the first leader writes it, and a later one stays.
type ClusterMetaRequest struct {
	ClusterID  string
	CreateTime int64
}

// JobStabilityRequest marks a job version stable.
type JobStabilityRequest struct {
	Namespace string
	JobID     string
	Version   uint64
	Stable    bool
}

// GarbageCollectRequest deletes what the core scheduler collected, in one
// entry. The server validated it against the state before proposing it.
type GarbageCollectRequest struct {
	Evals       []string
	Allocs      []string
	Jobs        []sdk.NamespacedID
	Nodes       []string
	Deployments []string
}

// DeploymentPromoteRequest promotes the canaries of a deployment's task
// groups (all of them when Groups is empty), with the eval that rolls the
// rest out.
type DeploymentPromoteRequest struct {
	DeploymentID string
	Groups       []string
	Eval         *sdk.Evaluation
	UpdatedAt    int64
}

// NodeUpdateDrainRequest starts or updates (DrainStrategy set) or ends
// (nil) a node's drain, recording it in LastDrain; MarkEligible makes the
// node eligible again. Evals are the node-drain evals the change causes.
type NodeUpdateDrainRequest struct {
	NodeID        string
	DrainStrategy *sdk.DrainStrategy
	MarkEligible  bool
	// Complete says the drain ended because nothing is left to migrate
	// (rather than being canceled).
	Complete  bool
	UpdatedAt int64
	Event     *sdk.NodeEvent
	Evals     []*sdk.Evaluation
	// Meta is the operator's metadata of the drain (Nomad's drain request
	// Meta), kept in LastDrain; none keeps what it has.
	Meta map[string]string `msg:",omitempty"`
}

// ACLPolicyUpsertRequest creates or replaces ACL policies (their rules
// checked by the server).
type ACLPolicyUpsertRequest struct {
	Policies []*state.ACLPolicy
}

// ACLPolicyDeleteRequest deletes ACL policies by name; an unknown name
// refuses the entry.
type ACLPolicyDeleteRequest struct {
	Names []string
}

// ACLTokenUpsertRequest creates ACL tokens (CreateIndex 0) or updates
// them (CreateIndex the stored token's: an update of a token deleted, or
// deleted and created again, since the server read it is refused). The
// server made their IDs and times.
type ACLTokenUpsertRequest struct {
	Tokens []*state.ACLToken
}

// ACLTokenDeleteRequest deletes ACL tokens by accessor ID (by an operator,
// or expired ones by the garbage collector); an unknown accessor refuses
// the entry.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
}

// ACLTokenBootstrapRequest creates the initial management token. It
// applies only if the state's ACL bootstrap index is ResetIndex (0: never
// bootstrapped), checked when the entry is applied, so that of two
// bootstraps racing only one wins; it then records its own index as the
// bootstrap index.
type ACLTokenBootstrapRequest struct {
	Token      *state.ACLToken
	ResetIndex uint64
}

// ACLRoleUpsertRequest creates ACL roles (CreateIndex 0) or updates them
// (CreateIndex the stored role's: an update of a role deleted, or deleted
// and created again, since the server read it is refused). The server
// made their IDs and checked them; the state refuses a name another role
// has or a policy that does not exist, checked again as the entry applies.
type ACLRoleUpsertRequest struct {
	Roles []*state.ACLRole
}

// ACLRoleDeleteRequest deletes ACL roles by ID; an unknown ID refuses the
// entry.
type ACLRoleDeleteRequest struct {
	IDs []string
}

// Variable operations (VariableApplyRequest.Op), as Nomad's.
const (
	// VarOpSet writes the variable.
	VarOpSet = "set"
	// VarOpCAS writes it only if its modify index is still CheckIndex (0:
	// only if there is none).
	VarOpCAS = "cas"
	// VarOpDelete deletes it; one that is not there is no error.
	VarOpDelete = "delete"
	// VarOpDeleteCAS deletes it only if its modify index is still
	// CheckIndex (0: only if there is none, which deletes nothing).
	VarOpDeleteCAS = "delete-cas"
	// VarOpRekey replaces the data of a variable still at CheckIndex with
	// the same items encrypted with another key, its indexes and times
	// kept (a full keyring rotation).
	VarOpRekey = "rekey"
	// VarOpLockAcquire puts Var's lock on the variable, with Var's data if
	// it has any (a new variable must), unless another lock is held or
	// a lost one's delay lasts at Now.
	VarOpLockAcquire = "lock-acquire"
	// VarOpLockRelease takes the lock of Var's lock ID off the variable.
	VarOpLockRelease = "lock-release"
	// VarOpLockExpire takes the lock of Var's lock ID off the variable,
	// its TTL having passed, and delays the next lock by its LockDelay
	// from Now; a lock released or changed since is left alone.
	VarOpLockExpire = "lock-expire"
)

// VariableApplyRequest writes, deletes or re-encrypts one variable. Var
// names it (Namespace, Path) and, but for deletes, carries its encrypted
// data, its key ID and (for a write) its modify time; the server set them.
// A check-and-set that finds another modify index refuses the entry with
// ErrConflict, as does a write with a key the keyring does not hold.
//
// A variable with a lock is changed (written, deleted, re-encrypted aside)
// only by an entry whose Var carries the lock's ID; any other is refused
// with ErrConflict.
type VariableApplyRequest struct {
	Op         string
	Var        *state.Variable
	CheckIndex uint64
	// Now is the leader's clock (Unix nanoseconds) for lock operations.
	Now int64 `msg:",omitempty"`
	// RefsMustExist refuses a new variable in a namespace that does not
	// exist as the entry applies (state.ErrNonexistent), once namespaces
	// are written objects; without it (an older version's entry) the
	// namespace is made: as JobRegisterRequest's.
	RefsMustExist bool `msg:",omitempty"`
}

// NamespaceUpsertRequest creates or replaces namespaces (by name).
type NamespaceUpsertRequest struct {
	Namespaces []*state.Namespace
}

// NamespaceDeleteRequest deletes namespaces; refused, as the entry
// applies, for default and for a namespace with a job not dead or a
// variable.
type NamespaceDeleteRequest struct {
	Names []string
}

// NodePoolUpsertRequest creates or replaces node pools (by name); the
// built-ins are refused.
type NodePoolUpsertRequest struct {
	NodePools []*state.NodePool
}

// JobVersionTagRequest tags a kept version of a job (Tag), or, without
// Tag, removes the tag Name (Nomad 1.9's version tags).
type JobVersionTagRequest struct {
	Namespace string
	JobID     string
	Name      string
	Tag       *state.JobVersionTag
}

// CSIVolumeRegisterRequest registers CSI volumes, or updates registered
// ones (their claims kept).
type CSIVolumeRegisterRequest struct {
	Volumes []*sdk.CSIVolume
}

// CSIVolumeDeregisterRequest deregisters CSI volumes of a namespace;
// refused, as the entry applies, for one a live allocation claims.
type CSIVolumeDeregisterRequest struct {
	Namespace string
	IDs       []string
}

// CSIVolumeDetachRequest releases the claims of a node's finished
// allocations on a volume.
type CSIVolumeDetachRequest struct {
	Namespace string
	ID        string
	NodeID    string
}

// NodePoolDeleteRequest deletes node pools; refused, as the entry
// applies, for the built-ins and for a pool with nodes or with a job not
// dead.
type NodePoolDeleteRequest struct {
	Names []string
}

// RootKeyUpsertRequest writes root keys of the keyring: a new key, or
// keys whose state changes. After it at most one key may be active.
type RootKeyUpsertRequest struct {
	Keys []*state.RootKey
}

// RootKeyDeleteRequest deletes a root key; the entry is refused while the
// key is active or a variable is encrypted with it.
type RootKeyDeleteRequest struct {
	KeyID string
}

// AutopilotConfigRequest writes the autopilot configuration; with CAS, only
// if the stored one's modify index is still ModifyIndex (0: none stored).
type AutopilotConfigRequest struct {
	Config      *state.AutopilotConfig
	CAS         bool
	ModifyIndex uint64
}

// ACLAuthMethodUpsertRequest creates or replaces auth methods (by name).
// The server checked them; the state refuses a second default, checked
// again as the entry applies.
type ACLAuthMethodUpsertRequest struct {
	Methods []*state.ACLAuthMethod
}

// ACLAuthMethodDeleteRequest deletes auth methods by name, with their
// binding rules; an unknown name refuses the entry.
type ACLAuthMethodDeleteRequest struct {
	Names []string
}

// ACLBindingRuleUpsertRequest creates binding rules (CreateIndex 0; an ID
// in use refuses the entry) or updates them (CreateIndex the stored
// rule's: an update of a rule deleted since the server read it is
// refused). The state refuses a rule whose auth method is gone.
type ACLBindingRuleUpsertRequest struct {
	Rules []*state.ACLBindingRule
}

// ACLBindingRuleDeleteRequest deletes binding rules by ID; an unknown ID
// refuses the entry.
type ACLBindingRuleDeleteRequest struct {
	IDs []string
}

// OneTimeTokenUpsertRequest creates a one-time token for an ACL token
// that still exists.
type OneTimeTokenUpsertRequest struct {
	Token *state.OneTimeToken
}

// OneTimeTokenExchangeRequest spends a one-time token: it deletes it if
// it is still there and unexpired at Now (the leader's clock, Unix
// nanoseconds), and refuses the entry otherwise, so of two exchanges of
// one token only the first applied succeeds.
type OneTimeTokenExchangeRequest struct {
	OneTimeSecretID string
	Now             int64
}

// OneTimeTokenExpireRequest deletes the one-time tokens expired at Now
// (Unix nanoseconds) and those whose ACL token is gone.
type OneTimeTokenExpireRequest struct {
	Now int64
}
