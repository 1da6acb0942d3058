// Package runtimetest runs plugin pools against an sdktest.Harness, so that
// runtime tests and benchmarks need no server: the harness is the state
// source and the planner, and records what the plugin did.
package runtimetest

import (
	"context"
	"errors"
	"strings"
	"testing"
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
func (h Host) Sync(from uint64, evals bool) *abi.StateSync { return h.H.Sync(from, evals) }

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

// CoreHost is a Host that also offers garbage collection, as the server's
// planner does for core evals.
type CoreHost struct{ Host }

var _ runtime.Collector = CoreHost{}

// GarbageCollect implements runtime.Collector.
func (h CoreHost) GarbageCollect(_ context.Context, req *sdk.GCRequest) error {
	return h.H.GarbageCollect(req)
}

// Call returns a runtime call of eval against the harness, which it
// delivers the eval to (sdktest.Harness.Deliver).
func Call(h *sdktest.Harness, eval *sdk.Evaluation) *runtime.Call {
	h.Deliver(eval)
	host := Host{H: h}
	var planner runtime.Planner = host
	if eval.Type == sdk.JobTypeCore {
		planner = CoreHost{host}
	}
	return &runtime.Call{Eval: eval, Token: "runtimetest", Now: h.Now, State: host, Planner: planner,
		Config: h.Config, Log: zerolog.Nop()}
}

// Process runs eval on p against h with a deadline.
func Process(p *runtime.Plugin, h *sdktest.Harness, eval *sdk.Evaluation, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Process(ctx, Call(h, eval))
}

// WantConfig fails tb unless err is what runtime.CheckConfig answers as
// want describes: want "" for an accepted configuration, otherwise text
// the refusal (runtime.ErrConfigRefused) must contain.
func WantConfig(tb testing.TB, err error, want string) {
	tb.Helper()
	if want == "" {
		if err != nil {
			tb.Fatalf("refused: %v", err)
		}
		return
	}
	if !errors.Is(err, runtime.ErrConfigRefused) || !strings.Contains(err.Error(), want) {
		tb.Fatalf("err = %v, want ErrConfigRefused saying %q", err, want)
	}
}
