// Command batch is Drover's built-in scheduler for batch jobs.
package main

import (
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
)

func init() {
	schedulers.TuneGC()
	plugin.Register(plugin.Info{Name: "batch", Types: []string{"batch"}, Version: "0.2.0"}, &generic.Scheduler{Batch: true})
}

func main() { plugin.Serve() }
