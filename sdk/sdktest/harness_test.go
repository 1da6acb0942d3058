package sdktest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/verify"
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

// collector is a core-like scheduler: it collects every terminal eval it
// sees in its mirror.
type collector struct{}

func (collector) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	es, ok := ctx.State.(sdk.EvalState)
	if !ok {
		return errors.New("state does not mirror evals")
	}
	req := &sdk.GCRequest{}
	for _, e := range es.Evals() {
		if e.TerminalStatus() {
			req.Evals = append(req.Evals, e.ID)
		}
	}
	c, ok := ctx.Planner.(sdk.Collector)
	if !ok {
		return errors.New("planner offers no garbage collection")
	}
	if err := c.GarbageCollect(req); err != nil {
		return err
	}
	done := eval.Copy()
	done.Status = sdk.EvalStatusComplete
	return ctx.Planner.UpdateEval(done)
}

func TestHarness_CoreEvalMirrorsEvalsAndCollects(t *testing.T) {
	h := sdktest.New()
	h.UpsertEval(&sdk.Evaluation{ID: "old", Status: sdk.EvalStatusComplete},
		&sdk.Evaluation{ID: "live", Status: sdk.EvalStatusPending})
	p := h.Plugin(plugin.Info{Name: "core", MirrorEvals: true}, collector{})
	core := &sdk.Evaluation{ID: "gc-1", Type: sdk.JobTypeCore, JobID: sdk.CoreJobEvalGC, Status: sdk.EvalStatusPending}
	if err := p.Process(core); err != nil {
		t.Fatal(err)
	}
	if len(h.Collected) != 1 || len(h.Collected[0].Evals) != 1 || h.Collected[0].Evals[0] != "old" {
		t.Fatalf("collected %+v", h.Collected)
	}
	if h.Eval("old") != nil || h.Eval("live") == nil {
		t.Fatal("the harness did not apply the collection")
	}
	// The next core eval's delta removes "old" from the mirror: nothing
	// left to collect but the first core eval, now complete.
	if err := p.Process(&sdk.Evaluation{ID: "gc-2", Type: sdk.JobTypeCore, JobID: sdk.CoreJobEvalGC, Status: sdk.EvalStatusPending}); err != nil {
		t.Fatal(err)
	}
	if got := h.Collected[1].Evals; len(got) != 1 || got[0] != "gc-1" {
		t.Fatalf("second collection = %v, want [gc-1]", got)
	}
}

func TestHarness_GarbageCollectionOnlyForCoreEvals(t *testing.T) {
	h := sdktest.New()
	p := h.Plugin(plugin.Info{Name: "core", MirrorEvals: true}, collector{})
	err := p.Process(&sdk.Evaluation{ID: "e1", Type: sdk.JobTypeService, JobID: "web", Status: sdk.EvalStatusPending})
	if err == nil || len(h.Collected) != 0 {
		t.Fatalf("a service eval collected garbage: err %v, collected %+v", err, h.Collected)
	}
}

// TestHarness_InPlaceUpdateIntoADeploymentIsItsPlacement: the harness
// counts deployments as the host does: an allocation updated in place
// into a new deployment is one of its placements; one updated within its
// deployment is not counted again.
func TestHarness_InPlaceUpdateIntoADeploymentIsItsPlacement(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192))
	job := sdktest.Job("web", 2)
	h.UpsertJob(job)
	job = h.Job("default", "web")
	d1 := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning,
		TaskGroups: map[string]*sdk.DeploymentState{"web": {DesiredTotal: 2}}}
	d2 := &sdk.Deployment{ID: "d2", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning,
		TaskGroups: map[string]*sdk.DeploymentState{"web": {DesiredTotal: 2}}}
	h.UpsertDeployment(d1)
	h.UpsertDeployment(d2)
	a1, a2 := schedtest.Alloc(job, 0, "n1"), schedtest.Alloc(job, 1, "n1")
	a1.DeploymentID, a2.DeploymentID = "d1", "d1"
	h.UpsertAlloc(a1, a2)

	moved, stays := *a1, *a2
	moved.DeploymentID = "d2"
	e := h.RegisterEval(job)
	h.UpsertEval(e)
	if _, err := h.SubmitPlan(&sdk.Plan{EvalID: e.ID, Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n1": {&moved, &stays}}}); err != nil {
		t.Fatal(err)
	}
	placed := map[string]int{}
	for _, d := range h.FullSync(false).Deployments {
		placed[d.ID] = d.TaskGroups["web"].PlacedAllocs
	}
	if placed["d2"] != 1 || placed["d1"] != 0 {
		t.Fatalf("placements counted %v, want d2: 1 and d1: 0", placed)
	}
}

