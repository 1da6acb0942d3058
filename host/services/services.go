// Package services is Nomad's native service discovery as Drover serves
// it: the registrations of the services with provider "nomad" of the
// running allocations, read from the state.
package services

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

// Nomad's native service discovery (service blocks with provider =
// "nomad"). Nomad's clients register a task's services when it starts and
// remove them when it stops, and its servers store the registrations.
// Drover's are read from what the servers know already: a service of an
// allocation is registered while its node reports it running and is not
// down, in the job version the allocation runs (an in-place update's
// tags too). So a registration is never left behind by a node that
// stopped reporting, and there is nothing to write or clean up; its
// indexes are its allocation's.

// ProviderNomad is the provider of the services Drover registers.
const ProviderNomad = "nomad"

// Registration is a registered service instance (Nomad's
// ServiceRegistration).
type Registration struct {
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	CreateIndex uint64
	ModifyIndex uint64
}

// All yields the service registrations of the running allocations of
// namespace ns ("*": every namespace), allocation by allocation.
func All(snap *state.Snapshot, ns string) iter.Seq[*Registration] {
	return func(yield func(*Registration) bool) {
		for a := range snap.EachAlloc() {
			if ns != "*" && a.Namespace != ns {
				continue
			}
			for _, r := range OfAlloc(snap, a) {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// OfAlloc are a's registrations: those of the
// services of its group and tasks with provider "nomad", while its node
// reports it running and is not down; none otherwise. Names and tags are
// interpolated as a Nomad client does (the task's environment, the node's
// attributes, and Nomad's ${JOB}, ${TASKGROUP}, ${TASK} and ${BASE}); a
// service's port label is resolved among the allocation's ports (a number
// is the port itself), its address is the port's host IP, else the
// service's address, else the node's IP address.
func OfAlloc(snap *state.Snapshot, a *sdk.Allocation) []*Registration {
	if a.ClientStatus != sdk.AllocClientStatusRunning || a.Job == nil {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || !hasNomadService(tg) {
		return nil
	}
	node := snap.Node(a.NodeID)
	if node == nil || node.Status == sdk.NodeStatusDown {
		return nil
	}
	var out []*Registration
	add := func(services []sdk.Opaque, task *sdk.Task, owner string) {
		in := &serviceEnv{alloc: a, node: node, group: tg, task: task}
		for _, svc := range services {
			if svc.Str("Provider") != ProviderNomad {
				continue
			}
			name := svc.Str("Name")
			if name == "" {
				name = "${JOB}-${TASKGROUP}"
				if task != nil {
					name += "-${TASK}"
				}
			}
			name = in.interpolate(name)
			tags := opaqueStrs(svc, "Tags")
			if canary := opaqueStrs(svc, "CanaryTags"); len(canary) > 0 && a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
				tags = canary
			}
			for i, t := range tags {
				tags[i] = in.interpolate(t)
			}
			label := svc.Str("PortLabel")
			ip, port := allocPort(a, task, label)
			address := cmp.Or(ip, in.interpolate(svc.Str("Address")), node.Attributes["unique.network.ip-address"])
			out = append(out, &Registration{
				ID:          fmt.Sprintf("_nomad-task-%s-%s-%s-%s", a.ID, owner, name, label),
				ServiceName: name, Namespace: a.Namespace, NodeID: a.NodeID, Datacenter: node.Datacenter,
				JobID: a.JobID, AllocID: a.ID, Tags: tags, Address: address, Port: port,
				CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex,
			})
		}
	}
	add(tg.Services, nil, "group-"+tg.Name)
	for _, t := range tg.Tasks {
		add(t.Services, t, t.Name)
	}
	return out
}

// hasNomadService reports whether tg or one of its tasks has a service
// with provider "nomad".
func hasNomadService(tg *sdk.TaskGroup) bool {
	nomad := func(svc sdk.Opaque) bool { return svc.Str("Provider") == ProviderNomad }
	if slices.ContainsFunc(tg.Services, nomad) {
		return true
	}
	for _, t := range tg.Tasks {
		if slices.ContainsFunc(t.Services, nomad) {
			return true
		}
	}
	return false
}

// allocPort resolves a service's port label: a port of the allocation's
// group network, else of the task's (older jobs'), else a number.
func allocPort(a *sdk.Allocation, task *sdk.Task, label string) (hostIP string, port int) {
	if label == "" {
		return "", 0
	}
	if res := a.AllocatedResources; res != nil {
		for _, p := range res.Shared.Ports {
			if p.Label == label {
				return p.HostIP, p.Value
			}
		}
		networks := res.Shared.Networks
		if task != nil && res.Tasks[task.Name] != nil {
			networks = append(slices.Clip(networks), res.Tasks[task.Name].Networks...)
		}
		for _, n := range networks {
			for _, p := range slices.Concat(n.ReservedPorts, n.DynamicPorts) {
				if p.Label == label {
					return n.IP, p.Value
				}
			}
		}
	}
	if n, err := strconv.Atoi(label); err == nil {
		return "", n
	}
	return "", 0
}

// serviceEnv is what a service's strings are interpolated with.
type serviceEnv struct {
	alloc *sdk.Allocation
	node  *sdk.Node
	group *sdk.TaskGroup
	task  *sdk.Task // nil for a group's service
}

var interpolation = regexp.MustCompile(`\$\{([^{}]+)\}`)

// interpolate replaces the ${...} s names with their values; what it does
// not know stays as written, as a Nomad client leaves it.
func (e *serviceEnv) interpolate(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return interpolation.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := e.lookup(m[2 : len(m)-1]); ok {
			return v
		}
		return m
	})
}

func (e *serviceEnv) lookup(key string) (string, bool) {
	a, job := e.alloc, e.alloc.Job
	taskName := ""
	if e.task != nil {
		taskName = e.task.Name
	}
	switch key {
	case "JOB", "NOMAD_JOB_NAME":
		return cmp.Or(job.Name, job.ID), true
	case "NOMAD_JOB_ID":
		return job.ID, true
	case "TASKGROUP", "NOMAD_GROUP_NAME":
		return e.group.Name, true
	case "TASK", "NOMAD_TASK_NAME":
		return taskName, e.task != nil
	case "BASE":
		base := cmp.Or(job.Name, job.ID) + "-" + e.group.Name
		if e.task != nil {
			base += "-" + taskName
		}
		return base, true
	case "NOMAD_ALLOC_ID":
		return a.ID, true
	case "NOMAD_SHORT_ALLOC_ID":
		return a.ID[:min(8, len(a.ID))], true
	case "NOMAD_ALLOC_NAME":
		return a.Name, true
	case "NOMAD_ALLOC_INDEX":
		return strconv.Itoa(a.Index()), true
	case "NOMAD_NAMESPACE":
		return a.Namespace, true
	case "NOMAD_DC":
		return e.node.Datacenter, true
	case "NOMAD_REGION":
		return cmp.Or(job.Region, "global"), true
	}
	if k, ok := strings.CutPrefix(key, "NOMAD_META_"); ok {
		// The task's meta, else the group's, else the job's: each by the
		// key as written, else by the key in another case (Nomad sets
		// NOMAD_META_key and NOMAD_META_KEY).
		levels := []map[string]string{e.group.Meta, job.Meta}
		if e.task != nil {
			levels = append([]map[string]string{e.task.Meta}, levels...)
		}
		for _, meta := range levels {
			if v, ok := meta[k]; ok {
				return v, true
			}
			for _, mk := range slices.Sorted(maps.Keys(meta)) {
				if strings.EqualFold(mk, k) {
					return meta[mk], true
				}
			}
		}
		return "", false
	}
	return feasible.ResolveTarget("${"+key+"}", e.node)
}

// opaqueStrs is the list of strings at key (a new slice).
func opaqueStrs(o sdk.Opaque, key string) []string {
	switch v := o[key].(type) {
	case []string:
		return slices.Clone(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
