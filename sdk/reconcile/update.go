package reconcile

import (
	"maps"
	"reflect"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// TasksUpdated reports whether task group tg changed between job versions
// a and b in a way that needs its allocations replaced (a destructive
// update), and names the change. Everything else (count, constraints,
// update and reschedule policies, services outside Connect, log rotation,
// meta outside tasks) is applied in place.
func TasksUpdated(a, b *sdk.Job, tg string) (bool, string) {
	ga, gb := a.LookupTaskGroup(tg), b.LookupTaskGroup(tg)
	if ga == nil || gb == nil {
		return true, "task group"
	}
	switch {
	case len(ga.Tasks) != len(gb.Tasks):
		return true, "number of tasks"
	case !equalDisk(ga.EphemeralDisk, gb.EphemeralDisk):
		return true, "ephemeral disk"
	case !networksEqual(ga.Networks, gb.Networks):
		return true, "network"
	case !same(affinities(a, ga), affinities(b, gb)):
		return true, "affinities"
	case !same(spreads(a, ga), spreads(b, gb)):
		return true, "spreads"
	case consulNamespace(a, ga) != consulNamespace(b, gb):
		return true, "consul namespace"
	}
	if why := connectServicesUpdated(ga.Services, gb.Services); why != "" {
		return true, why
	}
	if !same(ga.Volumes, gb.Volumes) {
		return true, "volume request"
	}
	for _, ta := range ga.Tasks {
		tb := gb.LookupTask(ta.Name)
		switch {
		case tb == nil:
			return true, "task deleted"
		case ta.Driver != tb.Driver:
			return true, "task driver"
		case ta.User != tb.User:
			return true, "task user"
		case !ta.Lifecycle.Equal(tb.Lifecycle):
			// Nomad v1.6.1 updates it in place, where a running task
			// cannot change when it runs, and the allocation would keep
			// counting its resources by the old lifecycle.
			return true, "task lifecycle"
		case !same(ta.Config, tb.Config):
			return true, "task config"
		case !maps.Equal(ta.Env, tb.Env):
			return true, "task env"
		case !same(ta.Artifacts, tb.Artifacts):
			return true, "task artifacts"
		case !same(ta.Vault, tb.Vault):
			return true, "task vault"
		case !same(ta.Templates, tb.Templates):
			return true, "task templates"
		case !same(ta.CSIPluginConfig, tb.CSIPluginConfig):
			return true, "task csi config"
		case !same(ta.VolumeMounts, tb.VolumeMounts):
			return true, "task volume mount"
		case !maps.Equal(taskMeta(a, ga, ta), taskMeta(b, gb, tb)):
			return true, "task meta"
		case !resourcesEqual(ta.Resources, tb.Resources):
			return true, "task resources"
		case !same(ta.Identity, tb.Identity):
			return true, "task identity"
		case logsDisabled(ta) != logsDisabled(tb):
			// The task must restart to start or stop collecting its
			// output; the rest of log_config is applied in place.
			return true, "task log disabled"
		}
	}
	return false, ""
}

// consulNamespace is the Consul namespace a group's services and tokens
// live in: its consul block's, or else the job's (which Nomad pushes down
// to the groups that name none). Moving there needs new allocations.
func consulNamespace(j *sdk.Job, tg *sdk.TaskGroup) string {
	if ns, ok := tg.Consul["Namespace"].(string); ok && ns != "" {
		return ns
	}
	return j.ConsulNamespace
}

// same is reflect.DeepEqual, except that a nil and an empty map or slice
// are the same: copying a job (Job.Copy, as a new version that only scales
// it) or decoding it turns one into the other.
func same(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == vb.Kind() && (va.Kind() == reflect.Map || va.Kind() == reflect.Slice) && va.Len() == 0 && vb.Len() == 0 {
		return va.Type() == vb.Type()
	}
	return reflect.DeepEqual(a, b)
}

func equalDisk(a, b *sdk.EphemeralDisk) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func networksEqual(a, b []*sdk.NetworkResource) bool {
	return slices.EqualFunc(a, b, func(x, y *sdk.NetworkResource) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.Mode == y.Mode && x.MBits == y.MBits && x.Hostname == y.Hostname && reflect.DeepEqual(x.DNS, y.DNS) &&
			slices.Equal(x.ReservedPorts, y.ReservedPorts) &&
			slices.EqualFunc(x.DynamicPorts, y.DynamicPorts, func(p, q sdk.Port) bool {
				return p.Label == q.Label && p.To == q.To && p.HostNetwork == q.HostNetwork
			})
	})
}

