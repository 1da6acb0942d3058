package plugin

import (
	"runtime"
	"runtime/metrics"
)

// A plugin collects its garbage between evals, once an eval's answer is
// with the host, so that the next eval seldom stops for a collection: as
// wasm from drover_idle (ABI 1.5), where the collector otherwise stalls;
// as go-plugin after writing each answer on the eval socket (ABI 1.6),
// where it would otherwise run during evals, beside the host's commit of
// the plan. Paired with and without, go-plugin placed 0.95 to 1.20 times
// as many allocations per second on the seven benchmark scenarios at 1,000
// nodes, and 0.99 to 1.54 times at 5,000 (docs/benchmarks.md, "seventeenth
// session").

// gcSamples are read after every eval: the heap that survived the last
// collection, and what the heap holds now, garbage included.
var gcSamples = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}

// gcSlack is garbage always tolerated, so that a small heap is not
// collected after every call. At 4 MiB a 1,000-placement eval over a
// 1,000-node mirror ended with a collection every time, which took about
// as long as the scheduling (bench/perf.go); at 8 MiB one comes every
// fifth such eval, for 4 MiB more memory. At 16 MiB a long-lived wasm
// instance kept growing (TestInstance_MemoryStaysBoundedOverManyEvals).
const gcSlack = 8 << 20

// housekeep is a plugin's work between evals, whichever transport
// brings them: the guest's own (Guest.Idle), then a collection if one is
// due. g may be nil (nothing registered).
func housekeep(g *Guest) {
	if g != nil {
		g.Idle()
	}
	collectIfDue()
}

// collectIfDue runs a collection once it is due.
func collectIfDue() {
	metrics.Read(gcSamples)
	if gcDue(gcSamples[0].Value.Uint64(), gcSamples[1].Value.Uint64()) {
		runtime.GC()
	}
}

// gcDue says whether a heap of heap bytes, of which live survived the last
// collection, is due one: once the garbage since outweighs the live heap
// (what GOGC=100 does), plus gcSlack. With a large state mirror that is
// far rarer, and cheaper overall, than collecting every N calls.
func gcDue(live, heap uint64) bool {
	return heap > 2*live+gcSlack
}
