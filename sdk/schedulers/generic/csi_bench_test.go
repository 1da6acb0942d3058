package generic_test

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
)

// BenchmarkService_CSIReaders places a job of 500 allocations that all
// read one multi-node-reader CSI volume, on 1,000 nodes running its
// plugin: each selection counts the plan's claims on the volume.
func BenchmarkService_CSIReaders(b *testing.B) {
	benchPlace500(b, true)
}

// BenchmarkService_NoCSIBaseline is BenchmarkService_CSIReaders without
// the volume: what the CSI checks add is the difference.
func BenchmarkService_NoCSIBaseline(b *testing.B) {
	benchPlace500(b, false)
}

// benchPlace500 times the placement of a job of 500 allocations on 1,000
// nodes that run CSI plugin ebs, its allocations reading volume data or
// mounting none.
func benchPlace500(b *testing.B, withVolume bool) {
	for range b.N {
		b.StopTimer()
		h := schedtest.New(b)
		var nodes []*sdk.Node
		for i := range 1000 {
			nodes = append(nodes, csiNode(fmt.Sprintf("n-%04d", i), 0))
		}
		h.UpsertNodes(nodes...)
		job := schedtest.ServiceJob("db", 500)
		if withVolume {
			h.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeMultiNodeReader))
			job = csiJob(500, "data", sdk.CSIAccessModeMultiNodeReader, true, false)
		}
		job.TaskGroups[0].Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 64}
		e := h.RegisterJob(job)
		b.StartTimer()
		h.Process(service, e)
		if n := len(h.Live("default", "db")); n != 500 {
			b.Fatalf("placed %d", n)
		}
	}
}
