package crosscheck_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/crosscheck/testdata/empty/empty"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// benchFlavours are the runtimes benchmarked: the three of the differential
// test, plus wasm without deadline enforcement (EnforceDeadline off)
// and go-plugin with its evals over gRPC rather than the eval socket.
func benchFlavours() []flavour {
	return append(flavours[:2:2],
		flavour{"wasm-nodeadline", func(tb testing.TB, pkg string, _ plugin.Info, _ func() sdk.Scheduler) runtime.Factory {
			return loadWasm(tb, pkg, false)
		}},
		flavours[2],
		flavour{"goplugin-grpc", func(tb testing.TB, pkg string, _ plugin.Info, _ func() sdk.Scheduler) runtime.Factory {
			cfg := goplugin.DefaultConfig()
			cfg.EvalsOverGRPC = true
			return loadGoplugin(tb, pkg, cfg)
		}})
}

// BenchmarkEmptyEval measures what one eval costs in each runtime when the
// scheduler does nothing but conclude it: encoding, the call, a delta sync
// of one change, one planner call.
func BenchmarkEmptyEval(b *testing.B) {
	for _, fl := range benchFlavours() {
		b.Run(fl.name, func(b *testing.B) {
			p := pool(b, fl.load(b, "./runtime/crosscheck/testdata/empty", plugin.Info{Name: "empty"},
				func() sdk.Scheduler { return empty.Scheduler{} }))
			h := sdktest.New()
			h.UpsertNode(sdktest.Node("n1", 4000, 8192))
			job := sdktest.Job("web", 1)
			h.UpsertJob(job)
			eval := h.RegisterEval(job)
			ctx := context.Background()
			call := runtimetest.Call(h, eval)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Process(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fullOnly is a state source that always sends a full sync.
type fullOnly struct{ runtimetest.Host }

func (f fullOnly) Sync(_ uint64, evals bool) *abi.StateSync { return f.H.FullSync(evals) }

// BenchmarkSync compares bringing a plugin's mirror up to date with a
// delta (one node and one allocation changed since the last eval) against
// sending the whole state, at 5,000 and 10,000 nodes with four allocations
// per node, in wasm (where decoding is dearest) and natively.
func BenchmarkSync(b *testing.B) {
	for _, nodes := range []int{5000, 10000} {
		h := sdktest.New()
		job := sdktest.Job("web", 1)
		h.UpsertJob(job)
		for i := 0; i < nodes; i++ {
			h.UpsertNode(sdktest.Node(fmt.Sprintf("node-%05d", i), 4000, 8192))
		}
		var allocs []*sdk.Allocation
		for i := 0; i < 4*nodes; i++ {
			allocs = append(allocs, &sdk.Allocation{ID: fmt.Sprintf("alloc-%06d", i), JobID: "web", TaskGroup: "web",
				NodeID: fmt.Sprintf("node-%05d", i%nodes), Name: sdk.AllocName("web", "web", i),
				DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
				AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
					"app": {Cpu: sdk.AllocatedCpuResources{CpuShares: 100}, Memory: sdk.AllocatedMemoryResources{MemoryMB: 64}}}}})
		}
		h.UpsertAlloc(allocs...)
		for _, fl := range []flavour{flavours[0], flavours[1]} {
			p := pool(b, fl.load(b, "./runtime/crosscheck/testdata/empty", plugin.Info{Name: "empty"},
				func() sdk.Scheduler { return empty.Scheduler{} }))
			for _, mode := range []string{"delta", "full"} {
				b.Run(fmt.Sprintf("%s/%s/nodes=%d", fl.name, mode, nodes), func(b *testing.B) {
					ctx := context.Background()
					eval := h.RegisterEval(job)
					for i := 0; i < b.N; i++ {
						// One node and one allocation change between evals.
						b.StopTimer()
						n := *h.Node(fmt.Sprintf("node-%05d", i%nodes))
						n.Meta = map[string]string{"tick": fmt.Sprint(i)}
						h.UpsertNode(&n)
						a := *h.Alloc(fmt.Sprintf("alloc-%06d", i%(4*nodes)))
						a.ClientStatus = []string{sdk.AllocClientStatusRunning, sdk.AllocClientStatusPending}[i%2]
						h.UpsertAlloc(&a)
						call := runtimetest.Call(h, eval)
						if mode == "full" {
							call.State = fullOnly{runtimetest.Host{H: h}}
						}
						b.StartTimer()
						if err := p.Process(ctx, call); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkServiceScheduler runs the built-in service scheduler in each
// runtime: every op registers a job of 10 allocations on a 1,000-node
// cluster and schedules it (reconcile, feasibility, ranking, plan, commit).
// The previous op's allocations are deleted first (outside the timer), so
// every op sees a cluster of the same size whatever b.N is.
func BenchmarkServiceScheduler(b *testing.B) {
	for _, fl := range benchFlavours() {
		b.Run(fl.name, func(b *testing.B) {
			p := pool(b, fl.load(b, "./plugins/service", plugin.Info{Name: "service", Types: []string{"service"}},
				func() sdk.Scheduler { return &generic.Scheduler{} }))
			h := sdktest.New()
			for i := 0; i < 1000; i++ {
				n := sdktest.Node(fmt.Sprintf("node-%04d", i), 64_000, 256_000)
				n.Meta["rack"] = fmt.Sprintf("r%d", i%8)
				n.ComputedClass = fmt.Sprintf("class-%d", i%4)
				h.UpsertNode(n)
			}
			ctx := context.Background()
			var last *sdk.Job
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if last != nil {
					for _, a := range h.AllocsByJob(last.Namespace, last.ID) {
						h.DeleteAlloc(a.ID)
					}
				}
				job := sdktest.Job(fmt.Sprintf("job-%06d", i), 10)
				last = job
				job.TaskGroups[0].Tasks[0].Resources.CPU = 100
				job.TaskGroups[0].Tasks[0].Resources.MemoryMB = 128
				h.UpsertJob(job)
				call := runtimetest.Call(h, h.RegisterEval(job))
				b.StartTimer()
				if err := p.Process(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if len(h.Updated) != b.N || h.Updated[b.N-1].Status != sdk.EvalStatusComplete || len(h.Created) != 0 {
				b.Fatalf("not every eval placed: %d updates, %d blocked", len(h.Updated), len(h.Created))
			}
		})
	}
}
