package server_test

// One test per arrow of seed 002's second diagram (the evaluation
// lifecycle with its quasi-statuses), named after the arrow. Test
// schedulers run natively and do exactly what the arrow needs, so each
// arrow is driven deterministically; the host side (raft, broker, blocked
// tracker, plan applier, reapers, GC) is the real one.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/verify"
)

// fastLifecycle shortens the lifecycle's delays so arrows happen quickly.
func fastLifecycle(c *server.Config) {
	c.Broker.InitialNackDelay = 10 * time.Millisecond
	c.Broker.SubsequentNackDelay = 10 * time.Millisecond
	c.Broker.DeliveryLimit = 2
	c.FailedEvalFollowupBaseline = 300 * time.Millisecond
	c.FailedEvalFollowupJitter = 0
	c.FailedEvalUnblockInterval = 100 * time.Millisecond
}

func rig(t *testing.T, fn sdk.SchedulerFunc) *server.Server {
	t.Helper()
	return servertest.New(t, servertest.Func(t, 2, fn), fastLifecycle)
}

func eval(s *server.Server, id string) *sdk.Evaluation { return s.Store().Snapshot().Eval(id) }

// place is a first-fit placer: it places the job's missing allocations (one
// per group index) on ready nodes with room, stops them all if the job
// stopped, and, when it cannot place everything, blocks (queued-allocs,
// with the node classes it saw) or reblocks if the eval was blocked. It
// returns the number placed.
func place(ctx *sdk.Context, e *sdk.Evaluation) (int, error) {
	st := ctx.State
	job := st.Job(e.Namespace, e.JobID)
	plan := &sdk.Plan{EvalID: e.ID, Job: job}
	live := map[string]bool{}
	for _, a := range st.AllocsByJob(e.Namespace, e.JobID) {
		if a.TerminalStatus() {
			continue
		}
		if job.Stopped() {
			plan.AppendStoppedAlloc(a, "job stopped", "")
			continue
		}
		live[a.Name] = true
	}
	classes := map[string]bool{}
	queued := map[string]int{}
	planned := map[string]sdk.Usage{}
	placed := 0
	if !job.Stopped() {
		for _, tg := range job.TaskGroups {
			need := sdk.GroupUsage(tg)
			for i := 0; i < tg.Count; i++ {
				name := sdk.AllocName(job.ID, tg.Name, i)
				if live[name] {
					continue
				}
				var target *sdk.Node
				for _, n := range st.Nodes() {
					if !n.Ready() {
						continue
					}
					used := st.NodeUsage(n.ID)
					used.Add(planned[n.ID])
					used.Add(need)
					ok, _ := used.Fits(n.Capacity())
					classes[n.ComputedClass] = classes[n.ComputedClass] || ok
					if ok {
						target = n
						break
					}
				}
				if target == nil {
					queued[tg.Name]++
					continue
				}
				u := planned[target.ID]
				u.Add(need)
				planned[target.ID] = u
				res := sdk.RequestedResources(tg)
				plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID, Name: name,
					TaskGroup: tg.Name, NodeID: target.ID, AllocatedResources: res})
				placed++
			}
		}
	}
	if len(plan.NodeAllocation)+len(plan.NodeUpdate) > 0 {
		if _, err := ctx.Planner.SubmitPlan(plan); err != nil {
			return 0, err
		}
	}
	missing := 0
	for _, q := range queued {
		missing += q
	}
	done := e.Copy()
	done.QueuedAllocations = queued
	if missing == 0 {
		done.Status = sdk.EvalStatusComplete
		return placed, ctx.Planner.UpdateEval(done)
	}
	failed := map[string]*sdk.AllocMetric{}
	for tg := range queued {
		failed[tg] = &sdk.AllocMetric{}
	}
	if e.Status == sdk.EvalStatusBlocked {
		re := e.Copy()
		re.ClassEligibility, re.FailedTGAllocs = classes, failed
		return placed, ctx.Planner.ReblockEval(re)
	}
	blocked := e.CreateBlockedEval(ctx.NewID(), classes, false, "", failed, false)
	if err := ctx.Planner.CreateEval(blocked); err != nil {
		return placed, err
	}
	done.Status = sdk.EvalStatusComplete
	done.FailedTGAllocs = failed
	done.BlockedEval = blocked.ID
	return placed, ctx.Planner.UpdateEval(done)
}

func placer(ctx *sdk.Context, e *sdk.Evaluation) error {
	_, err := place(ctx, e)
	return err
}

func registerNode(t *testing.T, s *server.Server, i int, cpu int64) *sdk.Node {
	t.Helper()
	n := servertest.Node(i, cpu, 8192)
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	return s.Store().Snapshot().Node(n.ID)
}

