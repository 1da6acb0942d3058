// Command service is Drover's built-in scheduler for service jobs,
// built with the SDK like any third-party plugin.
package main

import (
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
)

func init() {
	schedulers.TuneGC()
	plugin.Register(plugin.Info{Name: "service", Types: []string{"service"}, Version: "0.2.0"}, &generic.Scheduler{})
}

func main() { plugin.Serve() }
