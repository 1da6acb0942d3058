package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"

	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// SDK returns the job as the server holds it: Nomad's API
// canonicalisation (which fills defaults by whether fields were set, merges
// the job's update, reschedule and migrate blocks into its groups, and
// gives each group its job type's restart and reschedule policies), the
// conversion Nomad's HTTP agent performs, then Canonicalize. j is not
// modified. A job that cannot be converted (a null group or task in a list,
// ...) is an error; nothing in j can make SDK panic.
func (j *Job) SDK() (*sdk.Job, error) {
	c, err := j.Canonicalized()
	if err != nil {
		return nil, err
	}
	out := convertJob(c)
	Canonicalize(out)
	return out, nil
}

// Canonicalized returns a copy of j with Nomad's API canonicalisation
// applied: what `/v1/jobs/parse` answers with Canonicalize set.
func (j *Job) Canonicalized() (out *Job, err error) {
	c, err := j.clone()
	if err != nil {
		return nil, err
	}
	if err := checkNoNil(reflect.ValueOf(&c.Job).Elem(), Path(nil)); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: the job cannot be canonicalized: %v", ErrInvalidJob, p)
		}
	}()
	keepSystemUpdates := c.systemUpdates()
	c.Job.Canonicalize()
	keepSystemUpdates()
	return c, nil
}

// clone deep-copies a job through its JSON form.
func (j *Job) clone() (*Job, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("jobspec: encode job: %w", err)
	}
	var c Job
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("jobspec: copy job: %w", err)
	}
	return &c, nil
}

// systemUpdates undoes, for system jobs, the default update block that
// recent versions of Nomad's API canonicalisation give them: a system job
// updates every node at once unless its jobspec has an update block, as in
// Nomad 1.6 and in the evaluation lifecycle Drover follows (rolling-update
// evals only for system jobs that ask for a stagger). Call it before
// Canonicalize and the function it returns after.
func (j *Job) systemUpdates() func() {
	if deref(j.Type) != api.JobTypeSystem {
		return func() {}
	}
	jobUnset := j.Update == nil
	unset := map[*api.TaskGroup]bool{}
	for _, tg := range j.TaskGroups {
		unset[tg] = tg.Update == nil
	}
	return func() {
		if !jobUnset {
			return
		}
		j.Update = nil
		for _, tg := range j.TaskGroups {
			if unset[tg] {
				tg.Update = nil
			}
		}
	}
}

