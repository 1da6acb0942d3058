// Package native runs a scheduler in the host's process, behind the same
// encoded ABI messages as the sandboxed runtimes: for tests, benchmarks,
// embedding, and as the baseline the others are measured against.
package native

import (
	"context"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
)

// Factory makes in-process instances of one scheduler.
type Factory struct {
	info plugin.Info
	make func() sdk.Scheduler
}

var (
	_ runtime.Factory       = (*Factory)(nil)
	_ runtime.ConfigChecker = (*Factory)(nil)
	_ runtime.Idler         = (*instance)(nil)
)

// New returns a factory; newScheduler is called once per instance.
func New(info plugin.Info, newScheduler func() sdk.Scheduler) *Factory {
	return &Factory{info: info, make: newScheduler}
}

// Info implements runtime.Factory.
func (f *Factory) Info() abi.Info { return plugin.NewGuest(f.info, nil).Info() }

// NewInstance implements runtime.Factory.
func (f *Factory) NewInstance(context.Context) (runtime.Instance, error) {
	return &instance{guest: plugin.NewGuest(f.info, f.make())}, nil
}

// CheckConfig implements runtime.ConfigChecker on a scheduler of its own,
// in the host's process: unlike the other runtimes, nothing bounds it.
func (f *Factory) CheckConfig(_ context.Context, req []byte) ([]byte, error) {
	return plugin.NewGuest(f.info, f.make()).CheckConfig(req), nil
}

// Close implements runtime.Factory.
func (f *Factory) Close(context.Context) error { return nil }

type instance struct{ guest *plugin.Guest }

func (i *instance) Process(_ context.Context, req []byte, host plugin.HostFunc) ([]byte, error) {
	return i.guest.Process(req, host), nil
}

// Idle implements runtime.Idler: the guest's work between evals, as the
// sandboxed runtimes do it (plugin.Guest.Idle), in the pool's goroutine.
func (i *instance) Idle(context.Context) error {
	i.guest.Idle()
	return nil
}

func (i *instance) Close(context.Context) error { return nil }
