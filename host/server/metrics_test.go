package server

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/host/blocked"
	"github.com/drover-sched/drover/sdk"
	metrics "github.com/hashicorp/go-metrics/compat"
)

// A job or class whose blocked evals are gone is reported once more, at 0,
// and then no longer: a statsd sink keeps a gauge's last value.
func TestBlockedGauges_ReportAGoneJobOrClassAtZeroOnce(t *testing.T) {
	inm := metrics.NewInmemSink(time.Minute, time.Minute)
	conf := metrics.DefaultConfig("drover")
	conf.EnableHostname, conf.EnableRuntimeMetrics = false, false
	m, _ := metrics.New(conf, inm)
	job := sdk.NamespacedID{Namespace: "default", ID: "web"}
	class := blocked.ClassInDC{Datacenter: "dc1", Class: "v3:abc"}
	const jobCPU = "drover.blocked_evals.job.cpu;namespace=default;job=web"
	const classMem = "drover.blocked_evals.memory;datacenter=dc1;node_class=v3:abc"
	gauges := func() map[string]float32 {
		data := inm.Data()[0]
		data.RLock()
		defer data.RUnlock()
		out := map[string]float32{}
		for k, g := range data.Gauges {
			out[k] = g.Value
		}
		return out
	}
	var g blockedGauges
	g.set(m, blocked.Stats{ByJob: map[sdk.NamespacedID]blocked.Resources{job: {CPU: 500, MemoryMB: 256}},
		ByClassInDC: map[blocked.ClassInDC]blocked.Resources{class: {CPU: 500, MemoryMB: 256}}})
	if got := gauges(); got[jobCPU] != 500 || got[classMem] != 256 {
		t.Fatalf("gauges %v", got)
	}
	g.set(m, blocked.Stats{})
	if got := gauges(); got[jobCPU] != 0 || got[classMem] != 0 {
		t.Fatalf("gauges %v: a gone job and class should read 0", got)
	}
	if len(g.jobs) != 0 || len(g.classes) != 0 {
		t.Fatalf("still remembered: %v %v", g.jobs, g.classes)
	}
}
