package carry_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/conclude"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// planner records what a pass asks of the host, in order, and commits
// every plan whole unless told otherwise.
type planner struct {
	calls     []string
	created   []*sdk.Evaluation
	updated   []*sdk.Evaluation
	reblocked []*sdk.Evaluation
	// result answers SubmitPlan; nil: the plan committed whole.
	result func(*sdk.Plan) *sdk.PlanResult
}

var _ sdk.Planner = (*planner)(nil)

func (p *planner) SubmitPlan(pl *sdk.Plan) (*sdk.PlanResult, error) {
	p.calls = append(p.calls, "submit")
	if p.result != nil {
		return p.result(pl), nil
	}
	return &sdk.PlanResult{NodeUpdate: pl.NodeUpdate, NodeAllocation: pl.NodeAllocation, Whole: true}, nil
}

func (p *planner) CreateEval(e *sdk.Evaluation) error {
	p.calls = append(p.calls, "create "+e.ID)
	p.created = append(p.created, e)
	return nil
}

func (p *planner) UpdateEval(e *sdk.Evaluation) error {
	p.calls = append(p.calls, "update "+e.ID)
	p.updated = append(p.updated, e)
	return nil
}

func (p *planner) ReblockEval(e *sdk.Evaluation) error {
	p.calls = append(p.calls, "reblock "+e.ID)
	p.reblocked = append(p.reblocked, e)
	return nil
}

// fixture is job web (3 allocations of 500 MHz, a0 to a2, running on n1)
// on two nodes, and an eval of it.
type fixture struct {
	ctx     *sdk.Context
	planner *planner
	eval    *sdk.Evaluation
	job     *sdk.Job
	plan    *stack.Plan
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192), sdktest.Node("n2", 4000, 8192))
	job := sdktest.Job("web", 3)
	h.UpsertJob(job)
	for i := range 3 {
		h.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: "web", TaskGroup: "web",
			Name: sdk.AllocName("web", "web", i), NodeID: "n1", JobVersion: job.Version,
			AllocatedResources: sdk.RequestedResources(job.TaskGroups[0]),
			DesiredStatus:      sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
	}
	state := mirror.New()
	if err := state.Apply(h.FullSync(false)); err != nil {
		t.Fatal(err)
	}
	f := &fixture{planner: &planner{}, eval: h.RegisterEval(job), job: state.Job("default", "web")}
	f.ctx = sdk.NewContext(state, f.planner, nil, time.Unix(0, 0), nil, f.eval.ID)
	f.plan = stack.NewPlan(state, f.eval, f.job)
	return f
}

func (f *fixture) alloc(id string) *sdk.Allocation { return f.ctx.State.Alloc(id) }

// onN2 picks n2 for every placement and records what it was asked.
type onN2 struct {
	f     *fixture
	asked []carry.Placement
	// previousStopped says, per call, whether Previous was stopped in the
	// plan when the PickFunc was asked.
	previousStopped []bool
}

func (o *onN2) pick(pl carry.Placement) (*stack.Option, *sdk.AllocMetric) {
	o.asked = append(o.asked, pl)
	stopped := false
	if pl.Previous != nil {
		stopped = slices.ContainsFunc(o.f.plan.NodeUpdate[pl.Previous.NodeID], func(a *sdk.Allocation) bool { return a.ID == pl.Previous.ID })
	}
	o.previousStopped = append(o.previousStopped, stopped)
	return &stack.Option{Node: o.f.ctx.State.Node("n2"), Resources: sdk.RequestedResources(pl.Group)}, &sdk.AllocMetric{NodesEvaluated: 2}
}

// noRoom finds no node, as a node exhausted on cpu.
func noRoom(calls *int) carry.PickFunc {
	return func(carry.Placement) (*stack.Option, *sdk.AllocMetric) {
		*calls++
		return nil, &sdk.AllocMetric{NodesEvaluated: 2, NodesExhausted: 2, DimensionExhausted: map[string]int{"cpu": 2}}
	}
}

