package services_test

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/host/services"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// BenchmarkAll is what GET /v1/services and
// /v1/service/:name read per request: every allocation's registrations.
// 1,000 nodes and 100,000 allocations, of which a tenth run a job with a
// group service (the others run, or ran, jobs without one).
func BenchmarkAll(b *testing.B) {
	store, _ := state.NewStore()
	svc := sdk.Opaque{"Provider": "nomad", "Name": "${NOMAD_JOB_NAME}", "PortLabel": "http", "Tags": []any{"v1"}}
	withService := &sdk.Job{ID: "web", Namespace: "default", TaskGroups: []*sdk.TaskGroup{{Name: "g", Services: []sdk.Opaque{svc}}}}
	without := &sdk.Job{ID: "batch", Namespace: "default", TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	err := store.Write(1, func(tx *state.Txn) error {
		for i := range 1000 {
			n := &sdk.Node{ID: fmt.Sprintf("node-%04d", i), Status: sdk.NodeStatusReady, Datacenter: "dc1",
				Attributes: map[string]string{"unique.network.ip-address": "10.0.0.1"}}
			if err := tx.UpsertNode(n); err != nil {
				return err
			}
		}
		for i := range 100_000 {
			job, status := without, sdk.AllocClientStatusComplete
			if i%10 == 0 {
				job, status = withService, sdk.AllocClientStatusRunning
			} else if i%2 == 0 {
				status = sdk.AllocClientStatusRunning
			}
			a := &sdk.Allocation{ID: fmt.Sprintf("%08d-0000-0000-0000-000000000000", i), Namespace: "default", JobID: job.ID,
				Job: job, TaskGroup: "g", NodeID: fmt.Sprintf("node-%04d", i%1000), ClientStatus: status,
				AllocatedResources: &sdk.AllocatedResources{Shared: sdk.AllocatedSharedResources{Ports: []sdk.PortMapping{{Label: "http", Value: 20000 + i%1000}}}}}
			if err := tx.UpsertAlloc(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	snap := store.Snapshot()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for range services.All(snap, "default") {
			n++
		}
		if n != 10_000 {
			b.Fatalf("%d registrations", n)
		}
	}
}
