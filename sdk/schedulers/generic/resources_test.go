package generic_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
)

// gpuNode returns a node with count healthy GPUs of the model, with the
// memory (GiB) as a device attribute.
func gpuNode(id, model string, memGiB, count int) *sdk.Node {
	n := schedtest.Node(id)
	d := &sdk.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model,
		Attributes: sdk.DeviceAttributes{"memory": fmt.Sprintf("%d GiB", memGiB)}}
	for i := 0; i < count; i++ {
		d.Instances = append(d.Instances, &sdk.NodeDevice{ID: fmt.Sprintf("%s-gpu-%d", id, i), Healthy: true})
	}
	n.NodeResources.Devices = []*sdk.NodeDeviceResource{d}
	return n
}

// gpuJob is a service job whose task asks for one GPU.
func gpuJob(id string, count int, req *sdk.RequestedDevice) *sdk.Job {
	job := schedtest.ServiceJob(id, count)
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*sdk.RequestedDevice{req}
	return job
}

// Nodes that differ only in their devices are of different computed
// classes (as Nomad hashes device groups into the class): otherwise the
// first node without a GPU would mark the class ineligible and the one
// node with GPUs would never be checked.
func TestService_DevicesAreOfTheComputedClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plain int
	}{
		{"one plain node", 1},
		{"many plain nodes", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Nodes("n", tc.plain)...)
			h.UpsertNodes(gpuNode("gpu", "1080ti", 11, 2))
			h.Process(service, h.RegisterJob(gpuJob("web", 1, &sdk.RequestedDevice{Name: "nvidia/gpu", Count: 1})))
			e := h.LastEval()
			if len(e.FailedTGAllocs) != 0 {
				t.Fatalf("failed: %+v", e.FailedTGAllocs["web"])
			}
			placed := schedtest.Placed(h.LastPlan())
			if len(placed) != 1 || placed[0].NodeID != "gpu" {
				t.Fatalf("placed %+v, want one allocation on the GPU node", placed)
			}
		})
	}
}

// A constraint on ${device.ids} (a group's instance IDs, joined by
// commas) is checked node by node: instance IDs are not in the computed
// class, so many nodes of one class must not share the first one's
// answer (Nomad caches it per class, and fails them all).
func TestService_DeviceIDsConstraintIsCheckedOnEachNode(t *testing.T) {
	h := schedtest.New(t)
	var nodes []*sdk.Node
	for i := range 10 {
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", i), "1080ti", 11, 2))
	}
	h.UpsertNodes(nodes...)
	if nodes[0].ComputedClass != nodes[9].ComputedClass {
		t.Fatal("the nodes should share a computed class")
	}
	h.Process(service, h.RegisterJob(gpuJob("web", 1, &sdk.RequestedDevice{Name: "nvidia/gpu", Count: 1,
		Constraints: []*sdk.Constraint{{LTarget: "${device.ids}", RTarget: "n7-gpu-1", Operand: sdk.ConstraintSetContains}}})))
	if e := h.LastEval(); len(e.FailedTGAllocs) != 0 {
		t.Fatalf("failed: %+v", e.FailedTGAllocs["web"])
	}
	if placed := schedtest.Placed(h.LastPlan()); len(placed) != 1 || placed[0].NodeID != "n7" {
		t.Fatalf("placed %+v, want one allocation on n7", placed)
	}
}

