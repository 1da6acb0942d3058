package plan

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
)

// fixture is three 1000 MHz nodes (n0 ready, n1 ready with 800 MHz used by
// job "other", n2 down), job "web" with eval e1 pending, and job "other"
// (priority 50) with eval o1.
func fixture(t testing.TB) (*state.Store, *sdk.Job) {
	t.Helper()
	s, _ := state.NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 3}}}
	err := s.Write(1, func(tx *state.Txn) error {
		for i, st := range []string{"ready", "ready", "down"} {
			n := &sdk.Node{ID: fmt.Sprintf("n%d", i), Status: st, SchedulingEligibility: "eligible",
				NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 1000}, Memory: sdk.NodeMemoryResources{MemoryMB: 1000}, Disk: sdk.NodeDiskResources{DiskMB: 1000}}}
			if err := tx.UpsertNode(n); err != nil {
				return err
			}
		}
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		other := &sdk.Job{Namespace: "default", ID: "other", Type: "service", Priority: 50, TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
		if err := tx.UpsertJob(other); err != nil {
			return err
		}
		if err := tx.UpsertJob(lifecycleJob()); err != nil {
			return err
		}
		for _, e := range []*sdk.Evaluation{
			{ID: "e1", Namespace: "default", JobID: "web", Type: "service", Priority: 50, Status: sdk.EvalStatusPending},
			{ID: "hi", Namespace: "default", JobID: "web", Type: "service", Priority: 70, Status: sdk.EvalStatusPending},
			{ID: "o1", Namespace: "default", JobID: "other", Type: "service", Priority: 50, Status: sdk.EvalStatusPending},
			{ID: "l1", Namespace: "default", JobID: "init", Type: "service", Priority: 50, Status: sdk.EvalStatusPending},
			{ID: "done", Namespace: "default", JobID: "web", Type: "service", Priority: 50, Status: sdk.EvalStatusComplete},
		} {
			if err := tx.UpsertEval(e); err != nil {
				return err
			}
		}
		// n1 is already 800 MHz full.
		return tx.UpsertAlloc(&sdk.Allocation{ID: "busy", Namespace: "default", JobID: "other", Job: other, TaskGroup: "g",
			NodeID: "n1", DesiredStatus: "run", AllocatedResources: res(800)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Snapshot().Job("default", "web")
}

// lifecycleJob is a job whose group runs an init task (400 MHz) before its
// main task (300 MHz), beside a sidecar (100 MHz): an allocation needs
// 500 MHz, not 800.
func lifecycleJob() *sdk.Job {
	task := func(name string, cpu int, lc *sdk.TaskLifecycle) *sdk.Task {
		return &sdk.Task{Name: name, Driver: "exec", Lifecycle: lc, Resources: &sdk.Resources{CPU: cpu, MemoryMB: 10}}
	}
	return &sdk.Job{Namespace: "default", ID: "init", Type: "service", Priority: 50, TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2,
		Tasks: []*sdk.Task{task("main", 300, nil), task("init", 400, &sdk.TaskLifecycle{Hook: sdk.TaskLifecycleHookPrestart}),
			task("side", 100, &sdk.TaskLifecycle{Hook: sdk.TaskLifecycleHookPrestart, Sidecar: true})}}}}
}

func res(cpu int64) *sdk.AllocatedResources {
	return &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: cpu},
		Memory: sdk.AllocatedMemoryResources{MemoryMB: 10}}}}
}

func withDescription(a *sdk.Allocation, desc string) *sdk.Allocation {
	a.DesiredDescription = desc
	return a
}

func withPrev(a *sdk.Allocation, prev string) *sdk.Allocation { a.PreviousAllocation = prev; return a }
func withName(a *sdk.Allocation, name string) *sdk.Allocation { a.Name = name; return a }

func unknown(a *sdk.Allocation) *sdk.Allocation {
	a.ClientStatus = sdk.AllocClientStatusUnknown
	return a
}

func claim(a *sdk.Allocation, f func(*sdk.AllocatedResources)) *sdk.Allocation {
	f(a.AllocatedResources)
	return a
}

func complete(a *sdk.Allocation) *sdk.Allocation {
	a.ClientStatus = sdk.AllocClientStatusComplete
	return a
}

func failed(a *sdk.Allocation) *sdk.Allocation {
	a.ClientStatus = sdk.AllocClientStatusFailed
	return a
}

func withVersion(a *sdk.Allocation, version, modifyIndex uint64) *sdk.Allocation {
	a.JobVersion, a.JobModifyIndex = version, modifyIndex
	return a
}

