package fsm

import (
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// Plugins never see allocation Metrics (state syncs leave them out), so an
// in-place update without Metrics must keep the stored ones, and one with
// Metrics replaces them.
func TestApplyPlanResults_InPlaceUpdateKeepsMetricsUnlessGiven(t *testing.T) {
	for _, tc := range []struct {
		name      string
		update    *sdk.AllocMetric
		evaluated int
	}{{"without metrics", nil, 7}, {"with metrics", &sdk.AllocMetric{NodesEvaluated: 1}, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := state.NewStore()
			f := New(store, nil, zerolog.Nop())
			job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
				TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
			for i, msg := range []interface {
				MarshalMsg([]byte) ([]byte, error)
				UnmarshalMsg([]byte) ([]byte, error)
			}{
				&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
				&JobRegisterRequest{Job: job},
				&ApplyPlanResultsRequest{Job: job, EvalID: "e1", AllocsUpdated: []*sdk.Allocation{{ID: "a1", Namespace: "default",
					JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", Metrics: &sdk.AllocMetric{NodesEvaluated: 7}}}},
				&ApplyPlanResultsRequest{Job: job, EvalID: "e2", AllocsUpdated: []*sdk.Allocation{{ID: "a1", Namespace: "default",
					JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", EvalID: "e2", Metrics: tc.update}}},
			} {
				if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
					t.Fatal(err)
				}
			}
			a := store.Snapshot().Alloc("a1")
			if a.EvalID != "e2" || a.Metrics == nil || a.Metrics.NodesEvaluated != tc.evaluated {
				t.Fatalf("alloc after the in-place update: eval %s, metrics %+v", a.EvalID, a.Metrics)
			}
		})
	}
}
