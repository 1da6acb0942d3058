package sdktest_test

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/sdktest"
)

func live(allocs []*sdk.Allocation) int {
	n := 0
	for _, a := range allocs {
		if !a.TerminalStatus() {
			n++
		}
	}
	return n
}

func TestHarness_PlacesAndRecords(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192), sdktest.Node("n2", 4000, 8192))
	job := sdktest.Job("web", 3)
	h.UpsertJob(job)
	if err := h.Process(&generic.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if len(h.Plans) != 1 || len(h.Updated) != 1 || h.Updated[0].Status != sdk.EvalStatusComplete {
		t.Fatalf("plans %d, updates %+v", len(h.Plans), h.Updated)
	}
	if got := live(h.AllocsByJob("default", "web")); got != 3 {
		t.Fatalf("live allocations = %d, want 3", got)
	}
}

func TestHarness_PartialCommitRefreshesAndRetries(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 1000, 8192), sdktest.Node("n2", 1000, 8192))
	job := sdktest.Job("web", 4)
	h.UpsertJob(job)
	// Best fit puts two on each node; n1's part is rejected the first time.
	h.RejectNodes("n1")
	p := h.Plugin(plugin.Info{Name: "service"}, &generic.Scheduler{})
	if err := p.Process(h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if len(h.Plans) != 2 || h.Results[0].RefreshIndex == 0 {
		t.Fatalf("want a rejected plan then a retry, got %d plans, first result %+v", len(h.Plans), h.Results[0])
	}
	// The retry saw the refreshed state: it placed only what was missing.
	retried := 0
	for _, as := range h.Plans[1].NodeAllocation {
		retried += len(as)
	}
	if retried != 2 {
		t.Fatalf("retry placed %d, want the 2 rejected", retried)
	}
	if got := live(h.AllocsByJob("default", "web")); got != 4 {
		t.Fatalf("live allocations = %d, want 4", got)
	}
	// A second eval on the same plugin gets a delta and places nothing.
	if err := p.Process(h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if len(h.Plans) != 2 {
		t.Fatalf("a no-op eval submitted a plan")
	}
}

func TestHarness_RejectAllExhaustsAttempts(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192))
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	h.RejectAll()
	if err := h.Process(&generic.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if len(h.Created) != 1 || h.Created[0].TriggeredBy != sdk.EvalTriggerMaxPlans || h.Created[0].Status != sdk.EvalStatusBlocked {
		t.Fatalf("want a max-plan-attempts blocked eval, got %+v", h.Created)
	}
}

func TestHarness_InvalidPlanIsRefused(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192))
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	rogue := sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		plan := &sdk.Plan{EvalID: eval.ID, Job: ctx.State.Job(eval.Namespace, eval.JobID)}
		plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: "default", JobID: "web", NodeID: "ghost", TaskGroup: "web"})
		_, err := ctx.Planner.SubmitPlan(plan)
		return err
	})
	err := h.Process(rogue, h.RegisterEval(job))
	if !errors.Is(err, sdk.ErrPlanInvalid) {
		t.Fatalf("err = %v, want ErrPlanInvalid", err)
	}
}
