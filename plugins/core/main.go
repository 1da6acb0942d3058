// Command core is Drover's built-in core scheduler: garbage collection of
// evaluations, allocations, jobs, nodes and deployments.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers"
	"github.com/drover-sched/drover/sdk/schedulers/core"
)

func init() {
	schedulers.TuneGC()
	plugin.Register(plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}, Version: "0.2.0", MirrorEvals: true}, &core.Scheduler{})
}

func main() { plugin.Serve() }