func TestOut_CarriesOutEveryPart(t *testing.T) {
	f := newFixture(t)
	tg := f.job.TaskGroups[0]
	inPlace := f.alloc("a1").Copy()
	inPlace.DeploymentID, inPlace.DeploymentStatus = "older", &sdk.AllocDeploymentStatus{Canary: true}
	d := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning}
	updates := []*sdk.DeploymentStatusUpdate{{DeploymentID: "d0", Status: sdk.DeploymentStatusCancelled}}
	desired := map[string]*sdk.DesiredUpdates{"web": {Stop: 1, InPlaceUpdate: 1, DestructiveUpdate: 1, Place: 1}}
	res := &reconcile.Result{
		Stop:              []reconcile.Stop{{Alloc: f.alloc("a0"), Description: reconcile.AllocNotNeeded}},
		InPlace:           []*sdk.Allocation{inPlace},
		Destructive:       []reconcile.Destructive{{Name: f.alloc("a2").Name, TaskGroup: tg, Stop: f.alloc("a2"), StopDescription: reconcile.AllocUpdating}},
		Place:             []reconcile.Placement{{Name: sdk.AllocName("web", "web", 3), TaskGroup: tg, Canary: true}},
		Deployment:        d,
		DeploymentUpdates: updates,
		DesiredTGUpdates:  desired,
	}
	f.eval.AnnotatePlan = true
	o := &onN2{f: f}
	p := carry.Out(carry.Input{Ctx: f.ctx, Eval: f.eval, Plan: f.plan, Result: res, Pick: o.pick})

	if f.plan.Deployment != d || len(f.plan.DeploymentUpdates) != 1 || f.plan.Annotations == nil ||
		f.plan.Annotations.DesiredTGUpdates["web"] != desired["web"] {
		t.Fatalf("plan deployment %+v, updates %+v, annotations %+v", f.plan.Deployment, f.plan.DeploymentUpdates, f.plan.Annotations)
	}
	if p.DeploymentID != "d1" {
		t.Fatalf("deployment joined = %q, want d1", p.DeploymentID)
	}
	stops := f.plan.NodeUpdate["n1"]
	if len(stops) != 2 || stops[0].ID != "a0" || stops[0].DesiredDescription != reconcile.AllocNotNeeded ||
		stops[1].ID != "a2" || stops[1].DesiredDescription != reconcile.AllocUpdating {
		t.Fatalf("stops = %+v, want a0 not needed, a2 updating", stops)
	}
	if got := f.plan.NodeAllocation["n1"]; len(got) != 1 || got[0] != inPlace || inPlace.DeploymentID != "d1" || inPlace.DeploymentStatus != nil {
		t.Fatalf("in place on n1 = %+v, want a1 joined to d1 afresh", got)
	}
	// The replacement is picked first, with its old allocation stopped.
	if len(o.asked) != 2 || !o.asked[0].Destructive || !o.previousStopped[0] || o.asked[0].Previous.ID != "a2" ||
		o.asked[1].Destructive || o.asked[1].Job != f.job || o.asked[1].Group != tg {
		t.Fatalf("picks asked %+v (previous stopped: %v)", o.asked, o.previousStopped)
	}
	if len(p.Placed) != 2 || !slices.Equal(f.plan.NodeAllocation["n2"], p.Placed) {
		t.Fatalf("placed %+v, plan on n2 %+v", p.Placed, f.plan.NodeAllocation["n2"])
	}
	for i, want := range []struct {
		name, previous string
		canary         bool
	}{{"web.web[2]", "a2", false}, {"web.web[3]", "", true}} {
		a := p.Placed[i]
		if a.Name != want.name || a.PreviousAllocation != want.previous || a.NodeID != "n2" || a.EvalID != f.eval.ID ||
			a.JobID != "web" || a.JobVersion != f.job.Version || a.TaskGroup != "web" || a.DeploymentID != "d1" ||
			(a.DeploymentStatus != nil && a.DeploymentStatus.Canary) != want.canary || a.Metrics.NodesEvaluated != 2 ||
			a.DesiredStatus != sdk.AllocDesiredStatusRun || a.ClientStatus != sdk.AllocClientStatusPending || a.ID == "" {
			t.Fatalf("placed[%d] = %+v, want %s replacing %q (canary %v) on n2 in d1", i, a, want.name, want.previous, want.canary)
		}
	}
	if p.Queued["web"] != 2 || p.Failed != nil {
		t.Fatalf("queued %v, failed %v; want 2 queued until submitted, none failed", p.Queued, p.Failed)
	}
}