func registerJob(t *testing.T, s *server.Server, job *sdk.Job) string {
	t.Helper()
	id, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func wantPointers(t *testing.T, e *sdk.Evaluation, prev, next, blocked string) {
	t.Helper()
	if e.PreviousEval != prev || e.NextEval != next || e.BlockedEval != blocked {
		t.Fatalf("eval %s: PreviousEval=%q NextEval=%q BlockedEval=%q, want %q %q %q",
			e.ID, e.PreviousEval, e.NextEval, e.BlockedEval, prev, next, blocked)
	}
}

// inOrder reports whether want appears in got as a subsequence.
func inOrder(got []string, want ...string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// wantPhases checks that the eval's history holds want in that order. The
// history is recorded when the server is told of a commit, just after the
// store shows it, so a test that saw the eval's status may read the
// history a moment before its last phase is there: wait for that one.
func wantPhases(t *testing.T, s *server.Server, evalID string, want ...string) {
	t.Helper()
	servertest.WaitForPhase(t, s, evalID, want[len(want)-1])
	if got := servertest.Phases(s, evalID); !inOrder(got, want...) {
		t.Fatalf("eval %s went through %v, want %v in that order", evalID, got, want)
	}
}

// TestLifecycle_Event_To_Pending: every cluster event the host turns into
// an eval creates it pending, with its trigger and no PreviousEval.
func TestLifecycle_Event_To_Pending(t *testing.T) {
	reg := servertest.Func(t, 2, placer)
	servertest.AddNative(t, reg, plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}}, 1, func() sdk.Scheduler {
		return sdk.SchedulerFunc(func(ctx *sdk.Context, e *sdk.Evaluation) error {
			c := e.Copy()
			c.Status = sdk.EvalStatusComplete
			return ctx.Planner.UpdateEval(c)
		})
	})
	s := servertest.New(t, reg, fastLifecycle)
	node := registerNode(t, s, 0, 4000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("other", "service", 1, 100, 64)))
	cron := servertest.Job("cron", "batch", 1, 100, 64)
	cron.Periodic = &sdk.PeriodicConfig{Enabled: true, Spec: "0 0 1 1 *"}
	registerJob(t, s, cron)
	alloc := s.Store().Snapshot().AllocsByJob("default", "web")[0]
	// Hold every eval in pending: pause the broker.
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: true}); err != nil {
		t.Fatal(err)
	}
	byTrigger := func(trigger, job string) func() (string, error) {
		return func() (string, error) {
			for _, e := range s.Store().Snapshot().EvalsByJob("default", job) {
				if e.TriggeredBy == trigger && e.Status == sdk.EvalStatusPending {
					return e.ID, nil
				}
			}
			return "", fmt.Errorf("no pending %s eval for %s", trigger, job)
		}
	}
	events := []struct {
		trigger string
		cause   func() (string, error)
	}{
		{sdk.EvalTriggerJobRegister, func() (string, error) {
			id, _, err := s.RegisterJob(servertest.Job("web", "service", 2, 100, 64))
			return id, err
		}},
		{sdk.EvalTriggerScaling, func() (string, error) {
			three := int64(3)
			res, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &three})
			return res.EvalID, err
		}},
		{sdk.EvalTriggerNodeDrain, func() (string, error) {
			// A drain at once: web is short of its count (its evals are
			// held) and its allocation never ran, so, as in Nomad, only
			// the deadline moves it.
			if _, err := s.UpdateNodeDrain(node.ID, &server.DrainSpec{Deadline: -1}, false, nil); err != nil {
				return "", err
			}
			// The leader's drainer marks the node's allocations and
			// evaluates their jobs within a drain interval.
			var id string
			var err error
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if id, err = byTrigger(sdk.EvalTriggerNodeDrain, "web")(); err == nil {
					break
				}
			}
			return id, err
		}},
		{sdk.EvalTriggerJobDeregister, func() (string, error) {
			id, _, err := s.DeregisterJob("default", "other", false)
			return id, err
		}},
		{sdk.EvalTriggerPeriodicJob, func() (string, error) {
			id, _, err := s.ForcePeriodicRun("default", "cron")
			return id, err
		}},
		{sdk.EvalTriggerAllocStop, func() (string, error) {
			id, _, err := s.StopAlloc(alloc.ID)
			return id, err
		}},
		{sdk.EvalTriggerRetryFailedAlloc, func() (string, error) {
			if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: alloc.ID, ClientStatus: sdk.AllocClientStatusFailed}}); err != nil {
				return "", err
			}
			return byTrigger(sdk.EvalTriggerRetryFailedAlloc, "web")()
		}},
		{sdk.EvalTriggerNodeUpdate, func() (string, error) {
			if _, err := s.UpdateNodeStatus(node.ID, sdk.NodeStatusDown, "test"); err != nil {
				return "", err
			}
			return byTrigger(sdk.EvalTriggerNodeUpdate, "other")()
		}},
		{sdk.EvalTriggerScheduled, func() (string, error) {
			id, _, err := s.ForceGC()
			return id, err
		}},
	}
	var created []string
	for _, ev := range events {
		t.Run(ev.trigger, func(t *testing.T) {
			id, err := ev.cause()
			if err != nil {
				t.Fatal(err)
			}
			e := eval(s, id)
			if e == nil || e.Status != sdk.EvalStatusPending || e.TriggeredBy != ev.trigger {
				t.Fatalf("eval = %+v, want pending, triggered by %s", e, ev.trigger)
			}
			wantPointers(t, e, "", "", "")
			if h := servertest.Phases(s, id); len(h) == 0 || h[0] != sdk.EvalStatusPending {
				t.Fatalf("history %v does not start pending", h)
			}
			created = append(created, id)
		})
	}
	// Resumed, every one of them ends.
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range created {
		servertest.WaitForEval(t, s, id)
	}
}

