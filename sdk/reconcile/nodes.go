package reconcile

import "github.com/drover-sched/drover/sdk"

// NodeReader is the part of sdk.State TaintedNodes reads.
type NodeReader interface {
	Node(id string) *sdk.Node
}

// TaintedNodes returns the nodes of allocs that are down, disconnected or
// draining, and nil for nodes that no longer exist.
func TaintedNodes(state NodeReader, allocs []*sdk.Allocation) map[string]*sdk.Node {
	out := map[string]*sdk.Node{}
	seen := map[string]bool{}
	for _, a := range allocs {
		if seen[a.NodeID] {
			continue
		}
		seen[a.NodeID] = true
		n := state.Node(a.NodeID)
		switch {
		case n == nil:
			out[a.NodeID] = nil
		case n.Status == sdk.NodeStatusDown, n.Status == sdk.NodeStatusDisconnected, n.DrainStrategy != nil:
			out[a.NodeID] = n
		}
	}
	return out
}

// StillRunningOnDownNodes returns the allocations the server already
// stopped but whose node went down before reporting them finished: they
// are to be marked lost.
func StillRunningOnDownNodes(tainted map[string]*sdk.Node, allocs []*sdk.Allocation) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, a := range allocs {
		n, ok := tainted[a.NodeID]
		if !ok || (n != nil && n.Status != sdk.NodeStatusDown) {
			continue
		}
		stopped := a.DesiredStatus == sdk.AllocDesiredStatusStop || a.DesiredStatus == sdk.AllocDesiredStatusEvict
		if stopped && (a.ClientStatus == sdk.AllocClientStatusRunning || a.ClientStatus == sdk.AllocClientStatusPending) {
			out = append(out, a)
		}
	}
	return out
}
