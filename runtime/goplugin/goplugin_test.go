package goplugin_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

func load(t *testing.T, pkg string) *goplugin.Factory {
	t.Helper()
	f, err := goplugin.Load(context.Background(), goplugintest.Build(t, pkg), goplugin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGoPlugin_ServiceSchedulesThroughTheBroker(t *testing.T) {
	f := load(t, "./plugins/service")
	if info := f.Info(); info.Name != "service" || info.ABI>>16 != 1 {
		t.Fatalf("info = %+v", info)
	}
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192), sdktest.Node("n2", 4000, 8192))
	for i, id := range []string{"web", "api"} {
		job := sdktest.Job(id, 3)
		h.UpsertJob(job)
		if err := runtimetest.Process(p, h, h.RegisterEval(job), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if len(h.Updated) != i+1 || h.Updated[i].Status != sdk.EvalStatusComplete {
			t.Fatalf("eval updates = %+v", h.Updated)
		}
	}
	if st := p.Stats(); st.FullSyncs.Load() != 1 || st.DeltaSyncs.Load() != 1 {
		t.Fatalf("syncs: full %d delta %d, want 1 and 1", st.FullSyncs.Load(), st.DeltaSyncs.Load())
	}
}
