package feasible

import "github.com/drover-sched/drover/sdk"

// AllocsFit reports whether allocs, all meant to run on node, fit on it
// together; if not it names the exhausted dimension ("cpu", "memory",
// "disk", "cores"). Terminal allocations hold nothing. Schedulers and the
// host's plan applier use this one function, so both judge fit alike.
func AllocsFit(node *sdk.Node, allocs []*sdk.Allocation) (bool, string) {
	var used sdk.Usage
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		used.Add(a.Usage())
	}
	return used.Fits(node.Capacity())
}
