package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// runNodes plays the nodes' part until the test ends: every allocation
// of job meant to run and still pending is reported running, and every
// one stopped that has not ended is reported complete.
func runNodes(t *testing.T, s *server.Server, job string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var ups []server.AllocUpdate
			for _, a := range s.Store().Snapshot().AllocsByJob("default", job) {
				switch {
				case a.DesiredStatus == sdk.AllocDesiredStatusRun && a.ClientStatus == sdk.AllocClientStatusPending:
					ups = append(ups, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning})
				case a.DesiredStatus != sdk.AllocDesiredStatusRun && !a.ClientTerminalStatus():
					ups = append(ups, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete})
				}
			}
			if len(ups) > 0 {
				if _, err := s.UpdateAllocsFromClient(ups); err != nil {
					t.Errorf("reporting allocations running: %v", err)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

// running are the IDs of job's allocations that run and are meant to.
func running(s *server.Server, job string) map[string]bool {
	out := map[string]bool{}
	for _, a := range s.Store().Snapshot().AllocsByJob("default", job) {
		if a.DesiredStatus == sdk.AllocDesiredStatusRun && a.ClientStatus == sdk.AllocClientStatusRunning {
			out[a.ID] = true
		}
	}
	return out
}

// job restart -reschedule stops the running allocations batch by batch
// and waits for each batch's replacements to run; without -reschedule it
// refuses, Drover's nodes serving no in-place restart.
func TestJobRestartCommand(t *testing.T) {
	s, addr, root := nsAgent(t)
	for i := range 3 {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	jobWithEval(t, s, "web") // two allocations
	runNodes(t, s, "web")
	servertest.WaitFor(t, "two allocations running", func() bool { return len(running(s, "web")) == 2 })
	before := running(s, "web")

	_, errOut := mustRun(t, 1, addr, root, "job", "restart", "-yes", "web")
	checkContains(t, "without -reschedule", errOut, "Drover cannot restart tasks in place", "Use -reschedule")
	// Said first, before the options' values (here -on-error's default,
	// ask, which a test's terminal cannot answer).
	_, errOut = mustRun(t, 1, addr, root, "job", "restart", "web")
	checkContains(t, "without -reschedule nor -yes", errOut, "Drover cannot restart tasks in place")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-reschedule", "-yes", "-batch-size", "x"}, `Invalid -batch-size value "x": batch size must be an integer or a percentage`},
		{[]string{"-reschedule", "-yes", "-batch-size", "0%"}, "number value must be greater than zero"},
		{[]string{"-reschedule", "-yes", "-batch-wait", "soon"}, `Invalid -batch-wait value "soon"`},
		{[]string{"-reschedule", "-batch-wait", "ask", "-on-error", "fail"}, `"ask" cannot be used when terminal is not interactive`},
		{[]string{"-reschedule"}, `Invalid -on-error value "ask": "ask" cannot be used when terminal is not interactive`},
		{[]string{"-reschedule", "-on-error", "retry"}, `valid options are "ask" and "fail"`},
		{[]string{"-reschedule", "-yes", "-task", "t"}, "The -reschedule option cannot be used with -task"},
		{[]string{"-reschedule", "-yes", "-no-shutdown-delay"}, "-no-shutdown-delay is not supported"},
	} {
		_, errOut := mustRun(t, 1, addr, root, append(append([]string{"job", "restart"}, tc.args...), "web")...)
		checkContains(t, strings.Join(tc.args, " "), errOut, tc.want)
	}
	out, _ := mustRun(t, 0, addr, root, "job", "restart", "-reschedule", "-yes", "-group", "other", "web")
	if out != "No allocations to restart\n" {
		t.Errorf("-group of no allocation: %q", out)
	}

	out, errOut = mustRun(t, 0, addr, root, "job", "restart", "-reschedule", "-on-error", "fail", "-batch-size", "50%", "-batch-wait", "10ms", "we")
	checkContains(t, "restart", out, ": Restarting 2 allocations\n", ": Rescheduling allocation ", " for group \"g\"\n",
		" replaced by ", ": Waiting 10ms before restarting the next batch\n", ": Job restart finished\n", "\nJob restarted successfully!\n")
	if strings.Contains(out, "batch of") {
		t.Errorf("a batch header with batches of one:\n%s", out)
	}
	if n := strings.Count(out, "Rescheduling allocation"); n != 2 {
		t.Errorf("%d allocations rescheduled, want 2:\n%s%s", n, out, errOut)
	}
	after := running(s, "web")
	if len(after) != 2 {
		t.Fatalf("%d allocations running after the restart, want 2", len(after))
	}
	for id := range after {
		if before[id] {
			t.Errorf("allocation %s still runs after the restart", id)
		}
	}

	// A replacement that cannot be placed stops the restart with the
	// placement failures.
	servertest.WaitFor(t, "the stopped allocations to end", func() bool {
		for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
			if a.DesiredStatus != sdk.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
				return false
			}
		}
		return true
	})
	for i := range 3 {
		n := s.Store().Snapshot().Node(servertest.Node(i, 0, 0).ID)
		mustRun(t, 0, addr, root, "node", "eligibility", "-disable", n.ID)
	}
	out, errOut = mustRun(t, 1, addr, root, "job", "restart", "-reschedule", "-on-error", "fail", "-batch-size", "1", "web")
	checkContains(t, "restart with no node to go to", out, ": Restarting 2 allocations\n", ": Stopping job restart due to error\n", ": Job restart finished with errors\n")
	checkContains(t, "restart with no node to go to", errOut, "1 error occurred while restarting job:\n* Error restarting allocation ",
		"has placement failures for group \"g\"")
	if n := strings.Count(out, "Rescheduling allocation"); n != 1 {
		t.Errorf("%d allocations stopped, want 1 (-on-error=fail):\n%s", n, out)
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}
