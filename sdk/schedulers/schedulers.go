// Package schedulers holds Drover's built-in schedulers, each in its own
// package and each built only from the SDK's building blocks:
//
//   - generic: service and batch jobs;
//   - system: system and sysbatch jobs;
//   - core: garbage collection.
//
// plugins/* are their thin main packages. This package holds what those
// mains share.
package schedulers

import "runtime/debug"

// Guest garbage-collector settings for the built-in plugins: see TuneGC.
const (
	GCPercent   = 400
	MemoryLimit = 768 << 20
)

// TuneGC sets the garbage collector of a plugin process for a scheduler's
// allocation pattern: a large, long-lived state mirror and a burst of
// short-lived objects per evaluation. Go's default (collect when the heap
// doubles) makes a wasm guest collect several times per large evaluation,
// scanning the whole mirror each time, on one thread; measured on the
// system-1 benchmark at 1,000 nodes, collections were most of the guest's
// time. Collecting at five times the live heap, with a soft memory limit
// well under the host's page limit (1 GiB by default) to collect sooner if
// the mirror is large, removes most of them.
func TuneGC() {
	debug.SetGCPercent(GCPercent)
	debug.SetMemoryLimit(MemoryLimit)
}
