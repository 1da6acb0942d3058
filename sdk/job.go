package sdk

import "time"

// Opaque holds a block that matters only to task execution (a driver's
// config, a template, a service registration, ...). Drover parses it, keeps
// it and returns it; schedulers do not interpret it.
type Opaque map[string]any

// Str is the string at key ("" when it is missing or something else).
func (o Opaque) Str(key string) string {
	s, _ := o[key].(string)
	return s
}

// Field is the value of field name of a block that stands for a struct
// (a volume request, a CSI plugin config): under its Go name, as the API's
// JSON spells it, or with its first letter lowered, as a jobspec's does.
// The lowered name is made only when the field is missing.
func (o Opaque) Field(name string) any {
	if v := o[name]; v != nil {
		return v
	}
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		return nil
	}
	return o[string(name[0]+'a'-'A')+name[1:]]
}

// Job is the desired state a user submits: task groups to run, where, and how
// to roll them out. Field names follow Nomad's.
type Job struct {
	Region      string        `msg:",omitempty"`
	Namespace   string        `msg:",omitempty"`
	ID          string        `msg:",omitempty"`
	ParentID    string        `msg:",omitempty"`
	Name        string        `msg:",omitempty"`
	Type        string        `msg:",omitempty"`
	Priority    int           `msg:",omitempty"`
	AllAtOnce   bool          `msg:",omitempty"`
	Datacenters []string      `msg:",omitempty"`
	NodePool    string        `msg:",omitempty"`
	Constraints []*Constraint `msg:",omitempty"`
	Affinities  []*Affinity   `msg:",omitempty"`
	Spreads     []*Spread     `msg:",omitempty"`
	TaskGroups  []*TaskGroup  `msg:",omitempty"`
	// Update is the job-level update block; canonicalisation copies it into
	// task groups that have none.
	Update           UpdateStrategy
	Multiregion      Opaque                  `msg:",omitempty"`
	Periodic         *PeriodicConfig         `msg:",omitempty"`
	ParameterizedJob *ParameterizedJobConfig `msg:",omitempty"`
	Reschedule       *ReschedulePolicy       `msg:",omitempty"`
	Migrate          *MigrateStrategy        `msg:",omitempty"`
	Dispatched       bool                    `msg:",omitempty"`
	// DispatchIdempotencyToken deduplicates dispatches of a parameterized job.
	DispatchIdempotencyToken string            `msg:",omitempty"`
	Payload                  []byte            `msg:",omitempty"`
	Meta                     map[string]string `msg:",omitempty"`
	UI                       Opaque            `msg:",omitempty"`

	// Scheduler names the scheduler plugin for this job. Empty means the
	// built-in scheduler for Type. This is Drover's addition to the jobspec.
	Scheduler string `msg:",omitempty"`

	ConsulNamespace string `msg:",omitempty"`
	VaultNamespace  string `msg:",omitempty"`
	NomadTokenID    string `msg:",omitempty"`

	Stop              bool   `msg:",omitempty"`
	Status            string `msg:",omitempty"`
	StatusDescription string `msg:",omitempty"`
	Stable            bool   `msg:",omitempty"`
	Version           uint64 `msg:",omitempty"`
	SubmitTime        int64  `msg:",omitempty"`
	VersionTag        Opaque `msg:",omitempty"`

	CreateIndex    uint64 `msg:",omitempty"`
	ModifyIndex    uint64 `msg:",omitempty"`
	JobModifyIndex uint64 `msg:",omitempty"`
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

// IsPeriodic reports whether the job has a periodic block, enabled or not,
// as Nomad's: such a job is a template, never evaluated itself, and stays
// periodic until it is purged. IsPeriodicActive says whether it launches.
func (j *Job) IsPeriodic() bool { return j != nil && j.Periodic != nil }

// IsPeriodicActive reports whether the job launches children on its
// schedule: periodic, enabled, not stopped, and not a parameterized
// template (whose dispatched jobs are the ones launched), as Nomad's.
func (j *Job) IsPeriodicActive() bool {
	return j.IsPeriodic() && j.Periodic.Enabled && !j.Stop && !j.IsParameterized()
}

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
	Namespace string `msg:",omitempty"`
	ID        string `msg:",omitempty"`
}

func (n NamespacedID) String() string { return n.Namespace + "/" + n.ID }