func TestOut_NoRoom(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result func(f *fixture) *reconcile.Result
		// picks is how many times the PickFunc is asked, failures how many
		// placements of web failed (the first and those coalesced).
		picks, failures int
	}{
		{"a destructive update keeps its old allocation", func(f *fixture) *reconcile.Result {
			return &reconcile.Result{Destructive: []reconcile.Destructive{{Name: f.alloc("a2").Name, TaskGroup: f.job.TaskGroups[0],
				Stop: f.alloc("a2"), StopDescription: reconcile.AllocUpdating}}}
		}, 1, 1},
		{"a group that found no room is not tried again", func(f *fixture) *reconcile.Result {
			res := &reconcile.Result{}
			for i := 3; i < 6; i++ {
				res.Place = append(res.Place, reconcile.Placement{Name: sdk.AllocName("web", "web", i), TaskGroup: f.job.TaskGroups[0]})
			}
			return res
		}, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			picks := 0
			p := carry.Out(carry.Input{Ctx: f.ctx, Eval: f.eval, Plan: f.plan, Result: tc.result(f), Pick: noRoom(&picks)})
			if picks != tc.picks || len(p.Placed) != 0 || !f.plan.IsNoOp() {
				t.Fatalf("asked %d times, placed %+v, plan %+v; want %d picks and nothing in the plan", picks, p.Placed, f.plan.Plan, tc.picks)
			}
			m := p.Failed["web"]
			if p.Queued["web"] != tc.failures || m == nil || m.CoalescedFailures != tc.failures-1 || m.NodesExhausted != 2 {
				t.Fatalf("queued %v, failure %+v; want %d queued, explained once", p.Queued, m, tc.failures)
			}
			if r := m.ResourcesExhausted["app"]; r == nil || r.CPU != tc.failures*500 {
				t.Fatalf("resources exhausted %+v, want app's cpu %d times", m.ResourcesExhausted, tc.failures)
			}
		})
	}
}

func TestOut_StoppedJobPlacesNothing(t *testing.T) {
	f := newFixture(t)
	f.job.Stop = true
	res := &reconcile.Result{Stop: []reconcile.Stop{{Alloc: f.alloc("a0"), Description: reconcile.AllocNotNeeded}}}
	p := carry.Out(carry.Input{Ctx: f.ctx, Eval: f.eval, Plan: f.plan, Result: res})
	// Its groups queue nothing, and say so, as Nomad's deregistration
	// evals ({"web": 0}; this test expected no entry until a differential
	// QA run showed Nomad's).
	if len(f.plan.NodeUpdate["n1"]) != 1 || len(p.Queued) != 1 || p.Queued["web"] != 0 {
		t.Fatalf("stops %+v, queued %v; want a0 stopped and web's 0 queued", f.plan.NodeUpdate, p.Queued)
	}
	// A purged job has no groups to name.
	purged := carry.Out(carry.Input{Ctx: f.ctx, Eval: f.eval, Plan: stack.NewPlan(f.ctx.State, f.eval, nil), Result: &reconcile.Result{}})
	if purged.Queued == nil || len(purged.Queued) != 0 {
		t.Fatalf("a purged job queued %v", purged.Queued)
	}
}

