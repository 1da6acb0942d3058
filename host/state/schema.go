package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/drover-sched/drover/sdk"
	memdb "github.com/hashicorp/go-memdb"
)

// Table names.
const (
	TableIndex       = "index"
	TableNodes       = "nodes"
	TableJobs        = "jobs"
	TableJobVersions = "job_version"
	TableAllocs      = "allocs"
	TableEvals       = "evals"
	TableDeployments = "deployment"
	TableSchedConfig = "scheduler_config"
	TablePeriodic    = "periodic_launch"
	TableScaling     = "scaling_event"
	TableCluster     = "cluster"
	TableSubmissions = "job_submission"
	TableSummaries   = "job_summary"
	// TableScalingPolicies has no rows: scaling policies live in their
	// jobs (ScalingPolicies). Its index is the last write that added,
	// changed or removed one, for blocking queries on them.
	TableScalingPolicies = "scaling_policy"
	// TableACLPolicies holds ACL policies by name, TableACLTokens ACL
	// tokens by accessor ID and by secret ID, TableACLRoles ACL roles by
	// ID and by (unique) name.
	TableACLPolicies = "acl_policy"
	TableACLTokens   = "acl_token"
	TableACLRoles    = "acl_roles"
	// TableACLAuthMethods holds ACL auth methods by name,
	// TableACLBindingRules binding rules by ID and by auth method, and
	// TableOneTimeTokens one-time tokens by secret and by the accessor of
	// the ACL token each stands for.
	TableACLAuthMethods  = "acl_auth_methods"
	TableACLBindingRules = "acl_binding_rules"
	TableOneTimeTokens   = "one_time_token"
	// TableVariables holds variables, encrypted, by namespace and path;
	// TableRootKeys the keyring's root keys by key ID.
	TableVariables = "variables"
	TableRootKeys  = "root_keys"
	// TableAutopilot holds the one autopilot configuration, once an
	// operator wrote one.
	TableAutopilot = "autopilot_config"
	// TableNamespaces holds namespaces by name, TableNodePools node pools
	// by name: those written, and those made for what used them (a
	// node's pool as it registers; what an older version's entries and
	// snapshots used). The built-ins (namespace default, pools all and
	// default) exist without a row, until default namespace is written.
	TableNamespaces = "namespaces"
	TableNodePools  = "node_pools"
	// TableVersionTags holds each job's version tags, by namespace and
	// job ID.
	TableVersionTags = "job_version_tags"
	// TableCSIVolumes holds CSI volumes by namespace and ID, with their
	// claims.
	TableCSIVolumes = "csi_volumes"
)

// ACLBootstrapIndexKey is the index table entry that records the index
// of the last ACL bootstrap (Nomad's "acl_token_bootstrap"): a bootstrap
// is refused once it is set, unless it names that index as its reset index.
const ACLBootstrapIndexKey = "acl_token_bootstrap"

// RefsExplicitKey is the index table entry that records the index at which
// namespaces and node pools became written objects in this cluster's
// state (Txn.MakeRefsExplicit); absent in a state an older version wrote.
const RefsExplicitKey = "refs_explicit"

//go:generate go run github.com/tinylib/msgp@v1.6.5 -file schema.go -o schema_gen.go -tests=false -io=false

//msgp:ignore versionIndexer stringField policyIndexer

// IndexEntry records the last index at which a table changed.
type IndexEntry struct {
	Key   string
	Value uint64
}

// PeriodicLaunch records when a periodic job last launched a child (or,
// before its first launch, when it was registered), so a new leader knows
// whether a launch was missed.
type PeriodicLaunch struct {
	Namespace string
	ID        string
	// Launch is the launch time, in Unix nanoseconds.
	Launch      int64
	CreateIndex uint64
	ModifyIndex uint64
}

// MaxScalingEvents is how many scaling events are kept per task group,
// newest first (Nomad's JobTrackedScalingEvents).
const MaxScalingEvents = 20

// JobScalingEvents are a job's latest scaling events, per task group.
type JobScalingEvents struct {
	Namespace string
	JobID     string
	// ScalingEvents holds each group's events, newest first.
	ScalingEvents map[string][]*ScalingEvent
	ModifyIndex   uint64
}