// Device affinities score a node by the weight the devices chosen there
// meet over the weight of all of them (Nomad's "devices" scorer), averaged
// into the node's score like any other scorer.
func TestService_DeviceAffinitiesScoreNodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		weight int8
		want   string             // node chosen
		scores map[string]float64 // "devices" score per node
	}{
		{"preferred", 60, "big", map[string]float64{"big": 1, "small": 0}},
		{"avoided", -50, "small", map[string]float64{"big": -1, "small": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(gpuNode("small", "1080ti", 11, 2), gpuNode("big", "2080ti", 16, 2))
			job := gpuJob("web", 1, &sdk.RequestedDevice{Name: "gpu", Count: 1,
				Affinities: []*sdk.Affinity{{LTarget: "${device.attr.memory}", RTarget: "12 GiB", Operand: ">=", Weight: tc.weight}}})
			h.Process(service, h.RegisterJob(job))
			placed := schedtest.Placed(h.LastPlan())
			if len(placed) != 1 || placed[0].NodeID != tc.want {
				t.Fatalf("placed %+v, want one on %s", placed, tc.want)
			}
			meta := placed[0].Metrics.ScoreMetaData
			if len(meta) != 2 {
				t.Fatalf("score metadata of %d nodes, want 2", len(meta))
			}
			for _, m := range meta {
				got, ok := m.Scores.Get("devices")
				if !ok || got != tc.scores[m.NodeID] {
					t.Fatalf("%s: devices score %v (recorded %v), want %v", m.NodeID, got, ok, tc.scores[m.NodeID])
				}
				sum := 0.0
				for _, s := range m.Scores {
					sum += s.Score
				}
				// binpack and devices are averaged; the other scorers
				// recorded here are zero and not counted.
				bin, _ := m.Scores.Get("binpack")
				if want := (bin + got) / 2; math.Abs(m.NormScore-want) > 1e-9 || math.Abs(sum-bin-got) > 1e-9 {
					t.Fatalf("%s: normalized %v, want %v (scores %v)", m.NodeID, m.NormScore, want, m.Scores)
				}
			}
		})
	}
}

// A node whose device groups have too few free instances is exhausted on
// "devices: no devices match request", as Nomad reports it.
func TestService_DevicesExhausted(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(gpuNode("gpu", "1080ti", 11, 2))
	h.Process(service, h.RegisterJob(gpuJob("web", 3, &sdk.RequestedDevice{Name: "nvidia/gpu", Count: 1})))
	if placed := schedtest.Placed(h.LastPlan()); len(placed) != 2 {
		t.Fatalf("placed %d, want 2", len(placed))
	}
	m := h.LastEval().FailedTGAllocs["web"]
	if m == nil || m.NodesExhausted != 1 || m.DimensionExhausted["devices: no devices match request"] != 1 || len(m.DimensionExhausted) != 1 {
		t.Fatalf("failed = %+v", m)
	}
}

// A node whose device groups fit a group's requests only in another order
// than the greedy one (Nomad's, which exhausts the node) takes the
// allocation, across tasks too: the request for any GPU, which prefers the
// A100, gets the T4, because the later request asks for the A100 itself.
func TestService_DeviceRequestsFitTogether(t *testing.T) {
	anyGPU := func() *sdk.RequestedDevice {
		return &sdk.RequestedDevice{Name: "gpu", Count: 1,
			Affinities: []*sdk.Affinity{{LTarget: "${device.model}", RTarget: "a100", Operand: "=", Weight: 50}}}
	}
	a100 := func() *sdk.RequestedDevice { return &sdk.RequestedDevice{Name: "nvidia/gpu/a100", Count: 1} }
	for _, tc := range []struct {
		name     string
		sidecar  bool // the A100 request in a second task
		wantMain []string
	}{
		{"one task", false, []string{"n-t4-0", "n-a100-0"}},
		{"two tasks", true, []string{"n-t4-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			n := gpuNode("n", "a100", 80, 1)
			n.NodeResources.Devices[0].Instances[0].ID = "n-a100-0"
			t4 := gpuNode("n", "t4", 16, 1).NodeResources.Devices[0]
			t4.Instances[0].ID = "n-t4-0"
			n.NodeResources.Devices = append(n.NodeResources.Devices, t4)
			h.UpsertNodes(n)
			job := gpuJob("web", 1, anyGPU())
			tg := job.TaskGroups[0]
			if tc.sidecar {
				side := *tg.Tasks[0]
				side.Name = "side"
				res := *side.Resources
				res.Devices = []*sdk.RequestedDevice{a100()}
				side.Resources = &res
				tg.Tasks = append(tg.Tasks, &side)
			} else {
				tg.Tasks[0].Resources.Devices = append(tg.Tasks[0].Resources.Devices, a100())
			}
			h.Process(service, h.RegisterJob(job))
			if m := h.LastEval().FailedTGAllocs["web"]; m != nil {
				t.Fatalf("failed: %+v", m)
			}
			placed := schedtest.Placed(h.LastPlan())
			if len(placed) != 1 {
				t.Fatalf("placed %d, want 1", len(placed))
			}
			ids := func(task string) []string {
				var out []string
				for _, d := range placed[0].AllocatedResources.Tasks[task].Devices {
					out = append(out, d.DeviceIDs...)
				}
				return out
			}
			if got := ids(tg.Tasks[0].Name); fmt.Sprint(got) != fmt.Sprint(tc.wantMain) {
				t.Fatalf("main task holds %v, want %v", got, tc.wantMain)
			}
			if !tc.sidecar {
				return
			}
			if got := ids("side"); fmt.Sprint(got) != "[n-a100-0]" {
				t.Fatalf("side task holds %v, want [n-a100-0]", got)
			}
		})
	}
}

