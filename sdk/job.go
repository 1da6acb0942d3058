package sdk

import "time"

// Opaque holds a block that matters only to task execution (a driver's
// config, a template, a service registration, ...). Drover parses it, keeps
// it and returns it; schedulers do not interpret it.
type Opaque map[string]any

// Job is the desired state a user submits: task groups to run, where, and how
// to roll them out. Field names follow Nomad's.
type Job struct {
	Region      string
	Namespace   string
	ID          string
	ParentID    string
	Name        string
	Type        string
	Priority    int
	AllAtOnce   bool
	Datacenters []string
	NodePool    string
	Constraints []*Constraint
	Affinities  []*Affinity
	Spreads     []*Spread
	TaskGroups  []*TaskGroup
	// Update is the job-level update block; canonicalisation copies it into
	// task groups that have none.
	Update           UpdateStrategy
	Multiregion      Opaque
	Periodic         *PeriodicConfig
	ParameterizedJob *ParameterizedJobConfig
	Reschedule       *ReschedulePolicy
	Migrate          *MigrateStrategy
	Dispatched       bool
	// DispatchIdempotencyToken deduplicates dispatches of a parameterized job.
	DispatchIdempotencyToken string
	Payload                  []byte
	Meta                     map[string]string
	UI                       Opaque

	// Scheduler names the scheduler plugin for this job. Empty means the
	// built-in scheduler for Type. This is Drover's addition to the jobspec.
	Scheduler string

	ConsulNamespace string
	VaultNamespace  string
	NomadTokenID    string

	Stop              bool
	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	SubmitTime        int64
	VersionTag        Opaque

	CreateIndex    uint64
	ModifyIndex    uint64
	JobModifyIndex uint64
}

// LookupTaskGroup returns the named group, or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	if j == nil {
		return nil
	}
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// Stopped reports whether the job was stopped (or is nil).
func (j *Job) Stopped() bool { return j == nil || j.Stop }

// IsPeriodic reports whether the job is a periodic template.
func (j *Job) IsPeriodic() bool { return j != nil && j.Periodic != nil && j.Periodic.Enabled }

// IsParameterized reports whether the job is a parameterized template that is
// dispatched, not run.
func (j *Job) IsParameterized() bool { return j != nil && j.ParameterizedJob != nil && !j.Dispatched }

// NamespacedID returns the job's identity.
func (j *Job) NamespacedID() NamespacedID { return NamespacedID{Namespace: j.Namespace, ID: j.ID} }

// SchedulerName returns the name of the scheduler plugin that handles the job.
func (j *Job) SchedulerName() string {
	if j.Scheduler != "" {
		return j.Scheduler
	}
	return j.Type
}

// NamespacedID identifies a namespaced object.
type NamespacedID struct {
	Namespace string
	ID        string
}

func (n NamespacedID) String() string { return n.Namespace + "/" + n.ID }

// TaskGroup is a set of tasks placed together on one node, Count times.
type TaskGroup struct {
	Name             string
	Count            int
	Update           *UpdateStrategy
	Migrate          *MigrateStrategy
	Constraints      []*Constraint
	Scaling          *ScalingPolicy
	RestartPolicy    *RestartPolicy
	Disconnect       *DisconnectStrategy
	Tasks            []*Task
	EphemeralDisk    *EphemeralDisk
	Meta             map[string]string
	ReschedulePolicy *ReschedulePolicy
	Affinities       []*Affinity
	Spreads          []*Spread
	Networks         []*NetworkResource
	Services         []Opaque
	Volumes          map[string]Opaque
	Consul           Opaque
	ShutdownDelay    *time.Duration
	MaxRunDuration   *time.Duration
	// StopAfterClientDisconnect and MaxClientDisconnect are the pre-1.8
	// spellings of Disconnect.StopOnClientAfter and Disconnect.LostAfter.
	StopAfterClientDisconnect *time.Duration
	MaxClientDisconnect       *time.Duration
	PreventRescheduleOnLost   bool
}

