package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func TestServer_RegisterJobPlacesAllocations(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for i := 0; i < 3; i++ {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	evalID, _, err := s.RegisterJob(servertest.Job("web", "service", 5, 500, 256))
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.WaitForEval(t, s, evalID)
	if e.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval status %s: %s", e.Status, e.StatusDescription)
	}
	allocs := s.Store().Snapshot().AllocsByJob("default", "web")
	if len(allocs) != 5 {
		t.Fatalf("placed %d allocations, want 5", len(allocs))
	}
	// Stopping the job stops every allocation.
	evalID, _, err = s.DeregisterJob("default", "web", false)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "web") {
		if a.DesiredStatus != sdk.AllocDesiredStatusStop {
			t.Errorf("alloc %s still %s after job stop", a.Name, a.DesiredStatus)
		}
	}
}

func TestServer_UnplaceableJobBlocksThenUnblocksOnNewNode(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 1000, 1024)); err != nil {
		t.Fatal(err)
	}
	evalID, _, err := s.RegisterJob(servertest.Job("big", "service", 2, 800, 512))
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.WaitForEval(t, s, evalID)
	if e.Status != sdk.EvalStatusComplete || e.BlockedEval == "" || e.QueuedAllocations["g"] != 1 {
		t.Fatalf("want complete with a blocked eval and 1 queued, got %+v", e)
	}
	if e.FailedTGAllocs["g"] == nil || e.FailedTGAllocs["g"].DimensionExhausted["cpu"] == 0 {
		t.Fatalf("failure not explained: %+v", e.FailedTGAllocs["g"])
	}
	blocked := s.Store().Snapshot().Eval(e.BlockedEval)
	if blocked.Status != sdk.EvalStatusBlocked || blocked.PreviousEval != evalID || blocked.TriggeredBy != sdk.EvalTriggerQueuedAllocs {
		t.Fatalf("blocked eval = %+v", blocked)
	}
	// A new node unblocks it and the second allocation is placed.
	if _, _, err := s.RegisterNode(servertest.Node(1, 1000, 1024)); err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, blocked.ID, sdk.EvalStatusComplete)
	live := 0
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "big") {
		if !a.TerminalStatus() {
			live++
		}
	}
	if live != 2 {
		t.Fatalf("live allocations = %d, want 2", live)
	}
}

// Two writers with the same check-and-set index: exactly one wins, because
// the index is compared in the FSM, not on a snapshot beforehand.
func TestServer_SchedulerConfigCASIsAtomic(t *testing.T) {
	s := servertest.New(t, nil, nil)
	cur := s.Store().Snapshot().SchedulerConfig().ModifyIndex
	const writers = 8
	won := make(chan bool, writers)
	for i := 0; i < writers; i++ {
		go func() {
			ok, _, err := s.SetSchedulerConfigCAS(&sdk.SchedulerConfiguration{SchedulerAlgorithm: sdk.SchedulerAlgorithmSpread}, cur)
			if err != nil {
				t.Error(err)
			}
			won <- ok
		}()
	}
	wins := 0
	for i := 0; i < writers; i++ {
		if <-won {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d writers won with the same index, want 1", wins)
	}
}

func TestServer_JobOverThePlanLimitIsRefused(t *testing.T) {
	s := servertest.New(t, nil, func(c *server.Config) { c.PlanLimits.MaxAllocs = 100 })
	_, _, err := s.RegisterJob(servertest.Job("huge", "service", 101, 10, 10))
	if !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), "more than 100 allocations in all, over the plan size limit") {
		t.Fatalf("err = %v", err)
	}
	// Counts whose sum overflows an int are refused too, not wrapped
	// below the limit.
	wrap := servertest.Job("wrap", "service", 1<<62, 10, 10)
	for _, name := range []string{"b", "c", "d"} {
		tg := *wrap.TaskGroups[0]
		tg.Name = name
		wrap.TaskGroups = append(wrap.TaskGroups, &tg)
	}
	if _, _, err := s.RegisterJob(wrap); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), "plan size limit") {
		t.Fatalf("four groups of 2^62: err = %v", err)
	}
	if _, _, err := s.RegisterJob(servertest.Job("fits", "service", 100, 10, 10)); err != nil {
		t.Fatal(err)
	}
}