// With preemption enabled for service jobs, a placement takes a static
// port from a lower-priority allocation holding it; without, it is
// blocked on the port.
func TestService_PreemptsForStaticPorts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enabled bool
	}{
		{"enabled", true},
		{"disabled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Node("n1"))
			low := schedtest.ServiceJob("low", 1)
			low.Priority = 20
			h.UpsertJob(low)
			a := schedtest.Alloc(low, 0, "n1")
			a.AllocatedResources.Shared.Networks = []*sdk.NetworkResource{{Mode: "host",
				ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}}
			a.AllocatedResources.Shared.Ports = []sdk.PortMapping{{Label: "http", Value: 8080}}
			h.UpsertAllocs(a)
			cfg := sdk.DefaultSchedulerConfiguration()
			cfg.PreemptionConfig.ServiceSchedulerEnabled = tc.enabled
			h.SetSchedulerConfig(cfg)
			high := schedtest.ServiceJob("high", 1)
			high.Priority = 80
			high.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host",
				ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}}
			h.Process(service, h.RegisterJob(high))
			if !tc.enabled {
				m := h.LastEval().FailedTGAllocs["web"]
				if len(h.Plans) != 0 || m == nil || m.DimensionExhausted["network: reserved port collision http=8080"] != 1 {
					t.Fatalf("plans %d, failed %+v", len(h.Plans), m)
				}
				return
			}
			placed := schedtest.Placed(h.LastPlan())
			pre := schedtest.Preempted(h.LastPlan())
			if len(placed) != 1 || len(pre) != 1 || pre[0].ID != a.ID || placed[0].PreemptedAllocations[0] != a.ID {
				t.Fatalf("placed %+v preempted %+v", placed, pre)
			}
			if meta := placed[0].Metrics.ScoreMetaData; len(meta) != 1 {
				t.Fatalf("score metadata %+v", meta)
			} else if _, ok := meta[0].Scores.Get("preemption"); !ok {
				t.Fatalf("no preemption score: %+v", meta[0].Scores)
			}
		})
	}
}

// initTaskJob is a service job of count allocations whose group runs an
// init task of initCPU MHz before its main task (2,500 MHz), beside a
// sidecar of 500 MHz; sidecarInit makes the init task a sidecar too.
func initTaskJob(count, initCPU int, sidecarInit bool) *sdk.Job {
	job := schedtest.ServiceJob("web", count)
	tg := job.TaskGroups[0]
	tg.Tasks[0].Resources.CPU = 2500
	tg.Tasks = append(tg.Tasks,
		&sdk.Task{Name: "init", Driver: "exec", Resources: &sdk.Resources{CPU: initCPU, MemoryMB: 64},
			Lifecycle: &sdk.TaskLifecycle{Hook: sdk.TaskLifecycleHookPrestart, Sidecar: sidecarInit}},
		&sdk.Task{Name: "proxy", Driver: "exec", Resources: &sdk.Resources{CPU: 500, MemoryMB: 64},
			Lifecycle: &sdk.TaskLifecycle{Hook: sdk.TaskLifecycleHookPrestart, Sidecar: true}})
	return job
}

