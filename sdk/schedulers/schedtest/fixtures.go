package schedtest

import (
	"fmt"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// Node returns a ready Linux node (4000 MHz, 8192 MB, 100 GiB disk, the
// exec and mock_driver drivers) in dc1 and the default pool.
func Node(id string) *sdk.Node {
	return &sdk.Node{
		ID: id, Name: id, Datacenter: "dc1", NodePool: sdk.DefaultNodePool, NodeClass: "linux-medium",
		Attributes: map[string]string{"kernel.name": "linux", "arch": "x86", "nomad.version": "1.6.1",
			"driver.exec": "1", "driver.mock_driver": "1", "unique.hostname": id},
		Meta: map[string]string{},
		Drivers: map[string]*sdk.DriverInfo{
			"exec": {Detected: true, Healthy: true}, "mock_driver": {Detected: true, Healthy: true},
		},
		NodeResources: &sdk.NodeResources{
			Cpu:    sdk.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: sdk.NodeMemoryResources{MemoryMB: 8192},
			Disk:   sdk.NodeDiskResources{DiskMB: 100 * 1024},
		},
		ReservedResources:     &sdk.NodeReservedResources{},
		Status:                sdk.NodeStatusReady,
		SchedulingEligibility: sdk.NodeSchedulingEligible,
	}
}

// Nodes returns n nodes named prefix-000, prefix-001, ...
func Nodes(prefix string, n int) []*sdk.Node {
	out := make([]*sdk.Node, n)
	for i := range out {
		out[i] = Node(fmt.Sprintf("%s-%03d", prefix, i))
	}
	return out
}

// ServiceJob returns a service job with one group "web" of count tasks
// (exec, 500 MHz, 256 MB), constrained to Linux, with a reschedule policy.
func ServiceJob(id string, count int) *sdk.Job {
	return &sdk.Job{
		Namespace: sdk.DefaultNamespace, ID: id, Name: id, Type: sdk.JobTypeService,
		Priority: sdk.JobDefaultPriority, Datacenters: []string{"dc1"}, NodePool: sdk.DefaultNodePool,
		Constraints: []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*sdk.TaskGroup{{
			Name: "web", Count: count, EphemeralDisk: &sdk.EphemeralDisk{SizeMB: 150},
			ReschedulePolicy: &sdk.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: sdk.DelayFunctionExponential,
				MaxDelay: time.Hour, Unlimited: true},
			Tasks: []*sdk.Task{{Name: "web", Driver: "exec", Config: sdk.Opaque{"command": "/bin/date"},
				Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}},
		}},
	}
}

// BatchJob returns a batch job with one group "worker" of count tasks
// (mock_driver, 500 MHz, 256 MB) that reschedules once within a day.
func BatchJob(id string, count int) *sdk.Job {
	j := ServiceJob(id, count)
	j.Type = sdk.JobTypeBatch
	tg := j.TaskGroups[0]
	tg.Name = "worker"
	tg.ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second,
		DelayFunction: sdk.DelayFunctionConstant}
	tg.Tasks[0].Name, tg.Tasks[0].Driver = "worker", "mock_driver"
	return j
}

// SystemJob returns a system job with one group "agent" (exec, 100 MHz,
// 128 MB) at priority 100.
func SystemJob(id string) *sdk.Job {
	j := ServiceJob(id, 1)
	j.Type = sdk.JobTypeSystem
	j.Priority = 100
	tg := j.TaskGroups[0]
	tg.Name = "agent"
	tg.ReschedulePolicy = nil
	tg.Tasks[0].Name = "agent"
	tg.Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 128}
	return j
}

// Alloc returns a running allocation of job's first group, index idx, on
// node.
func Alloc(job *sdk.Job, idx int, node string) *sdk.Allocation {
	tg := job.TaskGroups[0]
	res := &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{}}
	for _, t := range tg.Tasks {
		res.Tasks[t.Name] = &sdk.AllocatedTaskResources{Cpu: sdk.AllocatedCpuResources{CpuShares: int64(t.Resources.CPU)},
			Memory: sdk.AllocatedMemoryResources{MemoryMB: int64(t.Resources.MemoryMB)}}
	}
	if tg.EphemeralDisk != nil {
		res.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	return &sdk.Allocation{
		ID: fmt.Sprintf("%s-alloc-%03d", job.ID, idx), Namespace: job.Namespace, Name: sdk.AllocName(job.ID, tg.Name, idx),
		NodeID: node, JobID: job.ID, Job: job, TaskGroup: tg.Name, AllocatedResources: res,
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
	}
}