// TestLifecycle_Pending_To_Scheduling_Dequeued: a worker dequeues a
// pending eval; while its scheduler runs, the eval is scheduling.
func TestLifecycle_Pending_To_Scheduling_Dequeued(t *testing.T) {
	inside, release := make(chan string, 1), make(chan struct{})
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		inside <- e.ID
		<-release
		return placer(ctx, e)
	})
	registerNode(t, s, 0, 4000)
	id := registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
	if got := <-inside; got != id {
		t.Fatalf("scheduler got %s, want %s", got, id)
	}
	h := servertest.Phases(s, id)
	if h[len(h)-1] != sdk.EvalPhaseScheduling || eval(s, id).Status != sdk.EvalStatusPending {
		t.Fatalf("while scheduled: history %v, status %s", h, eval(s, id).Status)
	}
	wantPhases(t, s, id, sdk.EvalStatusPending, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling)
	close(release)
	servertest.WaitForEval(t, s, id)
}

// delayedEval commits a pending eval of job that waits until at.
func delayedEval(t *testing.T, s *server.Server, job string, at time.Time) string {
	t.Helper()
	j := s.Store().Snapshot().Job("default", job)
	e := &sdk.Evaluation{ID: fmt.Sprintf("delayed-%d", time.Now().UnixNano()), Namespace: "default", JobID: job,
		Type: j.Type, Priority: j.Priority, TriggeredBy: sdk.EvalTriggerJobRegister, Status: sdk.EvalStatusPending,
		WaitUntil: at, JobModifyIndex: j.JobModifyIndex}
	if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{e}}); err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// TestLifecycle_Pending_To_Delayed_IfDelayed: a pending eval with a
// WaitUntil in the future is delayed, not queued.
func TestLifecycle_Pending_To_Delayed_IfDelayed(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 4000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	id := delayedEval(t, s, "web", time.Now().Add(time.Hour))
	servertest.WaitForPhase(t, s, id, sdk.EvalPhaseDelayed)
	if h := servertest.Phases(s, id); !slices.Equal(h, []string{sdk.EvalStatusPending, sdk.EvalPhaseDelayed}) {
		t.Fatalf("history %v", h)
	}
	if st := s.Broker().Stats(); st.TotalWaiting != 1 {
		t.Fatalf("broker waiting = %d, want 1", st.TotalWaiting)
	}
}

// TestLifecycle_Delayed_To_Scheduling_Dequeued: when its time comes, a
// delayed eval is dequeued, not before.
func TestLifecycle_Delayed_To_Scheduling_Dequeued(t *testing.T) {
	var mu sync.Mutex
	started := map[string]time.Time{}
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		mu.Lock()
		started[e.ID] = time.Now()
		mu.Unlock()
		return placer(ctx, e)
	})
	registerNode(t, s, 0, 4000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	due := time.Now().Add(300 * time.Millisecond)
	id := delayedEval(t, s, "web", due)
	servertest.WaitForEval(t, s, id)
	mu.Lock()
	at := started[id]
	mu.Unlock()
	if at.Before(due) {
		t.Fatalf("scheduled at %v, before its time %v", at, due)
	}
	wantPhases(t, s, id, sdk.EvalStatusPending, sdk.EvalPhaseDelayed, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
}

// TestLifecycle_Scheduling_To_Blocked_QueuedAllocs: not all allocations
// placed; the scheduler creates a blocked eval (queued-allocs) with
// PreviousEval = old.ID, and the old eval gets BlockedEval = new.ID.
func TestLifecycle_Scheduling_To_Blocked_QueuedAllocs(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 1000)
	id := registerJob(t, s, servertest.Job("web", "service", 2, 800, 64))
	old := servertest.WaitForEval(t, s, id)
	if old.Status != sdk.EvalStatusComplete || old.BlockedEval == "" {
		t.Fatalf("old eval %+v", old)
	}
	blocked := eval(s, old.BlockedEval)
	if blocked.Status != sdk.EvalStatusBlocked || blocked.TriggeredBy != sdk.EvalTriggerQueuedAllocs {
		t.Fatalf("blocked eval %+v", blocked)
	}
	wantPointers(t, blocked, id, "", "")
	if blocked.SnapshotIndex == 0 {
		t.Fatal("the host did not stamp the blocked eval with the scheduler's snapshot index")
	}
	if s.Blocked().Blocked("default", "web") == nil {
		t.Fatal("the blocked eval is not tracked")
	}
	wantPhases(t, s, blocked.ID, sdk.EvalStatusBlocked)
}

// attemptsThenFail submits a plan that never fits max times, then fails
// its eval with a max-plan-attempts blocked eval, as Nomad's schedulers do.
func attemptsThenFail(max int) sdk.SchedulerFunc {
	return func(ctx *sdk.Context, e *sdk.Evaluation) error {
		if e.Status == sdk.EvalStatusBlocked {
			return placer(ctx, e)
		}
		job := ctx.State.Job(e.Namespace, e.JobID)
		for i := 0; i < max; i++ {
			n := ctx.State.Nodes()[0]
			p := &sdk.Plan{EvalID: e.ID, Job: job}
			p.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID, TaskGroup: "g",
				Name: sdk.AllocName(job.ID, "g", 0), NodeID: n.ID,
				AllocatedResources: withCPU(job, n.NodeResources.Cpu.CpuShares*2)})
			res, err := ctx.Planner.SubmitPlan(p)
			if err != nil {
				return err
			}
			if len(res.RejectedNodes) == 0 {
				return errors.New("an over-sized plan was committed")
			}
		}
		failed := e.Copy()
		failed.Status = sdk.EvalStatusFailed
		failed.StatusDescription = fmt.Sprintf("maximum attempts reached (%d)", max)
		blocked := failed.CreateBlockedEval(ctx.NewID(), nil, true, "", nil, true)
		if err := ctx.Planner.CreateEval(blocked); err != nil {
			return err
		}
		failed.BlockedEval = blocked.ID
		return ctx.Planner.UpdateEval(failed)
	}
}