// The harness refuses, as the host does, a plan that names an allocation
// twice (stopped and updated) or updates a stopped one in place.
func TestHarness_RefusesWhatTheHostRefuses(t *testing.T) {
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192))
	job := sdktest.Job("web", 2)
	h.UpsertJob(job)
	job = h.Job("default", "web")
	running, stopped := schedtest.Alloc(job, 0, "n1"), schedtest.Alloc(job, 1, "n1")
	stopped.DesiredStatus = sdk.AllocDesiredStatusStop
	h.UpsertAlloc(running, stopped)
	e := h.RegisterEval(job)
	h.UpsertEval(e)
	for name, p := range map[string]*sdk.Plan{
		"appears twice": {EvalID: e.ID, Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n1": {running}},
			NodeUpdate: map[string][]*sdk.Allocation{"n1": {running}}},
		"is stopped and cannot be updated in place": {EvalID: e.ID, Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n1": {stopped}}},
		"does not exist": {EvalID: "nowhere", Job: job},
	} {
		if _, err := h.SubmitPlan(p); !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// The harness refuses, as the host does, a placement on a node that is not
// eligible for one: its part of the plan is rejected, not committed.
func TestHarness_RejectsNodesTheHostRejects(t *testing.T) {
	h := sdktest.New()
	ready, ineligible := sdktest.Node("n1", 4000, 8192), sdktest.Node("n2", 4000, 8192)
	ineligible.SchedulingEligibility = sdk.NodeSchedulingIneligible
	h.UpsertNode(ready, ineligible)
	job := sdktest.Job("web", 2)
	h.UpsertJob(job)
	job = h.Job("default", "web")
	e := h.RegisterEval(job)
	h.UpsertEval(e)
	a1, a2 := schedtest.Alloc(job, 0, "n1"), schedtest.Alloc(job, 1, "n2")
	res, err := h.SubmitPlan(&sdk.Plan{EvalID: e.ID, Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n1": {a1}, "n2": {a2}}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.RejectedNodes) != "[n2]" || res.RefreshIndex == 0 || h.Alloc(a2.ID) != nil || h.Alloc(a1.ID) == nil {
		t.Fatalf("rejected %v (refresh %d), want n2's placement alone rejected", res.RejectedNodes, res.RefreshIndex)
	}
}

// The harness checks eval updates, new evals and reblocks as the host does
// (package verify), and stores what the host would store.
func TestHarness_ChecksEvalsAsTheHostDoes(t *testing.T) {
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	e := h.RegisterEval(job)
	h.UpsertEval(e)
	blocked := func(id, trigger string) *sdk.Evaluation {
		return &sdk.Evaluation{ID: id, Namespace: "default", JobID: "web", Status: sdk.EvalStatusBlocked,
			TriggeredBy: trigger, PreviousEval: e.ID}
	}
	if err := h.CreateEval(blocked("b1", sdk.EvalTriggerJobRegister)); !errors.Is(err, sdk.ErrInvalidEval) {
		t.Fatalf("a blocked eval with a register trigger: err = %v", err)
	}
	if err := h.CreateEval(blocked("b1", sdk.EvalTriggerQueuedAllocs)); err != nil {
		t.Fatal(err)
	}
	for name, upd := range map[string]*sdk.Evaluation{
		"may not be updated to status": {ID: e.ID, Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending},
		"did not create that pending":  {ID: e.ID, Namespace: "default", JobID: "web", Status: sdk.EvalStatusComplete, NextEval: "b1"},
		"is for job":                   {ID: e.ID, Namespace: "default", JobID: "api", Status: sdk.EvalStatusComplete},
		"is not in the cluster":        {ID: "other", Namespace: "default", JobID: "web", Status: sdk.EvalStatusComplete},
	} {
		if err := h.UpdateEval(upd); !errors.Is(err, sdk.ErrInvalidEval) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if err := h.ReblockEval(&sdk.Evaluation{ID: e.ID, Namespace: "default", JobID: "web"}); !errors.Is(err, sdk.ErrInvalidEval) {
		t.Fatalf("reblocking a pending eval: err = %v", err)
	}
	// What a plugin may not change comes from the stored eval.
	if err := h.UpdateEval(&sdk.Evaluation{ID: e.ID, Namespace: "default", JobID: "web", Status: sdk.EvalStatusComplete,
		BlockedEval: "b1", Priority: 99, TriggeredBy: sdk.EvalTriggerNodeUpdate}); err != nil {
		t.Fatal(err)
	}
	got := h.Eval(e.ID)
	if got.Status != sdk.EvalStatusComplete || got.BlockedEval != "b1" || got.Priority != e.Priority || got.TriggeredBy != sdk.EvalTriggerJobRegister {
		t.Fatalf("stored %+v", got)
	}
	if err := h.ReblockEval(&sdk.Evaluation{ID: "b1", Namespace: "default", JobID: "web", Status: sdk.EvalStatusBlocked}); err != nil {
		t.Fatalf("reblocking the blocked eval: %v", err)
	}
}

// TestHarness_PlannerCallsConcernTheEvalBeingProcessed: as on the host, a
// plugin processing an eval may update, reblock and plan for that eval
// only, create only evals that follow it up, and not reuse an existing
// eval's ID, even when the cluster holds other evals of the job.
func TestHarness_PlannerCallsConcernTheEvalBeingProcessed(t *testing.T) {
	cases := []struct {
		name string
		call func(ctx *sdk.Context, eval, other *sdk.Evaluation) error
		want error
	}{
		{"update another eval", func(ctx *sdk.Context, eval, other *sdk.Evaluation) error {
			done := other.Copy()
			done.Status = sdk.EvalStatusComplete
			return ctx.Planner.UpdateEval(done)
		}, sdk.ErrInvalidEval},
		{"reblock another eval", func(ctx *sdk.Context, eval, other *sdk.Evaluation) error {
			return ctx.Planner.ReblockEval(other.Copy())
		}, sdk.ErrInvalidEval},
		{"create an eval following another", func(ctx *sdk.Context, eval, other *sdk.Evaluation) error {
			return ctx.Planner.CreateEval(&sdk.Evaluation{ID: ctx.NewID(), Namespace: eval.Namespace, JobID: eval.JobID,
				Status: sdk.EvalStatusPending, TriggeredBy: sdk.EvalTriggerRollingUpdate, PreviousEval: other.ID})
		}, sdk.ErrInvalidEval},
		{"create an eval under an existing ID", func(ctx *sdk.Context, eval, other *sdk.Evaluation) error {
			return ctx.Planner.CreateEval(&sdk.Evaluation{ID: other.ID, Namespace: eval.Namespace, JobID: eval.JobID,
				Status: sdk.EvalStatusPending, TriggeredBy: sdk.EvalTriggerRollingUpdate, PreviousEval: eval.ID})
		}, sdk.ErrInvalidEval},
		{"plan for another eval", func(ctx *sdk.Context, eval, other *sdk.Evaluation) error {
			_, err := ctx.Planner.SubmitPlan(&sdk.Plan{EvalID: other.ID, Job: ctx.State.Job(eval.Namespace, eval.JobID)})
			return err
		}, sdk.ErrStaleToken},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.New()
			job := sdktest.Job("web", 1)
			h.UpsertJob(job)
			other := h.RegisterEval(job)
			other.Status, other.TriggeredBy = sdk.EvalStatusBlocked, sdk.EvalTriggerQueuedAllocs
			h.UpsertEval(other)
			eval := h.RegisterEval(job)
			s := sdk.SchedulerFunc(func(ctx *sdk.Context, e *sdk.Evaluation) error { return tc.call(ctx, e, other) })
			if err := h.Process(s, eval); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if got := h.Eval(other.ID); got.Status != sdk.EvalStatusBlocked || got.TriggeredBy != sdk.EvalTriggerQueuedAllocs {
				t.Fatalf("the other eval became %+v", got)
			}
		})
	}
}

// As the host's applier, the harness commits a plan's deployment even when
// every node of the plan is rejected; only an all-at-once plan with a
// rejection commits nothing.
func TestHarness_DeploymentCommitsWhenEveryNodeIsRejected(t *testing.T) {
	for _, allAtOnce := range []bool{false, true} {
		h := sdktest.New()
		h.UpsertNode(sdktest.Node("n1", 4000, 8192))
		job := sdktest.Job("web", 1)
		h.UpsertJob(job)
		job = h.Job("default", "web")
		e := h.RegisterEval(job)
		h.UpsertEval(e)
		h.RejectAll()
		d := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: job.Version,
			JobCreateIndex: job.CreateIndex, Status: sdk.DeploymentStatusRunning,
			TaskGroups: map[string]*sdk.DeploymentState{"web": {DesiredTotal: 1}}}
		res, err := h.SubmitPlan(&sdk.Plan{EvalID: e.ID, Job: job, Deployment: d, AllAtOnce: allAtOnce,
			NodeAllocation: map[string][]*sdk.Allocation{"n1": {schedtest.Alloc(job, 0, "n1")}}})
		if err != nil {
			t.Fatal(err)
		}
		if committed := h.Deployment("d1") != nil; committed == allAtOnce || (res.Deployment != nil) != committed {
			t.Errorf("all at once %v: deployment committed %v (in the result %v)", allAtOnce, committed, res.Deployment != nil)
		}
		if len(res.RejectedNodes) != 1 || res.RefreshIndex == 0 {
			t.Errorf("all at once %v: rejected %v, refresh %d", allAtOnce, res.RejectedNodes, res.RefreshIndex)
		}
	}
}

// TestHarness_UpsertNodeComputesClass: as the host's state store does, the
// harness computes a node's class when it stores it, so that a node changed
// after sdktest.Node is not cached as feasible with the nodes it no longer
// resembles.
func TestHarness_UpsertNodeComputesClass(t *testing.T) {
	h := sdktest.New()
	r1, r2 := sdktest.Node("r1", 4000, 8192), sdktest.Node("r2", 4000, 8192)
	r1.Meta["rack"], r2.Meta["rack"] = "r1", "r2"
	h.UpsertNode(r1, r2)
	if c1, c2 := h.Node("r1").ComputedClass, h.Node("r2").ComputedClass; c1 == "" || c1 == c2 {
		t.Fatalf("computed classes %q and %q, want two different ones", c1, c2)
	}

	job := sdktest.Job("web", 1)
	job.Constraints = []*sdk.Constraint{{LTarget: "${meta.rack}", RTarget: "r1", Operand: sdk.ConstraintEqual}}
	h.UpsertJob(job)
	// A plugin's filter loop, as package feasible shows it.
	ch, elig := feasible.NewChecker(), feasible.NewEligibility(job)
	checks := feasible.NewGroupChecks(job, job.TaskGroups[0])
	for _, tc := range []struct {
		node, want string
	}{
		{"r1", ""},
		{"r2", `${meta.rack} = r1`},
	} {
		if got := elig.Check(ch, checks, h.Node(tc.node)); got != tc.want {
			t.Errorf("%s: check = %q, want %q", tc.node, got, tc.want)
		}
	}
}

// The harness refuses, as the host does, a placement without the devices
// its task asks for; the built-in service scheduler, which assigns them
// with the stack, places the job.
func TestHarness_RefusesAPlacementWithoutItsDevices(t *testing.T) {
	h := sdktest.New()
	n := sdktest.Node("n1", 4000, 8192)
	n.NodeResources.Devices = []*sdk.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "1080ti",
		Instances: []*sdk.NodeDevice{{ID: "g0", Healthy: true}, {ID: "g1", Healthy: true}}}}
	h.UpsertNode(n)
	job := sdktest.Job("train", 1)
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*sdk.RequestedDevice{{Name: "gpu", Count: 2}}
	h.UpsertJob(job)
	job = h.Job("default", "train")
	deviceless := sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		plan := &sdk.Plan{EvalID: eval.ID, Job: job}
		plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: "default", JobID: "train", NodeID: "n1", TaskGroup: "web",
			Name: "train.web[0]", AllocatedResources: sdk.RequestedResources(job.TaskGroups[0])})
		_, err := ctx.Planner.SubmitPlan(plan)
		return err
	})
	if err := h.Process(deviceless, h.RegisterEval(job)); !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), "device gpu") {
		t.Fatalf("err = %v, want ErrPlanInvalid naming the device", err)
	}
	if err := h.Process(&generic.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	allocs := h.AllocsByJob("default", "train")
	if len(allocs) != 1 || len(allocs[0].AllocatedResources.Tasks["app"].Devices) != 1 ||
		len(allocs[0].AllocatedResources.Tasks["app"].Devices[0].DeviceIDs) != 2 {
		t.Fatalf("allocations %+v, want one holding both GPUs", allocs)
	}
}

