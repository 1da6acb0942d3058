package bench

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/tinylib/msgp/msgp"
)

// BenchmarkObjectCodec encodes and decodes the benchmark's service job,
// one of its nodes and an eval as the broker hands it out, and reports
// each one's encoded size (docs/benchmarks.md, "nineteenth session").
func BenchmarkObjectCodec(b *testing.B) {
	cfg := DefaultConfig()
	objects := []struct {
		name string
		obj  interface {
			msgp.Marshaler
			msgp.Unmarshaler
		}
		fresh func() msgp.Unmarshaler
	}{
		{"job", makeJob(cfg, Scenarios[0], "bench-job-1"), func() msgp.Unmarshaler { return &sdk.Job{} }},
		{"node", makeNode(cfg, &cluster{}, 7), func() msgp.Unmarshaler { return &sdk.Node{} }},
		{"eval", &sdk.Evaluation{ID: "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f", Namespace: sdk.DefaultNamespace, Priority: 50,
			Type: sdk.JobTypeService, TriggeredBy: sdk.EvalTriggerJobRegister, JobID: "bench-job-1",
			Status: sdk.EvalStatusPending}, func() msgp.Unmarshaler { return &sdk.Evaluation{} }},
	}
	for _, o := range objects {
		buf, err := o.obj.MarshalMsg(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(o.name+"/encode", func(b *testing.B) {
			out := buf[:0:len(buf)]
			for b.Loop() {
				out, _ = o.obj.MarshalMsg(out[:0])
			}
			b.ReportMetric(float64(len(buf)), "bytes")
		})
		b.Run(o.name+"/decode", func(b *testing.B) {
			for b.Loop() {
				if _, err := o.fresh().UnmarshalMsg(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(buf)), "bytes")
		})
	}
}
