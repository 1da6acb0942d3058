// Package runtimetest runs plugin pools against an sdktest.Harness, so that
// runtime tests and benchmarks need no server: the harness is the state
// source and the planner, and records what the plugin did.
package runtimetest

import (
	"context"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// Host adapts a harness to the runtime's StateSource and Planner.
type Host struct{ H *sdktest.Harness }

var (
	_ runtime.StateSource = Host{}
	_ runtime.Planner     = Host{}
)

// Index implements runtime.StateSource.
func (h Host) Index() uint64 { return h.H.Index() }

// Sync implements runtime.StateSource.
func (h Host) Sync(from uint64, _ bool) *abi.StateSync { return h.H.Sync(from) }

// SubmitPlan implements runtime.Planner.
func (h Host) SubmitPlan(_ context.Context, p *sdk.Plan) (*sdk.PlanResult, runtime.StateSource, error) {
	res, err := h.H.SubmitPlan(p)
	if err != nil || res.RefreshIndex == 0 {
		return res, nil, err
	}
	return res, h, nil
}

// UpdateEval implements runtime.Planner.
func (h Host) UpdateEval(_ context.Context, e *sdk.Evaluation) error { return h.H.UpdateEval(e) }

// CreateEval implements runtime.Planner.
func (h Host) CreateEval(_ context.Context, e *sdk.Evaluation) error { return h.H.CreateEval(e) }

// ReblockEval implements runtime.Planner.
func (h Host) ReblockEval(_ context.Context, e *sdk.Evaluation) error { return h.H.ReblockEval(e) }

// Call returns a runtime call of eval against the harness.
func Call(h *sdktest.Harness, eval *sdk.Evaluation) *runtime.Call {
	host := Host{H: h}
	return &runtime.Call{Eval: eval, Token: "runtimetest", Now: h.Now, State: host, Planner: host,
		Config: h.Config, Log: zerolog.Nop()}
}

// Process runs eval on p against h with a deadline.
func Process(p *runtime.Plugin, h *sdktest.Harness, eval *sdk.Evaluation, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Process(ctx, Call(h, eval))
}
