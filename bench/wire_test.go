package bench

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
)

func TestWireSize(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(schedtest.Nodes("n", 1000)...)
	job := schedtest.BatchJob("b", 1000)
	job.TaskGroups[0].Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 128}
	h.Process(&generic.Scheduler{Batch: true}, h.RegisterJob(job))
	p := *h.LastPlan()
	p.Job = nil
	for _, variant := range []string{"full", "nometrics", "noscoremeta"} {
		q := p
		q.NodeAllocation = map[string][]*sdk.Allocation{}
		for n, as := range p.NodeAllocation {
			for _, a := range as {
				c := *a
				c.Job = nil
				switch variant {
				case "nometrics":
					c.Metrics = nil
				case "noscoremeta":
					m := *c.Metrics
					m.ScoreMetaData = nil
					c.Metrics = &m
				}
				q.NodeAllocation[n] = append(q.NodeAllocation[n], &c)
			}
		}
		req := &abi.PlanRequest{Plan: &q}
		start := time.Now()
		var b []byte
		for i := 0; i < 10; i++ {
			b, _ = req.MarshalMsg(b[:0])
		}
		enc := time.Since(start) / 10
		start = time.Now()
		for i := 0; i < 10; i++ {
			var r abi.PlanRequest
			r.UnmarshalMsg(b)
		}
		dec := time.Since(start) / 10
		t.Logf("%s: %d bytes (%d/alloc) marshal %v unmarshal %v", variant, len(b), len(b)/1000, enc, dec)
	}
}
