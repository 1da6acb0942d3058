// Command panic is a scheduler plugin whose scheduler panics.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "panic"}, sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error {
		var m map[string]int
		m["boom"]++ // assignment to a nil map
		return nil
	}))
}

func main() { plugin.Serve() }
