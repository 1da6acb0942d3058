package runtime

import (
	"context"
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

// planOf is a plan of two new allocations for job.
func planOf(job *sdk.Job) *sdk.Plan {
	a := func(id, node string) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: job.ID, NodeID: node, TaskGroup: "web", Name: id,
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
			Metrics: &sdk.AllocMetric{NodesEvaluated: 2}}
	}
	return &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
		"n1": {a("a1", "n1")}, "n2": {a("a2", "n2")}}}
}

// stored is what a host storing plan at index and time sends in a sync.
func stored(plan *sdk.Plan, index uint64, time int64) []*sdk.Allocation {
	var out []*sdk.Allocation
	for _, node := range []string{"n1", "n2"} {
		for _, a := range plan.NodeAllocation[node] {
			c := *a
			c.Metrics = nil
			c.CreateIndex, c.ModifyIndex, c.AllocModifyIndex, c.CreateTime, c.ModifyTime = index, index, index, time, time
			c.JobVersion, c.JobModifyIndex = plan.Job.Version, plan.Job.JobModifyIndex
			out = append(out, &c)
		}
	}
	return out
}

func TestMarkKept(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "web", Version: 3, JobModifyIndex: 8}
	other := &sdk.Allocation{ID: "b1", NodeID: "n1"}
	tests := []struct {
		name   string
		sync   func(plan *sdk.Plan) *abi.StateSync
		marked bool
	}{
		{"stored as placed", func(p *sdk.Plan) *abi.StateSync {
			return &abi.StateSync{FromIndex: 9, Index: 12, Allocs: append(stored(p, 11, 5), other)}
		}, true},
		{"changed since", func(p *sdk.Plan) *abi.StateSync {
			as := stored(p, 11, 5)
			as[1].ClientStatus = sdk.AllocClientStatusRunning
			as[1].ModifyIndex = 12
			return &abi.StateSync{FromIndex: 9, Index: 12, Allocs: append(as, other)}
		}, false},
		{"stored differently", func(p *sdk.Plan) *abi.StateSync {
			as := stored(p, 11, 5)
			as[0].NodeName = "renamed"
			return &abi.StateSync{FromIndex: 9, Index: 12, Allocs: as}
		}, false},
		{"stamped apart", func(p *sdk.Plan) *abi.StateSync {
			return &abi.StateSync{FromIndex: 9, Index: 12, Allocs: append(stored(p, 11, 5)[:1], stored(p, 12, 5)[1:]...)}
		}, false},
		{"not in the delta (snapshot before the commit)", func(p *sdk.Plan) *abi.StateSync {
			return &abi.StateSync{FromIndex: 9, Index: 10, Allocs: []*sdk.Allocation{other}}
		}, false},
		{"deleted", func(p *sdk.Plan) *abi.StateSync {
			return &abi.StateSync{FromIndex: 9, Index: 12, DeletedAllocs: []string{"a1", "a2"}}
		}, false},
		{"full sync", func(p *sdk.Plan) *abi.StateSync {
			return &abi.StateSync{Full: true, Index: 12, Allocs: stored(p, 11, 5)}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := planOf(job)
			kept := newKeptPlan(plan)
			sync := tt.sync(plan)
			n := len(sync.Allocs)
			if got := markKept(sync, &kept); got != tt.marked {
				t.Fatalf("marked = %v, want %v", got, tt.marked)
			}
			if kept != nil {
				t.Fatal("the kept plan was not consumed")
			}
			switch {
			case tt.marked:
				if sync.Kept == nil || *sync.Kept != (abi.Kept{Index: 11, Time: 5}) || len(sync.Allocs) != 1 || sync.Allocs[0] != other {
					t.Fatalf("marked sync: Kept %+v, Allocs %v", sync.Kept, sync.Allocs)
				}
			case sync.Kept != nil || len(sync.Allocs) != n:
				t.Fatalf("unmarked sync changed: Kept %+v, %d allocs of %d", sync.Kept, len(sync.Allocs), n)
			}
		})
	}
}

