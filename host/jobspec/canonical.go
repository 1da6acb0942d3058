package jobspec

import (
	"time"

	"github.com/drover-sched/drover/sdk"
)

// Defaults Nomad's server applies, per job type.
var (
	defaultServiceRestart = sdk.RestartPolicy{Delay: 15 * time.Second, Attempts: 2, Interval: 30 * time.Minute, Mode: "fail"}
	defaultBatchRestart   = sdk.RestartPolicy{Delay: 15 * time.Second, Attempts: 3, Interval: 24 * time.Hour, Mode: "fail"}

	defaultServiceReschedule = sdk.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: sdk.DelayFunctionExponential,
		MaxDelay: time.Hour, Unlimited: true}
	defaultBatchReschedule = sdk.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second,
		DelayFunction: sdk.DelayFunctionConstant}

	defaultMigrate = sdk.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second,
		HealthyDeadline: 5 * time.Minute}
)

// DefaultMigrate is the migrate block of a service group that has none,
// as Nomad's.
func DefaultMigrate() sdk.MigrateStrategy { return defaultMigrate }

// Default task and group values.
const (
	DefaultCPU          = 100
	DefaultMemoryMB     = 300
	DefaultDiskMB       = 300
	DefaultKillTimeout  = 5 * time.Second
	DefaultGlobalRegion = "global"
)

// Canonicalize fills in the server-side defaults of a job, as Nomad's
// server does after its API canonicalisation: namespace, region, name,
// type, priority, datacenters ("*", every datacenter) and node pool; per
// group the job type's restart and reschedule policies, a migrate block for
// services, a 300 MB ephemeral disk and the Disconnect form of the legacy
// disconnect fields; per task default resources, kill timeout, log
// settings and the group's restart policy; "default" host networks for
// ports. It only fills what is unset, so it is idempotent, and it is safe
// on jobs built directly in Go (tests, simulators).
func Canonicalize(j *sdk.Job) {
	if j.Namespace == "" {
		j.Namespace = sdk.DefaultNamespace
	}
	if j.Region == "" {
		j.Region = DefaultGlobalRegion
	}
	if j.Name == "" {
		j.Name = j.ID
	}
	if j.Type == "" {
		j.Type = sdk.JobTypeService
	}
	if j.Priority == 0 {
		j.Priority = sdk.JobDefaultPriority
	}
	if len(j.Datacenters) == 0 {
		j.Datacenters = []string{"*"}
	}
	if j.NodePool == "" {
		j.NodePool = sdk.DefaultNodePool
	}
	if len(j.Meta) == 0 {
		j.Meta = nil
	}
	if p := j.Periodic; p != nil {
		if p.SpecType == "" {
			p.SpecType = "cron"
		}
		if p.TimeZone == "" {
			p.TimeZone = "UTC"
		}
	}
	if p := j.ParameterizedJob; p != nil && p.Payload == "" {
		p.Payload = sdk.DispatchPayloadOptional
	}
	for _, tg := range j.TaskGroups {
		canonicalizeGroup(j, tg)
	}
}