// An init task runs before the main tasks, so a group needs the larger of
// the two, not their sum, as in Nomad: on 4,000 MHz nodes an allocation
// needs 500 + max(3,000, 2,500) MHz and one fits each node, where the sum
// (6,000 MHz) fits none. The harness checks each plan as the host does.
func TestService_InitTaskRunsBeforeMainTasks(t *testing.T) {
	for _, tc := range []struct {
		name           string
		sidecar        bool
		placed, failed int
	}{
		{"init task", false, 2, 1},
		{"the same task as a sidecar", true, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Nodes("n", 2)...)
			job := initTaskJob(3, 3000, tc.sidecar)
			h.Process(service, h.RegisterJob(job))
			placed := h.Live(job.Namespace, job.ID)
			if len(placed) != tc.placed {
				t.Fatalf("placed %d, want %d", len(placed), tc.placed)
			}
			nodes := map[string]bool{}
			for _, a := range placed {
				nodes[a.NodeID] = true
				if got := a.AllocatedResources.Usage().CPU; got != 3500 {
					t.Fatalf("allocation %s uses %d MHz, want 3500", a.Name, got)
				}
				if lc := a.AllocatedResources.TaskLifecycles; len(lc) != 2 || *lc["init"] != *job.TaskGroups[0].Tasks[1].Lifecycle {
					t.Fatalf("allocation %s holds lifecycles %v", a.Name, lc)
				}
			}
			if len(nodes) != tc.placed {
				t.Fatalf("placed on %d nodes, want %d", len(nodes), tc.placed)
			}
			m := h.LastEval().FailedTGAllocs["web"]
			if tc.failed == 0 {
				if m != nil {
					t.Fatalf("failed: %+v", m)
				}
				return
			}
			if m == nil || m.CoalescedFailures+1 != tc.failed || m.DimensionExhausted["cpu"] == 0 {
				t.Fatalf("failed %+v, want %d failures for cpu", m, tc.failed)
			}
		})
	}
}

// Tasks that reserve cores cost CPU by their node (4,000 MHz over 4 cores
// here); folded by lifecycle, an init task of one core and a main task of
// two beside a 1,500 MHz sidecar need 1,500 + max(1,000, 2,000) MHz and 3
// cores, which fit a node once: the stack must fold the cores' CPU as the
// host does, not add it on top.
func TestService_InitTaskWithReservedCores(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(schedtest.Node("n"))
	job := initTaskJob(2, 0, false)
	tasks := job.TaskGroups[0].Tasks
	tasks[0].Resources.CPU, tasks[0].Resources.Cores = 0, 2
	tasks[1].Resources.Cores = 1
	tasks[2].Resources.CPU = 1500
	h.Process(service, h.RegisterJob(job))
	placed := h.Live(job.Namespace, job.ID)
	if len(placed) != 1 {
		t.Fatalf("placed %d, want 1", len(placed))
	}
	if u := placed[0].AllocatedResources.Usage(); u.CPU != 3500 || u.Cores != 3 {
		t.Fatalf("the allocation uses %+v, want 3500 MHz and 3 cores", u)
	}
	if m := h.LastEval().FailedTGAllocs["web"]; m == nil || m.DimensionExhausted["cores"] != 1 {
		t.Fatalf("the second allocation's failure: %+v, want cores exhausted", m)
	}
}

// An allocation updated in place keeps counting its tasks by lifecycle:
// scaling a job whose allocations fit only folded (3,500 MHz on 4,000 MHz
// nodes, 6,000 summed) updates them in place and places the new one, where
// dropping the lifecycles made every plan over-commit its nodes.
func TestService_InitTaskUpdatedInPlace(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(schedtest.Nodes("n", 3)...)
	job := initTaskJob(2, 3000, false)
	h.Process(service, h.RegisterJob(job))
	first := map[string]bool{}
	for _, a := range h.Live(job.Namespace, job.ID) {
		first[a.ID] = true
	}
	if len(first) != 2 {
		t.Fatalf("placed %d, want 2", len(first))
	}
	next := job.Copy()
	next.TaskGroups[0].Count = 3
	h.Process(service, h.RegisterJob(next))
	plan := h.LastPlan()
	live := h.Live(job.Namespace, job.ID)
	if len(live) != 3 {
		t.Fatalf("%d allocations after scaling to 3, want 3 (eval %+v)", len(live), h.LastEval())
	}
	updated := 0
	for _, a := range schedtest.Placed(plan) {
		if u := a.AllocatedResources.Usage(); u.CPU != 3500 || len(a.AllocatedResources.TaskLifecycles) != 2 {
			t.Fatalf("allocation %s uses %+v with lifecycles %v", a.Name, u, a.AllocatedResources.TaskLifecycles)
		}
		if first[a.ID] {
			updated++
		}
	}
	if updated != 2 {
		t.Fatalf("%d allocations updated in place, want 2", updated)
	}
}