// submit sends req to a dispatcher for eval e1 of a plugin that declares
// v, whose planner answers with commit, and returns the response.
func submit(t *testing.T, v abi.Version, kept **keptPlan, commit func(*sdk.Plan) *sdk.PlanResult, req *abi.PlanRequest) abi.PlanResponse {
	t.Helper()
	d := &dispatcher{ctx: context.Background(), info: abi.Info{ABI: uint32(v)}, kept: kept, stats: &Stats{},
		call: &Call{Eval: &sdk.Evaluation{ID: "e1"}, Planner: fixedPlanner{commit: commit}}}
	msg, err := req.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.host(abi.OpSubmitPlan, msg)
	if err != nil {
		t.Fatal(err)
	}
	var resp abi.PlanResponse
	if err := abi.Decode(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// fixedPlanner answers every plan with the result commit makes of it.
type fixedPlanner struct {
	Planner
	commit func(*sdk.Plan) *sdk.PlanResult
}

func (f fixedPlanner) SubmitPlan(_ context.Context, p *sdk.Plan) (*sdk.PlanResult, StateSource, error) {
	return f.commit(p), nil, nil
}

func TestDispatcher_WholeOnlyToPluginsThatKeepPlans(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "web", Version: 3, JobModifyIndex: 8}
	whole := func(p *sdk.Plan) *sdk.PlanResult {
		return &sdk.PlanResult{NodeAllocation: p.NodeAllocation, AllocIndex: 11}
	}
	part := func(p *sdk.Plan) *sdk.PlanResult {
		return &sdk.PlanResult{NodeAllocation: map[string][]*sdk.Allocation{"n1": p.NodeAllocation["n1"]}, AllocIndex: 11}
	}
	tests := []struct {
		name      string
		abi       abi.Version
		commit    func(*sdk.Plan) *sdk.PlanResult
		wantWhole bool
	}{
		{"1.2 plugin, whole plan", abi.MakeVersion(1, 2), whole, true},
		{"1.2 plugin, part of the plan", abi.MakeVersion(1, 2), part, false},
		{"1.1 plugin, whole plan", abi.MakeVersion(1, 1), whole, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kept *keptPlan
			resp := submit(t, tt.abi, &kept, tt.commit, &abi.PlanRequest{Plan: planOf(job)})
			if resp.Whole != tt.wantWhole || (kept != nil) != tt.wantWhole {
				t.Fatalf("Whole = %v, kept = %v; want %v", resp.Whole, kept != nil, tt.wantWhole)
			}
			if resp.Result == nil || resp.Result.AllocIndex != 11 {
				t.Fatalf("result %+v", resp.Result)
			}
			if tt.wantWhole {
				if len(resp.Result.NodeAllocation) != 0 {
					t.Fatal("a whole commit's result carries allocation lists")
				}
				return
			}
			if len(resp.Result.NodeAllocation) == 0 {
				t.Fatal("the result lists no allocations")
			}
			for _, as := range resp.Result.NodeAllocation {
				for _, a := range as {
					if a.Metrics != nil || a.ClientStatus != "" {
						t.Fatal("result allocations are not slim")
					}
				}
			}
		})
	}
}

// deltaSource is a state whose every sync is the same delta.
type deltaSource struct{ sync abi.StateSync }

func (d deltaSource) Index() uint64 { return d.sync.Index }

func (d deltaSource) Sync(uint64, bool) *abi.StateSync {
	c := d.sync
	c.Jobs = slices.Clone(d.sync.Jobs)
	return &c
}

func TestSyncFor_JobStatusesOnlyToPluginsThatTakeThem(t *testing.T) {
	// The job's specification dates from index 5: a mirror at 10 has it.
	job := &sdk.Job{Namespace: "default", ID: "web", JobModifyIndex: 5, Status: sdk.JobStatusRunning}
	src := deltaSource{abi.StateSync{FromIndex: 10, Index: 12, Jobs: []*sdk.Job{job}}}
	for _, tt := range []struct {
		abi          abi.Version
		wantStatuses int
	}{{abi.MakeVersion(1, 2), 0}, {abi.MakeVersion(1, 3), 1}} {
		var kept *keptPlan
		s := syncFor(src, 10, abi.Info{ABI: uint32(tt.abi)}, &kept, &Stats{})
		if len(s.JobStatuses) != tt.wantStatuses || len(s.Jobs)+len(s.JobStatuses) != 1 {
			t.Errorf("ABI %s: %d jobs, %d job statuses; want %d statuses", tt.abi, len(s.Jobs), len(s.JobStatuses), tt.wantStatuses)
		}
	}
}

func TestDispatcher_ExpandsPlacedAllocations(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "web", Version: 3, JobModifyIndex: 8}
	template := &sdk.Allocation{Namespace: "default", JobID: "web", TaskGroup: "web", DesiredStatus: sdk.AllocDesiredStatusRun}
	for _, tt := range []struct {
		name     string
		placed   []abi.Placed
		wantCode abi.Code
	}{
		{"placed", []abi.Placed{{ID: "a1", NodeID: "n1", Name: "web.web[0]"}, {ID: "a2", NodeID: "n1", Name: "web.web[1]"}}, abi.CodeOK},
		{"without a template", []abi.Placed{{Shared: 1, ID: "a1", NodeID: "n1"}}, abi.CodeDecode},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got *sdk.Plan
			commit := func(p *sdk.Plan) *sdk.PlanResult {
				got = p
				return &sdk.PlanResult{NodeAllocation: p.NodeAllocation, AllocIndex: 11}
			}
			var kept *keptPlan
			resp := submit(t, abi.Current, &kept, commit, &abi.PlanRequest{Plan: &sdk.Plan{EvalID: "e1", Job: job},
				Shared: []*sdk.Allocation{template}, Placed: tt.placed})
			if resp.Code != tt.wantCode {
				t.Fatalf("code %d (%s), want %d", resp.Code, resp.Message, tt.wantCode)
			}
			if tt.wantCode != abi.CodeOK {
				if got != nil {
					t.Fatal("the planner saw a plan the host could not expand")
				}
				return
			}
			as := got.NodeAllocation["n1"]
			if len(as) != 2 || as[0].ID != "a1" || as[1].ID != "a2" || as[1].TaskGroup != "web" || as[1].Name != "web.web[1]" {
				t.Fatalf("the planner got %+v", as)
			}
			if !resp.Whole || kept == nil || len(kept.allocs) != 2 {
				t.Fatal("a whole commit of placed allocations was not kept")
			}
		})
	}
}
