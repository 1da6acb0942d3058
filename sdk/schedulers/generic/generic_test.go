package generic

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
)

// recorder is a planner that accepts every plan and records what it got.
type recorder struct {
	plans   []*sdk.Plan
	updates []*sdk.Evaluation
	created []*sdk.Evaluation
}

func (r *recorder) SubmitPlan(p *sdk.Plan) (*sdk.PlanResult, error) {
	r.plans = append(r.plans, p)
	return &sdk.PlanResult{NodeAllocation: p.NodeAllocation, NodeUpdate: p.NodeUpdate}, nil
}
func (r *recorder) UpdateEval(e *sdk.Evaluation) error  { r.updates = append(r.updates, e); return nil }
func (r *recorder) CreateEval(e *sdk.Evaluation) error  { r.created = append(r.created, e); return nil }
func (r *recorder) ReblockEval(e *sdk.Evaluation) error { r.updates = append(r.updates, e); return nil }

func node(id string, cpu int64, kernel string) *sdk.Node {
	return &sdk.Node{ID: id, Datacenter: "dc1", Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible,
		Attributes:    map[string]string{"kernel.name": kernel, "driver.docker": "1"},
		NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: cpu}, Memory: sdk.NodeMemoryResources{MemoryMB: 4096}}}
}

func run(t *testing.T, sync *abi.StateSync, job *sdk.Job) *recorder {
	t.Helper()
	m := mirror.New()
	if err := m.Apply(sync); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	eval := &sdk.Evaluation{ID: "e1", Namespace: "default", JobID: job.ID, Type: job.Type, Status: sdk.EvalStatusPending}
	ctx := sdk.NewContext(m, r, nil, time.Unix(0, 0), nil, eval.ID)
	if err := (&Scheduler{}).Process(ctx, eval); err != nil {
		t.Fatal(err)
	}
	return r
}

func webJob(count int) *sdk.Job {
	return &sdk.Job{Namespace: "default", ID: "web", Type: "service", Datacenters: []string{"dc1"},
		Constraints: []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: count, Tasks: []*sdk.Task{{Name: "t", Driver: "docker",
			Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}}}
}

func TestProcess_BestFitAndConstraints(t *testing.T) {
	job := webJob(2)
	sync := &abi.StateSync{Full: true, Index: 1, Jobs: []*sdk.Job{job},
		Nodes: []*sdk.Node{node("big", 8000, "linux"), node("small", 1200, "linux"), node("win", 1000, "windows")}}
	r := run(t, sync, job)
	if len(r.plans) != 1 {
		t.Fatalf("plans = %d", len(r.plans))
	}
	placed := r.plans[0].NodeAllocation
	// Best fit fills the small node first (both fit there), never the
	// Windows node.
	if len(placed["small"]) != 2 || len(placed["win"]) != 0 {
		t.Fatalf("placements = %v", placed)
	}
	if len(r.updates) != 1 || r.updates[0].Status != sdk.EvalStatusComplete || len(r.created) != 0 {
		t.Fatalf("eval updates = %+v, created = %+v", r.updates, r.created)
	}
}

func TestProcess_UnplacedCreatesBlockedEval(t *testing.T) {
	job := webJob(3)
	sync := &abi.StateSync{Full: true, Index: 1, Jobs: []*sdk.Job{job}, Nodes: []*sdk.Node{node("small", 900, "linux")}}
	r := run(t, sync, job)
	e := r.updates[0]
	if e.QueuedAllocations["g"] != 2 || e.FailedTGAllocs["g"].CoalescedFailures != 1 {
		t.Fatalf("queued/failures = %v %+v", e.QueuedAllocations, e.FailedTGAllocs["g"])
	}
	if len(r.created) != 1 || r.created[0].Status != sdk.EvalStatusBlocked || e.BlockedEval != r.created[0].ID {
		t.Fatalf("blocked eval chain wrong: %+v / %+v", e, r.created)
	}
}

func TestProcess_StoppedJobStopsAllocations(t *testing.T) {
	job := webJob(1)
	job.Stop = true
	a := &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", Name: "web.g[0]", NodeID: "big",
		DesiredStatus: sdk.AllocDesiredStatusRun}
	sync := &abi.StateSync{Full: true, Index: 1, Jobs: []*sdk.Job{job}, Nodes: []*sdk.Node{node("big", 8000, "linux")},
		Allocs: []*sdk.Allocation{a}}
	r := run(t, sync, job)
	if len(r.plans) != 1 || len(r.plans[0].NodeUpdate["big"]) != 1 || r.plans[0].NodeUpdate["big"][0].ID != "a1" {
		t.Fatalf("stop plan = %+v", r.plans)
	}
}
