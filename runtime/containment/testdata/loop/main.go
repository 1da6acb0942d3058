// Command loop is a scheduler plugin that never returns.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

var sink int

func init() {
	plugin.Register(plugin.Info{Name: "loop"}, sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error {
		for i := 0; ; i++ {
			sink += i
		}
	}))
}

func main() { plugin.Serve() }