// TaskGroup is a set of tasks placed together on one node, Count times.
type TaskGroup struct {
	Name             string              `msg:",omitempty"`
	Count            int                 `msg:",omitempty"`
	Update           *UpdateStrategy     `msg:",omitempty"`
	Migrate          *MigrateStrategy    `msg:",omitempty"`
	Constraints      []*Constraint       `msg:",omitempty"`
	Scaling          *ScalingPolicy      `msg:",omitempty"`
	RestartPolicy    *RestartPolicy      `msg:",omitempty"`
	Disconnect       *DisconnectStrategy `msg:",omitempty"`
	Tasks            []*Task             `msg:",omitempty"`
	EphemeralDisk    *EphemeralDisk      `msg:",omitempty"`
	Meta             map[string]string   `msg:",omitempty"`
	ReschedulePolicy *ReschedulePolicy   `msg:",omitempty"`
	Affinities       []*Affinity         `msg:",omitempty"`
	Spreads          []*Spread           `msg:",omitempty"`
	Networks         []*NetworkResource  `msg:",omitempty"`
	Services         []Opaque            `msg:",omitempty"`
	Volumes          map[string]Opaque   `msg:",omitempty"`
	Consul           Opaque              `msg:",omitempty"`
	ShutdownDelay    *time.Duration      `msg:",omitempty"`
	MaxRunDuration   *time.Duration      `msg:",omitempty"`
	// StopAfterClientDisconnect and MaxClientDisconnect are the pre-1.8
	// spellings of Disconnect.StopOnClientAfter and Disconnect.LostAfter.
	StopAfterClientDisconnect *time.Duration `msg:",omitempty"`
	MaxClientDisconnect       *time.Duration `msg:",omitempty"`
	PreventRescheduleOnLost   bool           `msg:",omitempty"`
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
	Name            string            `msg:",omitempty"`
	Driver          string            `msg:",omitempty"`
	User            string            `msg:",omitempty"`
	Config          Opaque            `msg:",omitempty"`
	Env             map[string]string `msg:",omitempty"`
	Services        []Opaque          `msg:",omitempty"`
	Vault           Opaque            `msg:",omitempty"`
	Consul          Opaque            `msg:",omitempty"`
	Templates       []Opaque          `msg:",omitempty"`
	Constraints     []*Constraint     `msg:",omitempty"`
	Affinities      []*Affinity       `msg:",omitempty"`
	Resources       *Resources        `msg:",omitempty"`
	RestartPolicy   *RestartPolicy    `msg:",omitempty"`
	DispatchPayload Opaque            `msg:",omitempty"`
	Lifecycle       *TaskLifecycle    `msg:",omitempty"`
	Meta            map[string]string `msg:",omitempty"`
	KillTimeout     time.Duration     `msg:",omitempty"`
	LogConfig       Opaque            `msg:",omitempty"`
	Artifacts       []Opaque          `msg:",omitempty"`
	Leader          bool              `msg:",omitempty"`
	ShutdownDelay   time.Duration     `msg:",omitempty"`
	VolumeMounts    []Opaque          `msg:",omitempty"`
	ScalingPolicies []*ScalingPolicy  `msg:",omitempty"`
	KillSignal      string            `msg:",omitempty"`
	Kind            string            `msg:",omitempty"`
	CSIPluginConfig Opaque            `msg:",omitempty"`
	Identity        Opaque            `msg:",omitempty"`
	Identities      []Opaque          `msg:",omitempty"`
	Actions         []Opaque          `msg:",omitempty"`
	Schedule        Opaque            `msg:",omitempty"`
	Secrets         []Opaque          `msg:",omitempty"`
}

// TaskLifecycle orders a task relative to the group's main tasks.
type TaskLifecycle struct {
	Hook    string `msg:",omitempty"`
	Sidecar bool   `msg:",omitempty"`
}

// String is the lifecycle as a jobspec writes it ("prestart", "prestart
// sidecar"), "main" for none.
func (l *TaskLifecycle) String() string {
	switch {
	case l == nil:
		return "main"
	case l.Sidecar:
		return l.Hook + " sidecar"
	}
	return l.Hook
}

// Equal reports whether l and o order a task alike (nil: a main task).
func (l *TaskLifecycle) Equal(o *TaskLifecycle) bool {
	if l == nil || o == nil {
		return l == o
	}
	return *l == *o
}

// Lifecycle hooks.
const (
	TaskLifecycleHookPrestart  = "prestart"
	TaskLifecycleHookPoststart = "poststart"
	TaskLifecycleHookPoststop  = "poststop"
)

// Constraint restricts placement: LTarget Operand RTarget must hold on a node.
type Constraint struct {
	LTarget string `msg:",omitempty"`
	RTarget string `msg:",omitempty"`
	Operand string `msg:",omitempty"`
}

func (c *Constraint) String() string { return c.LTarget + " " + c.Operand + " " + c.RTarget }

