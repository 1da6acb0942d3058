package server

import (
	"context"
	"time"

	"github.com/drover-sched/drover/host/blocked"
	"github.com/drover-sched/drover/sdk"
	metrics "github.com/hashicorp/go-metrics/compat"
)

// emitStats samples the gauges every collection interval until ctx ends:
// the Go runtime and the plugins' counters always; on the leader, the
// broker's queues (in total and per scheduler type), the blocked evals,
// the plan queue and the nodes whose heartbeats are tracked. Names follow
// Nomad's, under "drover." rather than "nomad.nomad.".
func (s *Server) emitStats(ctx context.Context) {
	defer s.done.Done()
	t := time.NewTicker(s.telemetry.Interval())
	defer t.Stop()
	var shown blockedGauges
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.metrics.EmitRuntimeStats()
		s.emitPluginStats()
		if !s.IsLeader() {
			shown.set(s.metrics, blocked.Stats{})
			continue
		}
		m := s.metrics
		b := s.broker.Stats()
		gauge := func(v int, key ...string) { m.SetGauge(key, float32(v)) }
		gauge(b.TotalReady, "broker", "total_ready")
		gauge(b.TotalUnacked, "broker", "total_unacked")
		gauge(b.TotalPending, "broker", "total_pending")
		gauge(b.TotalWaiting, "broker", "total_waiting")
		gauge(b.TotalCancelable, "broker", "total_cancelable")
		gauge(b.TotalFailed, "broker", "total_failed")
		for sched, st := range b.ByScheduler {
			gauge(st.Ready, "broker", sched+"_ready")
			gauge(st.Unacked, "broker", sched+"_unacked")
		}
		bl := s.blocked.Stats()
		gauge(bl.TotalBlocked, "blocked_evals", "total_blocked")
		gauge(bl.TotalEscaped, "blocked_evals", "total_escaped")
		gauge(bl.TotalCaptured, "blocked_evals", "total_captured")
		gauge(bl.TotalDuplicates, "blocked_evals", "total_duplicates")
		shown.set(m, bl)
		gauge(s.plans.Len(), "plan", "queue_depth")
		gauge(s.heartbeats.count(), "heartbeat", "active")
	}
}

// blockedGauges are the per-job and per-class gauges of blocked
// resources last set: a job or class is reported while it has blocked
// evals, and once more, at 0, when it no longer has (or the server no
// longer leads), so that a statsd sink, which keeps a gauge's last value,
// does not report blocked resources that are gone.
type blockedGauges struct {
	jobs    map[sdk.NamespacedID]bool
	classes map[blocked.ClassInDC]bool
}

func (g *blockedGauges) set(m *metrics.Metrics, st blocked.Stats) {
	jobs := make(map[sdk.NamespacedID]bool, len(st.ByJob))
	for k, v := range st.ByJob {
		setBlockedJob(m, k, v)
		jobs[k] = true
	}
	for k := range g.jobs {
		if !jobs[k] {
			setBlockedJob(m, k, blocked.Resources{})
		}
	}
	classes := make(map[blocked.ClassInDC]bool, len(st.ByClassInDC))
	for k, v := range st.ByClassInDC {
		setBlockedClass(m, k, v)
		classes[k] = true
	}
	for k := range g.classes {
		if !classes[k] {
			setBlockedClass(m, k, blocked.Resources{})
		}
	}
	g.jobs, g.classes = jobs, classes
}

func setBlockedJob(m *metrics.Metrics, k sdk.NamespacedID, v blocked.Resources) {
	labels := []metrics.Label{{Name: "namespace", Value: k.Namespace}, {Name: "job", Value: k.ID}}
	m.SetGaugeWithLabels([]string{"blocked_evals", "job", "cpu"}, float32(v.CPU), labels)
	m.SetGaugeWithLabels([]string{"blocked_evals", "job", "memory"}, float32(v.MemoryMB), labels)
}

func setBlockedClass(m *metrics.Metrics, k blocked.ClassInDC, v blocked.Resources) {
	labels := []metrics.Label{{Name: "datacenter", Value: k.Datacenter}, {Name: "node_class", Value: k.Class}}
	m.SetGaugeWithLabels([]string{"blocked_evals", "cpu"}, float32(v.CPU), labels)
	m.SetGaugeWithLabels([]string{"blocked_evals", "memory"}, float32(v.MemoryMB), labels)
}

// schedulerLabels name the scheduler type and plugin of an eval's metrics.
func schedulerLabels(evalType, plugin string) []metrics.Label {
	return []metrics.Label{{Name: "scheduler", Value: evalType}, {Name: "plugin", Value: plugin}}
}

// emitPluginStats reports each plugin's running totals (since it was
// loaded or last replaced) as gauges labelled with the plugin and its
// runtime: evals, failed evals, recycled instances, full and delta syncs.
func (s *Server) emitPluginStats() {
	for _, e := range s.plugins.List() {
		st := e.Plugin.Stats()
		labels := []metrics.Label{{Name: "plugin", Value: e.Plugin.Info().Name}, {Name: "runtime", Value: e.Runtime}}
		for _, g := range []struct {
			name string
			v    int64
		}{
			{"evals", st.Evals.Load()}, {"failures", st.Failures.Load()}, {"recycled", st.Recycled.Load()},
			{"full_syncs", st.FullSyncs.Load()}, {"delta_syncs", st.DeltaSyncs.Load()},
		} {
			s.metrics.SetGaugeWithLabels([]string{"plugin", g.name}, float32(g.v), labels)
		}
	}
}
