package plugin

import "github.com/drover-sched/drover/sdk"

// registered is the process's one scheduler. A plugin process (a wasm
// instance or a go-plugin binary) serves exactly one, and the wasm exports
// have no other way to find it; this is the only package-level state.
var registered *Guest

// Register makes s the scheduler this plugin serves. Call it once, from init.
func Register(info Info, s sdk.Scheduler) {
	if registered != nil {
		panic("plugin: Register called twice (a plugin serves one scheduler)")
	}
	if info.Name == "" {
		panic("plugin: Register needs a name")
	}
	registered = NewGuest(info, s)
}