// A node's datacenter may not hold the wildcard of a job's datacenter
// globs, as in Nomad.
func TestServer_NodeDatacenterWithAWildcardIsRefused(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for _, dc := range []string{"dc*", "*", "a\x00b"} {
		n := servertest.Node(1, 4000, 8192)
		n.Datacenter = dc
		if _, _, err := s.RegisterNode(n); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), "may not contain") {
			t.Fatalf("datacenter %q: err = %v", dc, err)
		}
	}
	n := servertest.Node(1, 4000, 8192)
	n.Datacenter = "eu/west-1"
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
}

// A failed allocation gets an alloc-failure eval only when its group's
// reschedule policy allows another attempt, as in Nomad: a system job has
// no policy (and its scheduler takes no such evals), and a policy without
// attempts reschedules nothing.
func TestServer_AllocFailureEvalOnlyWhenReschedulable(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	unlimited := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
	unlimited.TaskGroups[0].ReschedulePolicy = &sdk.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second, DelayFunction: sdk.DelayFunctionConstant}
	none := servertest.Job("once", sdk.JobTypeBatch, 1, 100, 64)
	none.TaskGroups[0].ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: 0}
	system := servertest.Job("agent", sdk.JobTypeSystem, 1, 100, 64)
	for _, tc := range []struct {
		job  *sdk.Job
		want int
	}{{unlimited, 1}, {none, 0}, {system, 0}} {
		t.Run(tc.job.ID, func(t *testing.T) {
			evalID, _, err := s.RegisterJob(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			servertest.WaitForEval(t, s, evalID)
			allocs := s.Store().Snapshot().AllocsByJob("default", tc.job.ID)
			if len(allocs) != 1 {
				t.Fatalf("placed %d", len(allocs))
			}
			if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: allocs[0].ID, ClientStatus: sdk.AllocClientStatusFailed}}); err != nil {
				t.Fatal(err)
			}
			// Count the evals the update made, not the scheduler's delayed
			// follow-up (same trigger, WaitUntil set), which the first may
			// already have created when the snapshot is taken.
			got := 0
			for _, e := range s.Store().Snapshot().EvalsByJob("default", tc.job.ID) {
				if e.TriggeredBy == sdk.EvalTriggerRetryFailedAlloc && e.WaitUntil.IsZero() {
					got++
					if e := servertest.WaitForEval(t, s, e.ID); e.Status == sdk.EvalStatusFailed {
						t.Fatalf("the alloc-failure eval failed: %s", e.StatusDescription)
					}
				}
			}
			if got != tc.want {
				t.Fatalf("%d alloc-failure evals, want %d", got, tc.want)
			}
		})
	}
}

// A job keeps its type, and stays periodic or parameterized or not, until
// it is purged, as in Nomad: stopping it is not enough.
func TestServer_JobKeepsItsKindUntilPurged(t *testing.T) {
	s := servertest.New(t, nil, nil)
	service := func() *sdk.Job { return servertest.Job("web", sdk.JobTypeService, 1, 100, 64) }
	if _, _, err := s.RegisterJob(service()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeregisterJob("default", "web", false); err != nil {
		t.Fatal(err)
	}
	periodic := service()
	periodic.Periodic = &sdk.PeriodicConfig{Enabled: true, SpecType: "cron", Specs: []string{"*/5 * * * *"}}
	parameterized := service()
	parameterized.ParameterizedJob = &sdk.ParameterizedJobConfig{Payload: "optional"}
	dispatched := service()
	dispatched.Dispatched = true
	for name, tc := range map[string]struct {
		job  *sdk.Job
		want string
	}{
		"type":          {servertest.Job("web", sdk.JobTypeBatch, 1, 100, 64), `from type "service" to "batch"`},
		"periodic":      {periodic, "periodic"},
		"parameterized": {parameterized, "parameterized"},
		"dispatched":    {dispatched, "Dispatched is read-only"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := s.RegisterJob(tc.job)
			if !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it refused for %q", err, tc.want)
			}
		})
	}
	// Purged, the ID is free for a job of another kind.
	if _, _, err := s.DeregisterJob("default", "web", true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.RegisterJob(servertest.Job("web", sdk.JobTypeBatch, 1, 100, 64)); err != nil {
		t.Fatalf("after the purge: %v", err)
	}
	d := service()
	d.ID, d.Dispatched = "new", true
	if _, _, err := s.RegisterJob(d); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), "dispatched") {
		t.Fatalf("registering a dispatched job: err = %v", err)
	}
}

