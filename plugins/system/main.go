// Command system is Drover's built-in scheduler for system and sysbatch
// jobs, built with the SDK like any third-party plugin.
package main

import (
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers"
	"github.com/drover-sched/drover/sdk/schedulers/system"
)

func init() {
	schedulers.TuneGC()
	plugin.Register(plugin.Info{Name: "system", Types: []string{"system", "sysbatch"}, Version: "0.2.0"}, &system.Scheduler{})
}

func main() { plugin.Serve() }
