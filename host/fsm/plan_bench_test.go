package fsm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// BenchmarkApplyPlanResults_5000Allocs commits plans of 5,000 new
// allocations, one per node of a 5,000-node cluster (a system job), into
// a store that holds the previous plans: the FSM's part of an eval of the
// scheduler benchmark's system scenarios.
//
//	go test ./host/fsm -run XXX -bench ApplyPlanResults -benchtime 20x
func BenchmarkApplyPlanResults_5000Allocs(b *testing.B) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	const nodes = 5000
	_ = store.Write(1, func(tx *state.Txn) error {
		for i := 0; i < nodes; i++ {
			_ = tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Status: "ready"})
		}
		return nil
	})
	r := rand.New(rand.NewPCG(1, 2))
	uuid := func() string {
		return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, r.Uint32()&0xfff, r.Uint64()&0xffffffffffff)
	}
	index := uint64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		index++
		job := &sdk.Job{Namespace: "default", ID: fmt.Sprintf("job-%04d", i), Type: "system",
			TaskGroups: []*sdk.TaskGroup{{Name: "web", Count: 1}}}
		if err := store.Write(index, func(tx *state.Txn) error { return tx.UpsertJob(job) }); err != nil {
			b.Fatal(err)
		}
		job = store.Snapshot().Job("default", job.ID)
		evalID := uuid()
		req := &ApplyPlanResultsRequest{Job: job, EvalID: evalID, UpdatedAt: int64(index)}
		for n := 0; n < nodes; n++ {
			req.AllocsUpdated = append(req.AllocsUpdated, &sdk.Allocation{ID: uuid(), Namespace: "default",
				JobID: job.ID, TaskGroup: "web", Name: job.ID + ".web[0]", EvalID: evalID,
				NodeID: fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n), DesiredStatus: "run", ClientStatus: "pending",
				AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
					"web": {Cpu: sdk.AllocatedCpuResources{CpuShares: 100}, Memory: sdk.AllocatedMemoryResources{MemoryMB: 128}}}}})
		}
		index++
		b.StartTimer()
		if err := f.ApplyDecoded(index, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(nodes*b.N)/b.Elapsed().Seconds(), "allocs/s")
}
