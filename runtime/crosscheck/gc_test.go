package crosscheck_test

import (
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime/crosscheck/testdata/collector/collector"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// TestGarbageCollect_EveryRuntime runs a core scheduler that mirrors evals
// and collects the terminal ones (ABI 1.1) in every runtime: the evals
// reach the mirror through full and delta syncs, the garbage_collect op
// crosses each transport, and a non-core eval is refused it.
func TestGarbageCollect_EveryRuntime(t *testing.T) {
	info := plugin.Info{Name: "collector", Types: []string{sdk.JobTypeCore}, MirrorEvals: true}
	for _, fl := range flavours {
		t.Run(fl.name, func(t *testing.T) {
			p := pool(t, fl.load(t, "./runtime/crosscheck/testdata/collector", info,
				func() sdk.Scheduler { return collector.Scheduler{} }))
			if !p.Info().MirrorEvals {
				t.Fatal("the plugin's info lost MirrorEvals")
			}
			h := sdktest.New()
			h.UpsertEval(&sdk.Evaluation{ID: "done-1", Status: sdk.EvalStatusComplete},
				&sdk.Evaluation{ID: "live-1", Status: sdk.EvalStatusPending})
			core := func(id string) *sdk.Evaluation {
				return &sdk.Evaluation{ID: id, Type: sdk.JobTypeCore, JobID: sdk.CoreJobEvalGC, Status: sdk.EvalStatusPending}
			}
			if err := runtimetest.Process(p, h, core("gc-1"), time.Minute); err != nil {
				t.Fatal(err)
			}
			// Between the two core evals another eval finishes: the delta
			// brings it to the mirror.
			h.UpsertEval(&sdk.Evaluation{ID: "done-2", Status: sdk.EvalStatusFailed})
			if err := runtimetest.Process(p, h, core("gc-2"), time.Minute); err != nil {
				t.Fatal(err)
			}
			if len(h.Collected) != 2 || !slices.Equal(h.Collected[0].Evals, []string{"done-1"}) ||
				!slices.Equal(h.Collected[1].Evals, []string{"done-2", "gc-1"}) {
				t.Fatalf("collected %+v", h.Collected)
			}
			if h.Eval("live-1") == nil {
				t.Fatal("a live eval was collected")
			}
			// A service eval is not offered garbage collection.
			h.UpsertEval(&sdk.Evaluation{ID: "done-3", Status: sdk.EvalStatusComplete})
			err := runtimetest.Process(p, h, &sdk.Evaluation{ID: "svc", Type: sdk.JobTypeService, JobID: "web",
				Status: sdk.EvalStatusPending}, time.Minute)
			if err == nil || len(h.Collected) != 2 {
				t.Fatalf("a service eval collected garbage: err %v, collected %+v", err, h.Collected)
			}
		})
	}
}
