// Command sandbox is a plugin that reports what of its host it can see:
// its environment, the clock (wazero's fake one reads 2022-01-01), the
// file system.
package main

import (
	"os"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "sandbox"}, sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		_, fsErr := os.ReadFile("/etc/hostname")
		ctx.Logger.Info("sandbox", "env", len(os.Environ()), "greeting", os.Getenv("GREETING"),
			"recent_clock", time.Now().After(time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)), "fs_error", fsErr != nil)
		done := eval.Copy()
		done.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(done)
	}))
}

func main() { plugin.Serve() }