func TestPass_Submit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// result is what to carry out; it may change the fixture's eval.
		result func(f *fixture) *reconcile.Result
		commit func(*sdk.Plan) *sdk.PlanResult // nil: whole
		calls  []string
		done   bool
		queued int
	}{
		{"nothing to do is not submitted", func(*fixture) *reconcile.Result { return &reconcile.Result{} },
			nil, nil, true, 0},
		{"a dry run submits even nothing", func(f *fixture) *reconcile.Result {
			f.eval.AnnotatePlan = true
			return &reconcile.Result{}
		}, nil, []string{"submit"}, true, 0},
		{"follow-up evals come first", func(f *fixture) *reconcile.Result {
			return &reconcile.Result{
				Annotate:      []*sdk.Allocation{withFollowup(f.alloc("a0"), "f1")},
				FollowupEvals: []*sdk.Evaluation{{ID: "f1", Namespace: "default", JobID: "web"}},
			}
		}, nil, []string{"create f1", "submit"}, true, 0},
		{"a delayed eval does not delay again", func(f *fixture) *reconcile.Result {
			f.eval.WaitUntil = time.Unix(60, 0)
			return &reconcile.Result{
				Annotate:      []*sdk.Allocation{withFollowup(f.alloc("a0"), "f1")},
				FollowupEvals: []*sdk.Evaluation{{ID: "f1", Namespace: "default", JobID: "web"}},
			}
		}, nil, []string{"submit"}, true, 0},
		{"a whole commit leaves nothing queued", placeOne, nil, []string{"submit"}, true, 0},
		{"a partial commit leaves its placements queued", placeOne,
			func(*sdk.Plan) *sdk.PlanResult {
				return &sdk.PlanResult{RefreshIndex: 100, RejectedNodes: []string{"n2"}}
			},
			[]string{"submit"}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.planner.result = tc.commit
			o := &onN2{f: f}
			p := carry.Out(carry.Input{Ctx: f.ctx, Eval: f.eval, Plan: f.plan, Result: tc.result(f), Pick: o.pick})
			done, _, err := p.Submit()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.planner.calls, tc.calls) || done != tc.done || p.Queued["web"] != tc.queued {
				t.Fatalf("calls %q, done %v, queued %d; want %q, %v, %d", f.planner.calls, done, p.Queued["web"], tc.calls, tc.done, tc.queued)
			}
			for _, e := range f.planner.created {
				if e.PreviousEval != f.eval.ID {
					t.Fatalf("follow-up %s follows %q, want the eval", e.ID, e.PreviousEval)
				}
			}
		})
	}
}

func withFollowup(a *sdk.Allocation, evalID string) *sdk.Allocation {
	c := a.Copy()
	c.FollowupEvalID = evalID
	return c
}

func placeOne(f *fixture) *reconcile.Result {
	return &reconcile.Result{Place: []reconcile.Placement{{Name: sdk.AllocName("web", "web", 3), TaskGroup: f.job.TaskGroups[0]}}}
}

// placeThree asks for three more allocations of web.
func placeThree(f *fixture) *reconcile.Result {
	res := &reconcile.Result{}
	for i := 3; i < 6; i++ {
		res.Place = append(res.Place, reconcile.Placement{Name: sdk.AllocName("web", "web", i), TaskGroup: f.job.TaskGroups[0]})
	}
	return res
}

func TestPass_Block(t *testing.T) {
	prior := &sdk.Evaluation{ID: "prior"}
	for _, tc := range []struct {
		name string
		// result is what to carry out, with no room for a placement; it
		// may change the fixture's eval.
		result func(f *fixture) *reconcile.Result
		prior  *sdk.Evaluation
		want   string // "new", "prior" or "" (none)
	}{
		{"what could not be placed waits in a blocked eval", placeThree, nil, "new"},
		{"an earlier pass's blocked eval is kept", placeThree, prior, "prior"},
		{"nothing failed, nothing blocked", func(*fixture) *reconcile.Result { return &reconcile.Result{} }, nil, ""},
		{"a blocked eval is reblocked at the end instead", func(f *fixture) *reconcile.Result {
			f.eval.Status = sdk.EvalStatusBlocked
			return placeThree(f)
		}, nil, ""},
		{"follow-up evals will try again", func(f *fixture) *reconcile.Result {
			res := placeThree(f)
			res.FollowupEvals = []*sdk.Evaluation{{ID: "f1", Namespace: "default", JobID: "web"}}
			return res
		}, nil, ""},
		{"a delayed eval blocks despite follow-ups", func(f *fixture) *reconcile.Result {
			f.eval.WaitUntil = time.Unix(60, 0)
			res := placeThree(f)
			res.FollowupEvals = []*sdk.Evaluation{{ID: "f1", Namespace: "default", JobID: "web"}}
			return res
		}, nil, "new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			picks := 0
			p := carry.Out(carry.Input{Ctx: f.ctx, Eval: f.eval, Plan: f.plan, Result: tc.result(f), Pick: noRoom(&picks)})
			b, err := p.Block(nil, tc.prior)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.want {
			case "new":
				if len(f.planner.created) != 1 || b != f.planner.created[0] || b.TriggeredBy != sdk.EvalTriggerQueuedAllocs ||
					b.Status != sdk.EvalStatusBlocked || b.FailedTGAllocs["web"] == nil {
					t.Fatalf("returned %+v, created %+v; want one queued-allocs blocked eval with web's failure", b, f.planner.created)
				}
			case "prior":
				if b != prior || len(f.planner.created) != 0 {
					t.Fatalf("returned %+v, created %d; want the prior one and none created", b, len(f.planner.created))
				}
			default:
				if b != nil || len(f.planner.created) != 0 {
					t.Fatalf("returned %+v, created %d; want none", b, len(f.planner.created))
				}
			}
		})
	}
}