// TestLifecycle_Scheduling_To_Blocked_MaxPlanAttempts: failed to plan;
// the scheduler creates a blocked eval (max-plan-attempts) with
// PreviousEval = old.ID and old.BlockedEval = new.ID; the leader retries
// it periodically whatever the capacity.
func TestLifecycle_Scheduling_To_Blocked_MaxPlanAttempts(t *testing.T) {
	s := rig(t, attemptsThenFail(3))
	registerNode(t, s, 0, 1000)
	id := registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
	old := servertest.WaitForEval(t, s, id)
	if old.Status != sdk.EvalStatusFailed || old.BlockedEval == "" {
		t.Fatalf("old eval %+v", old)
	}
	blocked := eval(s, old.BlockedEval)
	if blocked.TriggeredBy != sdk.EvalTriggerMaxPlans {
		t.Fatalf("blocked eval triggered by %s", blocked.TriggeredBy)
	}
	wantPointers(t, blocked, id, "", "")
	// No capacity change: the periodic retry of max-plan-attempts evals
	// runs it, and it places.
	done := servertest.WaitForEval(t, s, blocked.ID, sdk.EvalStatusComplete)
	wantPhases(t, s, done.ID, sdk.EvalStatusBlocked, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
}

// TestLifecycle_Scheduling_To_Blocked_ReuseBlockedEval: a blocked eval
// that still cannot place everything goes back to blocked, itself: no new
// eval.
func TestLifecycle_Scheduling_To_Blocked_ReuseBlockedEval(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 1000)
	id := registerJob(t, s, servertest.Job("web", "service", 3, 800, 64))
	blockedID := servertest.WaitForEval(t, s, id).BlockedEval
	before := len(s.Store().Snapshot().EvalsByJob("default", "web"))
	registerNode(t, s, 1, 1000) // room for one of the two missing
	servertest.WaitFor(t, "the blocked eval to be scheduled and reblocked", func() bool {
		return inOrder(servertest.Phases(s, blockedID), sdk.EvalStatusBlocked, sdk.EvalPhaseScheduling, sdk.EvalStatusBlocked)
	})
	e := eval(s, blockedID)
	if e.Status != sdk.EvalStatusBlocked || s.Blocked().Blocked("default", "web").ID != blockedID {
		t.Fatalf("reblocked eval %+v is not the tracked one", e)
	}
	if after := len(s.Store().Snapshot().EvalsByJob("default", "web")); after != before {
		t.Fatalf("%d evals after the reblock, %d before: a new eval was created", after, before)
	}
	if live := len(s.Store().Snapshot().AllocsByNode(servertest.Node(1, 0, 0).ID)); live != 1 {
		t.Fatalf("%d placed on the new node, want 1", live)
	}
}

// TestLifecycle_Blocked_To_Scheduling_UnblockedByExternalStateChange: a
// node of a class the eval could use registers; the blocked eval is
// scheduled and, now placing everything, completes.
func TestLifecycle_Blocked_To_Scheduling_UnblockedByExternalStateChange(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 1000)
	id := registerJob(t, s, servertest.Job("web", "service", 2, 800, 64))
	blockedID := servertest.WaitForEval(t, s, id).BlockedEval
	registerNode(t, s, 1, 1000)
	e := servertest.WaitForEval(t, s, blockedID, sdk.EvalStatusComplete)
	wantPhases(t, s, e.ID, sdk.EvalStatusBlocked, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
	if s.Blocked().Stats().TotalBlocked != 0 {
		t.Fatal("the eval is still tracked as blocked")
	}
}

// TestLifecycle_Scheduling_To_Complete_AllocsPlaced: everything placed.
func TestLifecycle_Scheduling_To_Complete_AllocsPlaced(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 4000)
	id := registerJob(t, s, servertest.Job("web", "service", 3, 100, 64))
	e := servertest.WaitForEval(t, s, id)
	if e.Status != sdk.EvalStatusComplete {
		t.Fatalf("status %s", e.Status)
	}
	wantPointers(t, e, "", "", "")
	if n := len(s.Store().Snapshot().AllocsByEval(id)); n != 3 {
		t.Fatalf("%d allocations, want 3", n)
	}
	wantPhases(t, s, id, sdk.EvalStatusPending, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling,
		sdk.EvalPhaseApplying, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
}

// TestLifecycle_Scheduling_To_Failed: the scheduler fails the eval for a
// trigger it cannot handle, or after its plans were rejected too often.
func TestLifecycle_Scheduling_To_Failed(t *testing.T) {
	t.Run("wrong eval type", func(t *testing.T) {
		s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
			if e.TriggeredBy == sdk.EvalTriggerJobRegister {
				f := e.Copy()
				f.Status = sdk.EvalStatusFailed
				f.StatusDescription = "scheduler cannot handle '" + e.TriggeredBy + "' evaluation reason"
				return ctx.Planner.UpdateEval(f)
			}
			return placer(ctx, e)
		})
		registerNode(t, s, 0, 4000)
		e := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
		if e.Status != sdk.EvalStatusFailed {
			t.Fatalf("status %s", e.Status)
		}
		wantPhases(t, s, e.ID, sdk.EvalPhaseScheduling, sdk.EvalStatusFailed)
	})
	t.Run("max retries exceeded on plan submit", func(t *testing.T) {
		s := rig(t, attemptsThenFail(2))
		registerNode(t, s, 0, 1000)
		e := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
		if e.Status != sdk.EvalStatusFailed || e.NextEval != "" {
			t.Fatalf("eval %+v", e)
		}
		wantPhases(t, s, e.ID, sdk.EvalPhaseApplying, sdk.EvalPhaseScheduling, sdk.EvalPhaseApplying,
			sdk.EvalPhaseScheduling, sdk.EvalStatusFailed)
	})
}