func withDeployment(a *sdk.Allocation, d string) *sdk.Allocation { a.DeploymentID = d; return a }

func place(id, node string, cpu int64) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: node,
		DesiredStatus: "run", AllocatedResources: res(cpu)}
}

// A plugin's plan whose resources add up past the int64 maximum is
// rejected: the sums wrapped around to negative numbers, which fit the
// 1,000 MHz node, and the plan over-committed it.
func TestEvaluate_ResourcesPastTheInt64MaximumDoNotFit(t *testing.T) {
	s, job := fixture(t)
	snap := s.Snapshot()
	twoTasks := place("a2", "n0", math.MaxInt64)
	twoTasks.AllocatedResources.Tasks["u"] = res(2).Tasks["t"]
	for name, placements := range map[string][]*sdk.Allocation{
		"two allocations": {place("a0", "n0", math.MaxInt64), place("a1", "n0", 2)},
		"two tasks":       {twoTasks},
	} {
		p := &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": placements}}
		if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
			t.Fatalf("%s: verify: %v", name, err)
		}
		res, req := Evaluate(snap, p, 0, NewID)
		if len(res.NodeAllocation) != 0 || req != nil || strings.Join(res.RejectedNodes, ",") != "n0" {
			t.Errorf("%s: committed %v, rejected %v; want n0 rejected", name, res.NodeAllocation, res.RejectedNodes)
		}
	}
}

func TestEvaluate_PartialCommitRejectsOnlyNodesThatDoNotFit(t *testing.T) {
	s, job := fixture(t)
	snap := s.Snapshot()
	p := &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
		"n0": {place("a0", "n0", 500)},
		"n1": {place("a1", "n1", 500)}, // 800 + 500 > 1000
		"n2": {place("a2", "n2", 100)}, // node is down
	}}
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	res, req := Evaluate(snap, p, 0, NewID)
	if len(res.NodeAllocation) != 1 || res.NodeAllocation["n0"] == nil {
		t.Fatalf("committed %v, want only n0", res.NodeAllocation)
	}
	if strings.Join(res.RejectedNodes, ",") != "n1,n2" {
		t.Fatalf("rejected = %v, want n1,n2", res.RejectedNodes)
	}
	if res.RefreshIndex == 0 {
		t.Error("partial commit without a refresh index")
	}
	if req == nil || len(req.AllocsUpdated) != 1 || req.AllocsUpdated[0].EvalID != "e1" {
		t.Fatalf("apply request = %+v", req)
	}
}

func TestEvaluate_AllAtOnceRejectsEverything(t *testing.T) {
	s, job := fixture(t)
	p := &sdk.Plan{EvalID: "e1", Job: job, AllAtOnce: true, NodeAllocation: map[string][]*sdk.Allocation{
		"n0": {place("a0", "n0", 500)}, "n1": {place("a1", "n1", 500)}}}
	res, req := Evaluate(s.Snapshot(), p, 0, NewID)
	if req != nil || len(res.NodeAllocation) != 0 || res.RefreshIndex == 0 {
		t.Fatalf("all-at-once plan partly committed: %+v", res)
	}
}

func TestEvaluate_StopsFreeRoomForPlacements(t *testing.T) {
	s, _ := fixture(t)
	snap := s.Snapshot()
	other := snap.Job("default", "other")
	p := &sdk.Plan{EvalID: "o1", Job: other,
		NodeUpdate:     map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1"}}},
		NodeAllocation: map[string][]*sdk.Allocation{"n1": {{ID: "new", Namespace: "default", JobID: "other", TaskGroup: "g", NodeID: "n1", AllocatedResources: res(900)}}}}
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	res, _ := Evaluate(snap, p, 0, NewID)
	if len(res.RejectedNodes) != 0 {
		t.Fatalf("rejected %v: the stop should have made room", res.RejectedNodes)
	}
}

func TestEvaluate_PreemptionFreesRoomAndCreatesUnchainedEval(t *testing.T) {
	s, job := fixture(t)
	// The job was re-registered at a higher priority after its eval e1
	// was created: the job's priority is what preempts.
	vip := *job
	vip.Priority = 70
	if err := s.Write(2, func(tx *state.Txn) error { return tx.UpsertJob(&vip) }); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	job = snap.Job("default", "web")
	p := &sdk.Plan{EvalID: "e1", Job: job,
		NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1"}}},
		NodeAllocation:  map[string][]*sdk.Allocation{"n1": {place("p1", "n1", 900)}}}
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	res, req := Evaluate(snap, p, 42, func() string { return "pre-eval" })
	if len(res.RejectedNodes) != 0 || req == nil {
		t.Fatalf("preempting plan rejected: %+v", res)
	}
	if len(req.PreemptionEvals) != 1 {
		t.Fatalf("preemption evals = %+v", req.PreemptionEvals)
	}
	e := req.PreemptionEvals[0]
	if e.JobID != "other" || e.TriggeredBy != sdk.EvalTriggerPreemption || e.PreviousEval != "" || e.Status != sdk.EvalStatusPending {
		t.Fatalf("preemption eval = %+v", e)
	}
}

