package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/logmon"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/hashicorp/nomad/api"
	"github.com/rs/zerolog"
)

// Nomad's client follows /v1/agent/monitor: the agent's log lines at the
// level asked for and above, as text or JSON.
func TestNomadClient_Monitor(t *testing.T) {
	s := servertest.New(t, nil, nil)
	hub := logmon.NewHub()
	log := zerolog.New(hub).With().Timestamp().Logger()
	a := httpapi.New(s, zerolog.Nop(), nil)
	a.SetLogs(hub)
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(a.Close) // first: Nomad's client leaves its stream open until a frame comes
	c := nomadClient(t, ts.URL)

	for _, asJSON := range []string{"false", "true"} {
		stop := make(chan struct{})
		frames, errs := c.Agent().Monitor(stop, &api.QueryOptions{Params: map[string]string{"log_level": "warn", "log_json": asJSON}})
		// The stream is open once the first (heartbeat) frame came; log
		// until a line arrives.
		deadline := time.After(10 * time.Second)
		var got string
	wait:
		for {
			log.Info().Msg("not for a warn monitor")
			log.Warn().Str("job", "web").Msg("something to see")
			select {
			case f := <-frames:
				got = string(f.Data)
				break wait
			case err := <-errs:
				t.Fatal(err)
			case <-deadline:
				t.Fatal("no log line reached the monitor")
			case <-time.After(20 * time.Millisecond):
			}
		}
		close(stop)
		if strings.Contains(got, "not for a warn monitor") || !strings.Contains(got, "something to see") {
			t.Fatalf("log_json=%s: got %q", asJSON, got)
		}
		if isJSON := strings.HasPrefix(got, "{"); isJSON != (asJSON == "true") || !strings.Contains(got, "web") {
			t.Fatalf("log_json=%s: got %q", asJSON, got)
		}
	}
	if resp, out := do(t, "GET", ts.URL+"/v1/agent/monitor?log_level=loud", ""); resp.StatusCode != 400 {
		t.Fatalf("bad level: %d %s", resp.StatusCode, out)
	}
}
