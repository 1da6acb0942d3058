package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/host/fsm"
	rt "github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/system"
	"github.com/rs/zerolog"
)

// mirrorCheck wraps a scheduler and, before each eval, compares the
// plugin's state mirror with the store's snapshot at the mirror's index.
type mirrorCheck struct {
	sdk.Scheduler
	t *testing.T
	c *cluster
}

func (m *mirrorCheck) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	snap := m.c.store.Snapshot()
	if got, want := ctx.State.Index(), snap.Index(); got != want {
		return m.fail("mirror at %d, store at %d", got, want)
	}
	want := snap.FullSync(false)
	for _, j := range want.Jobs {
		if g, w := canonical(m.t, ctx.State.Job(j.Namespace, j.ID)), canonical(m.t, j); g != w {
			return m.fail("job %s differs:\nmirror %s\nstore  %s", j.ID, g, w)
		}
	}
	byNode := map[string]int{}
	for _, a := range want.Allocs {
		byNode[a.NodeID]++
		got := ctx.State.Alloc(a.ID)
		if got == nil {
			return m.fail("alloc %s missing from the mirror", a.ID)
		}
		if got.Job == nil || got.Job.JobModifyIndex != got.JobModifyIndex {
			return m.fail("alloc %s is not linked to its job version", a.ID)
		}
		c := *got
		c.Job, c.Metrics = nil, nil
		if g, w := canonical(m.t, &c), canonical(m.t, a); g != w {
			return m.fail("alloc %s differs:\nmirror %s\nstore  %s", a.ID, g, w)
		}
	}
	for _, n := range want.Nodes {
		if got := len(ctx.State.AllocsByNode(n.ID)); got != byNode[n.ID] {
			return m.fail("node %s: %d allocs in the mirror, %d in the store", n.ID, got, byNode[n.ID])
		}
		// What a node's allocations hold, as sdk.State.NodeUsage counts
		// it: all but those the node reports finished.
		var u sdk.Usage
		for _, a := range snap.AllocsByNode(n.ID) {
			if !a.ClientTerminalStatus() {
				u.Add(a.Usage())
			}
		}
		if got := ctx.State.NodeUsage(n.ID); got != u {
			return m.fail("node %s: usage %+v in the mirror, %+v in the store", n.ID, got, u)
		}
	}
	return m.Scheduler.Process(ctx, eval)
}

// fail reports a difference from the plugin's goroutine, where the test
// cannot stop (FailNow there would leave the plugin's pool waiting for
// the eval): the test is marked failed and the eval fails.
func (m *mirrorCheck) fail(format string, args ...any) error {
	m.t.Errorf(format, args...)
	return fmt.Errorf(format, args...)
}

func canonical(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(tree) // maps sorted by key; nil and empty alike
	return string(b)
}

// TestMirror_KeptPlansEqualTheStore runs every scenario's jobs through the
// FSM with a native plugin that keeps its plans (ABI 1.2) and takes job
// statuses (1.3): the next eval's mirror, fed kept allocations instead of
// resent ones and statuses of jobs it holds, must equal the store at its
// index. Plans go straight to the FSM, or through the plan
// applier's check and an encoded log entry as in the server (verify).
func TestMirror_KeptPlansEqualTheStore(t *testing.T) {
	for _, verify := range []bool{false, true} {
		for _, sc := range Scenarios {
			t.Run(fmt.Sprintf("%s/verify=%v", sc.Name, verify), func(t *testing.T) { keptPlansEqualTheStore(t, sc, verify) })
		}
	}
}

func keptPlansEqualTheStore(t *testing.T, sc Scenario, verify bool) {
	cfg := DefaultConfig()
	c, err := newCluster(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if err := c.apply(fsm.NodeRegisterRequestType, &fsm.NodeRegisterRequest{Node: makeNode(cfg, c, i)}); err != nil {
			t.Fatal(err)
		}
	}
	f := native.New(plugin.Info{Name: sc.Type, Types: []string{sc.Type}}, func() sdk.Scheduler {
		var s sdk.Scheduler = &generic.Scheduler{Batch: sc.Type == sdk.JobTypeBatch}
		if sc.Type == sdk.JobTypeSystem || sc.Type == sdk.JobTypeSysBatch {
			s = &system.Scheduler{}
		}
		return &mirrorCheck{Scheduler: s, t: t, c: c}
	})
	pl := rt.NewPlugin(f, rt.PoolConfig{Instances: 1}, zerolog.Nop())
	defer pl.Close(context.Background())
	// run registers job with its eval and processes the eval.
	run := func(job *sdk.Job) {
		eval := &sdk.Evaluation{ID: c.id('e'), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
			TriggeredBy: sdk.EvalTriggerJobRegister, JobID: job.ID, Status: sdk.EvalStatusPending}
		if err := c.apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: job, Eval: eval}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.process(context.Background(), Config{Log: zerolog.Nop(), Verify: verify}, pl, eval.ID); err != nil {
			t.Fatal(err)
		}
	}
	// Three rounds of the scenario's jobs, plus a scale-down of the
	// first job: kept plans, then stops of kept allocations.
	var first *sdk.Job
	for j := 0; j < 3*sc.Jobs+1; j++ {
		job := makeJob(cfg, sc, c.id('j'))
		// Small groups keep the test quick; odd jobs smaller still.
		job.TaskGroups[0].Count = min(job.TaskGroups[0].Count, 60-40*(j%2))
		if j == 3*sc.Jobs {
			// A new version of the first job (never an object the store
			// holds: it is not modified in place).
			next, tg := *first, *first.TaskGroups[0]
			tg.Count = max(tg.Count/2, 1)
			next.TaskGroups = []*sdk.TaskGroup{&tg}
			job = &next
		}
		if first == nil {
			first = job
		}
		run(job)
	}
	// One more eval checks the mirror after the last plan.
	job := makeJob(cfg, sc, c.id('j'))
	run(job)
	st := pl.Stats()
	if st.KeptPlans.Load() == 0 {
		t.Fatalf("no sync left out a kept plan (%d delta syncs)", st.DeltaSyncs.Load())
	}
	// A job's status changes alone when its first allocations run (pending
	// to running). A system job is running from its registration, and the
	// halved count of its new version above is still 1: that registration
	// changes nothing and, as in Nomad, leaves the job as it is (it used
	// to rewrite it, which this check counted).
	if st.JobStatuses.Load() == 0 && sc.Type != sdk.JobTypeSystem {
		t.Fatal("no sync sent a job as its status alone (ABI 1.3)")
	}
	if st.FullSyncs.Load() != 1 {
		t.Fatalf("%d full syncs, want only the first", st.FullSyncs.Load())
	}
}