// A plan may preempt an allocation that is already stopping (its node
// still runs it, so schedulers count its room): the plan commits, but the
// allocation is not marked again and its job gets no preemption eval, as
// Nomad's plan applier drops such preemptions.
func TestEvaluate_PreemptingAnAllocationAlreadyStoppingLeavesIt(t *testing.T) {
	s, _ := fixture(t)
	vip := *s.Snapshot().Job("default", "web")
	vip.Priority = 70
	err := s.Write(2, func(tx *state.Txn) error {
		if err := tx.UpsertJob(&vip); err != nil {
			return err
		}
		busy := *tx.Alloc("busy")
		busy.DesiredStatus, busy.DesiredDescription = sdk.AllocDesiredStatusStop, "alloc not needed due to job update"
		return tx.UpsertAlloc(&busy)
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	p := &sdk.Plan{EvalID: "e1", Job: snap.Job("default", "web"),
		NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1", PreemptedByAllocation: "p1"}}},
		NodeAllocation:  map[string][]*sdk.Allocation{"n1": {place("p1", "n1", 900)}}}
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	res, req := Evaluate(snap, p, 42, NewID)
	if len(res.RejectedNodes) != 0 || req == nil || len(req.AllocsUpdated) != 1 {
		t.Fatalf("plan not committed: %+v", res)
	}
	if len(res.NodePreemptions["n1"]) != 1 {
		t.Fatalf("the result should answer the plan's preemption: %+v", res.NodePreemptions)
	}
	if len(req.AllocsPreempted) != 0 || len(req.PreemptionEvals) != 0 {
		t.Fatalf("preempted %v with evals %v: the allocation was already stopping", req.AllocsPreempted, req.PreemptionEvals)
	}
}

// A preemption on a node where the plan places nothing (nothing at all,
// only stops, or only the annotation of a finished allocation) has no
// placement to make room for: it is dropped, not committed, and gets no
// eval. Nomad's applier drops it in the first case and keeps it in the
// others.
func TestEvaluate_PreemptionWithoutAPlacementOnItsNodeIsDropped(t *testing.T) {
	s, job := fixture(t)
	vip := *job
	vip.Priority = 70
	err := s.Write(2, func(tx *state.Txn) error {
		if err := tx.UpsertJob(&vip); err != nil {
			return err
		}
		done := failed(place("done", "n1", 100))
		done.Job = &vip
		return tx.UpsertAlloc(done)
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	job = snap.Job("default", "web")
	for _, tc := range []struct {
		name string
		on   func(p *sdk.Plan)
	}{
		{"nothing else on the node", func(*sdk.Plan) {}},
		{"only a stop on the node", func(p *sdk.Plan) {
			stop := *snap.Alloc("done")
			stop.DesiredStatus = sdk.AllocDesiredStatusStop
			p.NodeUpdate = map[string][]*sdk.Allocation{"n1": {&stop}}
		}},
		{"only an annotation of a finished allocation", func(p *sdk.Plan) {
			ann := *snap.Alloc("done")
			ann.Job, ann.FollowupEvalID = nil, "later"
			p.NodeAllocation["n1"] = []*sdk.Allocation{&ann}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &sdk.Plan{EvalID: "e1", Job: job,
				NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy", NodeID: "n1"}}},
				NodeAllocation:  map[string][]*sdk.Allocation{"n0": {place("p1", "n0", 900)}}}
			tc.on(p)
			if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
				t.Fatal(err)
			}
			res, req := Evaluate(snap, p, 42, NewID)
			if len(res.RejectedNodes) != 0 || req == nil || len(req.AllocsUpdated) == 0 {
				t.Fatalf("the placement on n0 should commit: %+v", res)
			}
			if len(res.NodePreemptions) != 0 || len(req.AllocsPreempted) != 0 || len(req.PreemptionEvals) != 0 {
				t.Fatalf("preempted %v (result %v) with evals %v: nothing is placed on n1", req.AllocsPreempted, res.NodePreemptions, req.PreemptionEvals)
			}
		})
	}
}

func TestNodeFits(t *testing.T) {
	s, job := fixture(t)
	// n3: ineligible, running "live" of web; n4: disconnected, running
	// "away" of web.
	err := s.Write(2, func(tx *state.Txn) error {
		for _, n := range []*sdk.Node{{ID: "n3", Status: "ready", SchedulingEligibility: "ineligible"},
			{ID: "n4", Status: sdk.NodeStatusDisconnected, SchedulingEligibility: "eligible"}} {
			n.NodeResources = &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 1000}, Memory: sdk.NodeMemoryResources{MemoryMB: 1000}}
			if err := tx.UpsertNode(n); err != nil {
				return err
			}
		}
		// n5 (500 MHz) registered again smaller than what it runs.
		small := &sdk.Node{ID: "n5", Status: "ready", SchedulingEligibility: "eligible",
			NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 500}, Memory: sdk.NodeMemoryResources{MemoryMB: 1000}}}
		if err := tx.UpsertNode(small); err != nil {
			return err
		}
		for _, a := range []*sdk.Allocation{place("live", "n3", 100), place("away", "n4", 100), place("run0", "n0", 100),
			place("x1", "n5", 100), place("x2", "n5", 800), claim(place("x3", "n5", 0), func(r *sdk.AllocatedResources) {
				r.Tasks["t"].Cpu.ReservedCores = []uint16{0}
			}),
			failed(place("crashed-down", "n2", 100)), failed(place("crashed-full", "n1", 100)), failed(place("crashed-ineligible", "n3", 100))} {
			a.Job = job
			if err := tx.UpsertAlloc(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	cases := []struct {
		name string
		plan *sdk.Plan
		node string
		ok   bool
		why  string
	}{
		{"only stops on a down node", &sdk.Plan{NodeUpdate: map[string][]*sdk.Allocation{"n2": {{ID: "x"}}}}, "n2", true, ""},
		{"placement on a down node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n2": {place("a", "n2", 1)}}}, "n2", false, "not ready"},
		{"placement on a missing node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"nX": {place("a", "nX", 1)}}}, "nX", false, "does not exist"},
		{"new placement on an ineligible node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n3": {place("a", "n3", 1)}}}, "n3", false, "not eligible"},
		{"in-place update on an ineligible node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n3": {place("live", "n3", 200)}}}, "n3", true, ""},
		{"update replaces the old size", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n3": {place("live", "n3", 1000)}}}, "n3", true, ""},
		{"marking unknown on a disconnected node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n4": {unknown(place("away", "n4", 100))}}}, "n4", true, ""},
		{"marking unknown does not grow an allocation", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n4": {unknown(place("away", "n4", 5000))}}}, "n4", false, "cpu exhausted"},
		{"other update on a disconnected node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n4": {place("away", "n4", 100)}}}, "n4", false, "not ready"},
		{"new allocation marked unknown on a disconnected node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n4": {unknown(place("a", "n4", 1))}}}, "n4", false, "not ready"},
		{"annotating a failed allocation on a down node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n2": {failed(place("crashed-down", "n2", 100))}}}, "n2", true, ""},
		{"annotating a failed allocation on a full node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n1": {place("crashed-full", "n1", 900)}}}, "n1", true, ""},
		{"annotating a failed allocation on an ineligible node", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n3": {failed(place("crashed-ineligible", "n3", 100))}}}, "n3", true, ""},
		{"an annotation does not carry a placement", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n1": {place("crashed-full", "n1", 100), place("a", "n1", 201)}}}, "n1", false, "cpu exhausted"},
		{"an update calling its running allocation finished still holds its room",
			&sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n0": {complete(place("run0", "n0", 900)), place("a", "n0", 400)}}}, "n0", false, "cpu exhausted"},
		{"an update on a node already over, holding what it held", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {place("x1", "n5", 100)}}}, "n5", true, ""},
		{"an update on a node already over, holding less", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {place("x1", "n5", 50)}}}, "n5", true, ""},
		{"an update on a node already over, growing", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {place("x1", "n5", 101)}}}, "n5", false, "cpu exhausted"},
		{"a placement on a node already over", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {place("x1", "n5", 100), place("a", "n5", 1)}}}, "n5", false, "cpu exhausted"},
		{"updates of all the allocations of a node already over, holding what they held",
			&sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {place("x1", "n5", 100), place("x2", "n5", 800)}}}, "n5", true, ""},
		{"an update on a node already over, growing beside a stop that leaves it over",
			&sdk.Plan{NodeUpdate: map[string][]*sdk.Allocation{"n5": {{ID: "x2"}}}, NodeAllocation: map[string][]*sdk.Allocation{"n5": {place("x1", "n5", 600)}}}, "n5", false, "cpu exhausted"},
		{"an update on a node already over, taking a port", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {claim(place("x1", "n5", 100), func(r *sdk.AllocatedResources) {
			r.Shared.Ports = []sdk.PortMapping{{Label: "http", Value: 8080}}
		})}}}, "n5", false, "exhausted"},
		{"an update on a node already over, taking another core", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {claim(place("x3", "n5", 0), func(r *sdk.AllocatedResources) {
			r.Tasks["t"].Cpu.ReservedCores = []uint16{1}
		})}}}, "n5", false, "exhausted"},
		{"an update on a node already over, taking a device", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n5": {claim(place("x1", "n5", 50), func(r *sdk.AllocatedResources) {
			r.Tasks["t"].Devices = []*sdk.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "t4", DeviceIDs: []string{"g0"}}}
		})}}}, "n5", false, "exhausted"},
		{"exactly full", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n1": {place("a", "n1", 200)}}}, "n1", true, ""},
		{"one over", &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n1": {place("a", "n1", 201)}}}, "n1", false, "cpu exhausted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := verify.NodeFits(snap, tc.plan, tc.node)
			if ok != tc.ok || !strings.Contains(why, tc.why) {
				t.Fatalf("NodeFits = %v %q, want %v %q", ok, why, tc.ok, tc.why)
			}
		})
	}
}

