package feasible

import (
	"github.com/drover-sched/drover/sdk"
)

// ReservableCores returns the cores of node that allocations may reserve:
// its reservable cores (or 0..TotalCpuCores-1 when it lists none), less the
// cores the node keeps for itself.
func ReservableCores(n *sdk.Node) []uint16 {
	var out []uint16
	n.EachReservableCore(func(c uint16) { out = append(out, c) })
	return out
}

// SharesPerCore is the CPU (MHz) one core of the node is worth: a task that
// reserves cores is charged this much CPU per core.
func SharesPerCore(n *sdk.Node) int64 {
	if n.NodeResources == nil || n.NodeResources.Cpu.TotalCpuCores == 0 {
		return 0
	}
	return n.NodeResources.Cpu.CpuShares / int64(n.NodeResources.Cpu.TotalCpuCores)
}

// UsedCores returns the cores the allocations hold (all but those their
// node reports finished).
func UsedCores(allocs []*sdk.Allocation) map[uint16]bool {
	used := map[uint16]bool{}
	for _, a := range allocs {
		if a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			for _, c := range t.Cpu.ReservedCores {
				used[c] = true
			}
		}
	}
	return used
}

// AssignCores picks n free reservable cores of node, lowest first, marks
// them used and returns them; nil when fewer than n are free.
func AssignCores(node *sdk.Node, used map[uint16]bool, n int) []uint16 {
	var out []uint16
	for _, c := range ReservableCores(node) {
		if len(out) == n {
			break
		}
		if !used[c] {
			out = append(out, c)
		}
	}
	if len(out) < n {
		return nil
	}
	for _, c := range out {
		used[c] = true
	}
	return out
}