func resourcesEqual(a, b *sdk.Resources) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.CPU == b.CPU && a.Cores == b.Cores && a.MemoryMB == b.MemoryMB && a.MemoryMaxMB == b.MemoryMaxMB &&
		networksEqual(a.Networks, b.Networks) && sameMembers(a.Devices, b.Devices, devicesEqual)
}

// devicesEqual compares two device requests as Nomad does: their
// constraints and affinities in any order.
func devicesEqual(x, y *sdk.RequestedDevice) bool {
	if x == nil || y == nil {
		return x == y
	}
	return x.Name == y.Name && x.Count == y.Count &&
		sameMembers(x.Constraints, y.Constraints, func(a, b *sdk.Constraint) bool { return reflect.DeepEqual(a, b) }) &&
		sameMembers(x.Affinities, y.Affinities, func(a, b *sdk.Affinity) bool { return reflect.DeepEqual(a, b) })
}

// sameMembers reports whether a and b hold the same elements, each as
// often, in any order (nil and empty alike), eq being an equivalence.
func sameMembers[T any](a, b []T, eq func(T, T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	taken := make([]bool, len(b))
next:
	for _, x := range a {
		for j, y := range b {
			if !taken[j] && eq(x, y) {
				taken[j] = true
				continue next
			}
		}
		return false
	}
	return true
}

func affinities(j *sdk.Job, tg *sdk.TaskGroup) []*sdk.Affinity {
	out := slices.Clone(j.Affinities)
	out = append(out, tg.Affinities...)
	for _, t := range tg.Tasks {
		out = append(out, t.Affinities...)
	}
	return out
}

func spreads(j *sdk.Job, tg *sdk.TaskGroup) []*sdk.Spread {
	return append(slices.Clone(j.Spreads), tg.Spreads...)
}

// taskMeta is the meta a task sees: the job's, overridden by the group's,
// overridden by the task's.
func taskMeta(j *sdk.Job, tg *sdk.TaskGroup, t *sdk.Task) map[string]string {
	out := map[string]string{}
	maps.Copy(out, j.Meta)
	maps.Copy(out, tg.Meta)
	maps.Copy(out, t.Meta)
	return out
}

// logsDisabled reports whether the task's log_config turns log collection
// off.
func logsDisabled(t *sdk.Task) bool {
	d, _ := t.LogConfig["Disabled"].(bool)
	return d
}

// connectServicesUpdated names the change from services b to a (a group's,
// new then old, as TasksUpdated takes its jobs) that needs new allocations,
// or returns "": a service of a with a Connect block whose namesake in b
// has none, or a different native, gateway or sidecar task, a sidecar
// service added, removed or moved to another port, or another port label
// (the Connect plumbing derives from it). Services without Connect, and the
// sidecar's tags and proxy, are updated in place through the service
// registration. Removing Connect replaces the allocations through the
// sidecar task it removes.
func connectServicesUpdated(a, b []sdk.Opaque) string {
	for _, sa := range a {
		ca := asMap(sa["Connect"])
		if ca == nil {
			continue
		}
		for _, sb := range b {
			if sb["Name"] != sa["Name"] {
				continue
			}
			cb := asMap(sb["Connect"])
			switch {
			case cb == nil:
				return "connect added"
			case !reflect.DeepEqual(ca["Native"], cb["Native"]):
				return "connect native"
			case !reflect.DeepEqual(ca["Gateway"], cb["Gateway"]):
				return "connect gateway"
			case !reflect.DeepEqual(ca["SidecarTask"], cb["SidecarTask"]):
				return "connect sidecar task"
			}
			ssa := asMap(ca["SidecarService"])
			ssb := asMap(cb["SidecarService"])
			switch {
			case ssa == nil && ssb != nil:
				return "connect sidecar service removed"
			case ssa != nil && ssb == nil:
				return "connect sidecar service added"
			case ssa != nil && !reflect.DeepEqual(ssa["Port"], ssb["Port"]):
				return "connect port"
			case !reflect.DeepEqual(sa["PortLabel"], sb["PortLabel"]):
				return "connect service port label"
			}
			break
		}
	}
	return ""
}

// asMap returns a nested block of an opaque value, or nil.
func asMap(v any) map[string]any {
	switch m := v.(type) {
	case map[string]any:
		return m
	case sdk.Opaque:
		return m
	}
	return nil
}
