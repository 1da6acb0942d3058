// Command configcheck is a scheduler plugin whose configuration check
// (ABI 1.7) does what its configuration says: it takes the key "check",
// which is "accept" (or absent) to accept, or "panic", "loop", "alloc" or
// "exit" to misbehave that way; it refuses any other key or value. Its
// evals complete without placing anything.
package main

import (
	"fmt"
	"os"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

var (
	sink  int
	hoard [][]byte
)

type scheduler struct{}

func (scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	e := eval.Copy()
	e.Status = sdk.EvalStatusComplete
	return ctx.Planner.UpdateEval(e)
}

func (scheduler) CheckConfig(config map[string]string) error {
	if err := sdk.CheckConfigKeys(config, "check"); err != nil {
		return err
	}
	switch v := config["check"]; v {
	case "", "accept":
		return nil
	case "panic":
		var m map[string]int
		m["boom"]++ // assignment to a nil map
	case "loop":
		for i := 0; ; i++ {
			sink += i
		}
	case "alloc":
		for {
			b := make([]byte, 1<<20)
			b[len(b)-1] = 1
			hoard = append(hoard, b)
		}
	case "exit":
		os.Exit(7)
	default:
		return fmt.Errorf("check = %q: want accept, panic, loop, alloc or exit", v)
	}
	return nil
}

var _ sdk.ConfigChecker = scheduler{}

func init() { plugin.Register(plugin.Info{Name: "configcheck"}, scheduler{}) }

func main() { plugin.Serve() }