// TestServer_JobNamingTheCoreSchedulerIsRefused: the core plugin takes
// only the agent's own evals, so a job that names it would fail every
// eval; its registration is refused instead, as an unknown name's is.
func TestServer_JobNamingTheCoreSchedulerIsRefused(t *testing.T) {
	reg := servertest.NativeBuiltins(t, 1)
	servertest.AddNative(t, reg, plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}}, 1,
		func() sdk.Scheduler {
			return sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error { return nil })
		})
	s := servertest.New(t, reg, nil)
	for _, name := range []string{"core", "nonesuch"} {
		job := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
		job.Scheduler = name
		if _, _, err := s.RegisterJob(job); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("scheduler %q: err = %v, want it refused", name, err)
		}
	}
}

// TestServer_SummaryQueuedIgnoresCanceledEvals: a blocked eval that was
// reblocked counted its group's allocations as queued; the job's update
// then placed them all and canceled the blocked eval, which rewrote it
// last. Its count is not the job's any more: Nomad's summary changes only
// when a scheduler writes an eval, and canceling is not that.
func TestServer_SummaryQueuedIgnoresCanceledEvals(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	evalID, _, err := s.RegisterJob(servertest.Job("hc", sdk.JobTypeBatch, 5, 100000, 64))
	if err != nil {
		t.Fatal(err)
	}
	first := servertest.WaitForEval(t, s, evalID)
	blockedID := first.BlockedEval
	if blockedID == "" {
		t.Fatalf("no blocked eval: %+v", first)
	}
	// A node joins: the blocked eval runs again, places nothing and is
	// reblocked, counting the five allocations queued.
	if _, _, err := s.RegisterNode(servertest.Node(1, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the blocked eval to be reblocked", func() bool {
		e := s.Store().Snapshot().Eval(blockedID)
		return e != nil && e.Status == sdk.EvalStatusBlocked && e.QueuedAllocations["g"] == 5
	})
	evalID, _, err = s.RegisterJob(servertest.Job("hc", sdk.JobTypeBatch, 5, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	servertest.WaitFor(t, "the blocked eval to be canceled", func() bool {
		e := s.Store().Snapshot().Eval(blockedID)
		return e != nil && e.Status == sdk.EvalStatusCanceled
	})
	snap := s.Store().Snapshot()
	if n := len(snap.AllocsByJob("default", "hc")); n != 5 {
		t.Fatalf("%d allocations, want 5", n)
	}
	if got := server.JobSummary(snap, snap.Job("default", "hc")).Summary["g"].Queued; got != 0 {
		t.Fatalf("Queued = %d with every allocation placed", got)
	}
}

// After a job is purged and registered again, its summary counts only the
// new instance (it starts from zero, as Nomad's), and forcing a reschedule
// leaves the purged instance's failed allocations alone (Nomad's looks
// only at the job's own); the state still holds every allocation of the
// ID, which schedulers see.
func TestServer_PurgedAndReregisteredJobStartsAfresh(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	job := func() *sdk.Job {
		j := servertest.Job("b", sdk.JobTypeBatch, 2, 100, 64)
		j.TaskGroups[0].ReschedulePolicy = &sdk.ReschedulePolicy{Attempts: 0}
		return j
	}
	register := func() []*sdk.Allocation {
		t.Helper()
		evalID, _, err := s.RegisterJob(job())
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, evalID)
		snap := s.Store().Snapshot()
		return snap.AllocsByJobInstance("default", "b")
	}
	summary := func() server.TaskGroupSummary {
		snap := s.Store().Snapshot()
		return *server.JobSummary(snap, snap.Job("default", "b")).Summary["g"]
	}
	old := register()
	if len(old) != 2 {
		t.Fatalf("placed %d allocations, want 2", len(old))
	}
	if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: old[0].ID, ClientStatus: sdk.AllocClientStatusFailed},
		{ID: old[1].ID, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	if got, want := summary(), (server.TaskGroupSummary{Failed: 1, Complete: 1}); got != want {
		t.Fatalf("summary before the purge %+v, want %+v", got, want)
	}
	evalID, _, err := s.DeregisterJob("default", "b", true)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)

	cur := register()
	if len(cur) != 2 {
		t.Fatalf("the new instance has %d allocations, want 2", len(cur))
	}
	for _, a := range cur {
		if a.ID == old[0].ID || a.ID == old[1].ID {
			t.Fatalf("the purged instance's allocation %s is counted as the new instance's", a.ID)
		}
	}
	if got, want := summary(), (server.TaskGroupSummary{Starting: 2}); got != want {
		t.Fatalf("summary after the new registration %+v, want %+v", got, want)
	}
	if n := len(s.Store().Snapshot().AllocsByJob("default", "b")); n != 4 {
		t.Fatalf("the state holds %d allocations of b, want both instances' 4", n)
	}

	evalID, _, err = s.EvaluateJobOpts("default", "b", server.EvaluateOptions{ForceReschedule: true})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	if a := s.Store().Snapshot().Alloc(old[0].ID); a.DesiredTransition.ShouldForceReschedule() || a.NextAllocation != "" {
		t.Fatalf("the purged instance's failed allocation was marked for rescheduling (%v) or replaced (%q)",
			a.DesiredTransition.ShouldForceReschedule(), a.NextAllocation)
	}
}

