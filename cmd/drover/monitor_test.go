package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/cli"
)

// TestMonitor_StatusChangesFromTheHistory: an eval done before the
// monitor's first read still shows its status change, once, from its
// history; without statuses in the history the change is seen from read
// to read.
func TestMonitor_StatusChangesFromTheHistory(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	phase := func(p string, s int) server.PhaseEvent {
		return server.PhaseEvent{Phase: p, Time: at.Add(time.Duration(s) * time.Second)}
	}
	full := []server.PhaseEvent{phase(sdk.EvalStatusPending, 0), phase(sdk.EvalPhaseQueued, 1), phase(sdk.EvalPhaseScheduling, 2),
		phase(sdk.EvalPhaseApplying, 3), phase(sdk.EvalStatusComplete, 4)}
	quasi := []server.PhaseEvent{phase(sdk.EvalPhaseQueued, 1), phase(sdk.EvalPhaseScheduling, 2)}
	for _, tt := range []struct {
		name  string
		reads []httpapi.EvalResponse // what each read answers; the last repeats
		want  []string               // in order
	}{
		{"done before the first read", []httpapi.EvalResponse{
			{Evaluation: &sdk.Evaluation{ID: "e1", JobID: "web", Status: sdk.EvalStatusComplete}, History: full},
		}, []string{`Evaluation triggered by job "web"`, "Evaluation is queued", "Evaluation is scheduling",
			"Evaluation is applying", `12:00:04Z: Evaluation status changed: "pending" -> "complete"`, `finished with status "complete"`}},
		{"seen pending, then done", []httpapi.EvalResponse{
			{Evaluation: &sdk.Evaluation{ID: "e1", JobID: "web", Status: sdk.EvalStatusPending}, History: full[:2]},
			{Evaluation: &sdk.Evaluation{ID: "e1", JobID: "web", Status: sdk.EvalStatusComplete}, History: full},
		}, []string{"Evaluation is queued", "Evaluation is scheduling", `Evaluation status changed: "pending" -> "complete"`}},
		{"a history without statuses", []httpapi.EvalResponse{
			{Evaluation: &sdk.Evaluation{ID: "e1", JobID: "web", Status: sdk.EvalStatusPending}, History: quasi},
			{Evaluation: &sdk.Evaluation{ID: "e1", JobID: "web", Status: sdk.EvalStatusComplete}, History: quasi},
		}, []string{"Evaluation is scheduling", `Evaluation status changed: "pending" -> "complete"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/allocations") {
					w.Write([]byte("[]"))
					return
				}
				w.Header().Set("X-Nomad-Index", "7")
				json.NewEncoder(w).Encode(tt.reads[min(n, len(tt.reads)-1)])
				n++
			}))
			defer srv.Close()
			cl, err := client.New(srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			ui := cli.NewMockUi()
			m := &meta{ui: ui, now: func() time.Time { return at.Add(time.Minute) }}
			if code := newMonitor(m, cl).monitor("e1"); code != exitOK {
				t.Fatalf("exit code %d", code)
			}
			out := ui.OutputWriter.String()
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q after what came before:\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			if c := strings.Count(out, "status changed"); c != 1 {
				t.Fatalf("%d status changes reported:\n%s", c, out)
			}
		})
	}
}

// TestPlacementFailures_Wording: as Nomad's CLI, the group line counts
// one allocation or several.
func TestPlacementFailures_Wording(t *testing.T) {
	got := placementFailures(map[string]*sdk.AllocMetric{
		"one":   {NodesEvaluated: 1, NodesExhausted: 1},
		"three": {NodesEvaluated: 1, NodesExhausted: 1, CoalescedFailures: 2},
	}, "")
	for _, want := range []string{`Task Group "one" (failed to place 1 allocation):`, `Task Group "three" (failed to place 3 allocations):`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
