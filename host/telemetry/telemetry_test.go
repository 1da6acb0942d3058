package telemetry

import (
	"net"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
)

// Every metric reaches each configured sink: the in-memory one behind
// /v1/metrics, Prometheus and statsd.
func TestTelemetry_EverySinkGetsTheMetrics(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	cfg := DefaultConfig()
	cfg.PrometheusMetrics = true
	cfg.StatsdAddress = udp.LocalAddr().String()
	tel, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tel.Prometheus() == nil {
		t.Fatal("Prometheus enabled but not served")
	}
	tel.Metrics().IncrCounter([]string{"worker", "eval_nacked"}, 1)

	found := false
	for _, c := range tel.Summary().Counters {
		found = found || c.Name == "drover.worker.eval_nacked"
	}
	if !found {
		t.Errorf("the in-memory summary lacks the counter: %+v", tel.Summary())
	}
	_ = udp.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1024)
	n, _, err := udp.ReadFrom(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "drover.worker.eval_nacked:1") {
		t.Errorf("statsd got %q, %v", buf[:n], err)
	}
}

func TestTelemetry_EmptySummaryAndNoPrometheusByDefault(t *testing.T) {
	tel, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if s := tel.Summary(); s.Gauges == nil || len(s.Gauges)+len(s.Counters)+len(s.Samples) != 0 {
		t.Fatalf("before any metric: %+v, want an empty summary", s)
	}
	if tel.Prometheus() != nil {
		t.Fatal("Prometheus served without being enabled")
	}
	if _, err := New(Config{StatsdAddress: "no port"}); err == nil {
		t.Fatal("a bad statsd address was accepted")
	}
}

// After the global instance's telemetry closes, what raft reports through
// the global one is discarded, not sent to a closed statsd sink (a panic).
func TestTelemetry_CloseLeavesTheGlobalDiscarding(t *testing.T) {
	tel, err := New(Config{StatsdAddress: "127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	tel.SetGlobal()
	tel.Close()
	metrics.IncrCounter([]string{"raft", "apply"}, 1)
}
