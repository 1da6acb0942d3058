package fsm

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// BenchmarkRestore_Allocs measures restoring a snapshot of 100,000
// allocations (100 jobs, 5,000 nodes) into an empty store: what a restart
// spends before raft replays the log.
//
//	go test ./host/fsm -run XXX -bench Restore_Allocs -benchtime 3x
func BenchmarkRestore_Allocs(b *testing.B) {
	src, _ := state.NewStore()
	const jobs, per = 100, 1000
	_ = src.Write(1, func(tx *state.Txn) error {
		for i := 0; i < 5000; i++ {
			_ = tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("node-%04d", i), Status: "ready"})
		}
		for j := 0; j < jobs; j++ {
			job := &sdk.Job{Namespace: "default", ID: fmt.Sprintf("job-%04d", j), Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: per}}}
			_ = tx.UpsertJob(job)
			for k := 0; k < per; k++ {
				_ = tx.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("%04d-%06d", j, k), Namespace: "default", JobID: job.ID, Job: job,
					TaskGroup: "g", NodeID: fmt.Sprintf("node-%04d", (j*per+k)%5000), EvalID: "seed", DesiredStatus: "run",
					AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: 10}}}}})
			}
		}
		return nil
	})
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(buf.Len())/(jobs*per), "snapshot-bytes/alloc")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst, _ := state.NewStore()
		if err := restore(dst, bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(jobs*per*b.N)/b.Elapsed().Seconds(), "allocs/s")
}