// TestLifecycle_Scheduling_To_Canceled_JobUpdateStop: the job changed while
// the eval waited or was being scheduled; the eval is canceled rather than
// scheduled again.
func TestLifecycle_Scheduling_To_Canceled_JobUpdateStop(t *testing.T) {
	t.Run("the scheduler sees a newer job version", func(t *testing.T) {
		s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
			if j := ctx.State.Job(e.Namespace, e.JobID); j.JobModifyIndex > e.JobModifyIndex {
				c := e.Copy()
				c.Status = sdk.EvalStatusCanceled
				c.StatusDescription = "job was updated since the eval was created"
				return ctx.Planner.UpdateEval(c)
			}
			return placer(ctx, e)
		})
		registerNode(t, s, 0, 4000)
		// Both versions are registered before any eval runs; the first
		// eval is scheduled on a state that holds the second version (its
		// wait index is the job's newest eval).
		if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: true}); err != nil {
			t.Fatal(err)
		}
		first := registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
		second := registerJob(t, s, servertest.Job("web", "service", 2, 100, 64))
		if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{}); err != nil {
			t.Fatal(err)
		}
		if e := servertest.WaitForEval(t, s, first); e.Status != sdk.EvalStatusCanceled {
			t.Fatalf("first eval %s", e.Status)
		}
		wantPhases(t, s, first, sdk.EvalPhaseScheduling, sdk.EvalStatusCanceled)
		if e := servertest.WaitForEval(t, s, second); e.Status != sdk.EvalStatusComplete {
			t.Fatalf("second eval %s", e.Status)
		}
	})
	t.Run("superseded while waiting behind the job's eval", func(t *testing.T) {
		inside, release := make(chan string, 4), make(chan struct{})
		s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
			inside <- e.ID
			<-release
			return placer(ctx, e)
		})
		registerNode(t, s, 0, 4000)
		first := registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
		<-inside
		middle := registerJob(t, s, servertest.Job("web", "service", 2, 100, 64))
		last, _, err := s.DeregisterJob("default", "web", false)
		if err != nil {
			t.Fatal(err)
		}
		close(release)
		if e := servertest.WaitForEval(t, s, middle); e.Status != sdk.EvalStatusCanceled {
			t.Fatalf("superseded eval %s", e.Status)
		}
		servertest.WaitForEval(t, s, first)
		if e := servertest.WaitForEval(t, s, last); e.Status != sdk.EvalStatusComplete {
			t.Fatalf("newest eval %s", e.Status)
		}
		if slices.Contains(servertest.Phases(s, middle), sdk.EvalPhaseScheduling) {
			t.Fatal("the superseded eval was scheduled")
		}
	})
}

// TestLifecycle_Failed_To_Scheduling_Retry: a scheduling attempt that
// fails (the plugin errs) is retried: the eval is scheduled again.
func TestLifecycle_Failed_To_Scheduling_Retry(t *testing.T) {
	var mu sync.Mutex
	attempts := 0
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		mu.Lock()
		attempts++
		n := attempts
		mu.Unlock()
		if n == 1 {
			return errors.New("transient failure")
		}
		return placer(ctx, e)
	})
	registerNode(t, s, 0, 4000)
	e := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	if e.Status != sdk.EvalStatusComplete {
		t.Fatalf("status %s", e.Status)
	}
	wantPhases(t, s, e.ID, sdk.EvalPhaseScheduling, sdk.EvalPhaseDelayed, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
}

// TestLifecycle_Scheduling_To_Pending_RollingUpdate: the scheduler creates
// the next step's eval (rolling-update) with PreviousEval = old.ID and
// sets old.NextEval = new.ID; its wait becomes a deadline that survives a
// restart.
func TestLifecycle_Scheduling_To_Pending_RollingUpdate(t *testing.T) {
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		if e.TriggeredBy == sdk.EvalTriggerRollingUpdate {
			return placer(ctx, e)
		}
		next := e.NextRollingEval(ctx.NewID(), 200*time.Millisecond)
		if err := ctx.Planner.CreateEval(next); err != nil {
			return err
		}
		done := e.Copy()
		done.Status = sdk.EvalStatusComplete
		done.NextEval = next.ID
		return ctx.Planner.UpdateEval(done)
	})
	registerNode(t, s, 0, 4000)
	before := time.Now()
	old := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	wantPointers(t, old, "", old.NextEval, "")
	next := eval(s, old.NextEval)
	if next == nil || next.TriggeredBy != sdk.EvalTriggerRollingUpdate {
		t.Fatalf("next eval %+v", next)
	}
	wantPointers(t, next, old.ID, "", "")
	if next.WaitUntil.Before(before.Add(200 * time.Millisecond)) {
		t.Fatalf("WaitUntil %v does not honour the 200ms wait", next.WaitUntil)
	}
	servertest.WaitForEval(t, s, next.ID)
	wantPhases(t, s, next.ID, sdk.EvalStatusPending, sdk.EvalPhaseDelayed, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
}

