package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

func children(s *server.Server, parent string) []*sdk.Job {
	var out []*sdk.Job
	for _, j := range s.Store().Snapshot().JobsByIDPrefix("default", parent+server.PeriodicLaunchSuffix) {
		if j.ParentID == parent {
			out = append(out, j)
		}
	}
	return out
}

func periodicJob(id, spec string, overlap bool) *sdk.Job {
	j := servertest.Job(id, "batch", 1, 100, 64)
	j.Periodic = &sdk.PeriodicConfig{Enabled: true, Spec: spec, ProhibitOverlap: overlap}
	return j
}

// TestPeriodic_LaunchesChildrenOnSchedule: a periodic job every second
// launches children with a periodic-job eval, and records each launch.
func TestPeriodic_LaunchesChildrenOnSchedule(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	if id := registerJob(t, s, periodicJob("tick", "* * * * * * *", false)); id != "" {
		t.Fatalf("a periodic template got an eval %s", id)
	}
	servertest.WaitFor(t, "two launches", func() bool { return len(children(s, "tick")) >= 2 })
	for _, c := range children(s, "tick") {
		if c.Periodic != nil || !strings.HasPrefix(c.ID, "tick/periodic-") {
			t.Fatalf("child %+v", c)
		}
		evals := s.Store().Snapshot().EvalsByJob("default", c.ID)
		if len(evals) != 1 || evals[0].TriggeredBy != sdk.EvalTriggerPeriodicJob {
			t.Fatalf("child %s evals %+v", c.ID, evals)
		}
	}
	l := s.Store().Snapshot().PeriodicLaunch("default", "tick")
	if l == nil || time.Since(time.Unix(0, l.Launch)) > 5*time.Second {
		t.Fatalf("launch record %+v", l)
	}
	// Stopping the parent stops the launches.
	if _, _, err := s.DeregisterJob("default", "tick", false); err != nil {
		t.Fatal(err)
	}
	n := len(children(s, "tick"))
	time.Sleep(2500 * time.Millisecond)
	if got := len(children(s, "tick")); got > n+1 {
		t.Fatalf("%d launches after the parent stopped (had %d)", got, n)
	}
}

// TestPeriodic_ProhibitOverlap: with prohibit_overlap no launch happens
// while a child still runs; without it, children pile up.
func TestPeriodic_ProhibitOverlap(t *testing.T) {
	s := rig(t, placer) // placed allocations stay pending: children keep running
	registerNode(t, s, 0, 100_000)
	registerJob(t, s, periodicJob("lone", "* * * * * * *", true))
	registerJob(t, s, periodicJob("many", "* * * * * * *", false))
	servertest.WaitFor(t, "three launches of the overlapping job", func() bool { return len(children(s, "many")) >= 3 })
	if n := len(children(s, "lone")); n != 1 {
		t.Fatalf("%d children of the non-overlapping job, want 1", n)
	}
}

// TestPeriodic_MissedLaunchMadeUpByNewLeader: a periodic job whose last
// launch is older than its schedule allows is launched as soon as a leader
// takes over.
func TestPeriodic_MissedLaunchMadeUpByNewLeader(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, placer)
	registerNode(t, s, 0, 100_000)
	// Registered two hours ago (its registration counts as its first
	// launch), hourly: a launch is overdue.
	j := periodicJob("hourly", "0 * * * *", false)
	j.Namespace, j.Priority = "default", 50
	j.SubmitTime = time.Now().Add(-2 * time.Hour).UnixNano()
	if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: j}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(children(s, "hourly")); n != 0 {
		t.Fatalf("%d launches before the leader changed", n)
	}
	must(t, s.Shutdown())

	s = startDurable(t, dir, placer)
	servertest.WaitFor(t, "the missed launch", func() bool { return len(children(s, "hourly")) == 1 })
}

// TestPeriodic_MissedLaunchKeepsProhibitOverlap: the launch a new leader
// makes up is skipped while the previous child of a prohibit_overlap job
// still runs, as a launch on schedule would be, and as Nomad's new leader
// skips it.
func TestPeriodic_MissedLaunchKeepsProhibitOverlap(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, placer)
	registerNode(t, s, 0, 100_000)
	// Both registered three hours ago, hourly: a launch of each is
	// overdue. "hourly" launched two hours ago, and that child has not
	// finished (no eval has run it); "later" is there to show when the
	// new leader has made up the missed launches: its own is, and it
	// comes after "hourly" in the leader's pass over the jobs.
	for _, id := range []string{"hourly", "later"} {
		j := periodicJob(id, "0 * * * *", true)
		j.Namespace, j.Priority = "default", 50
		j.SubmitTime = time.Now().Add(-3 * time.Hour).UnixNano()
		if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	j := s.Store().Snapshot().Job("default", "hourly")
	launched := time.Now().Add(-2 * time.Hour)
	child := *j
	child.ID = fmt.Sprintf("%s%s%d", j.ID, server.PeriodicLaunchSuffix, launched.Unix())
	child.Name, child.ParentID, child.Periodic = child.ID, j.ID, nil
	if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: &child, LaunchTime: launched.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	must(t, s.Shutdown())

	s = startDurable(t, dir, placer)
	servertest.WaitFor(t, "the missed launch of the other job", func() bool { return len(children(s, "later")) == 1 })
	if n := len(children(s, "hourly")); n != 1 {
		t.Fatalf("%d children, want only the one still running", n)
	}
}
