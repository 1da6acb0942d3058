// Command empty is a scheduler plugin that only concludes its eval: it
// measures what a runtime costs per evaluation.
package main

import (
	"github.com/drover-sched/drover/runtime/crosscheck/testdata/empty/empty"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() { plugin.Register(plugin.Info{Name: "empty"}, empty.Scheduler{}) }

func main() { plugin.Serve() }