// TestLifecycle_Scheduling_To_Applying_Submit: a submitted plan puts the
// eval in applying until the applier answers.
func TestLifecycle_Scheduling_To_Applying_Submit(t *testing.T) {
	seen := make(chan []string, 1)
	var s *server.Server
	s = rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		err := placer(ctx, e)
		seen <- servertest.Phases(s, e.ID)
		return err
	})
	registerNode(t, s, 0, 4000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	if seen := <-seen; !inOrder(seen, sdk.EvalPhaseScheduling, sdk.EvalPhaseApplying, sdk.EvalPhaseScheduling) {
		t.Fatalf("phases while scheduling: %v", seen)
	}
}

// TestLifecycle_Applying_To_Scheduling_Failed: a plan only partly
// committed sends the eval back to scheduling with a refreshed state that
// holds what was committed.
func TestLifecycle_Applying_To_Scheduling_Failed(t *testing.T) {
	type outcome struct {
		refreshed    uint64
		sawCommitted bool
	}
	out := make(chan outcome, 1)
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		job := ctx.State.Job(e.Namespace, e.JobID)
		nodes := ctx.State.Nodes()
		p := &sdk.Plan{EvalID: e.ID, Job: job}
		for i, n := range nodes {
			cpu := int64(100)
			if i == 1 {
				cpu = 10 * n.NodeResources.Cpu.CpuShares // does not fit
			}
			p.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID, TaskGroup: "g",
				Name: sdk.AllocName(job.ID, "g", i), NodeID: n.ID,
				AllocatedResources: withCPU(job, cpu)})
		}
		res, err := ctx.Planner.SubmitPlan(p)
		if err != nil {
			return err
		}
		out <- outcome{res.RefreshIndex, ctx.State.Index() >= res.RefreshIndex && len(ctx.State.AllocsByNode(nodes[0].ID)) == 1}
		done := e.Copy()
		done.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(done)
	})
	registerNode(t, s, 0, 1000)
	registerNode(t, s, 1, 1000)
	e := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 2, 100, 64)))
	if o := <-out; o.refreshed == 0 || !o.sawCommitted {
		t.Fatalf("refresh index %d, saw committed part %v", o.refreshed, o.sawCommitted)
	}
	wantPhases(t, s, e.ID, sdk.EvalPhaseApplying, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
}

// TestLifecycle_Applying_To_Pending_Preemption: the plan applier creates a
// preemption eval for the job whose allocation was preempted; the chain
// breaks: the new eval has no PreviousEval and the preempting eval no
// BlockedEval (nor NextEval) pointing to it.
func TestLifecycle_Applying_To_Pending_Preemption(t *testing.T) {
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		job := ctx.State.Job(e.Namespace, e.JobID)
		if job.ID != "urgent" || e.TriggeredBy == sdk.EvalTriggerPreemption {
			return placer(ctx, e)
		}
		n := ctx.State.Nodes()[0]
		p := &sdk.Plan{EvalID: e.ID, Job: job}
		for _, victim := range ctx.State.AllocsByNode(n.ID) {
			p.AppendPreemptedAlloc(victim, "urgent-0")
		}
		p.AppendAlloc(&sdk.Allocation{ID: "urgent-0", Namespace: job.Namespace, JobID: job.ID, TaskGroup: "g",
			Name: sdk.AllocName(job.ID, "g", 0), NodeID: n.ID,
			AllocatedResources: withCPU(job, 900)})
		if _, err := ctx.Planner.SubmitPlan(p); err != nil {
			return err
		}
		done := e.Copy()
		done.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(done)
	})
	registerNode(t, s, 0, 1000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("low", "service", 1, 900, 64)))
	urgent := servertest.Job("urgent", "service", 1, 900, 64)
	urgent.Priority = 90
	preemptor := servertest.WaitForEval(t, s, registerJob(t, s, urgent))
	wantPointers(t, preemptor, "", "", "")
	var pre *sdk.Evaluation
	for _, e := range s.Store().Snapshot().EvalsByJob("default", "low") {
		if e.TriggeredBy == sdk.EvalTriggerPreemption {
			pre = e
		}
	}
	if pre == nil {
		t.Fatal("no preemption eval for the preempted job")
	}
	if pre.PreviousEval != "" {
		t.Fatalf("preemption eval has PreviousEval %q", pre.PreviousEval)
	}
	servertest.WaitForEval(t, s, pre.ID)
	wantPhases(t, s, pre.ID, sdk.EvalStatusPending, sdk.EvalPhaseQueued)
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "low") {
		if a.DesiredStatus != sdk.AllocDesiredStatusEvict || a.PreemptedByAllocation != "urgent-0" {
			t.Fatalf("victim %+v", a)
		}
	}
}

// TestLifecycle_Complete_To_Pending_DeploymentWatcher: an eval the
// deployment watcher creates (through the deployment status entry it
// commits) is pending and unchained: no PreviousEval, and the eval that
// completed the deployment's previous step gets no NextEval.
func TestLifecycle_Complete_To_Pending_DeploymentWatcher(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 4000)
	done := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	j := s.Store().Snapshot().Job("default", "web")
	d := &sdk.Evaluation{ID: "dw-1", Namespace: "default", JobID: "web", Type: j.Type, Priority: j.Priority,
		TriggeredBy: sdk.EvalTriggerDeploymentWatcher, Status: sdk.EvalStatusPending, DeploymentID: "dep-1",
		JobModifyIndex: j.JobModifyIndex}
	if _, err := s.Apply(fsm.DeploymentStatusUpdateRequestType, &fsm.DeploymentStatusUpdateRequest{
		Update: &sdk.DeploymentStatusUpdate{DeploymentID: "dep-1", Status: sdk.DeploymentStatusRunning}, Eval: d}); err != nil {
		t.Fatal(err)
	}
	e := servertest.WaitForEval(t, s, "dw-1")
	wantPointers(t, e, "", "", "")
	wantPointers(t, eval(s, done.ID), "", "", "")
	wantPhases(t, s, e.ID, sdk.EvalStatusPending, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling, sdk.EvalStatusComplete)
}

