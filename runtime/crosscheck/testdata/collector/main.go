// Command collector serves the collector core scheduler.
package main

import (
	"github.com/drover-sched/drover/runtime/crosscheck/testdata/collector/collector"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "collector", Types: []string{"_core"}, MirrorEvals: true}, collector.Scheduler{})
}

func main() { plugin.Serve() }
