package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// metricsSummary is the part of /v1/metrics (Nomad's MetricsSummary) the
// test reads.
type metricsSummary struct {
	Gauges []struct {
		Name  string
		Value float32
	}
	Samples []struct {
		Name   string
		Count  int
		Labels map[string]string
	}
}

// A job scheduled through a server shows in /v1/metrics as Nomad's agent
// reports it: the scheduler invocation (by type, labelled with the
// plugin), the plan's verification and commit, and the leader's gauges;
// and, with Prometheus enabled, in Prometheus's format.
func TestAPI_Metrics(t *testing.T) {
	s := servertest.New(t, nil, func(c *server.Config) {
		c.Telemetry.CollectionInterval = 10 * time.Millisecond
		c.Telemetry.PrometheusMetrics = true
	})
	for i := 0; i < 3; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(httpapi.New(s, zerolog.Nop(), nil).Handler())
	t.Cleanup(ts.Close)
	evalID, _, err := s.RegisterJob(servertest.Job("web", sdk.JobTypeService, 2, 100, 128))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)

	// The JSON shows the in-memory sink's last finished ten-second
	// interval once there is one: an eval that ran just after a boundary
	// shows at the next.
	var missing []string
	for deadline := time.Now().Add(25 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if missing = metricsMissing(t, ts.URL); len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/v1/metrics lacks %v", missing)
		}
	}
	resp, out := do(t, "GET", ts.URL+"/v1/metrics?format=prometheus", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("prometheus: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), out)
	}
	for _, want := range []string{`drover_worker_invoke_scheduler_service{plugin="service",scheduler="service",quantile="0.5"}`,
		"drover_plan_apply", "drover_broker_total_ready", "go_goroutines"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("prometheus output lacks %s:\n%s", want, out)
		}
	}
}

func TestAPI_MetricsPrometheusOnlyWhenEnabled(t *testing.T) {
	ts, _ := newAPI(t, 0)
	resp, out := do(t, "GET", ts.URL+"/v1/metrics?format=prometheus", "")
	if resp.StatusCode != 400 || !strings.Contains(string(out), "prometheus_metrics") {
		t.Fatalf("prometheus while disabled: %d %s, want 400 naming the setting", resp.StatusCode, out)
	}
	if resp, out := do(t, "GET", ts.URL+"/v1/metrics", ""); resp.StatusCode != 200 || !strings.Contains(string(out), `"Gauges"`) {
		t.Fatalf("JSON metrics while Prometheus is off: %d %s", resp.StatusCode, out)
	}
}

// metricsMissing reads /v1/metrics and says what the test expects and does
// not find there.
func metricsMissing(t *testing.T, url string) []string {
	resp, out := do(t, "GET", url+"/v1/metrics", "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/metrics: %d %s", resp.StatusCode, out)
	}
	var sum metricsSummary
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("decode: %v: %s", err, out)
	}
	var missing []string
	gauges := map[string]float32{}
	for _, g := range sum.Gauges { // the highest value of a name's label sets
		gauges[g.Name] = max(gauges[g.Name], g.Value)
	}
	for _, name := range []string{"drover.broker.total_ready", "drover.broker.total_unacked", "drover.blocked_evals.total_blocked",
		"drover.plan.queue_depth", "drover.runtime.num_goroutines"} {
		if _, ok := gauges[name]; !ok {
			missing = append(missing, "gauge "+name)
		}
	}
	if gauges["drover.plugin.evals"] < 1 {
		missing = append(missing, "gauge drover.plugin.evals of at least 1")
	}
	if gauges["drover.heartbeat.active"] != 3 {
		missing = append(missing, "gauge drover.heartbeat.active = 3")
	}
	samples := map[string]map[string]string{}
	for _, smp := range sum.Samples {
		if smp.Count > 0 {
			samples[smp.Name] = smp.Labels
		}
	}
	for _, name := range []string{"drover.worker.invoke_scheduler.service", "drover.worker.submit_plan", "drover.worker.wait_for_index",
		"drover.plan.submit", "drover.plan.evaluate", "drover.plan.apply"} {
		if _, ok := samples[name]; !ok {
			missing = append(missing, "sample "+name)
		}
	}
	if l := samples["drover.worker.invoke_scheduler.service"]; l["plugin"] != "service" || l["scheduler"] != "service" {
		missing = append(missing, "invoke_scheduler labelled plugin=service, scheduler=service")
	}
	return missing
}
