package plan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
	"github.com/rs/zerolog"
)

// benchCluster is 5,000 nodes of 64 GHz and 256 GB and a job with one eval
// per submitter.
func benchCluster(b *testing.B, submitters int) (*state.Store, *sdk.Job) {
	b.Helper()
	s, _ := state.NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1}}}
	err := s.Write(1, func(tx *state.Txn) error {
		for i := 0; i < 5000; i++ {
			if err := tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("n%04d", i), Status: "ready", SchedulingEligibility: "eligible",
				NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 64000}, Memory: sdk.NodeMemoryResources{MemoryMB: 256 << 10}}}); err != nil {
				return err
			}
		}
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		for i := 0; i < submitters; i++ {
			if err := tx.UpsertEval(&sdk.Evaluation{ID: fmt.Sprintf("e%d", i), Namespace: "default", JobID: "web",
				Priority: 50, Status: sdk.EvalStatusPending}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s, s.Snapshot().Job("default", "web")
}

// BenchmarkApplier_5000Nodes measures the plan applier on 5,000 nodes:
// plans of placementsPerPlan allocations on random nodes, submitted by 8
// schedulers at once, validated, evaluated node by node and committed to
// the state store (raft replaced by a direct FSM write, so the figure is
// the applier's own cost).
//
//	go test ./host/plan -run XXX -bench Applier_5000Nodes -benchtime 3000x
func BenchmarkApplier_5000Nodes(b *testing.B) {
	for _, perPlan := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("placements=%d", perPlan), func(b *testing.B) {
			const submitters = 8
			s, job := benchCluster(b, submitters)
			q := NewQueue()
			q.SetEnabled(true)
			a := NewApplier(q, s, &fakeRaft{store: s}, allOutstanding{}, verify.DefaultLimits(), nil, nil, zerolog.Nop())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go a.Run(ctx)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < submitters; w++ {
				n := b.N / submitters
				if w == 0 {
					n += b.N % submitters
				}
				wg.Add(1)
				go func(w, n int) {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 1))
					for i := 0; i < n; i++ {
						p := &sdk.Plan{EvalID: fmt.Sprintf("e%d", w), EvalToken: "t", Job: job}
						for k := 0; k < perPlan; k++ {
							node := fmt.Sprintf("n%04d", r.IntN(5000))
							p.AppendAlloc(&sdk.Allocation{ID: fmt.Sprintf("a-%d-%d-%d", w, i, k), Namespace: "default", JobID: "web",
								TaskGroup: "g", NodeID: node, AllocatedResources: res(1)})
						}
						res, err := a.Submit(ctx, p)
						if err != nil || len(res.RejectedNodes) > 0 {
							b.Errorf("plan not committed: %v %v", err, res)
							return
						}
					}
				}(w, n)
			}
			wg.Wait()
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N)/secs, "plans/s")
			b.ReportMetric(float64(b.N*perPlan)/secs, "placements/s")
		})
	}
}
