// Command crash is a scheduler plugin that exits in the middle of an eval:
// a trap in wasm, a dead process as a go-plugin.
package main

import (
	"os"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "crash"}, sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error {
		os.Exit(7)
		return nil
	}))
}

func main() { plugin.Serve() }
