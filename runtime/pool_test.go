package runtime_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// gate is a scheduler whose first eval waits to be released; every eval
// says which version of the plugin ran it.
type gate struct {
	version string
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	if g.entered != nil && g.first.CompareAndSwap(false, true) {
		g.entered <- struct{}{}
		<-g.release
	}
	e := eval.Copy()
	e.Status = sdk.EvalStatusComplete
	e.StatusDescription = g.version
	return ctx.Planner.UpdateEval(e)
}

func TestPlugin_RetireFinishesInFlightAndForwards(t *testing.T) {
	oldGate := &gate{version: "v1", entered: make(chan struct{}), release: make(chan struct{})}
	old := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return oldGate }),
		runtime.DefaultPoolConfig(2), zerolog.Nop())
	next := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{version: "v2"} }),
		runtime.DefaultPoolConfig(2), zerolog.Nop())
	defer next.Close(context.Background())

	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	var wg sync.WaitGroup
	var inflightErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		inflightErr = runtimetest.Process(old, h, h.RegisterEval(job), 10*time.Second)
	}()
	<-oldGate.entered // an eval is in flight on the old plugin

	retired := make(chan error, 1)
	go func() { retired <- old.Retire(context.Background(), next) }()
	// A call through the stale handle, after Retire, runs on the successor.
	deadline := time.Now().Add(5 * time.Second)
	for {
		h2 := sdktest.New()
		h2.UpsertJob(job)
		if err := runtimetest.Process(old, h2, h2.RegisterEval(job), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if h2.Updated[0].StatusDescription == "v2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls were not forwarded to the successor")
		}
		// Retire had not run yet; this call went to v1's free instance.
	}
	select {
	case err := <-retired:
		t.Fatalf("Retire returned (%v) while an eval was in flight", err)
	default:
	}
	close(oldGate.release)
	wg.Wait()
	if inflightErr != nil || h.Updated[0].StatusDescription != "v1" {
		t.Fatalf("in-flight eval: err %v, updates %+v", inflightErr, h.Updated)
	}
	if err := <-retired; err != nil {
		t.Fatal(err)
	}
}

func TestPlugin_ClosedRefusesCalls(t *testing.T) {
	p := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{} }),
		runtime.DefaultPoolConfig(1), zerolog.Nop())
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	if err := runtimetest.Process(p, h, h.RegisterEval(job), time.Second); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}
