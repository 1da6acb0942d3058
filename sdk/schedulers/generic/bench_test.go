package generic_test

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
)

// BenchmarkPlace times one eval placing count allocations of a service or
// batch job on 1,000 nodes, in process over the harness's state (no
// plugin boundary): the scheduler's own cost. "ports" asks for a static
// and a dynamic port, assigned on every node ranked.
func BenchmarkPlace(b *testing.B) {
	for _, tc := range []struct {
		name   string
		batch  bool
		count  int
		spread bool
		ports  bool
	}{{"service-100", false, 100, false, false}, {"service-1000", false, 1000, false, false}, {"batch-1000", true, 1000, false, false},
		{"service-1000-spread", false, 1000, true, false}, {"service-500-ports", false, 500, false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := schedtest.New(b)
			nodes := schedtest.Nodes("n", 1000)
			for i, n := range nodes {
				n.Meta["rack"] = fmt.Sprintf("r%d", i%25)
			}
			h.UpsertNodes(nodes...)
			s := &generic.Scheduler{Batch: tc.batch}
			h.RejectAll() // keep the state empty between iterations
			var evals []*sdk.Evaluation
			for i := 0; i < b.N; i++ {
				job := schedtest.ServiceJob(fmt.Sprintf("j%d", i), tc.count)
				if tc.batch {
					job = schedtest.BatchJob(fmt.Sprintf("j%d", i), tc.count)
				}
				job.TaskGroups[0].Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 128}
				if tc.ports {
					job.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host",
						ReservedPorts: []sdk.Port{{Label: "http", Value: 8080, HostNetwork: "default"}},
						DynamicPorts:  []sdk.Port{{Label: "admin", HostNetwork: "default"}}}}
				}
				if tc.spread {
					job.Constraints = append(job.Constraints, &sdk.Constraint{LTarget: "${meta.rack}",
						RTarget: "r0,r1,r2,r3,r4,r5,r6,r7,r8,r9,r10,r11,r12", Operand: sdk.ConstraintSetContainsAny})
					job.Spreads = []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 100}}
				}
				evals = append(evals, h.RegisterJob(job))
			}
			state := h.State()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx := sdk.NewContext(state, nopPlanner{}, nil, h.Now, nil, evals[i].ID)
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

// BenchmarkDecodePlacedAllocs decodes a state delta carrying the 1,000
// allocations a batch eval placed, as a plugin's mirror receives them
// after that eval, with and without their Metrics: what the host's
// stripping of Metrics from state syncs saves a plugin. Natively 2.6 ms
// against 1.6 ms; as wasm (the test binary built with GOOS=wasip1
// GOARCH=wasm go test -c, run in wazero with the "drover" host module
// stubbed) 21 ms against 9.5 ms on the development machine.
func BenchmarkDecodePlacedAllocs(b *testing.B) {
	plan := batchPlan(b)
	for _, tc := range []struct {
		name    string
		metrics bool
	}{{"with-metrics", true}, {"stripped", false}} {
		b.Run(tc.name, func(b *testing.B) {
			sync := &abi.StateSync{FromIndex: 1, Index: 2}
			for _, as := range plan.NodeAllocation {
				for _, a := range as {
					c := *a
					if !tc.metrics {
						c.Metrics = nil
					}
					sync.Allocs = append(sync.Allocs, &c)
				}
			}
			buf, err := sync.MarshalMsg(nil)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var s abi.StateSync
				if _, err := s.UnmarshalMsg(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// batchPlan returns the plan of a batch eval placing 1,000 allocations
// on 1,000 nodes.
func batchPlan(b *testing.B) *sdk.Plan {
	h := schedtest.New(b)
	h.UpsertNodes(schedtest.Nodes("n", 1000)...)
	job := schedtest.BatchJob("j", 1000)
	job.TaskGroups[0].Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 128}
	ev := h.RegisterJob(job)
	p := &planCapture{}
	ctx := sdk.NewContext(h.State(), p, nil, h.Now, nil, ev.ID)
	if err := (&generic.Scheduler{Batch: true}).Process(ctx, ev); err != nil {
		b.Fatal(err)
	}
	return p.plan
}

// planCapture commits every plan and keeps the last.
type planCapture struct {
	nopPlanner
	plan *sdk.Plan
}

func (c *planCapture) SubmitPlan(p *sdk.Plan) (*sdk.PlanResult, error) {
	c.plan = p
	return c.nopPlanner.SubmitPlan(p)
}

// BenchmarkEncodePlanRequest encodes the plan of a 1,000-allocation batch
// eval as a plugin submits it (abi.PlanRequest, into a reused buffer).
func BenchmarkEncodePlanRequest(b *testing.B) {
	plan := batchPlan(b)
	req := &abi.PlanRequest{Plan: plan}
	var buf []byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = req.MarshalMsg(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkEncodePlacedPlan encodes the plan of a 1,000-allocation batch
// eval as the wasm guest sends it (ABI 1.8: the allocations split into a
// template and what each has of its own), and, apart, the part of it that
// is the placements' metrics.
func BenchmarkEncodePlacedPlan(b *testing.B) {
	plan := batchPlan(b)
	var placements abi.Placements
	var buf []byte
	b.Run("request", func(b *testing.B) {
		for b.Loop() {
			placements.Split(plan.NodeAllocation)
			wire := *plan
			wire.NodeAllocation = placements.Whole
			req := &abi.PlanRequest{Plan: &wire, Shared: placements.Shared, Placed: placements.Placed}
			var err error
			if buf, err = req.MarshalMsg(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("metrics", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, as := range plan.NodeAllocation {
				for _, a := range as {
					var err error
					if buf, err = a.Metrics.MarshalMsg(buf); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.SetBytes(int64(len(buf)))
	})
}