func canonicalizeGroup(j *sdk.Job, tg *sdk.TaskGroup) {
	if len(tg.Meta) == 0 {
		tg.Meta = nil
	}
	if tg.RestartPolicy == nil {
		switch j.Type {
		case sdk.JobTypeService, sdk.JobTypeSystem:
			rp := defaultServiceRestart
			tg.RestartPolicy = &rp
		default:
			rp := defaultBatchRestart
			tg.RestartPolicy = &rp
		}
	}
	if tg.ReschedulePolicy == nil {
		switch j.Type {
		case sdk.JobTypeService:
			rp := defaultServiceReschedule
			tg.ReschedulePolicy = &rp
		case sdk.JobTypeBatch:
			rp := defaultBatchReschedule
			tg.ReschedulePolicy = &rp
		}
	}
	if j.Type == sdk.JobTypeService && tg.Migrate == nil {
		m := defaultMigrate
		tg.Migrate = &m
	}
	if tg.EphemeralDisk == nil {
		tg.EphemeralDisk = &sdk.EphemeralDisk{SizeMB: DefaultDiskMB}
	}
	if j.Type == sdk.JobTypeSystem && tg.Count == 0 {
		tg.Count = 1
	}
	if tg.Update == nil && j.Update.MaxParallel > 0 {
		// A job built in Go with a job-level update: the groups inherit it,
		// with Nomad's defaults for what it leaves unset.
		u := j.Update
		if u.HealthCheck == "" {
			u.HealthCheck = "checks"
		}
		if u.MinHealthyTime == 0 {
			u.MinHealthyTime = 10 * time.Second
		}
		if u.HealthyDeadline == 0 {
			u.HealthyDeadline = 5 * time.Minute
		}
		if u.ProgressDeadline == 0 {
			u.ProgressDeadline = 10 * time.Minute
		}
		if u.Stagger == 0 {
			u.Stagger = 30 * time.Second
		}
		tg.Update = &u
	}
	canonicalizeDisconnect(tg)
	for _, n := range tg.Networks {
		canonicalizeNetwork(n)
	}
	for _, t := range tg.Tasks {
		canonicalizeTask(tg, t)
	}
}

// canonicalizeDisconnect expresses the pre-1.8 fields max_client_disconnect,
// stop_after_client_disconnect and prevent_reschedule_on_lost as a
// disconnect block, the form schedulers read.
func canonicalizeDisconnect(tg *sdk.TaskGroup) {
	legacy := tg.MaxClientDisconnect != nil || tg.StopAfterClientDisconnect != nil || tg.PreventRescheduleOnLost
	if tg.Disconnect == nil && !legacy {
		return
	}
	if tg.Disconnect == nil {
		tg.Disconnect = &sdk.DisconnectStrategy{}
		if tg.MaxClientDisconnect != nil {
			tg.Disconnect.LostAfter = *tg.MaxClientDisconnect
		}
		if tg.StopAfterClientDisconnect != nil {
			d := *tg.StopAfterClientDisconnect
			tg.Disconnect.StopOnClientAfter = &d
		}
		if tg.PreventRescheduleOnLost {
			no := false
			tg.Disconnect.Replace = &no
		}
	}
	if tg.Disconnect.Replace == nil {
		yes := true
		tg.Disconnect.Replace = &yes
	}
	if tg.Disconnect.Reconcile == "" {
		tg.Disconnect.Reconcile = sdk.ReconcileBestScore
	}
}

func canonicalizeNetwork(n *sdk.NetworkResource) {
	if len(n.ReservedPorts) == 0 {
		n.ReservedPorts = nil
	}
	if len(n.DynamicPorts) == 0 {
		n.DynamicPorts = nil
	}
	for i := range n.ReservedPorts {
		if n.ReservedPorts[i].HostNetwork == "" {
			n.ReservedPorts[i].HostNetwork = "default"
		}
	}
	for i := range n.DynamicPorts {
		if n.DynamicPorts[i].HostNetwork == "" {
			n.DynamicPorts[i].HostNetwork = "default"
		}
	}
}

func canonicalizeTask(tg *sdk.TaskGroup, t *sdk.Task) {
	if len(t.Meta) == 0 {
		t.Meta = nil
	}
	if len(t.Config) == 0 {
		t.Config = nil
	}
	if len(t.Env) == 0 {
		t.Env = nil
	}
	if t.Resources == nil {
		t.Resources = &sdk.Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB}
	}
	for _, n := range t.Resources.Networks {
		canonicalizeNetwork(n)
	}
	if t.RestartPolicy == nil && tg.RestartPolicy != nil {
		rp := *tg.RestartPolicy
		t.RestartPolicy = &rp
	}
	if t.KillTimeout == 0 {
		t.KillTimeout = DefaultKillTimeout
	}
	if t.LogConfig == nil {
		t.LogConfig = sdk.Opaque{"MaxFiles": int64(10), "MaxFileSizeMB": int64(10), "Disabled": false}
	}
}