func TestValidate_RejectsWholePlan(t *testing.T) {
	s, job := fixture(t)
	err := s.Write(2, func(tx *state.Txn) error {
		a := place("dead", "n0", 1)
		a.Job = job
		a.DesiredStatus = sdk.AllocDesiredStatusStop
		if err := tx.UpsertAlloc(a); err != nil {
			return err
		}
		first := place("first", "n0", 1)
		first.Job, first.Name = job, "web.g[0]"
		if err := tx.UpsertAlloc(first); err != nil {
			return err
		}
		return tx.UpsertDeployment(&sdk.Deployment{ID: "d-other", Namespace: "default", JobID: "other", Status: "running"})
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	v1 := *job
	v1.Version = 7
	cases := []struct {
		name string
		plan *sdk.Plan
		lim  int
		want string
	}{
		{"no eval", &sdk.Plan{Job: job}, 0, "no eval ID"},
		{"unknown eval", &sdk.Plan{EvalID: "nope", Job: job}, 0, "does not exist"},
		{"terminal eval", &sdk.Plan{EvalID: "done", Job: job}, 0, "is complete"},
		{"another job's plan", &sdk.Plan{EvalID: "o1", Job: job}, 0, "not the eval's job"},
		{"unknown job version", &sdk.Plan{EvalID: "e1", Job: &v1}, 0, "not a version the state knows"},
		{"placements without a job", &sdk.Plan{EvalID: "e1", NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 1)}}}, 0, "without a job"},
		{"unknown node", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"nX": {place("a", "nX", 1)}}}, 0, "unknown node"},
		{"misfiled placement", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n1", 1)}}}, 0, "names node"},
		{"another job's allocation", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {{ID: "a", Namespace: "default", JobID: "other", TaskGroup: "g", NodeID: "n0"}}}}, 0, "belongs to job"},
		{"unknown group", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {{ID: "a", Namespace: "default", JobID: "web", TaskGroup: "nope", NodeID: "n0"}}}}, 0, "unknown task group"},
		{"placement not to run", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {{ID: "a", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n0", DesiredStatus: "stop", AllocatedResources: res(1)}}}}, 0, "desired status"},
		{"null placement", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {nil}}}, 0, "missing (null)"},
		{"null stop", &sdk.Plan{EvalID: "e1", Job: job, NodeUpdate: map[string][]*sdk.Allocation{"n0": {nil}}}, 0, "missing (null)"},
		{"null preemption", &sdk.Plan{EvalID: "e1", Job: job, NodePreemptions: map[string][]*sdk.Allocation{"n0": {nil}}}, 0, "missing (null)"},
		{"null task resources", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {{ID: "a",
			Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n0",
			AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": nil}}}}}}, 0, "missing (null)"},
		{"null device", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {{ID: "a",
			Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n0",
			AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {Devices: []*sdk.AllocatedDeviceResource{nil}}}}}}}}, 0, "missing (null)"},
		{"null task network", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {{ID: "a",
			Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n0",
			AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {Networks: []*sdk.NetworkResource{nil}}}}}}}}, 0, "missing (null)"},
		{"null shared network", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {{ID: "a",
			Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n0",
			AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {}},
				Shared: sdk.AllocatedSharedResources{Networks: []*sdk.NetworkResource{nil}}}}}}}, 0, "missing (null)"},
		{"no resources", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {{ID: "a",
			Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n0"}}}}, 0, "holds no resources"},
		{"negative resources", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {place("a", "n0", 5000), place("b", "n0", -5000)}}}, 0, "negative"},
		{"null deployment group", &sdk.Plan{EvalID: "e1", Job: job, Deployment: &sdk.Deployment{ID: "d1", Namespace: "default",
			JobID: "web", TaskGroups: map[string]*sdk.DeploymentState{"g": nil}}}, 0, "missing (null)"},
		{"deployment of another version", &sdk.Plan{EvalID: "e1", Job: job, Deployment: &sdk.Deployment{ID: "d1", Namespace: "default",
			JobID: "web", JobVersion: job.Version + 1, JobCreateIndex: job.CreateIndex}}, 0, "not the plan's job"},
		{"deployment of the job before a purge", &sdk.Plan{EvalID: "e1", Job: job, Deployment: &sdk.Deployment{ID: "d1", Namespace: "default",
			JobID: "web", JobVersion: job.Version, JobCreateIndex: job.CreateIndex + 100}}, 0, "not the plan's job"},
		{"deployment without a job", &sdk.Plan{EvalID: "e1", Deployment: &sdk.Deployment{ID: "d1", Namespace: "default",
			JobID: "web", JobVersion: job.Version, JobCreateIndex: job.CreateIndex}}, 0, "not the plan's job"},
		{"null deployment update", &sdk.Plan{EvalID: "e1", Job: job, DeploymentUpdates: []*sdk.DeploymentStatusUpdate{nil}}, 0, "missing (null)"},
		{"predecessor of another job", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {withPrev(place("a", "n0", 1), "busy")}}}, 0, "of another job as its predecessor"},
		{"deployment of another job", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {withDeployment(place("a", "n0", 1), "nope")}}}, 0, "neither the plan's nor its job's"},
		{"update of a stopped allocation", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("dead", "n0", 1)}}}, 0, "stopped and cannot be updated in place"},
		{"stop of another job", &sdk.Plan{EvalID: "e1", Job: job, NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "busy"}}}}, 0, "another job"},
		{"stop of unknown allocation", &sdk.Plan{EvalID: "e1", Job: job, NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "ghost"}}}}, 0, "unknown allocation"},
		{"stop on the wrong node", &sdk.Plan{EvalID: "o1", NodeUpdate: map[string][]*sdk.Allocation{"n0": {{ID: "busy"}}}}, 0, "runs on n1"},
		{"stop that runs", &sdk.Plan{EvalID: "o1", NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "busy", DesiredStatus: "run"}}}}, 0, "desired status"},
		{"stop that claims running", &sdk.Plan{EvalID: "o1", NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "busy", ClientStatus: "running"}}}}, 0, "client status"},
		{"giant placement", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {withDescription(place("a", "n0", 1), strings.Repeat("x", verify.MaxAllocBytes))}}}, 0, "over the limit of 65536"},
		{"giant stop", &sdk.Plan{EvalID: "o1", NodeUpdate: map[string][]*sdk.Allocation{"n1": {{ID: "busy",
			DesiredDescription: strings.Repeat("x", verify.MaxAllocBytes)}}}}, 0, "over the limit of 65536"},
		{"duplicate IDs", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {place("a", "n0", 1), place("a", "n0", 1)}}}, 0, "appears twice"},
		{"ID already used", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("busy", "n0", 1)}}}, 0, "already used"},
		{"ID of the job's allocation on the node reused for another", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {withName(place("first", "n0", 1), "web.g[1]")}}}, 0, "already used"},
		{"preempting an equal priority", &sdk.Plan{EvalID: "e1", Job: job, NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy"}}}}, 0, "may not be preempted"},
		{"an eval's priority does not preempt", &sdk.Plan{EvalID: "hi", Job: job, NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy"}}}}, 0, "may not be preempted"},
		{"a plugin cannot raise its priority", &sdk.Plan{EvalID: "e1", Job: job, Priority: 100, NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy"}}}}, 0, "may not be preempted"},
		{"preempting its own job", &sdk.Plan{EvalID: "o1", NodePreemptions: map[string][]*sdk.Allocation{"n1": {{ID: "busy"}}}}, 0, "own job"},
		{"another job's deployment", &sdk.Plan{EvalID: "e1", Job: job, Deployment: &sdk.Deployment{ID: "d", Namespace: "default", JobID: "other"}}, 0, "deployment d is for job"},
		{"update of another job's deployment", &sdk.Plan{EvalID: "e1", Job: job, DeploymentUpdates: []*sdk.DeploymentStatusUpdate{{DeploymentID: "d-other"}}}, 0, "another job"},
		{"placement of a version the state does not keep", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{
			"n0": {withVersion(place("a", "n0", 1), 7, 999)}}}, 0, "which the state does not keep"},
		{"oversize", &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 1), place("b", "n0", 1)}}}, 1, "over the limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := verify.DefaultLimits()
			if tc.lim > 0 {
				lim.MaxAllocs = tc.lim
			}
			err := verify.Plan(snap, tc.plan, lim)
			if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want sdk.ErrPlanInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

// A new placement may run a kept older version of the job (named by its
// JobModifyIndex) and is checked against that version's groups.
func TestValidate_PlacementOfAnOlderVersion(t *testing.T) {
	s, v0 := fixture(t)
	v1 := v0.Copy()
	v1.TaskGroups = []*sdk.TaskGroup{{Name: "g2", Count: 1}}
	if err := s.Write(2, func(tx *state.Txn) error { return tx.UpsertJob(v1) }); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	cur := snap.Job("default", "web")
	if cur.Version == v0.Version || snap.JobVersion("default", "web", v0.Version) == nil {
		t.Fatalf("the store did not keep version %d", v0.Version)
	}
	old := withVersion(place("a", "n0", 1), v0.Version, v0.JobModifyIndex) // group g exists only in v0
	if err := verify.Plan(snap, &sdk.Plan{EvalID: "e1", Job: cur, NodeAllocation: map[string][]*sdk.Allocation{"n0": {old}}}, verify.DefaultLimits()); err != nil {
		t.Fatalf("placement of the kept version refused: %v", err)
	}
	forged := withVersion(place("b", "n0", 1), cur.Version, cur.JobModifyIndex) // g is not in the current version
	err := verify.Plan(snap, &sdk.Plan{EvalID: "e1", Job: cur, NodeAllocation: map[string][]*sdk.Allocation{"n0": {forged}}}, verify.DefaultLimits())
	if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), "unknown task group") {
		t.Fatalf("err = %v, want the group checked against the current version", err)
	}
}