// rackScheduler takes one configuration key, rack, which must not be empty.
type rackScheduler struct{ sdk.Scheduler }

func (rackScheduler) CheckConfig(c map[string]string) error {
	if err := sdk.CheckConfigKeys(c, "rack"); err != nil {
		return err
	}
	if v, ok := c["rack"]; ok && v == "" {
		return errors.New("rack is empty")
	}
	return nil
}

// TestHarness_CheckConfig: the harness asks a scheduler about h.Config
// through the ABI, as a host loading the plugin does (ABI 1.7).
func TestHarness_CheckConfig(t *testing.T) {
	tests := []struct {
		name   string
		sched  sdk.Scheduler
		config map[string]string
		want   string // "" when accepted
	}{
		{"accepted", rackScheduler{}, map[string]string{"rack": "r1"}, ""},
		{"no configuration", rackScheduler{}, nil, ""},
		{"unknown key", rackScheduler{}, map[string]string{"rak": "r1"}, `unknown configuration key "rak"`},
		{"bad value", rackScheduler{}, map[string]string{"rack": ""}, "rack is empty"},
		{"a scheduler without a check", firstFit{}, map[string]string{"anything": "x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := sdktest.New()
			h.Config = tt.config
			sdktest.WantConfig(t, h.CheckConfig(tt.sched), tt.want)
		})
	}
}

