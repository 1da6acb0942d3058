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
// affinities' weights aside, update and reschedule policies, meta outside
// tasks) is applied in place.
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
	case !reflect.DeepEqual(affinities(a, ga), affinities(b, gb)):
		return true, "affinities"
	case !reflect.DeepEqual(spreads(a, ga), spreads(b, gb)):
		return true, "spreads"
	case !reflect.DeepEqual(ga.Volumes, gb.Volumes):
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
		case !reflect.DeepEqual(ta.Config, tb.Config):
			return true, "task config"
		case !maps.Equal(ta.Env, tb.Env):
			return true, "task env"
		case !reflect.DeepEqual(ta.Artifacts, tb.Artifacts):
			return true, "task artifacts"
		case !reflect.DeepEqual(ta.Vault, tb.Vault):
			return true, "task vault"
		case !reflect.DeepEqual(ta.Templates, tb.Templates):
			return true, "task templates"
		case !reflect.DeepEqual(ta.VolumeMounts, tb.VolumeMounts):
			return true, "task volume mount"
		case !maps.Equal(taskMeta(a, ga, ta), taskMeta(b, gb, tb)):
			return true, "task meta"
		case !resourcesEqual(ta.Resources, tb.Resources):
			return true, "task resources"
		case !reflect.DeepEqual(ta.Identity, tb.Identity):
			return true, "task identity"
		}
	}
	return false, ""
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
		return x.Mode == y.Mode && x.MBits == y.MBits && slices.Equal(x.ReservedPorts, y.ReservedPorts) &&
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
		networksEqual(a.Networks, b.Networks) && reflect.DeepEqual(a.Devices, b.Devices)
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
