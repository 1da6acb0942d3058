package server_test

import (
	"errors"
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
	// The leader makes up missed launches as it starts: the job must come
	// after, or it is one of them.
	servertest.WaitFor(t, "the leader's pass over the periodic jobs", func() bool { return server.PeriodicPasses(s) > 0 })
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
	servertest.WaitFor(t, "the leader's pass over the periodic jobs", func() bool { return server.PeriodicPasses(s) > 0 })
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

// TestPeriodic_DisabledJobIsATemplateThatDoesNotLaunch: a job whose
// periodic block is disabled is still periodic, as in Nomad: its
// registration creates no eval, it is "running" (a template), and it is
// neither launched on schedule nor forced.
func TestPeriodic_DisabledJobIsATemplateThatDoesNotLaunch(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	j := periodicJob("paused", "* * * * * * *", false)
	j.Periodic.Enabled = false
	if id := registerJob(t, s, j); id != "" {
		t.Fatalf("a disabled periodic job got an eval %s", id)
	}
	snap := s.Store().Snapshot()
	if evals := snap.EvalsByJob("default", "paused"); len(evals) != 0 {
		t.Fatalf("evals %+v", evals)
	}
	if got := snap.Job("default", "paused"); got.Status != sdk.JobStatusRunning || !got.IsPeriodic() {
		t.Fatalf("job status %q, periodic %v; want running, periodic", got.Status, got.IsPeriodic())
	}
	if _, _, err := s.ForcePeriodicRun("default", "paused"); !errors.Is(err, server.ErrNotPeriodic) {
		t.Fatalf("force run: %v, want ErrNotPeriodic", err)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := len(children(s, "paused")); n != 0 {
		t.Fatalf("%d launches of a disabled periodic job", n)
	}
	if s.Store().Snapshot().PeriodicLaunch("default", "paused") != nil {
		t.Fatal("a disabled periodic job's registration was recorded as a launch")
	}
}

// TestPeriodic_DisablingPausesLaunches: registering an active periodic job
// again with enabled = false (Nomad's way to pause it) is an update like
// any other: launches stop, and enabling it again resumes them.
func TestPeriodic_DisablingPausesLaunches(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	registerJob(t, s, periodicJob("tick", "* * * * * * *", false))
	servertest.WaitFor(t, "a launch", func() bool { return len(children(s, "tick")) >= 1 })

	j := periodicJob("tick", "* * * * * * *", false)
	j.Periodic.Enabled = false
	if id := registerJob(t, s, j); id != "" {
		t.Fatalf("disabling got an eval %s", id)
	}
	n := len(children(s, "tick"))
	time.Sleep(2500 * time.Millisecond)
	if got := len(children(s, "tick")); got > n+1 { // one may have been under way
		t.Fatalf("%d launches after the job was disabled (had %d)", got, n)
	}
	if st := s.Store().Snapshot().Job("default", "tick").Status; st != sdk.JobStatusRunning {
		t.Fatalf("disabled job is %s, want running", st)
	}

	n = len(children(s, "tick"))
	registerJob(t, s, periodicJob("tick", "* * * * * * *", false))
	servertest.WaitFor(t, "launches again", func() bool { return len(children(s, "tick")) >= n+2 })
}

// TestPeriodic_ParameterizedTemplateNeverLaunches: a job both periodic and
// parameterized is a template of templates: it is not launched (nor can
// it be forced); its dispatched jobs are.
func TestPeriodic_ParameterizedTemplateNeverLaunches(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	j := periodicJob("pp", "* * * * * * *", false)
	j.ParameterizedJob = &sdk.ParameterizedJobConfig{Payload: sdk.DispatchPayloadOptional}
	if id := registerJob(t, s, j); id != "" {
		t.Fatalf("the template got an eval %s", id)
	}
	if _, _, err := s.ForcePeriodicRun("default", "pp"); !errors.Is(err, server.ErrNotPeriodic) {
		t.Fatalf("force run: %v, want ErrNotPeriodic", err)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := len(children(s, "pp")); n != 0 {
		t.Fatalf("%d launches of a periodic parameterized template", n)
	}
}

// TestPeriodic_DispatchedChildIsLaunchedOnSchedule: dispatching a periodic
// parameterized job registers a periodic job, as Nomad's Job.Dispatch: no
// eval (the dispatched job itself never runs), and the launcher launches
// it on the schedule, each launch carrying the dispatch's payload.
func TestPeriodic_DispatchedChildIsLaunchedOnSchedule(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	j := periodicJob("pp", "* * * * * * *", false)
	j.ParameterizedJob = &sdk.ParameterizedJobConfig{Payload: sdk.DispatchPayloadOptional}
	registerJob(t, s, j)
	res, err := s.DispatchJob("default", "pp", server.DispatchRequest{Payload: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if res.EvalID != "" || res.Index == 0 || res.JobCreateIndex != res.Index {
		t.Fatalf("dispatch result %+v, want no eval", res)
	}
	child := s.Store().Snapshot().Job("default", res.DispatchedJobID)
	if !child.IsPeriodicActive() || child.Status != sdk.JobStatusRunning {
		t.Fatalf("dispatched job %+v is not an active periodic job", child)
	}

	servertest.WaitFor(t, "two launches of the dispatched job", func() bool { return len(children(s, child.ID)) >= 2 })
	snap := s.Store().Snapshot()
	for _, c := range children(s, child.ID) {
		if c.Periodic != nil || !c.Dispatched || string(c.Payload) != "x" {
			t.Fatalf("launch %+v", c)
		}
		if evals := snap.EvalsByJob("default", c.ID); len(evals) != 1 || evals[0].TriggeredBy != sdk.EvalTriggerPeriodicJob {
			t.Fatalf("launch %s evals %+v", c.ID, evals)
		}
	}
	if evals := snap.EvalsByJob("default", child.ID); len(evals) != 0 {
		t.Fatalf("the dispatched periodic job was evaluated: %+v", evals)
	}
	if snap.PeriodicLaunch("default", child.ID) == nil {
		t.Fatal("the dispatched job's launches are not recorded")
	}
	if n := len(children(s, "pp")); n != 0 {
		t.Fatalf("%d launches of the template", n)
	}

	// A dispatched job can be forced, as a periodic job can (hourly: no
	// launch on schedule the same second).
	hourly := periodicJob("pph", "0 * * * *", false)
	hourly.ParameterizedJob = &sdk.ParameterizedJobConfig{Payload: sdk.DispatchPayloadOptional}
	registerJob(t, s, hourly)
	res, err = s.DispatchJob("default", "pph", server.DispatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if evalID, _, err := s.ForcePeriodicRun("default", res.DispatchedJobID); err != nil || evalID == "" {
		t.Fatalf("force run of the dispatched job: %q, %v", evalID, err)
	}
	if n := len(children(s, res.DispatchedJobID)); n != 1 {
		t.Fatalf("%d launches of the forced dispatched job, want 1", n)
	}
}

// TestPeriodic_ReversedMonthRange: a spec that cronexpr parses but panics
// on (a month range written backwards) is refused at registration, and a
// job stored with one before does not crash the leader's launcher: it is
// not scheduled, and other jobs still launch.
func TestPeriodic_ReversedMonthRange(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	if _, _, err := s.RegisterJob(periodicJob("yearend", "0 0 * DEC-JAN *", false)); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("registration: %v, want ErrInvalid", err)
	}

	stored := periodicJob("stored", "0 0 * 10-1 *", false)
	stored.Namespace, stored.Priority, stored.SubmitTime = "default", 50, time.Now().UnixNano()
	if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: stored}); err != nil {
		t.Fatal(err)
	}
	registerJob(t, s, periodicJob("tick", "* * * * * * *", false))
	servertest.WaitFor(t, "a launch of the other job", func() bool { return len(children(s, "tick")) >= 1 })
	if n := len(children(s, "stored")); n != 0 {
		t.Fatalf("%d launches of the job with a reversed month range", n)
	}
}

// A job with a disabled periodic block that ran as an ordinary job (before
// Drover read such a block as periodic, as Nomad does) still has
// allocations: stopping it evaluates it, so that they stop.
func TestPeriodic_StoppingADisabledJobThatRanStopsItsAllocations(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	j := servertest.Job("old", sdk.JobTypeBatch, 1, 100, 64)
	servertest.WaitForEval(t, s, registerJob(t, s, j))
	// As a state written by an earlier version: the same job, its
	// periodic block disabled, registered without validation.
	stored := s.Store().Snapshot().Job("default", "old").Copy()
	stored.Periodic = &sdk.PeriodicConfig{Spec: "@hourly"}
	if _, err := s.Apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: stored}); err != nil {
		t.Fatal(err)
	}
	evalID, _, err := s.DeregisterJobOpts("default", "old", server.DeregisterOptions{})
	if err != nil || evalID == "" {
		t.Fatalf("deregister: eval %q, %v; want an eval for the allocation it runs", evalID, err)
	}
	servertest.WaitForEval(t, s, evalID)
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "old") {
		if !a.TerminalStatus() {
			t.Fatalf("allocation %s still %s/%s", a.ID, a.DesiredStatus, a.ClientStatus)
		}
	}
}