// TestHarness_BoundsTheEvalsADeliveryCreates: as on the host, one
// delivery of an eval creates at most verify.MaxCreatedEvals; the next is
// refused, and the eval delivered again may create anew.
func TestHarness_BoundsTheEvalsADeliveryCreates(t *testing.T) {
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	e := h.RegisterEval(job)
	followup := func(id string) *sdk.Evaluation {
		return &sdk.Evaluation{ID: id, Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending,
			TriggeredBy: sdk.EvalTriggerRollingUpdate, PreviousEval: e.ID}
	}
	h.Deliver(e)
	for i := range verify.MaxCreatedEvals {
		if err := h.CreateEval(followup(fmt.Sprintf("f-%d", i))); err != nil {
			t.Fatalf("eval %d: %v", i, err)
		}
	}
	if err := h.CreateEval(followup("one-too-many")); !errors.Is(err, sdk.ErrInvalidEval) {
		t.Fatalf("past the bound: err = %v", err)
	}
	h.Deliver(e)
	if err := h.CreateEval(followup("next-delivery")); err != nil {
		t.Fatalf("delivered again: %v", err)
	}
}

// TestHarness_AnEvalNotConcludedFails: as on the host, which nacks it, a
// scheduler that returns without updating or reblocking its eval fails,
// even if it created evals; one that concludes passes.
func TestHarness_AnEvalNotConcludedFails(t *testing.T) {
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	e := h.RegisterEval(job)
	silent := sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		return ctx.Planner.CreateEval(&sdk.Evaluation{ID: ctx.NewID(), Namespace: eval.Namespace, JobID: eval.JobID,
			Status: sdk.EvalStatusPending, TriggeredBy: sdk.EvalTriggerRollingUpdate, PreviousEval: eval.ID})
	})
	if err := h.Process(silent, e); !errors.Is(err, sdktest.ErrNotConcluded) {
		t.Fatalf("a scheduler that did not conclude: err = %v", err)
	}
	concludes := sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		c := eval.Copy()
		c.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(c)
	})
	if err := h.Process(concludes, e); err != nil {
		t.Fatalf("a scheduler that concluded: %v", err)
	}
}