func TestPass_Conclude(t *testing.T) {
	maxed := fmt.Errorf("%w (5)", conclude.ErrMaxAttempts)
	boom := errors.New("boom")
	blocked := &sdk.Evaluation{ID: "b1"}
	for _, tc := range []struct {
		name    string
		evalSt  string // the eval's status before
		noRoom  bool
		retried error
		calls   []string // with "E" for the eval's ID, "B" for a created eval's
		status  string   // the eval's, when updated
		wantErr error
	}{
		{"complete, naming the blocked eval", sdk.EvalStatusPending, true, nil, []string{"update E"}, sdk.EvalStatusComplete, nil},
		{"out of attempts: failed, and a max-plan-attempts blocked eval", sdk.EvalStatusPending, true, maxed,
			[]string{"create B", "update E"}, sdk.EvalStatusFailed, nil},
		{"another error is returned", sdk.EvalStatusPending, true, boom, nil, "", boom},
		{"a blocked eval that still cannot place is reblocked", sdk.EvalStatusBlocked, true, nil, []string{"reblock E"}, "", nil},
		{"a blocked eval that placed everything completes", sdk.EvalStatusBlocked, false, nil, []string{"update E"}, sdk.EvalStatusComplete, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.eval.Status = tc.evalSt
			o := &onN2{f: f}
			pick := o.pick
			if tc.noRoom {
				pick = noRoom(new(int))
			}
			p := carry.Out(carry.Input{Ctx: f.ctx, Eval: f.eval, Plan: f.plan, Result: placeThree(f), Pick: pick})
			err := p.Conclude(tc.retried, 5, blocked, nil, "d1")
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var want []string
			for _, c := range tc.calls {
				c = strings.Replace(c, "E", f.eval.ID, 1)
				if strings.HasSuffix(c, " B") {
					c = strings.TrimSuffix(c, "B") + f.planner.created[0].ID
				}
				want = append(want, c)
			}
			if !slices.Equal(f.planner.calls, want) {
				t.Fatalf("calls %q, want %q", f.planner.calls, want)
			}
			const queued = 3 // nothing was submitted
			if tc.status != "" {
				e := f.planner.updated[0]
				if e.Status != tc.status || e.QueuedAllocations["web"] != queued || e.DeploymentID != "d1" ||
					(e.FailedTGAllocs["web"] == nil) != !tc.noRoom {
					t.Fatalf("eval %+v; want %s, %d queued, deployment d1, web's failure explained: %v", e, tc.status, queued, tc.noRoom)
				}
				wantBlocked := blocked.ID
				if tc.retried != nil {
					b := f.planner.created[0]
					wantBlocked = b.ID
					if b.TriggeredBy != sdk.EvalTriggerMaxPlans || b.FailedTGAllocs["web"] == nil || e.StatusDescription != "maximum attempts reached (5)" {
						t.Fatalf("blocked eval %+v, description %q", b, e.StatusDescription)
					}
				}
				if e.BlockedEval != wantBlocked {
					t.Fatalf("eval names blocked eval %q, want %q", e.BlockedEval, wantBlocked)
				}
			}
			if len(f.planner.reblocked) == 1 {
				if e := f.planner.reblocked[0]; e.QueuedAllocations["web"] != 3 || e.FailedTGAllocs["web"] == nil {
					t.Fatalf("reblocked %+v", e)
				}
			}
		})
	}
}
