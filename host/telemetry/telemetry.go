// Package telemetry is the agent's metrics: what the server measures
// (broker and blocked-eval gauges, scheduler invocations, plan evaluation
// and commit times, rejected nodes, heartbeats, Go runtime) is kept in
// memory for /v1/metrics, as Nomad's agent keeps it; when configured, it is
// also served in Prometheus's text format and sent to statsd.
//
// Metrics go through hashicorp/go-metrics, the library Nomad and raft use:
// its in-memory sink gives Nomad's /v1/metrics JSON as is, and its
// Prometheus sink feeds a registry of this agent's own. Raft reports to
// go-metrics' global instance; the agent makes its telemetry the global one
// (SetGlobal) so that raft's metrics appear beside the rest.
package telemetry

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	promsink "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServiceName prefixes every metric name: "drover.broker.total_ready".
const ServiceName = "drover"

// Config is the agent configuration's telemetry block; names follow
// Nomad's.
type Config struct {
	// CollectionInterval is how often gauges (queue depths, the Go
	// runtime) are sampled. Default 1s.
	CollectionInterval time.Duration
	// DisableHostname leaves the host name out of gauge names. Default
	// true here; Nomad prefixes it unless told not to, which gives every
	// host its own metric names.
	DisableHostname bool
	// PrometheusMetrics serves /v1/metrics?format=prometheus.
	PrometheusMetrics bool
	// StatsdAddress, if set, also sends every metric to a statsd server
	// (host:port, UDP).
	StatsdAddress string
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{CollectionInterval: time.Second, DisableHostname: true}
}

// The in-memory sink keeps ten-second intervals for a minute, as Nomad's.
const (
	inmemInterval = 10 * time.Second
	inmemRetain   = time.Minute
)

// Telemetry is one agent's metrics.
type Telemetry struct {
	cfg      Config
	conf     *metrics.Config
	sinks    metrics.FanoutSink
	m        *metrics.Metrics
	inmem    *metrics.InmemSink
	registry *prometheus.Registry // nil unless Prometheus is enabled
	statsd   *metrics.StatsdSink  // nil unless configured
	global   atomic.Bool          // SetGlobal was called
}

// New returns telemetry with an in-memory sink and, if configured, a
// Prometheus one.
func New(cfg Config) (*Telemetry, error) {
	if cfg.CollectionInterval <= 0 {
		cfg.CollectionInterval = DefaultConfig().CollectionInterval
	}
	t := &Telemetry{cfg: cfg, inmem: metrics.NewInmemSink(inmemInterval, inmemRetain)}
	sinks := metrics.FanoutSink{t.inmem}
	if cfg.PrometheusMetrics {
		t.registry = prometheus.NewRegistry()
		t.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		// A metric not reported for a minute (an idle scheduler's queue)
		// leaves the exposition, as it leaves the in-memory sink.
		ps, err := promsink.NewPrometheusSinkFrom(promsink.PrometheusOpts{Expiration: inmemRetain, Registerer: t.registry})
		if err != nil {
			return nil, fmt.Errorf("telemetry: prometheus: %w", err)
		}
		sinks = append(sinks, ps)
	}
	if cfg.StatsdAddress != "" {
		// The sink dials in the background and only logs what fails.
		if _, err := net.ResolveUDPAddr("udp", cfg.StatsdAddress); err != nil {
			return nil, fmt.Errorf("telemetry: statsd_address: %w", err)
		}
		ss, err := metrics.NewStatsdSink(cfg.StatsdAddress)
		if err != nil {
			return nil, fmt.Errorf("telemetry: statsd_address: %w", err)
		}
		t.statsd = ss
		sinks = append(sinks, ss)
	}
	mc := metrics.DefaultConfig(ServiceName)
	mc.EnableHostname = !cfg.DisableHostname
	if mc.EnableHostname {
		mc.HostName, _ = os.Hostname()
	}
	// The server samples the runtime on its own ticker (Collect): the
	// library's sampler is a goroutine that never stops.
	mc.EnableRuntimeMetrics = false
	m, err := metrics.New(mc, sinks)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	t.conf, t.sinks, t.m = mc, sinks, m
	return t, nil
}

// Close stops the statsd sink's sender. If t was the global instance, the
// global one discards from then on: raft (of this agent or another in the
// same process) may still report, and must not reach a closed sink.
func (t *Telemetry) Close() {
	if t.global.Load() {
		conf := *t.conf
		_, _ = metrics.NewGlobal(&conf, &metrics.BlackholeSink{})
	}
	if t.statsd != nil {
		t.statsd.Shutdown()
	}
}

// Metrics is where measurements go.
func (t *Telemetry) Metrics() *metrics.Metrics { return t.m }

// Interval is how often gauges are sampled.
func (t *Telemetry) Interval() time.Duration { return t.cfg.CollectionInterval }

// SetGlobal makes t receive what is reported to go-metrics' global
// instance (raft's metrics).
// The last agent to call it in a process wins.
func (t *Telemetry) SetGlobal() {
	t.global.Store(true)
	_, _ = metrics.NewGlobal(t.conf, t.sinks) // errs only on bad filters; there are none
}

// Summary is the in-memory sink's current and recent intervals, the body
// of /v1/metrics (Nomad's MetricsSummary).
// Before anything was measured it is empty.
func (t *Telemetry) Summary() metrics.MetricsSummary {
	// The sink creates the current interval when asked for its data, so
	// there is always one to show and DisplayMetrics does not fail.
	out, _ := t.inmem.DisplayMetrics(nil, nil)
	return out.(metrics.MetricsSummary)
}

// Prometheus serves the Prometheus exposition, or nil when it is off.
func (t *Telemetry) Prometheus() http.Handler {
	if t.registry == nil {
		return nil
	}
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}