func TestValidate_TakesJobAndPriorityFromState(t *testing.T) {
	s, job := fixture(t)
	forged := *job
	forged.TaskGroups = []*sdk.TaskGroup{{Name: "g", Count: 1000}}
	p := &sdk.Plan{EvalID: "e1", Job: &forged, Priority: 99, NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 1)}}}
	if err := verify.Plan(s.Snapshot(), p, verify.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	if p.Job != job || p.Priority != 50 {
		t.Fatalf("plan job %p (stored %p), priority %d", p.Job, job, p.Priority)
	}
	if a := p.NodeAllocation["n0"][0]; a.EvalID != "e1" || a.DesiredStatus != sdk.AllocDesiredStatusRun {
		t.Fatalf("placement not stamped: %+v", a)
	}
}

// An annotation (a follow-up eval, say) leaves an allocation the eval that
// placed it, as in Nomad, where nomad alloc status shows that eval and the
// eval's allocations list it; an in-place update to a new job version is
// the updating eval's.
func TestValidate_AnnotationKeepsItsEval(t *testing.T) {
	s, v0 := fixture(t)
	crashed, running := failed(place("crashed", "n0", 100)), place("running", "n0", 100)
	for _, a := range []*sdk.Allocation{crashed, running} {
		a.Job, a.EvalID = v0, "done"
		a.JobVersion, a.JobModifyIndex = v0.Version, v0.JobModifyIndex
	}
	v1 := v0.Copy()
	v1.Meta = map[string]string{"team": "web"}
	if err := s.Write(2, func(tx *state.Txn) error {
		if err := tx.UpsertAlloc(crashed); err != nil {
			return err
		}
		if err := tx.UpsertAlloc(running); err != nil {
			return err
		}
		return tx.UpsertJob(v1)
	}); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	cur := snap.Job("default", "web")
	if cur.Version == v0.Version {
		t.Fatal("no new job version")
	}
	note := *crashed
	note.Job, note.EvalID, note.FollowupEvalID = nil, "", "later"
	inPlace := *running
	inPlace.Job, inPlace.JobVersion, inPlace.JobModifyIndex = nil, cur.Version, cur.JobModifyIndex
	p := &sdk.Plan{EvalID: "e1", Job: cur, NodeAllocation: map[string][]*sdk.Allocation{"n0": {&note, &inPlace}}}
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatalf("plan refused: %v", err)
	}
	if note.EvalID != "done" || inPlace.EvalID != "e1" {
		t.Fatalf("annotation's eval %q (want done), in-place update's %q (want e1)", note.EvalID, inPlace.EvalID)
	}
}

