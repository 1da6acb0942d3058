// Command idleleak is a scheduler plugin whose eval completes but leaves
// a goroutine behind that allocates after the eval, up to 1 GiB (without
// end in spirit; bounded so that a host that lets it run survives the
// test).
package main

import (
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

var sink [][]byte

func init() {
	plugin.Register(plugin.Info{Name: "idleleak"}, sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		go func() {
			time.Sleep(100 * time.Millisecond) // the eval has returned
			for len(sink) < 256 {
				b := make([]byte, 4<<20)
				for i := range b {
					b[i] = 1 // resident, not only reserved
				}
				sink = append(sink, b)
				time.Sleep(5 * time.Millisecond)
			}
			select {}
		}()
		e := eval.Copy()
		e.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(e)
	}))
}

func main() { plugin.Serve() }