// Affinity prefers (positive Weight) or avoids (negative) nodes.
type Affinity struct {
	LTarget string `msg:",omitempty"`
	RTarget string `msg:",omitempty"`
	Operand string `msg:",omitempty"`
	Weight  int8   `msg:",omitempty"`
}

// Spread spreads a group's allocations over the values of Attribute.
type Spread struct {
	Attribute    string          `msg:",omitempty"`
	Weight       int8            `msg:",omitempty"`
	SpreadTarget []*SpreadTarget `msg:",omitempty"`
}

// SpreadTarget is the desired share of one attribute value.
type SpreadTarget struct {
	Value   string `msg:",omitempty"`
	Percent uint8  `msg:",omitempty"`
}

// UpdateStrategy is the update block: how a new job version rolls out.
type UpdateStrategy struct {
	Stagger          time.Duration `msg:",omitempty"`
	MaxParallel      int           `msg:",omitempty"`
	HealthCheck      string        `msg:",omitempty"`
	MinHealthyTime   time.Duration `msg:",omitempty"`
	HealthyDeadline  time.Duration `msg:",omitempty"`
	ProgressDeadline time.Duration `msg:",omitempty"`
	AutoRevert       bool          `msg:",omitempty"`
	AutoPromote      bool          `msg:",omitempty"`
	Canary           int           `msg:",omitempty"`
}

// IsEmpty reports whether the strategy asks for no rolling update.
func (u *UpdateStrategy) IsEmpty() bool { return u == nil || u.MaxParallel == 0 }

// Rolling reports whether updates roll out in steps tracked by a deployment.
func (u *UpdateStrategy) Rolling() bool { return u != nil && u.MaxParallel > 0 }

// MigrateStrategy is the migrate block: how allocations leave a draining node.
type MigrateStrategy struct {
	MaxParallel     int           `msg:",omitempty"`
	HealthCheck     string        `msg:",omitempty"`
	MinHealthyTime  time.Duration `msg:",omitempty"`
	HealthyDeadline time.Duration `msg:",omitempty"`
}

// RestartPolicy is the restart block, enforced on the node.
type RestartPolicy struct {
	Attempts        int           `msg:",omitempty"`
	Interval        time.Duration `msg:",omitempty"`
	Delay           time.Duration `msg:",omitempty"`
	Mode            string        `msg:",omitempty"`
	RenderTemplates bool          `msg:",omitempty"`
}

// ReschedulePolicy is the reschedule block: how failed allocations are
// replaced on other nodes.
type ReschedulePolicy struct {
	Attempts      int           `msg:",omitempty"`
	Interval      time.Duration `msg:",omitempty"`
	Delay         time.Duration `msg:",omitempty"`
	DelayFunction string        `msg:",omitempty"`
	MaxDelay      time.Duration `msg:",omitempty"`
	Unlimited     bool          `msg:",omitempty"`
}

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// DisconnectStrategy is the disconnect block.
type DisconnectStrategy struct {
	LostAfter         time.Duration  `msg:",omitempty"`
	StopOnClientAfter *time.Duration `msg:",omitempty"`
	Replace           *bool          `msg:",omitempty"`
	Reconcile         string         `msg:",omitempty"`
}

// EphemeralDisk is the group's scratch disk.
type EphemeralDisk struct {
	Sticky  bool `msg:",omitempty"`
	SizeMB  int  `msg:",omitempty"`
	Migrate bool `msg:",omitempty"`
}

// PeriodicConfig makes a job a template that is launched on a cron schedule.
type PeriodicConfig struct {
	Enabled         bool     `msg:",omitempty"`
	Spec            string   `msg:",omitempty"`
	Specs           []string `msg:",omitempty"`
	SpecType        string   `msg:",omitempty"`
	ProhibitOverlap bool     `msg:",omitempty"`
	TimeZone        string   `msg:",omitempty"`
}

// ParameterizedJobConfig makes a job a template that is dispatched on demand.
type ParameterizedJobConfig struct {
	Payload      string   `msg:",omitempty"`
	MetaRequired []string `msg:",omitempty"`
	MetaOptional []string `msg:",omitempty"`
}

// ScalingPolicy is the scaling block.
type ScalingPolicy struct {
	ID          string            `msg:",omitempty"`
	Type        string            `msg:",omitempty"`
	Target      map[string]string `msg:",omitempty"`
	Min         int64             `msg:",omitempty"`
	Max         int64             `msg:",omitempty"`
	Policy      Opaque            `msg:",omitempty"`
	Enabled     bool              `msg:",omitempty"`
	CreateIndex uint64            `msg:",omitempty"`
	ModifyIndex uint64            `msg:",omitempty"`
}