// JobVersionTags are the tags of a job's kept versions (Nomad 1.9's
// version tags), by name: a tagged version is kept, whatever the number
// of versions after it, until it is untagged or the job purged.
type JobVersionTags struct {
	Namespace   string
	JobID       string
	Tags        []*JobVersionTag
	ModifyIndex uint64
}

// JobVersionTag names a kept version of a job; a version has one tag at
// most, and a name tags one version of the job. TaggedTime is Unix
// nanoseconds.
type JobVersionTag struct {
	Name        string
	Description string
	TaggedTime  int64
	Version     uint64
}

// Of returns the tag of version v, nil if it has none.
func (ts *JobVersionTags) Of(v uint64) *JobVersionTag {
	if ts == nil {
		return nil
	}
	for _, t := range ts.Tags {
		if t.Version == v {
			return t
		}
	}
	return nil
}

// Named returns the tag named name, nil if there is none.
func (ts *JobVersionTags) Named(name string) *JobVersionTag {
	if ts == nil {
		return nil
	}
	for _, t := range ts.Tags {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// ScalingEvent records one scaling request (Nomad's ScalingEvent): a count
// change, or, without Count, what an autoscaler reports (Error for a
// failed policy).
type ScalingEvent struct {
	// Time is when the request came, in Unix nanoseconds.
	Time          int64
	Count         *int64
	PreviousCount int64
	Message       string
	Error         bool
	Meta          sdk.Opaque
	// EvalID is the evaluation a count change created.
	EvalID      *string
	CreateIndex uint64
}

// JobSubmission is the source a job version was registered from (Nomad's
// JobSubmission): the jobspec as submitted and the variables given with
// it. A submission is kept for as long as its job version is.
type JobSubmission struct {
	// Source is the jobspec as submitted, in Format: "hcl2" or "json".
	Source string
	Format string
	// VariableFlags are the -var arguments, and Variables the -var-file
	// contents, the jobspec was parsed with.
	VariableFlags map[string]string
	Variables     string
	// Namespace, JobID and Version name the job version, and
	// JobModifyIndex is its JobModifyIndex; the server sets them.
	Namespace      string
	JobID          string
	Version        uint64
	JobModifyIndex uint64
}

// Size is the submission's size as Nomad counts it against
// job_max_source_size: the source, the variables, and the variable flags'
// names and values.
func (s *JobSubmission) Size() int {
	n := len(s.Source) + len(s.Variables)
	for k, v := range s.VariableFlags {
		n += len(k) + len(v)
	}
	return n
}

// JobSummaryKept is what a job's summary keeps that its allocations and
// evaluations would lose to garbage collection (Nomad keeps the whole
// summary as running totals): the allocations each group had queued when
// an evaluation last counted them, and the terminal allocations collected
// so far, by client status. It lives as long as the job (instance).
type JobSummaryKept struct {
	Namespace string
	JobID     string
	// JobCreateIndex is the job instance's create index.
	JobCreateIndex uint64
	// Queued is the QueuedAllocations of the evaluation written last
	// with them (nil before the first).
	Queued    map[string]int
	Collected map[string]CollectedAllocs
	// ModifyIndex is the index of the last change.
	ModifyIndex uint64
}

// CollectedAllocs counts a group's collected allocations by client status.
type CollectedAllocs struct {
	Complete, Failed, Lost int
}

// add counts one allocation of a terminal client status.
func (c *CollectedAllocs) add(status string) {
	switch status {
	case sdk.AllocClientStatusComplete:
		c.Complete++
	case sdk.AllocClientStatusFailed:
		c.Failed++
	case sdk.AllocClientStatusLost:
		c.Lost++
	}
}

// ClusterMeta identifies the cluster this state is the state of. Its first
// leader writes it once; servers refuse raft connections from servers of
// another cluster (a data dir left over from another cluster under a
// member's name would otherwise take part in its elections).
type ClusterMeta struct {
	// Key is always ClusterMetaKey: the table holds one row.
	Key       string
	ClusterID string
	// CreateTime is when it was written, in Unix nanoseconds.
	CreateTime int64
}

// ClusterMetaKey is the key of the one ClusterMeta row.
const ClusterMetaKey = "cluster"

// ACL token types.
const (
	ACLClientToken     = "client"
	ACLManagementToken = "management"
)

// ACLPolicy is a named ACL policy (Nomad's ACLPolicy): Rules are written
// in Nomad's ACL policy language, checked when the policy is written.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLRole is a named set of ACL policies (Nomad's ACLRole) that tokens
// can hold instead of naming the policies themselves. Policies are policy
// names; one deleted since the role was written grants nothing.
type ACLRole struct {
	ID          string
	Name        string
	Description string
	Policies    []string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLToken is an ACL token (Nomad's ACLToken). A client token has the
// union of its policies' and its roles' policies' rights; a management
// token may do everything.
// The SecretID is what a request presents; the AccessorID names the token
// in the API without giving it away.
type ACLToken struct {
	AccessorID string
	SecretID   string
	Name       string
	// Type is ACLClientToken or ACLManagementToken.
	Type     string
	Policies []string
	// Global is stored as given at creation (there is no replication).
	Global bool
	// CreateTime is when the token was created, in Unix nanoseconds.
	CreateTime int64
	// ExpirationTime is when it expires, in Unix nanoseconds; 0: never.
	ExpirationTime int64
	CreateIndex    uint64
	ModifyIndex    uint64
	// Roles are the IDs of the ACL roles the token holds. Omitted when
	// empty, so entries and snapshots written before roles still decode
	// (and tokens without roles encode as before).
	Roles []string `msg:",omitempty"`
}

// Expired reports whether the token has an expiration time before now, as
// Nomad's IsExpired.
func (t *ACLToken) Expired(now time.Time) bool {
	return t.ExpirationTime != 0 && time.Unix(0, t.ExpirationTime).Before(now)
}

// ACL auth method types, token localities and binding rule bind types,
// as Nomad's.
const (
	ACLAuthMethodTypeOIDC = "OIDC"
	ACLAuthMethodTypeJWT  = "JWT"

	ACLTokenLocalityLocal  = "local"
	ACLTokenLocalityGlobal = "global"

	ACLBindTypeRole       = "role"
	ACLBindTypePolicy     = "policy"
	ACLBindTypeManagement = "management"
)

// ACLAuthMethod is a way to log in with an identity another system vouches
// for (Nomad's ACLAuthMethod): a JWT it signed, or an OIDC provider's
// login. The tokens a login makes hold what the method's binding rules
// grant the identity and expire after MaxTokenTTL. At most one method is
// the Default. Times and durations are Unix nanoseconds and nanoseconds.
type ACLAuthMethod struct {
	Name            string
	Type            string
	TokenLocality   string
	TokenNameFormat string
	MaxTokenTTL     int64
	Default         bool
	Config          *ACLAuthMethodConfig
	CreateTime      int64
	ModifyTime      int64
	CreateIndex     uint64
	ModifyIndex     uint64
}

// ACLAuthMethodConfig is an auth method's configuration (Nomad's
// ACLAuthMethodConfig): how to check a JWT's signature (static public
// keys, a JWKS URL, or an OIDC provider's keys) and claims, how to talk
// to an OIDC provider, and which claims become the values and lists
// binding rules select on (ClaimMappings, ListClaimMappings: claim name
// or JSON pointer to the name used in selectors). Leeways are nanoseconds.
type ACLAuthMethodConfig struct {
	JWTValidationPubKeys []string
	JWKSURL              string
	JWKSCACert           string
	OIDCDiscoveryURL     string
	OIDCClientID         string
	OIDCClientSecret     string
	OIDCEnablePKCE       bool
	OIDCDisableUserInfo  bool
	OIDCScopes           []string
	BoundAudiences       []string
	BoundIssuer          []string
	AllowedRedirectURIs  []string
	DiscoveryCaPem       []string
	SigningAlgs          []string
	ExpirationLeeway     int64
	NotBeforeLeeway      int64
	ClockSkewLeeway      int64
	ClaimMappings        map[string]string
	ListClaimMappings    map[string]string
	VerboseLogging       bool
}

// ACLBindingRule grants what an auth method's login makes to the
// identities its Selector (a go-bexpr expression over the mapped claims;
// empty: every identity) matches (Nomad's ACLBindingRule): the role or
// policy BindName names (with ${value.NAME} claims interpolated), or
// management.
type ACLBindingRule struct {
	ID          string
	Description string
	AuthMethod  string
	Selector    string
	BindType    string
	BindName    string
	CreateTime  int64
	ModifyTime  int64
	CreateIndex uint64
	ModifyIndex uint64
}

// OneTimeToken stands for the ACL token AccessorID until ExpiresAt (Unix
// nanoseconds) or until it is exchanged for that token's secret, once
// (Nomad's OneTimeToken, which `nomad ui -authenticate` uses to log a
// browser in without putting the secret in a URL).
type OneTimeToken struct {
	OneTimeSecretID string
	AccessorID      string
	ExpiresAt       int64
	CreateIndex     uint64
	ModifyIndex     uint64
}

// Namespace is a namespace (Nomad's): jobs and variables are in one, and
// ACL policies grant by them. Capabilities, if set, say which task
// drivers its jobs may use. Quota and node pool configuration are
// Nomad Enterprise's and are never set here.
type Namespace struct {
	Name         string
	Description  string
	Capabilities *NamespaceCapabilities
	Meta         map[string]string
	CreateIndex  uint64
	ModifyIndex  uint64
}

// NamespaceCapabilities are the task drivers a namespace's jobs may use:
// only those enabled (none listed: any), never those disabled.
type NamespaceCapabilities struct {
	EnabledTaskDrivers  []string
	DisabledTaskDrivers []string
}

// AllowsDriver reports whether a task of driver d may run in the
// namespace, as Nomad's taskValidateDriver.
func (ns *Namespace) AllowsDriver(d string) bool {
	c := ns.Capabilities
	if c == nil {
		return true
	}
	return (len(c.EnabledTaskDrivers) == 0 || slices.Contains(c.EnabledTaskDrivers, d)) &&
		!slices.Contains(c.DisabledTaskDrivers, d)
}

// NodePool is a node pool (Nomad 1.6's): each node is in one, and a job
// runs on the nodes of the pool it names (all: every node). Its
// scheduler configuration is Nomad Enterprise's and never set here.
type NodePool struct {
	Name        string
	Description string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// Variable is a variable as stored (Nomad's VariableEncrypted): its items,
// encoded, encrypted with the root key KeyID (Data: the nonce, then the
// sealed items). Times are Unix nanoseconds.
type Variable struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
	KeyID       string
	Data        []byte
	// Lock is the lock held on the variable, if one is (Nomad 1.7's
	// variable locks): only its holder may change the variable.
	Lock *VariableLock `msg:",omitempty"`
	// LockDelayUntil is when a lock may be acquired again after one was
	// lost, its TTL passed without a renewal (Unix nanoseconds; 0: no
	// delay). Nomad keeps it in its leader's memory; here a new leader
	// keeps it too.
	LockDelayUntil int64 `msg:",omitempty"`
}

// VariableLock is a lock on a variable (Nomad's VariableLock): ID is its
// holder's, which renews it within TTL or loses it; once lost, no lock is
// acquired for LockDelay. Durations are nanoseconds.
type VariableLock struct {
	ID        string
	TTL       int64
	LockDelay int64
}

// Root key states, as Nomad's: one key is active (new variables are
// encrypted with it); a key being replaced by a full rotation is rekeying
// until no variable is encrypted with it, then inactive; inactive keys
// still decrypt what they encrypted.
const (
	RootKeyActive   = "active"
	RootKeyRekeying = "rekeying"
	RootKeyInactive = "inactive"
)

// RootKey is a root key of the variables keyring (Nomad's RootKeyMeta and
// its key material). Key is the AES-256 key; the API never shows it.
type RootKey struct {
	KeyID       string
	Algorithm   string
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
	State       string
	Key         []byte
}

// AutopilotConfigKey is the key of the one AutopilotConfig row.
const AutopilotConfigKey = "autopilot"

// AutopilotConfig is the cluster's autopilot configuration (Nomad's
// AutopilotConfig), durations in nanoseconds. The enterprise settings
// (redundancy zones, upgrade migrations, custom upgrades) are kept as
// written and do nothing, as in Nomad's community edition.
type AutopilotConfig struct {
	Key                     string
	CleanupDeadServers      bool
	LastContactThreshold    int64
	MaxTrailingLogs         uint64
	MinQuorum               uint
	ServerStabilizationTime int64
	EnableRedundancyZones   bool
	DisableUpgradeMigration bool
	EnableCustomUpgrades    bool
	CreateIndex             uint64
	ModifyIndex             uint64
}

// SchedulerConfigEntry wraps the singleton scheduler configuration.
type SchedulerConfigEntry struct {
	ID     string
	Config *sdk.SchedulerConfiguration
}

// stringField indexes one string field of *T the way memdb.StringFieldIndex
// does (value and a 0 byte; no key for ""), but through a typed getter:
// StringFieldIndex's reflection was a measurable share of committing a
// large plan and of restoring a snapshot.
type stringField[T any] struct {
	name string
	get  func(*T) string
}

// field returns the indexer of the string field name that get reads.
func field[T any](name string, get func(*T) string) stringField[T] {
	return stringField[T]{name: name, get: get}
}

func (f stringField[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("state: %s index wants %T, got %T", f.name, o, obj)
	}
	if o == nil {
		return false, nil, fmt.Errorf("state: %s index got a nil %T", f.name, o)
	}
	v := f.get(o)
	if v == "" {
		return false, nil, nil
	}
	return true, fieldKey(v), nil
}

// FromArgs and its errors match StringFieldIndex's.
func (f stringField[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("must provide only a single argument")
	}
	v, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be a string: %#v", args[0])
	}
	return fieldKey(v), nil
}

// PrefixFromArgs leaves off the 0 byte, so ID prefix searches match.
func (f stringField[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	b, err := f.FromArgs(args...)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

// fieldKey is v and a 0 byte, in one allocation.
func fieldKey(v string) []byte {
	b := make([]byte, len(v)+1)
	copy(b, v)
	return b
}

// The fields the indexes read, by table.
var (
	indexKey = field("Key", func(e *IndexEntry) string { return e.Key })

	nodeID = field("ID", func(n *sdk.Node) string { return n.ID })

	jobNamespace = field("Namespace", func(j *sdk.Job) string { return j.Namespace })
	jobID        = field("ID", func(j *sdk.Job) string { return j.ID })

	allocID        = field("ID", func(a *sdk.Allocation) string { return a.ID })
	allocNamespace = field("Namespace", func(a *sdk.Allocation) string { return a.Namespace })
	allocJobID     = field("JobID", func(a *sdk.Allocation) string { return a.JobID })
	allocNodeID    = field("NodeID", func(a *sdk.Allocation) string { return a.NodeID })

	evalID        = field("ID", func(e *sdk.Evaluation) string { return e.ID })
	evalNamespace = field("Namespace", func(e *sdk.Evaluation) string { return e.Namespace })
	evalJobID     = field("JobID", func(e *sdk.Evaluation) string { return e.JobID })

	deploymentID        = field("ID", func(d *sdk.Deployment) string { return d.ID })
	deploymentNamespace = field("Namespace", func(d *sdk.Deployment) string { return d.Namespace })
	deploymentJobID     = field("JobID", func(d *sdk.Deployment) string { return d.JobID })

	schedConfigID = field("ID", func(c *SchedulerConfigEntry) string { return c.ID })
	clusterKey    = field("Key", func(m *ClusterMeta) string { return m.Key })

	periodicNamespace = field("Namespace", func(l *PeriodicLaunch) string { return l.Namespace })
	periodicID        = field("ID", func(l *PeriodicLaunch) string { return l.ID })

	scalingNamespace = field("Namespace", func(e *JobScalingEvents) string { return e.Namespace })
	scalingJobID     = field("JobID", func(e *JobScalingEvents) string { return e.JobID })

	summaryNamespace = field("Namespace", func(k *JobSummaryKept) string { return k.Namespace })
	summaryJobID     = field("JobID", func(k *JobSummaryKept) string { return k.JobID })

	aclPolicyName    = field("Name", func(p *ACLPolicy) string { return p.Name })
	aclTokenAccessor = field("AccessorID", func(t *ACLToken) string { return t.AccessorID })
	aclTokenSecret   = field("SecretID", func(t *ACLToken) string { return t.SecretID })
	aclRoleID        = field("ID", func(r *ACLRole) string { return r.ID })
	aclRoleName      = field("Name", func(r *ACLRole) string { return r.Name })
	authMethodName   = field("Name", func(m *ACLAuthMethod) string { return m.Name })
	bindingRuleID    = field("ID", func(r *ACLBindingRule) string { return r.ID })
	bindingRuleOf    = field("AuthMethod", func(r *ACLBindingRule) string { return r.AuthMethod })
	oneTimeSecret    = field("OneTimeSecretID", func(t *OneTimeToken) string { return t.OneTimeSecretID })
	oneTimeAccessor  = field("AccessorID", func(t *OneTimeToken) string { return t.AccessorID })

	variableNamespace = field("Namespace", func(v *Variable) string { return v.Namespace })
	variablePath      = field("Path", func(v *Variable) string { return v.Path })
	rootKeyID         = field("KeyID", func(k *RootKey) string { return k.KeyID })
	autopilotKey      = field("Key", func(c *AutopilotConfig) string { return c.Key })
	namespaceName     = field("Name", func(ns *Namespace) string { return ns.Name })
	nodePoolName      = field("Name", func(p *NodePool) string { return p.Name })
	tagsNamespace     = field("Namespace", func(ts *JobVersionTags) string { return ts.Namespace })
	tagsJobID         = field("JobID", func(ts *JobVersionTags) string { return ts.JobID })
	csiNamespace      = field("Namespace", func(v *sdk.CSIVolume) string { return v.Namespace })
	csiID             = field("ID", func(v *sdk.CSIVolume) string { return v.ID })
	csiPluginID       = field("PluginID", func(v *sdk.CSIVolume) string { return v.PluginID })
)

// nsIDIndex indexes objects by namespace and an ID-like string field.
func nsIDIndex[T any](name string, ns, id stringField[T], unique bool) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:    name,
		Unique:  unique,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{ns, id}},
	}
}

func idIndex[T any](id stringField[T]) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: "id", Unique: true, Indexer: id}
}

