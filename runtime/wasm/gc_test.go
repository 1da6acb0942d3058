package wasm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// capture remembers the instance its factory made.
type capture struct {
	runtime.Factory
	inst runtime.Instance
}

func (c *capture) NewInstance(ctx context.Context) (runtime.Instance, error) {
	inst, err := c.Factory.NewInstance(ctx)
	c.inst = inst
	return inst, err
}

// TestInstance_MemoryStaysBoundedOverManyEvals runs thousands of evals on
// one long-lived instance over a state of constant size: each eval the
// service scheduler reconciles a placed job (garbage, no new state) after
// a delta that replaces a node. Wasm memory never shrinks, so if the guest
// GC stalled (ARCHITECTURE.md's facts) the instance would keep growing.
func TestInstance_MemoryStaysBoundedOverManyEvals(t *testing.T) {
	if testing.Short() {
		t.Skip("long-running")
	}
	m, err := wasm.LoadFile(context.Background(), wasmtest.Build(t, "./plugins/service"), wasm.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := &capture{Factory: m}
	cfg := runtime.DefaultPoolConfig(1)
	cfg.MaxEvals, cfg.MaxMemoryBytes = 0, 0 // never recycle: the point is one instance
	p := runtime.NewPlugin(f, cfg, zerolog.Nop())
	defer p.Close(context.Background())

	h := sdktest.New()
	for i := 0; i < 200; i++ {
		h.UpsertNode(sdktest.Node(fmt.Sprintf("node-%03d", i), 8000, 16384))
	}
	job := sdktest.Job("web", 50)
	h.UpsertJob(job)
	const evals, warmup = 6000, 1000
	var atWarmup uint64
	for i := 0; i < evals; i++ {
		n := *h.Node(fmt.Sprintf("node-%03d", i%200))
		n.Meta = map[string]string{"tick": fmt.Sprint(i)}
		h.UpsertNode(&n)
		if err := runtimetest.Process(p, h, h.RegisterEval(job), 10*time.Second); err != nil {
			t.Fatalf("eval %d: %v", i, err)
		}
		if i == warmup {
			atWarmup = f.inst.(runtime.Sizer).MemoryBytes()
		}
	}
	final := f.inst.(runtime.Sizer).MemoryBytes()
	t.Logf("instance memory: %d MiB after %d evals, %d MiB after %d", atWarmup>>20, warmup, final>>20, evals)
	if len(h.Plans) != 1 {
		t.Fatalf("%d plans: only the first eval should place", len(h.Plans))
	}
	if final > atWarmup+8<<20 {
		t.Fatalf("memory grew from %d MiB to %d MiB over %d evals: the guest GC is not keeping up",
			atWarmup>>20, final>>20, evals-warmup)
	}
}
