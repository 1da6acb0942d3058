// Package slow is the built-in service scheduler slowed down, so that
// evals are in flight when the reload test replaces the plugin file.
package slow

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
)

var sink uint64

// Scheduler spins, then schedules as the service scheduler does. It does
// not check its configuration (sdk.ConfigChecker), unlike the service
// scheduler, which takes none: the tests hand it some to see it passed
// on.
type Scheduler struct{ service generic.Scheduler }

// Process implements sdk.Scheduler.
func (s *Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	for i := uint64(0); i < 20_000_000; i++ {
		sink += i
	}
	return s.service.Process(ctx, eval)
}
