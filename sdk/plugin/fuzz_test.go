package plugin_test

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
)

// fuzzCluster is a small valid state: two nodes and a service job.
func fuzzCluster() (*abi.StateSync, *sdk.Job) {
	node := func(id string) *sdk.Node {
		n := &sdk.Node{ID: id, Name: id, Datacenter: "dc1", Status: sdk.NodeStatusReady,
			SchedulingEligibility: sdk.NodeSchedulingEligible, Attributes: map[string]string{"driver.exec": "1"},
			NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 4000}, Memory: sdk.NodeMemoryResources{MemoryMB: 8192}}}
		n.ComputeClass()
		return n
	}
	job := &sdk.Job{Namespace: "default", ID: "web", Type: sdk.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		JobModifyIndex: 1, Status: sdk.JobStatusPending,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "exec",
			Resources: &sdk.Resources{CPU: 100, MemoryMB: 64}}}}}}
	alloc := &sdk.Allocation{ID: "a0", Namespace: "default", JobID: "web", JobModifyIndex: 1, NodeID: "n1",
		TaskGroup: "g", Name: "web.g[0]", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
		AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
			"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: 100}, Memory: sdk.AllocatedMemoryResources{MemoryMB: 64}}}}}
	return &abi.StateSync{Full: true, Index: 5, Nodes: []*sdk.Node{node("n1"), node("n2")}, Jobs: []*sdk.Job{job},
		Allocs: []*sdk.Allocation{alloc}, SchedulerConfig: sdk.DefaultSchedulerConfiguration()}, job
}

// FuzzGuest_Process feeds a guest, after a valid full sync, any request:
// whatever the bytes, Process must answer with a ProcessResponse and never
// panic (the native runtime runs the guest in the host's process), and
// the guest must still serve a valid request after it.
func FuzzGuest_Process(f *testing.F) {
	full, job := fuzzCluster()
	eval := &sdk.Evaluation{ID: "e1", Namespace: "default", JobID: job.ID, Type: job.Type, Priority: 50,
		TriggeredBy: sdk.EvalTriggerJobRegister, Status: sdk.EvalStatusPending}
	fullReq, err := (&abi.ProcessRequest{Eval: eval, EvalToken: "t", Sync: full}).MarshalMsg(nil)
	if err != nil {
		f.Fatal(err)
	}
	running := *job
	running.Status, running.ModifyIndex = sdk.JobStatusRunning, 6
	for _, s := range []*abi.StateSync{
		{FromIndex: 5, Index: 6, JobStatuses: []*abi.JobStatus{abi.StatusOf(&running)}},
		{FromIndex: 5, Index: 7, DeletedNodes: []string{"n2"}, DeletedAllocs: []string{"a0"}},
		{FromIndex: 5, Index: 8, Kept: &abi.Kept{Index: 8, Time: 1}},
		{FromIndex: 5, Index: 9, Nodes: []*sdk.Node{nil}, Allocs: []*sdk.Allocation{nil}},
		full,
	} {
		b, err := (&abi.ProcessRequest{Eval: eval, EvalToken: "t", Sync: s}).MarshalMsg(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	host := func(op abi.Op, msg []byte) ([]byte, error) {
		switch op {
		case abi.OpSubmitPlan:
			return (&abi.PlanResponse{Result: &sdk.PlanResult{AllocIndex: 9}}).MarshalMsg(nil)
		case abi.OpLog:
			return nil, nil
		}
		return (&abi.Status{}).MarshalMsg(nil)
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		g := plugin.NewGuest(plugin.Info{Name: "fuzz"}, &generic.Scheduler{})
		var resp abi.ProcessResponse
		if err := abi.Decode(g.Process(fullReq, host), &resp); err != nil || resp.Code != abi.CodeOK {
			t.Fatalf("valid request: %v %+v", err, resp)
		}
		if err := abi.Decode(g.Process(req, host), &resp); err != nil {
			t.Fatalf("undecodable response: %v", err)
		}
		// Whatever that request did to the guest's mirror of the state,
		// a full sync replaces it: the guest still serves the next
		// evaluation.
		resp = abi.ProcessResponse{}
		if err := abi.Decode(g.Process(fullReq, host), &resp); err != nil || resp.Code != abi.CodeOK {
			t.Fatalf("valid request after %x: %v %+v", req, err, resp)
		}
	})
}
