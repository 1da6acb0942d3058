package stack

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/reconcile"
)

// UpdateFunc returns the rule by which an existing allocation follows a new
// version of the stack's job (reconcile.Input.Update), as Nomad's generic
// scheduler decides it and Drover's does:
//
//   - an allocation already on that version, or terminal, is left alone;
//   - one whose tasks changed (reconcile.TasksUpdated), whose job version is
//     unknown, whose node left the job's datacenters or node pool, or that
//     would no longer be feasible or fit on its own node (probed with
//     SelectOn, the allocation itself stopped in the plan) is replaced;
//   - any other is updated in place: the new version, evalID, fresh
//     resources with the ports, devices and reserved cores it already
//     holds, and no metrics (it keeps its placement's).
//
// Without it the reconciler replaces every allocation of a job whose
// version changed, even when only its count did (a scaling).
func (s *Stack) UpdateFunc(evalID string) reconcile.UpdateFunc {
	return func(existing *sdk.Allocation, job *sdk.Job, tg *sdk.TaskGroup) (bool, bool, *sdk.Allocation) {
		if existing.Job != nil && existing.Job.JobModifyIndex == job.JobModifyIndex {
			return true, false, nil
		}
		if existing.Job == nil {
			return false, true, nil
		}
		if changed, _ := reconcile.TasksUpdated(job, existing.Job, tg.Name); changed {
			return false, true, nil
		}
		if existing.TerminalStatus() {
			return true, false, nil
		}
		node := s.plan.State().Node(existing.NodeID)
		if node == nil || !feasible.DatacenterMatches(job.Datacenters, node.Datacenter) || !feasible.PoolMatches(job.NodePool, node.NodePool) {
			return false, true, nil
		}
		s.plan.Stop(existing, reconcile.AllocInPlace, "", "")
		option, _ := s.SelectOn(node, tg, Options{AllocName: existing.Name})
		s.plan.PopStop(existing)
		if option == nil {
			return false, true, nil
		}
		updated := *existing
		updated.Job = nil
		// No metrics: the allocation keeps those of its placement (the host
		// keeps the stored ones of an update without), as Nomad's generic
		// scheduler copies them. A probe of the allocation's own node would
		// replace the explanation of why it went there with a one-node one.
		updated.Metrics = nil
		updated.EvalID = evalID
		updated.JobVersion, updated.JobModifyIndex = job.Version, job.JobModifyIndex
		updated.AllocatedResources = KeepAssigned(option.Resources, existing.AllocatedResources)
		return false, false, &updated
	}
}

// KeepAssigned returns fresh resources (an option's, for an allocation
// updated in place on its own node) with the ports, devices and reserved
// cores the existing allocation was given, as Nomad's in-place update
// keeps them: the running tasks hold them, and an update never moves them.
func KeepAssigned(fresh, old *sdk.AllocatedResources) *sdk.AllocatedResources {
	if old == nil {
		return fresh
	}
	r := &sdk.AllocatedResources{Tasks: make(map[string]*sdk.AllocatedTaskResources, len(fresh.Tasks)),
		TaskLifecycles: fresh.TaskLifecycles, Shared: old.Shared}
	r.Shared.DiskMB = fresh.Shared.DiskMB
	for name, t := range fresh.Tasks {
		c := *t
		if ot, ok := old.Tasks[name]; ok {
			c.Networks = ot.Networks
			c.Devices = ot.Devices
			if len(ot.Cpu.ReservedCores) > 0 {
				c.Cpu = ot.Cpu
			}
		}
		r.Tasks[name] = &c
	}
	return r
}
