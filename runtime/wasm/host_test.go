package wasm_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// An answer the guest did not take is dropped by its next host call, even
// one that fails: take_result never copies an earlier call's answer.
func TestHost_FailedCallDropsTheAnswerLeftWaiting(t *testing.T) {
	p := onePlugin(t, wasmtest.Build(t, "./runtime/wasm/testdata/staletake"), wasm.DefaultConfig())
	h, job := oneJob()
	eval := h.RegisterEval(job)
	if err := runtimetest.Process(p, h, eval, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := h.Eval(eval.ID); got.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval %s: %s", got.Status, got.StatusDescription)
	}
}

// onePlugin loads the module at path with cfg into a pool of one instance,
// closed when the test ends.
func onePlugin(t *testing.T, path string, cfg wasm.Config) *runtime.Plugin {
	t.Helper()
	m, err := wasm.LoadFile(context.Background(), path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := runtime.NewPlugin(m, runtime.DefaultPoolConfig(1), zerolog.Nop())
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// oneJob is a harness holding one registered service job of one
// allocation.
func oneJob() (*sdktest.Harness, *sdk.Job) {
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	return h, job
}
