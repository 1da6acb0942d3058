// Command alloc is a scheduler plugin that allocates without bound.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

var hoard [][]byte

func init() {
	plugin.Register(plugin.Info{Name: "alloc"}, sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error {
		for {
			b := make([]byte, 1<<20)
			b[len(b)-1] = 1
			hoard = append(hoard, b)
		}
	}))
}

func main() { plugin.Serve() }
