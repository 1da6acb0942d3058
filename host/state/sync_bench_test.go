package state

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// BenchmarkSnapshot_SyncOfAPlan: the delta a plugin gets after a plan
// placed 100 allocations of one job (what each eval of the benchmark's
// ten-eval scenarios starts with).
func BenchmarkSnapshot_SyncOfAPlan(b *testing.B) {
	s, err := NewStore()
	if err != nil {
		b.Fatal(err)
	}
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 100}}}
	if err := s.Write(1, func(tx *Txn) error { return tx.UpsertJob(job) }); err != nil {
		b.Fatal(err)
	}
	err = s.Write(2, func(tx *Txn) error {
		j := tx.Job("default", "web")
		for i := range 100 {
			a := &sdk.Allocation{ID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i), Namespace: "default", JobID: "web",
				Job: j, TaskGroup: "g", NodeID: fmt.Sprintf("node-%d", i), DesiredStatus: sdk.AllocDesiredStatusRun,
				ClientStatus: sdk.AllocClientStatusPending, Metrics: &sdk.AllocMetric{NodesEvaluated: 2}}
			if err := tx.UpsertAlloc(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	snap := s.Snapshot()
	for b.Loop() {
		if sync := snap.Sync(1, false); len(sync.Allocs) != 100 {
			b.Fatalf("%d allocations in the delta", len(sync.Allocs))
		}
	}
}