// LostAfter is how long an allocation of the group may stay unknown on a
// disconnected node before it is lost (disconnect's lost_after, or the
// older max_client_disconnect); 0 when the group does not tolerate
// disconnects.
func (tg *TaskGroup) LostAfter() time.Duration {
	if tg.Disconnect != nil && tg.Disconnect.LostAfter > 0 {
		return tg.Disconnect.LostAfter
	}
	if tg.MaxClientDisconnect != nil {
		return *tg.MaxClientDisconnect
	}
	return 0
}

// LookupTask returns the named task, or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Task is one process run by a driver.
type Task struct {
	Name            string
	Driver          string
	User            string
	Config          Opaque
	Env             map[string]string
	Services        []Opaque
	Vault           Opaque
	Consul          Opaque
	Templates       []Opaque
	Constraints     []*Constraint
	Affinities      []*Affinity
	Resources       *Resources
	RestartPolicy   *RestartPolicy
	DispatchPayload Opaque
	Lifecycle       *TaskLifecycle
	Meta            map[string]string
	KillTimeout     time.Duration
	LogConfig       Opaque
	Artifacts       []Opaque
	Leader          bool
	ShutdownDelay   time.Duration
	VolumeMounts    []Opaque
	ScalingPolicies []*ScalingPolicy
	KillSignal      string
	Kind            string
	CSIPluginConfig Opaque
	Identity        Opaque
	Identities      []Opaque
	Actions         []Opaque
	Schedule        Opaque
	Secrets         []Opaque
}

// TaskLifecycle orders a task relative to the group's main tasks.
type TaskLifecycle struct {
	Hook    string
	Sidecar bool
}

// Constraint restricts placement: LTarget Operand RTarget must hold on a node.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

func (c *Constraint) String() string { return c.LTarget + " " + c.Operand + " " + c.RTarget }

// Affinity prefers (positive Weight) or avoids (negative) nodes.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

// Spread spreads a group's allocations over the values of Attribute.
type Spread struct {
	Attribute    string
	Weight       int8
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is the desired share of one attribute value.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

// UpdateStrategy is the update block: how a new job version rolls out.
type UpdateStrategy struct {
	Stagger          time.Duration
	MaxParallel      int
	HealthCheck      string
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	AutoRevert       bool
	AutoPromote      bool
	Canary           int
}

// IsEmpty reports whether the strategy asks for no rolling update.
func (u *UpdateStrategy) IsEmpty() bool { return u == nil || u.MaxParallel == 0 }

// Rolling reports whether updates roll out in steps tracked by a deployment.
func (u *UpdateStrategy) Rolling() bool { return u != nil && u.MaxParallel > 0 }

// MigrateStrategy is the migrate block: how allocations leave a draining node.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// RestartPolicy is the restart block, enforced on the node.
type RestartPolicy struct {
	Attempts        int
	Interval        time.Duration
	Delay           time.Duration
	Mode            string
	RenderTemplates bool
}

// ReschedulePolicy is the reschedule block: how failed allocations are
// replaced on other nodes.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// DisconnectStrategy is the disconnect block.
type DisconnectStrategy struct {
	LostAfter         time.Duration
	StopOnClientAfter *time.Duration
	Replace           *bool
	Reconcile         string
}

// EphemeralDisk is the group's scratch disk.
type EphemeralDisk struct {
	Sticky  bool
	SizeMB  int
	Migrate bool
}

// PeriodicConfig makes a job a template that is launched on a cron schedule.
type PeriodicConfig struct {
	Enabled         bool
	Spec            string
	Specs           []string
	SpecType        string
	ProhibitOverlap bool
	TimeZone        string
}

// ParameterizedJobConfig makes a job a template that is dispatched on demand.
type ParameterizedJobConfig struct {
	Payload      string
	MetaRequired []string
	MetaOptional []string
}

// ScalingPolicy is the scaling block.
type ScalingPolicy struct {
	ID          string
	Type        string
	Target      map[string]string
	Min         int64
	Max         int64
	Policy      Opaque
	Enabled     bool
	CreateIndex uint64
	ModifyIndex uint64
}