// A scheduler annotates an allocation its node reports failed (the
// follow-up eval of a delayed reschedule) by updating it in place: the
// plan is valid and commits on a node that could not take a placement.
func TestValidate_AnnotationOfAFailedAllocation(t *testing.T) {
	s, job := fixture(t)
	crashed := failed(place("crashed", "n2", 100))
	crashed.Job = job
	// Long task histories, which the plugin's copy carries: the size bound
	// leaves them out, as the host keeps the stored ones.
	crashed.TaskStates = map[string]sdk.Opaque{"t": {"Events": strings.Repeat("x", 2*verify.MaxAllocBytes)}}
	if err := s.Write(2, func(tx *state.Txn) error { return tx.UpsertAlloc(crashed) }); err != nil {
		t.Fatal(err)
	}
	note := *crashed
	note.Job, note.FollowupEvalID = nil, "later"
	p := &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n2": {&note}}}
	snap := s.Snapshot()
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatalf("annotation refused: %v", err)
	}
	res, req := Evaluate(snap, p, 1, NewID)
	if len(res.RejectedNodes) != 0 || req == nil || len(req.AllocsUpdated) != 1 || req.AllocsUpdated[0].FollowupEvalID != "later" {
		t.Fatalf("result %+v, request %+v", res, req)
	}
}

