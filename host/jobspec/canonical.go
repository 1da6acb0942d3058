package jobspec

import (
	"errors"
	"fmt"
	"strings"

	"github.com/drover-sched/drover/sdk"
)

// Canonicalize fills in the defaults Nomad applies to a submitted job.
func Canonicalize(j *sdk.Job) {
	if j.Namespace == "" {
		j.Namespace = sdk.DefaultNamespace
	}
	if j.Region == "" {
		j.Region = "global"
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
	for _, tg := range j.TaskGroups {
		if tg.EphemeralDisk == nil {
			tg.EphemeralDisk = &sdk.EphemeralDisk{SizeMB: 300}
		}
		for _, t := range tg.Tasks {
			if t.Resources == nil {
				t.Resources = &sdk.Resources{}
			}
			if t.Resources.CPU == 0 && t.Resources.Cores == 0 {
				t.Resources.CPU = 100
			}
			if t.Resources.MemoryMB == 0 {
				t.Resources.MemoryMB = 300
			}
		}
	}
}

// Validate checks a canonicalized job and returns every problem found.
func Validate(j *sdk.Job) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if j.ID == "" {
		add("job ID is required")
	} else if strings.ContainsAny(j.ID, " \t\n/") {
		add("job ID %q must not contain spaces or slashes", j.ID)
	}
	switch j.Type {
	case sdk.JobTypeService, sdk.JobTypeBatch, sdk.JobTypeSystem, sdk.JobTypeSysBatch:
	default:
		add("job type %q is not one of service, batch, system, sysbatch", j.Type)
	}
	if j.Priority < sdk.JobMinPriority || j.Priority > sdk.JobMaxPriority {
		add("job priority must be between %d and %d, got %d", sdk.JobMinPriority, sdk.JobMaxPriority, j.Priority)
	}
	if len(j.TaskGroups) == 0 {
		add("job %q has no task groups", j.ID)
	}
	seen := map[string]bool{}
	for i, tg := range j.TaskGroups {
		name := tg.Name
		if name == "" {
			add("task group %d has no name", i+1)
		} else if seen[name] {
			add("task group %q is defined twice", name)
		}
		seen[name] = true
		if tg.Count < 0 {
			add("task group %q: count must not be negative, got %d", name, tg.Count)
		}
		if len(tg.Tasks) == 0 {
			add("task group %q has no tasks", name)
		}
		tasks := map[string]bool{}
		for _, t := range tg.Tasks {
			if t.Name == "" {
				add("task group %q: a task has no name", name)
			} else if tasks[t.Name] {
				add("task group %q: task %q is defined twice", name, t.Name)
			}
			tasks[t.Name] = true
			if t.Driver == "" {
				add("task group %q: task %q: missing driver", name, t.Name)
			}
			if r := t.Resources; r != nil {
				if r.CPU < 0 || r.MemoryMB < 0 || r.DiskMB < 0 || r.Cores < 0 {
					add("task group %q: task %q: resources must not be negative", name, t.Name)
				}
			}
		}
	}
	return errors.Join(errs...)
}