// JobSummary counts only what belongs to the job's instance: not the
// allocations of one purged before, nor the queued allocations of its
// evaluations, nor the children it launched.
func TestJobSummary_LeavesOutAPurgedInstance(t *testing.T) {
	st, err := state.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	index := uint64(0)
	write := func(fn func(tx *state.Txn) error) {
		t.Helper()
		index++
		if err := st.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	web := func() *sdk.Job {
		j := servertest.Job("web", sdk.JobTypeService, 2, 100, 64)
		j.Namespace = "default"
		return j
	}
	report := func() *sdk.Job {
		j := servertest.Job("report", sdk.JobTypeBatch, 1, 100, 64)
		j.Namespace, j.ParameterizedJob = "default", &sdk.ParameterizedJobConfig{Payload: sdk.DispatchPayloadOptional}
		return j
	}
	child := func(id string) *sdk.Job {
		j := servertest.Job(id, sdk.JobTypeBatch, 1, 100, 64)
		j.Namespace, j.ParentID, j.Dispatched = "default", "report", true
		return j
	}
	alloc := func(tx *state.Txn, id, status string) error {
		return tx.UpsertAlloc(&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", Job: tx.Job("default", "web"),
			TaskGroup: "g", NodeID: "n1", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: status})
	}
	eval := func(tx *state.Txn, id, status string, queued map[string]int) error {
		return tx.UpsertEval(&sdk.Evaluation{ID: id, Namespace: "default", JobID: "web", Status: status, QueuedAllocations: queued})
	}
	// The first instances: web with a failed and a complete allocation,
	// and one more it could not place; report with a child.
	write(func(tx *state.Txn) error { return errors.Join(tx.UpsertJob(web()), tx.UpsertJob(report())) })
	write(func(tx *state.Txn) error {
		return errors.Join(alloc(tx, "a1", sdk.AllocClientStatusFailed), alloc(tx, "a2", sdk.AllocClientStatusComplete),
			eval(tx, "e1", sdk.EvalStatusComplete, map[string]int{"g": 1}), tx.UpsertJob(child("report/dispatch-1")))
	})
	write(func(tx *state.Txn) error {
		return errors.Join(tx.DeleteJob("default", "web"), tx.DeleteJob("default", "report"))
	})
	// The new ones, their evaluation not yet processed.
	write(func(tx *state.Txn) error {
		return errors.Join(tx.UpsertJob(web()), tx.UpsertJob(report()), eval(tx, "e2", sdk.EvalStatusPending, nil))
	})
	write(func(tx *state.Txn) error {
		return errors.Join(alloc(tx, "a3", sdk.AllocClientStatusPending), tx.UpsertJob(child("report/dispatch-2")))
	})

	snap := st.Snapshot()
	if got, want := *server.JobSummary(snap, snap.Job("default", "web")).Summary["g"], (server.TaskGroupSummary{Starting: 1}); got != want {
		t.Errorf("web's summary %+v, want %+v", got, want)
	}
	if got, want := *server.JobSummary(snap, snap.Job("default", "report")).Children, (server.ChildrenSummary{Pending: 1}); got != want {
		t.Errorf("report's children %+v, want %+v", got, want)
	}
}

// Concurrent scheduler configuration writes leave the broker paused as the
// configuration stored last says, whatever order their answers come back
// in.
func TestServer_BrokerPauseFollowsTheLastConfigurationWritten(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for round := 0; round < 20; round++ {
		const writers = 16
		done := make(chan struct{}, writers)
		for i := 0; i < writers; i++ {
			go func() {
				defer func() { done <- struct{}{} }()
				if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: i%2 == 0}); err != nil {
					t.Error(err)
				}
			}()
		}
		for i := 0; i < writers; i++ {
			<-done
		}
		if want := s.Store().Snapshot().SchedulerConfig().PauseEvalBroker; s.Broker().Paused() != want {
			t.Fatalf("round %d: the configuration says PauseEvalBroker %v, the broker is paused: %v", round, want, s.Broker().Paused())
		}
	}
}
