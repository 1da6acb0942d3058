package sdktest

import "github.com/drover-sched/drover/sdk"

// Node returns a ready, eligible Linux node in datacenter dc1 with the
// docker and raw_exec drivers, cpu MHz and mem MB.
func Node(id string, cpu, mem int64) *sdk.Node {
	return &sdk.Node{
		ID: id, Name: id, Datacenter: "dc1", NodePool: "default",
		Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible,
		Attributes: map[string]string{"kernel.name": "linux", "driver.docker": "1", "driver.raw_exec": "1"},
		Meta:       map[string]string{},
		NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: cpu},
			Memory: sdk.NodeMemoryResources{MemoryMB: mem}, Disk: sdk.NodeDiskResources{DiskMB: 100_000}},
	}
}

// Job returns a service job in dc1 with one group "web" of count docker
// tasks, each 500 MHz and 256 MB.
func Job(id string, count int) *sdk.Job {
	return &sdk.Job{Namespace: "default", ID: id, Name: id, Type: sdk.JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"},
		TaskGroups: []*sdk.TaskGroup{{Name: "web", Count: count, Tasks: []*sdk.Task{{Name: "app", Driver: "docker",
			Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}}}
}
