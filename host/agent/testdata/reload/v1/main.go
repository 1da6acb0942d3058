// Command v1 is version 1 of the "reload" plugin: the built-in service
// scheduler under another name, slowed down so that evals are in flight
// when the file is replaced.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
)

var sink uint64

type slow struct{ generic.Scheduler }

func (s *slow) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	for i := uint64(0); i < 20_000_000; i++ {
		sink += i
	}
	return s.Scheduler.Process(ctx, eval)
}

func init() {
	plugin.Register(plugin.Info{Name: "reload", Version: "1"}, &slow{})
}

func main() { plugin.Serve() }