// versionIndexer indexes what belongs to a job version (the version
// itself, its submission) by namespace, job ID and version.
type versionIndexer[T any] struct {
	table string
	get   func(*T) (ns, id string, v uint64)
}

func (x versionIndexer[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("state: %s holds %T", x.table, obj)
	}
	return true, versionKey(x.get(o)), nil
}

func (x versionIndexer[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("state: %s index takes namespace, id, version", x.table)
	}
	ns, _ := args[0].(string)
	id, _ := args[1].(string)
	v, _ := args[2].(uint64)
	return versionKey(ns, id, v), nil
}

func (x versionIndexer[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("state: %s prefix takes namespace, id", x.table)
	}
	ns, _ := args[0].(string)
	id, _ := args[1].(string)
	return append(append(append([]byte(ns), 0), id...), 0), nil
}

func versionKey(ns, id string, v uint64) []byte {
	b := append(append(append([]byte(ns), 0), id...), 0)
	for i := 7; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableIndex: {Name: TableIndex, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(indexKey),
		}},
		TableNodes: {Name: TableNodes, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(nodeID),
		}},
		TableJobs: {Name: TableJobs, Indexes: map[string]*memdb.IndexSchema{
			"id":             nsIDIndex("id", jobNamespace, jobID, true),
			"scaling_policy": {Name: "scaling_policy", AllowMissing: true, Indexer: policyIndexer{}},
		}},
		TableJobVersions: {Name: TableJobVersions, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: versionIndexer[sdk.Job]{TableJobVersions,
				func(j *sdk.Job) (string, string, uint64) { return j.Namespace, j.ID, j.Version }}},
		}},
		TableSubmissions: {Name: TableSubmissions, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: versionIndexer[JobSubmission]{TableSubmissions,
				func(s *JobSubmission) (string, string, uint64) { return s.Namespace, s.JobID, s.Version }}},
		}},
		// Every index is one more radix-tree insert per allocation a plan
		// commits: allocations by eval or deployment are found among their
		// job's (reader.AllocsByEval), which made committing 5,000
		// allocations 17-20% faster than with those two indexes.
		TableAllocs: {Name: TableAllocs, Indexes: map[string]*memdb.IndexSchema{
			"id":   idIndex(allocID),
			"job":  nsIDIndex("job", allocNamespace, allocJobID, false),
			"node": {Name: "node", Indexer: allocNodeID},
		}},
		TableEvals: {Name: TableEvals, Indexes: map[string]*memdb.IndexSchema{
			"id":  idIndex(evalID),
			"job": nsIDIndex("job", evalNamespace, evalJobID, false),
		}},
		TableDeployments: {Name: TableDeployments, Indexes: map[string]*memdb.IndexSchema{
			"id":  idIndex(deploymentID),
			"job": nsIDIndex("job", deploymentNamespace, deploymentJobID, false),
		}},
		TableSchedConfig: {Name: TableSchedConfig, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(schedConfigID),
		}},
		TableCluster: {Name: TableCluster, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(clusterKey),
		}},
		TablePeriodic: {Name: TablePeriodic, Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", periodicNamespace, periodicID, true),
		}},
		TableScaling: {Name: TableScaling, Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", scalingNamespace, scalingJobID, true),
		}},
		TableSummaries: {Name: TableSummaries, Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", summaryNamespace, summaryJobID, true),
		}},
		TableACLPolicies: {Name: TableACLPolicies, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(aclPolicyName),
		}},
		TableACLTokens: {Name: TableACLTokens, Indexes: map[string]*memdb.IndexSchema{
			"id":     idIndex(aclTokenAccessor),
			"secret": {Name: "secret", Unique: true, Indexer: aclTokenSecret},
		}},
		TableACLRoles: {Name: TableACLRoles, Indexes: map[string]*memdb.IndexSchema{
			"id":   idIndex(aclRoleID),
			"name": {Name: "name", Unique: true, Indexer: aclRoleName},
		}},
		TableACLAuthMethods: {Name: TableACLAuthMethods, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(authMethodName),
		}},
		TableACLBindingRules: {Name: TableACLBindingRules, Indexes: map[string]*memdb.IndexSchema{
			"id":          idIndex(bindingRuleID),
			"auth_method": {Name: "auth_method", Indexer: bindingRuleOf},
		}},
		TableOneTimeTokens: {Name: TableOneTimeTokens, Indexes: map[string]*memdb.IndexSchema{
			"id":       idIndex(oneTimeSecret),
			"accessor": {Name: "accessor", Indexer: oneTimeAccessor},
		}},
		TableVariables: {Name: TableVariables, Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", variableNamespace, variablePath, true),
		}},
		TableRootKeys: {Name: TableRootKeys, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(rootKeyID),
		}},
		TableAutopilot: {Name: TableAutopilot, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(autopilotKey),
		}},
		TableNamespaces: {Name: TableNamespaces, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(namespaceName),
		}},
		TableNodePools: {Name: TableNodePools, Indexes: map[string]*memdb.IndexSchema{
			"id": idIndex(nodePoolName),
		}},
		TableVersionTags: {Name: TableVersionTags, Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", tagsNamespace, tagsJobID, true),
		}},
		TableCSIVolumes: {Name: TableCSIVolumes, Indexes: map[string]*memdb.IndexSchema{
			"id":     nsIDIndex("id", csiNamespace, csiID, true),
			"plugin": {Name: "plugin", Indexer: csiPluginID},
		}},
	}}
}