// checkNoNil reports a nil element in a list of objects (a "null" in the
// JSON), which Nomad's canonicalisation cannot handle.
func checkNoNil(v reflect.Value, p Path) error {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return checkNoNil(v.Elem(), p)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				if err := checkNoNil(v.Field(i), p.Attr(t.Field(i).Name)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			if e.Kind() == reflect.Pointer && e.IsNil() {
				return &ValidationError{Problems: []*FieldError{{Path: p, Err: fmt.Errorf("element %d is null", i)}}}
			}
			if err := checkNoNil(e, p.Item("", i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.Pointer {
			return nil
		}
		for it := v.MapRange(); it.Next(); {
			if it.Value().IsNil() {
				return &ValidationError{Problems: []*FieldError{{Path: p, Err: fmt.Errorf("%q is null", it.Key())}}}
			}
			if err := checkNoNil(it.Value(), p.Attr(fmt.Sprint(it.Key()))); err != nil {
				return err
			}
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// convertJob converts a canonicalized API job, as Nomad's HTTP agent does:
// of the job's update block only stagger and max_parallel stay at the job
// level (the rest lives in the groups); the job's reschedule and migrate
// blocks live only in the groups.
func convertJob(j *Job) *sdk.Job {
	a := &j.Job
	out := &sdk.Job{
		Stop: deref(a.Stop), Region: deref(a.Region), Namespace: deref(a.Namespace), ID: deref(a.ID),
		Name: deref(a.Name), Type: deref(a.Type), Priority: deref(a.Priority), AllAtOnce: deref(a.AllAtOnce),
		Datacenters: a.Datacenters, NodePool: deref(a.NodePool), Payload: a.Payload, Meta: a.Meta,
		ConsulNamespace: deref(a.ConsulNamespace), VaultNamespace: deref(a.VaultNamespace),
		Constraints: constraints(a.Constraints), Affinities: affinities(a.Affinities), Spreads: spreads(a.Spreads),
		Multiregion: toOpaque(a.Multiregion), UI: toOpaque(a.UI), Scheduler: deref(j.Scheduler),
	}
	if u := a.Update; u != nil && deref(u.MaxParallel) > 0 {
		out.Update = sdk.UpdateStrategy{Stagger: deref(u.Stagger), MaxParallel: deref(u.MaxParallel)}
	}
	if p := a.Periodic; p != nil {
		out.Periodic = &sdk.PeriodicConfig{Enabled: deref(p.Enabled), Spec: deref(p.Spec), Specs: p.Specs,
			SpecType: deref(p.SpecType), ProhibitOverlap: deref(p.ProhibitOverlap), TimeZone: deref(p.TimeZone)}
	}
	if p := a.ParameterizedJob; p != nil {
		out.ParameterizedJob = &sdk.ParameterizedJobConfig{Payload: p.Payload, MetaRequired: p.MetaRequired,
			MetaOptional: p.MetaOptional}
	}
	for _, g := range a.TaskGroups {
		out.TaskGroups = append(out.TaskGroups, convertGroup(out, g))
	}
	return out
}

func convertGroup(job *sdk.Job, g *api.TaskGroup) *sdk.TaskGroup {
	tg := &sdk.TaskGroup{
		Name: deref(g.Name), Count: deref(g.Count), Meta: g.Meta,
		Constraints: constraints(g.Constraints), Affinities: affinities(g.Affinities), Spreads: spreads(g.Spreads),
		Networks: networks(g.Networks), Services: toOpaqueList(g.Services), Consul: toOpaque(g.Consul),
		ShutdownDelay: g.ShutdownDelay, MaxRunDuration: g.MaxRunDuration,
		StopAfterClientDisconnect: g.StopAfterClientDisconnect, MaxClientDisconnect: g.MaxClientDisconnect,
		PreventRescheduleOnLost: deref(g.PreventRescheduleOnLost),
		RestartPolicy:           restartPolicy(g.RestartPolicy),
	}
	if r := g.ReschedulePolicy; r != nil {
		tg.ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: deref(r.Attempts), Interval: deref(r.Interval),
			Delay: deref(r.Delay), DelayFunction: deref(r.DelayFunction), MaxDelay: deref(r.MaxDelay),
			Unlimited: deref(r.Unlimited)}
	}
	if m := g.Migrate; m != nil {
		tg.Migrate = &sdk.MigrateStrategy{MaxParallel: deref(m.MaxParallel), HealthCheck: deref(m.HealthCheck),
			MinHealthyTime: deref(m.MinHealthyTime), HealthyDeadline: deref(m.HealthyDeadline)}
	}
	if u := g.Update; u != nil {
		tg.Update = &sdk.UpdateStrategy{Stagger: deref(u.Stagger), MaxParallel: deref(u.MaxParallel),
			HealthCheck: deref(u.HealthCheck), MinHealthyTime: deref(u.MinHealthyTime),
			HealthyDeadline: deref(u.HealthyDeadline), ProgressDeadline: deref(u.ProgressDeadline),
			Canary: deref(u.Canary), AutoRevert: deref(u.AutoRevert), AutoPromote: deref(u.AutoPromote)}
	}
	if e := g.EphemeralDisk; e != nil {
		tg.EphemeralDisk = &sdk.EphemeralDisk{Sticky: deref(e.Sticky), SizeMB: deref(e.SizeMB), Migrate: deref(e.Migrate)}
	}
	if ds := g.Disconnect; ds != nil {
		tg.Disconnect = &sdk.DisconnectStrategy{LostAfter: deref(ds.LostAfter), StopOnClientAfter: ds.StopOnClientAfter,
			Replace: ds.Replace, Reconcile: deref(ds.Reconcile)}
	}
	if s := g.Scaling; s != nil {
		tg.Scaling = scalingPolicy(s, map[string]string{"Namespace": job.Namespace, "Job": job.ID, "Group": tg.Name})
	}
	if len(g.Volumes) > 0 {
		tg.Volumes = make(map[string]sdk.Opaque, len(g.Volumes))
		for name, v := range g.Volumes {
			tg.Volumes[name] = toOpaque(v)
		}
	}
	for _, t := range g.Tasks {
		tg.Tasks = append(tg.Tasks, convertTask(job, tg, t))
	}
	return tg
}

func convertTask(job *sdk.Job, tg *sdk.TaskGroup, t *api.Task) *sdk.Task {
	out := &sdk.Task{
		Name: t.Name, Driver: t.Driver, User: t.User, Leader: t.Leader, Config: normalizeOpaque(t.Config),
		Env: t.Env, Meta: t.Meta, KillTimeout: deref(t.KillTimeout), ShutdownDelay: t.ShutdownDelay,
		KillSignal: t.KillSignal, Kind: t.Kind,
		Constraints: constraints(t.Constraints), Affinities: affinities(t.Affinities),
		RestartPolicy: restartPolicy(t.RestartPolicy), Resources: resources(t.Resources),
		Services: toOpaqueList(t.Services), Vault: toOpaque(t.Vault), Consul: toOpaque(t.Consul),
		Templates: toOpaqueList(t.Templates), Artifacts: toOpaqueList(t.Artifacts), LogConfig: toOpaque(t.LogConfig),
		DispatchPayload: toOpaque(t.DispatchPayload), VolumeMounts: toOpaqueList(t.VolumeMounts),
		CSIPluginConfig: toOpaque(t.CSIPluginConfig), Identity: toOpaque(t.Identity),
		Identities: toOpaqueList(t.Identities), Actions: toOpaqueList(t.Actions), Schedule: toOpaque(t.Schedule),
		Secrets: toOpaqueList(t.Secrets),
	}
	if l := t.Lifecycle; l != nil {
		out.Lifecycle = &sdk.TaskLifecycle{Hook: l.Hook, Sidecar: l.Sidecar}
	}
	for _, sp := range t.ScalingPolicies {
		out.ScalingPolicies = append(out.ScalingPolicies, scalingPolicy(sp,
			map[string]string{"Namespace": job.Namespace, "Job": job.ID, "Group": tg.Name, "Task": t.Name}))
	}
	return out
}

// scalingPolicy converts a scaling block: enabled unless said otherwise,
// min the group's count, and max -1 (an error for validation) when unset.
func scalingPolicy(s *api.ScalingPolicy, target map[string]string) *sdk.ScalingPolicy {
	p := &sdk.ScalingPolicy{ID: s.ID, Type: s.Type, Target: target, Policy: normalizeOpaque(s.Policy),
		Enabled: true, Max: -1}
	if s.Enabled != nil {
		p.Enabled = *s.Enabled
	}
	if s.Max != nil {
		p.Max = *s.Max
	}
	if s.Min != nil {
		p.Min = *s.Min
	}
	return p
}

func restartPolicy(r *api.RestartPolicy) *sdk.RestartPolicy {
	if r == nil {
		return nil
	}
	return &sdk.RestartPolicy{Attempts: deref(r.Attempts), Interval: deref(r.Interval), Delay: deref(r.Delay),
		Mode: deref(r.Mode), RenderTemplates: deref(r.RenderTemplates)}
}

func resources(r *api.Resources) *sdk.Resources {
	if r == nil {
		return nil
	}
	out := &sdk.Resources{CPU: deref(r.CPU), Cores: deref(r.Cores), MemoryMB: deref(r.MemoryMB),
		MemoryMaxMB: deref(r.MemoryMaxMB), DiskMB: deref(r.DiskMB), IOPS: deref(r.IOPS), SecretsMB: deref(r.SecretsMB),
		Networks: networks(r.Networks)}
	for _, d := range r.Devices {
		out.Devices = append(out.Devices, &sdk.RequestedDevice{Name: d.Name, Count: deref(d.Count),
			Constraints: constraints(d.Constraints), Affinities: affinities(d.Affinities)})
	}
	if n := r.NUMA; n != nil {
		out.NUMA = &sdk.NUMAResource{Affinity: n.Affinity, Devices: n.Devices}
	}
	return out
}

func networks(ns []*api.NetworkResource) []*sdk.NetworkResource {
	var out []*sdk.NetworkResource
	for _, n := range ns {
		sn := &sdk.NetworkResource{Mode: n.Mode, Device: n.Device, CIDR: n.CIDR, IP: n.IP, Hostname: n.Hostname,
			MBits: deref(n.MBits), DNS: toOpaque(n.DNS), CNI: toOpaque(n.CNI)}
		for _, p := range n.ReservedPorts {
			sn.ReservedPorts = append(sn.ReservedPorts, port(p))
		}
		for _, p := range n.DynamicPorts {
			sn.DynamicPorts = append(sn.DynamicPorts, port(p))
		}
		out = append(out, sn)
	}
	return out
}

func port(p api.Port) sdk.Port {
	return sdk.Port{Label: p.Label, Value: p.Value, To: p.To, HostNetwork: p.HostNetwork, IgnoreCollision: p.IgnoreCollision}
}

func constraints(cs []*api.Constraint) []*sdk.Constraint {
	var out []*sdk.Constraint
	for _, c := range cs {
		out = append(out, &sdk.Constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand})
	}
	return out
}

func affinities(as []*api.Affinity) []*sdk.Affinity {
	var out []*sdk.Affinity
	for _, a := range as {
		out = append(out, &sdk.Affinity{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand, Weight: deref(a.Weight)})
	}
	return out
}

func spreads(ss []*api.Spread) []*sdk.Spread {
	var out []*sdk.Spread
	for _, s := range ss {
		sp := &sdk.Spread{Attribute: s.Attribute, Weight: deref(s.Weight)}
		for _, t := range s.SpreadTarget {
			sp.SpreadTarget = append(sp.SpreadTarget, &sdk.SpreadTarget{Value: t.Value, Percent: t.Percent})
		}
		out = append(out, sp)
	}
	return out
}

// toOpaque keeps a block Drover does not interpret as a map in Nomad's API
// JSON form (the field names Nomad's clients read back). A nil pointer is
// nil.
func toOpaque(v any) sdk.Opaque {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Map) && rv.IsNil() {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return normalizeOpaque(m)
}

func toOpaqueList[T any](vs []T) []sdk.Opaque {
	var out []sdk.Opaque
	for _, v := range vs {
		out = append(out, toOpaque(v))
	}
	return out
}

// normalizeOpaque makes the numbers of a free-form map plain: whole numbers
// become int64, others float64, however they were decoded.
func normalizeOpaque(m map[string]any) sdk.Opaque {
	if m == nil {
		return nil
	}
	out := make(sdk.Opaque, len(m))
	for k, v := range m {
		out[k] = normalizeValue(v)
	}
	return out
}

func normalizeValue(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
		return t
	case int:
		return int64(t)
	case map[string]any:
		return map[string]any(normalizeOpaque(t))
	case []map[string]any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = map[string]any(normalizeOpaque(e))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalizeValue(e)
		}
		return out
	}
	return v
}