// An annotation names the version its allocation runs and is checked
// against it; an in-place update names the plan's version and is checked
// against that. Here the new version drops group g: a failed allocation
// of the old one may still be annotated, not updated in place.
func TestValidate_AnnotationKeepsTheVersionItsAllocationRuns(t *testing.T) {
	s, v0 := fixture(t)
	crashed := failed(place("crashed", "n0", 100))
	crashed.Job = v0
	if err := s.Write(2, func(tx *state.Txn) error { return tx.UpsertAlloc(crashed) }); err != nil {
		t.Fatal(err)
	}
	v1 := v0.Copy()
	v1.TaskGroups = []*sdk.TaskGroup{{Name: "g2", Count: 1}}
	if err := s.Write(3, func(tx *state.Txn) error { return tx.UpsertJob(v1) }); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	cur := snap.Job("default", "web")

	note := withVersion(failed(place("crashed", "n0", 100)), v0.Version, v0.JobModifyIndex)
	note.FollowupEvalID = "later"
	p := &sdk.Plan{EvalID: "e1", Job: cur, NodeAllocation: map[string][]*sdk.Allocation{"n0": {note}}}
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatalf("annotation of the old version refused: %v", err)
	}
	moved := withVersion(failed(place("crashed", "n0", 100)), cur.Version, cur.JobModifyIndex)
	err := verify.Plan(snap, &sdk.Plan{EvalID: "e1", Job: cur, NodeAllocation: map[string][]*sdk.Allocation{"n0": {moved}}}, verify.DefaultLimits())
	if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), "unknown task group") {
		t.Fatalf("err = %v, want an in-place update checked against the plan's version", err)
	}
}

