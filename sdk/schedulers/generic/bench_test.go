package generic_test

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
)

// BenchmarkPlace times one eval placing count allocations of a service or
// batch job on 1,000 nodes, in process over the harness's state (no
// plugin boundary): the scheduler's own cost.
func BenchmarkPlace(b *testing.B) {
	for _, tc := range []struct {
		name  string
		batch bool
		count int
	}{{"service-100", false, 100}, {"service-1000", false, 1000}, {"batch-1000", true, 1000}} {
		b.Run(tc.name, func(b *testing.B) {
			h := schedtest.New(b)
			h.UpsertNodes(schedtest.Nodes("n", 1000)...)
			s := &generic.Scheduler{Batch: tc.batch}
			h.RejectAll = true // keep the state empty between iterations
			var evals []*sdk.Evaluation
			for i := 0; i < b.N; i++ {
				job := schedtest.ServiceJob(fmt.Sprintf("j%d", i), tc.count)
				if tc.batch {
					job = schedtest.BatchJob(fmt.Sprintf("j%d", i), tc.count)
				}
				job.TaskGroups[0].Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 128}
				evals = append(evals, h.RegisterJob(job))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx := sdk.NewContext(h.State, nopPlanner{}, nil, h.Now, nil, evals[i].ID)
				if err := s.Process(ctx, evals[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// nopPlanner commits every plan and records nothing.
type nopPlanner struct{}

func (nopPlanner) SubmitPlan(p *sdk.Plan) (*sdk.PlanResult, error) {
	return &sdk.PlanResult{NodeAllocation: p.NodeAllocation, NodeUpdate: p.NodeUpdate}, nil
}
func (nopPlanner) UpdateEval(*sdk.Evaluation) error  { return nil }
func (nopPlanner) CreateEval(*sdk.Evaluation) error  { return nil }
func (nopPlanner) ReblockEval(*sdk.Evaluation) error { return nil }
