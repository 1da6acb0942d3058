package httpapi

import (
	"maps"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// LegacyResources is Nomad's Resources: the shape from before node and
// allocated resources, which Nomad 1.6 still serves on nodes (Resources,
// Reserved) and allocations (Resources, TaskResources) and its CLI still
// reads ('nomad node status' sums them, 'nomad alloc status' prints a
// task's). Drover keeps no such fields: they are worked out as answers are
// written.
type LegacyResources struct {
	CPU         int64
	Cores       int
	MemoryMB    int64
	MemoryMaxMB int64
	DiskMB      int64
	IOPS        int
	Networks    []*sdk.NetworkResource
}

// legacyNode is a node as Nomad's API answers it.
type legacyNode struct {
	*sdk.Node
	Resources, Reserved *LegacyResources
}

func withLegacyNode(n *sdk.Node) *legacyNode {
	out := &legacyNode{Node: n, Resources: &LegacyResources{}, Reserved: &LegacyResources{}}
	if r := n.NodeResources; r != nil {
		*out.Resources = LegacyResources{CPU: r.Cpu.CpuShares, Cores: int(r.Cpu.TotalCpuCores), MemoryMB: r.Memory.MemoryMB,
			DiskMB: r.Disk.DiskMB}
	}
	if r := n.ReservedResources; r != nil {
		*out.Reserved = LegacyResources{CPU: r.Cpu.CpuShares, Cores: len(r.Cpu.ReservedCores), MemoryMB: r.Memory.MemoryMB,
			DiskMB: r.Disk.DiskMB}
	}
	return out
}

// legacyAlloc is an allocation as Nomad's API answers it: Resources is
// what the whole allocation holds (its tasks' CPU, cores and memory, its
// disk and group networks), TaskResources each task's (with its disk left
// at 0, as Nomad's OldTaskResources leaves it).
type legacyAlloc struct {
	*sdk.Allocation
	Resources     *LegacyResources
	TaskResources map[string]*LegacyResources
}

func withLegacyAlloc(a *sdk.Allocation) *legacyAlloc {
	out := &legacyAlloc{Allocation: a, Resources: &LegacyResources{}, TaskResources: map[string]*LegacyResources{}}
	r := a.AllocatedResources
	if r == nil {
		return out
	}
	total := out.Resources
	for _, name := range slices.Sorted(maps.Keys(r.Tasks)) {
		t := r.Tasks[name]
		tr := &LegacyResources{CPU: t.Cpu.CpuShares, Cores: len(t.Cpu.ReservedCores), MemoryMB: t.Memory.MemoryMB,
			MemoryMaxMB: t.Memory.MemoryMaxMB, Networks: t.Networks}
		out.TaskResources[name] = tr
		total.CPU += tr.CPU
		total.Cores += tr.Cores
		total.MemoryMB += tr.MemoryMB
		total.MemoryMaxMB += max(tr.MemoryMaxMB, tr.MemoryMB)
		total.Networks = append(total.Networks, t.Networks...)
	}
	total.DiskMB = r.Shared.DiskMB
	total.Networks = append(total.Networks, r.Shared.Networks...)
	return out
}

func withLegacyAllocs(as []*sdk.Allocation) []*legacyAlloc {
	out := make([]*legacyAlloc, len(as))
	for i, a := range as {
		out[i] = withLegacyAlloc(a)
	}
	return out
}