// A finished allocation whose node is gone (collected after it went down)
// may still be annotated: that needs nothing of the node. Anything else on
// a node that does not exist is refused.
func TestValidate_AnnotationOnANodeThatIsGone(t *testing.T) {
	s, job := fixture(t)
	crashed := failed(place("crashed", "gone", 100))
	crashed.Job = job
	if err := s.Write(2, func(tx *state.Txn) error { return tx.UpsertAlloc(crashed) }); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	note := failed(place("crashed", "gone", 100))
	note.FollowupEvalID = "later"
	p := &sdk.Plan{EvalID: "e1", Job: job, NodeAllocation: map[string][]*sdk.Allocation{"gone": {note}}}
	if err := verify.Plan(snap, p, verify.DefaultLimits()); err != nil {
		t.Fatalf("annotation refused: %v", err)
	}
	if res, req := Evaluate(snap, p, 1, NewID); len(res.RejectedNodes) != 0 || req == nil || len(req.AllocsUpdated) != 1 {
		t.Fatalf("result %+v, request %+v", res, req)
	}
	p.NodeAllocation["gone"] = append(p.NodeAllocation["gone"], place("new", "gone", 100))
	if err := verify.Plan(snap, p, verify.DefaultLimits()); !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), "unknown node") {
		t.Fatalf("err = %v, want a placement on a node that is gone refused", err)
	}
}
