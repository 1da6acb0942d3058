package main

import (
	"net/http/httptest"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/rs/zerolog"
)

// agent-info prints /v1/agent/self's statistics as Nomad's: sections and
// keys sorted; -json and -t print the API's answer.
func TestAgentInfoCommand(t *testing.T) {
	s := servertest.New(t, nil, nil)
	self := func() *httpapi.AgentSelf {
		return &httpapi.AgentSelf{Stats: map[string]map[string]string{
			"raft":  {"state": "Leader", "applied_index": "12"},
			"nomad": {"server": "true", "leader": "true", "bootstrap": "false"},
		}}
	}
	ts := httptest.NewServer(httpapi.New(s, zerolog.New(zerolog.NewTestWriter(t)), self).Handler())
	t.Cleanup(ts.Close)
	out, _ := mustRun(t, 0, ts.URL, "", "agent-info")
	want := "nomad\n  bootstrap = false\n  leader = true\n  server = true\nraft\n  applied_index = 12\n  state = Leader\n"
	if out != want {
		t.Errorf("agent-info:\n%s\nwant:\n%s", out, want)
	}
	out, _ = mustRun(t, 0, ts.URL, "", "agent-info", "-t", "{{.Stats.raft.state}} {{.Config.Version.Version}}")
	if want := "Leader " + httpapi.Version().Version + "\n"; out != want {
		t.Errorf("agent-info -t: %q, want %q", out, want)
	}
	out, _ = mustRun(t, 0, ts.URL, "", "agent-info", "-json")
	checkContains(t, "agent-info -json", out, `"stats": {`, `"config": {`, `"state": "Leader"`)
	_, errOut := mustRun(t, 1, ts.URL, "", "agent-info", "-json", "-t", "x")
	checkContains(t, "-json and -t", errOut, errJSONAndTemplate)
	_, errOut = mustRun(t, 1, ts.URL, "", "agent-info", "x")
	checkContains(t, "an argument", errOut, "This command takes no arguments")
}