func alwaysErr(*sdk.Context, *sdk.Evaluation) error { return errors.New("scheduler broken") }

// TestLifecycle_Failed_To_Pending_FailedFollowUp: a failed eval gets a
// failed-follow-up eval after the baseline delay, with PreviousEval =
// old.ID and old.NextEval = new.ID.
func TestLifecycle_Failed_To_Pending_FailedFollowUp(t *testing.T) {
	s := rig(t, alwaysErr)
	registerNode(t, s, 0, 4000)
	id := registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
	failed := servertest.WaitForEval(t, s, id, sdk.EvalStatusFailed)
	if failed.NextEval == "" {
		t.Fatal("no failed-follow-up eval")
	}
	follow := eval(s, failed.NextEval)
	if follow.TriggeredBy != sdk.EvalTriggerFailedFollowUp || follow.Status == "" {
		t.Fatalf("follow-up %+v", follow)
	}
	wantPointers(t, failed, "", follow.ID, "")
	wantPointers(t, follow, id, "", "")
	if wait := follow.WaitUntil.Sub(time.Unix(0, failed.ModifyTime)); wait < 300*time.Millisecond {
		t.Fatalf("follow-up waits %v, less than the 300ms baseline", wait)
	}
	servertest.WaitForPhase(t, s, follow.ID, sdk.EvalPhaseDelayed)
}

// TestLifecycle_Pending_To_Failed_UndeliverableReaped: an eval that used
// up its deliveries is marked failed by the leader's reaper.
func TestLifecycle_Pending_To_Failed_UndeliverableReaped(t *testing.T) {
	s := rig(t, alwaysErr)
	registerNode(t, s, 0, 4000)
	id := registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
	e := servertest.WaitForEval(t, s, id, sdk.EvalStatusFailed)
	if e.StatusDescription == "" {
		t.Fatal("no reason given")
	}
	h := servertest.Phases(s, id)
	if n := countOf(h, sdk.EvalPhaseScheduling); n != 2 {
		t.Fatalf("scheduled %d times, want the delivery limit 2: %v", n, h)
	}
	if h[len(h)-1] != sdk.EvalStatusFailed {
		t.Fatalf("history %v does not end failed", h)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// TestLifecycle_Blocked_To_Canceled_DuplicateReaped: a job keeps one
// blocked eval; an older duplicate, or a blocked eval made moot by a later
// eval that completed without placement failures, is canceled by the
// leader's reaper.
func TestLifecycle_Blocked_To_Canceled_DuplicateReaped(t *testing.T) {
	t.Run("duplicate", func(t *testing.T) {
		s := rig(t, placer)
		registerNode(t, s, 0, 1000)
		first := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 2, 800, 64))).BlockedEval
		id, _, err := s.EvaluateJob("default", "web")
		if err != nil {
			t.Fatal(err)
		}
		second := servertest.WaitForEval(t, s, id).BlockedEval
		// Nomad's reapDupBlockedEvaluations describes the canceled one so.
		if e := servertest.WaitForEval(t, s, first, sdk.EvalStatusCanceled); e.StatusDescription != `existing blocked evaluation exists for job "web"` {
			t.Fatalf("reason %q, want Nomad's", e.StatusDescription)
		}
		if eval(s, second).Status != sdk.EvalStatusBlocked || s.Blocked().Blocked("default", "web").ID != second {
			t.Fatal("the newer blocked eval is not the one kept")
		}
		wantPhases(t, s, first, sdk.EvalStatusBlocked, sdk.EvalStatusCanceled)
	})
	t.Run("moot", func(t *testing.T) {
		s := rig(t, placer)
		registerNode(t, s, 0, 1000)
		blocked := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 2, 800, 64))).BlockedEval
		// The job shrinks to what fits: its eval places everything.
		servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 800, 64)))
		if e := servertest.WaitForEval(t, s, blocked, sdk.EvalStatusCanceled); !strings.Contains(e.StatusDescription, "completed without placement failures") {
			t.Fatalf("reason %q does not say the job's later eval completed without placement failures", e.StatusDescription)
		}
	})
}

// TestLifecycle_Terminal_To_Deleted_GarbageCollection: canceled, failed
// and complete evals are deleted by garbage collection (and their history
// with them); open ones are not.
func TestLifecycle_Terminal_To_Deleted_GarbageCollection(t *testing.T) {
	var mu sync.Mutex
	failNext := true
	reg := servertest.Func(t, 2, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		mu.Lock()
		f := failNext && e.JobID == "broken"
		mu.Unlock()
		if f {
			return errors.New("broken")
		}
		return placer(ctx, e)
	})
	servertest.AddNative(t, reg, plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}, MirrorEvals: true}, 1,
		func() sdk.Scheduler { return gcEverything{} })
	s := servertest.New(t, reg, func(c *server.Config) {
		fastLifecycle(c)
		c.FailedEvalFollowupBaseline = time.Hour
	})
	registerNode(t, s, 0, 1000)
	complete := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	stopID, _, err := s.DeregisterJob("default", "web", false)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, stopID)
	failed := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("broken", "service", 1, 100, 64)), sdk.EvalStatusFailed)
	blockedID := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("big", "service", 2, 800, 64))).BlockedEval
	id, _, err := s.EvaluateJob("default", "big")
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, id)
	canceled := servertest.WaitForEval(t, s, blockedID, sdk.EvalStatusCanceled)
	servertest.ForceGC(t, s, sdk.EvalStatusComplete)
	snap := s.Store().Snapshot()
	for name, e := range map[string]*sdk.Evaluation{"complete": complete, "failed": failed, "canceled": canceled} {
		if snap.Eval(e.ID) != nil {
			t.Errorf("%s eval %s survived GC", name, e.ID)
		}
		if h := s.EvalHistory(e.ID); len(h) != 0 {
			t.Errorf("%s eval %s kept its history %v", name, e.ID, h)
		}
	}
	if e := snap.Eval(failed.NextEval); e == nil || e.Status != sdk.EvalStatusPending {
		t.Errorf("the open follow-up eval was collected: %+v", e)
	}
}

// gcEverything is a core scheduler that asks to collect every terminal
// non-core eval whose allocations are all terminal.
type gcEverything struct{}

func (gcEverything) Process(ctx *sdk.Context, e *sdk.Evaluation) error {
	req := &sdk.GCRequest{}
	if es, ok := ctx.State.(sdk.EvalState); ok {
	evals:
		for _, x := range es.Evals() {
			if !x.TerminalStatus() || x.Type == sdk.JobTypeCore {
				continue
			}
			for _, a := range ctx.State.AllocsByJob(x.Namespace, x.JobID) {
				if a.EvalID == x.ID && !a.TerminalStatus() {
					continue evals
				}
			}
			req.Evals = append(req.Evals, x.ID)
		}
	}
	if err := ctx.Planner.(sdk.Collector).GarbageCollect(req); err != nil {
		return err
	}
	c := e.Copy()
	c.Status = sdk.EvalStatusComplete
	return ctx.Planner.UpdateEval(c)
}

// withCPU is what an allocation of job's group "g" asks for, but holding
// cpu MHz for its task "t".
func withCPU(job *sdk.Job, cpu int64) *sdk.AllocatedResources {
	res := sdk.RequestedResources(job.LookupTaskGroup("g"))
	res.Tasks["t"].Cpu.CpuShares = cpu
	return res
}

// Nor can a lineage: a plugin whose every eval creates three more of its
// job (each generation within the per-delivery bound) is held to the job's
// budget, and its evals fail saying why, while the agent keeps its state
// small. Without the budget the evals multiply, thousands a second.
func TestLifecycle_CreatedEvalLineagesAreBounded(t *testing.T) {
	refused := make(chan error, 1)
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		for range 3 {
			err := ctx.Planner.CreateEval(&sdk.Evaluation{ID: ctx.NewID(), Namespace: e.Namespace, JobID: e.JobID,
				TriggeredBy: sdk.EvalTriggerRollingUpdate, Status: sdk.EvalStatusPending, PreviousEval: e.ID})
			if err != nil {
				select {
				case refused <- err:
				default:
				}
				return err
			}
		}
		c := e.Copy()
		c.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(c)
	})
	start := time.Now()
	registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
	select {
	case err := <-refused:
		if !errors.Is(err, sdk.ErrInvalidEval) || !strings.Contains(err.Error(), `the plugins of job "web" created evals faster than 1000`) {
			t.Fatalf("refused with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no eval refused; %d evals", len(s.Store().Snapshot().Evals()))
	}
	time.Sleep(time.Second)
	// The plugin created the budget's burst and what it allowed since.
	// (The failed evals add a failed-follow-up each, created by the host.)
	created := 0
	for _, e := range s.Store().Snapshot().Evals() {
		if e.TriggeredBy == sdk.EvalTriggerRollingUpdate {
			created++
		}
	}
	if most := verify.MaxCreatedEvals + int(time.Since(start).Seconds()+1); created > most {
		t.Fatalf("the plugin created %d evals, more than the %d the budget allows", created, most)
	}
}

// A plugin cannot flood the state with evals: one delivery of an eval
// creates at most verify.MaxCreatedEvals; the next is refused, and the
// scheduler sees why.
func TestLifecycle_CreatedEvalsAreBounded(t *testing.T) {
	var created atomic.Int64
	refused := make(chan error, 1)
	s := rig(t, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		if e.TriggeredBy != sdk.EvalTriggerJobRegister {
			c := e.Copy()
			c.Status = sdk.EvalStatusComplete
			return ctx.Planner.UpdateEval(c)
		}
		for {
			err := ctx.Planner.CreateEval(&sdk.Evaluation{ID: ctx.NewID(), Namespace: e.Namespace, JobID: e.JobID,
				TriggeredBy: sdk.EvalTriggerRollingUpdate, Status: sdk.EvalStatusPending, PreviousEval: e.ID})
			if err != nil {
				select {
				case refused <- err:
				default:
				}
				return err
			}
			created.Add(1)
		}
	})
	registerJob(t, s, servertest.Job("web", "service", 1, 100, 64))
	select {
	case err := <-refused:
		if !errors.Is(err, sdk.ErrInvalidEval) || created.Load() != verify.MaxCreatedEvals {
			t.Fatalf("refused after %d evals with %v, want %d and ErrInvalidEval", created.Load(), err, verify.MaxCreatedEvals)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no eval refused after %d", created.Load())
	}
}
