package system_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
	"github.com/drover-sched/drover/sdk/schedulers/system"
)

var sched = &system.Scheduler{}

func TestSystem_RegisterPlacesOnEveryNode(t *testing.T) {
	h := schedtest.New(t)
	nodes := schedtest.Nodes("n", 10)
	win := schedtest.Node("win")
	win.Attributes["kernel.name"] = "windows"
	h.UpsertNodes(append(nodes, win)...)
	job := schedtest.SystemJob("agent")
	h.Process(sched, h.RegisterJob(job))
	placed := schedtest.Placed(h.LastPlan())
	if len(placed) != 10 {
		t.Fatalf("placed %d, want 10 (one per Linux node)", len(placed))
	}
	per := map[string]bool{}
	for _, a := range placed {
		if per[a.NodeID] || a.NodeID == "win" || a.Name != "agent.agent[0]" {
			t.Fatalf("bad placement %s on %s", a.Name, a.NodeID)
		}
		per[a.NodeID] = true
	}
	// A node filtered by a constraint is not a failure.
	if e := h.LastEval(); e.Status != sdk.EvalStatusComplete || len(e.FailedTGAllocs) != 0 || len(h.Created) != 0 {
		t.Fatalf("eval %+v created %d", e, len(h.Created))
	}

	// A new node gets the job on the next node-update eval; nothing else moves.
	h.UpsertNodes(schedtest.Node("n-new"))
	h.Process(sched, h.NewEval(job, sdk.EvalTriggerNodeUpdate))
	placed = schedtest.Placed(h.LastPlan())
	if len(placed) != 1 || placed[0].NodeID != "n-new" || len(schedtest.Stopped(h.LastPlan())) != 0 {
		t.Fatalf("new node: placed %+v", placed)
	}
}

func TestSystem_AllNodesFilteredIsAFailure(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(schedtest.Nodes("n", 3)...)
	job := schedtest.SystemJob("agent")
	job.Constraints[0].RTarget = "windows"
	h.Process(sched, h.RegisterJob(job))
	e := h.LastEval()
	m := e.FailedTGAllocs["agent"]
	if m == nil || m.NodesFiltered != 3 || m.NodesEvaluated != 3 {
		t.Fatalf("failed = %+v", m)
	}
}

func TestSystem_NodeDownAndStop(t *testing.T) {
	h := schedtest.New(t)
	nodes := schedtest.Nodes("n", 3)
	h.UpsertNodes(nodes...)
	job := schedtest.SystemJob("agent")
	h.Process(sched, h.RegisterJob(job))
	nodes[0].Status = sdk.NodeStatusDown
	h.UpsertNodes(nodes[0])
	h.Process(sched, h.NewEval(job, sdk.EvalTriggerNodeUpdate))
	stops := schedtest.Stopped(h.LastPlan())
	if len(stops) != 1 || stops[0].NodeID != nodes[0].ID || stops[0].ClientStatus != sdk.AllocClientStatusLost {
		t.Fatalf("stops = %+v", stops)
	}
	if len(schedtest.Placed(h.LastPlan())) != 0 {
		t.Fatalf("placed on a down node")
	}
	stopped := schedtest.SystemJob("agent")
	stopped.Stop = true
	h.Process(sched, h.RegisterJob(stopped))
	if len(h.Live("default", "agent")) != 0 {
		t.Fatalf("live after stop: %d", len(h.Live("default", "agent")))
	}
}

func TestSystem_RollingUpdateStagger(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(schedtest.Nodes("n", 5)...)
	job := schedtest.SystemJob("agent")
	h.Process(sched, h.RegisterJob(job))

	v2 := schedtest.SystemJob("agent")
	v2.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": "/bin/v2"}
	v2.Update = sdk.UpdateStrategy{MaxParallel: 2, Stagger: 30 * time.Second}
	first := h.RegisterJob(v2)
	h.Process(sched, first)
	plan := h.LastPlan()
	if n := len(schedtest.Stopped(plan)); n != 2 {
		t.Fatalf("first wave replaced %d, want max_parallel 2", n)
	}
	for _, s := range schedtest.Stopped(plan) {
		if s.DesiredDescription != reconcile.AllocUpdating {
			t.Fatalf("stop desc %q", s.DesiredDescription)
		}
	}
	if len(h.Created) != 1 {
		t.Fatalf("created %d evals", len(h.Created))
	}
	next := h.Created[0]
	e := h.LastEval()
	if next.TriggeredBy != sdk.EvalTriggerRollingUpdate || next.Wait != 30*time.Second || next.PreviousEval != first.ID || e.NextEval != next.ID {
		t.Fatalf("next = %+v, eval.NextEval = %s", next, e.NextEval)
	}
	// The chain continues until every allocation runs v2.
	for i := 0; i < 3 && len(h.Created) > 0; i++ {
		ev := h.Created[len(h.Created)-1]
		h.Created = h.Created[:0]
		h.Process(sched, ev)
	}
	for _, a := range h.Live("default", "agent") {
		if a.JobVersion != v2.Version {
			t.Fatalf("alloc %s still on version %d", a.ID, a.JobVersion)
		}
	}
}

func TestSystem_Preemption(t *testing.T) {
	h := schedtest.New(t)
	n := schedtest.Node("n1")
	h.UpsertNodes(n)
	low := schedtest.ServiceJob("low", 8) // fills the node's 4000 MHz
	low.Priority = 20
	h.UpsertJob(low)
	var allocs []*sdk.Allocation
	for i := 0; i < 8; i++ {
		allocs = append(allocs, schedtest.Alloc(low, i, "n1"))
	}
	h.UpsertAllocs(allocs...)
	job := schedtest.SystemJob("agent") // priority 100
	h.Process(sched, h.RegisterJob(job))
	plan := h.LastPlan()
	pre := schedtest.Preempted(plan)
	placed := schedtest.Placed(plan)
	if len(placed) != 1 || len(pre) != 1 || placed[0].PreemptedAllocations[0] != pre[0].ID {
		t.Fatalf("preempted %d placed %d", len(pre), len(placed))
	}
	if pre[0].PreemptedByAllocation != placed[0].ID {
		t.Fatalf("preempted alloc does not name its preemptor")
	}

	// Preemption off for system jobs: the node is exhausted and a blocked
	// eval waits for capacity.
	h2 := schedtest.New(t)
	h2.UpsertNodes(schedtest.Node("n1"))
	h2.UpsertJob(low)
	h2.UpsertAllocs(allocs...)
	cfg := sdk.DefaultSchedulerConfiguration()
	cfg.PreemptionConfig.SystemSchedulerEnabled = false
	h2.SetSchedulerConfig(cfg)
	h2.Process(sched, h2.RegisterJob(schedtest.SystemJob("agent")))
	if e := h2.LastEval(); e.FailedTGAllocs["agent"] == nil || len(h2.Created) != 1 || h2.Created[0].Status != sdk.EvalStatusBlocked {
		t.Fatalf("eval %+v created %+v", e, h2.Created)
	}
}

// While the allocation a system job preempted still runs on its node
// (evicted, its node not yet reporting it finished), it holds its room;
// an update of the system job, in place or destructive, preempts it
// again rather than finding the node full, as Nomad's preemptor does. The
// harness, as the host, leaves the evicted allocation as it was.
func TestSystem_UpdateWhileThePreemptedAllocationStillRuns(t *testing.T) {
	for _, destructive := range []bool{false, true} {
		t.Run(fmt.Sprintf("destructive=%v", destructive), func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Node("n1"))
			low := schedtest.ServiceJob("low", 1)
			low.Priority = 20
			h.UpsertJob(low)
			victim := schedtest.Alloc(low, 0, "n1")
			victim.AllocatedResources.Tasks["web"].Cpu.CpuShares = 3800
			h.UpsertAllocs(victim)
			job := schedtest.SystemJob("agent") // priority 100
			job.TaskGroups[0].Tasks[0].Resources.CPU = 500
			h.Process(sched, h.RegisterJob(job))
			if pre := schedtest.Preempted(h.LastPlan()); len(pre) != 1 || pre[0].ID != victim.ID {
				t.Fatalf("preempted %v, want the low-priority allocation", pre)
			}
			evicted := *h.State().Alloc(victim.ID)

			v2 := h.Job("default", "agent").Copy()
			if destructive {
				v2.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": "/bin/v2"}
			} else {
				v2.Datacenters = []string{"dc1", "dc2"}
			}
			h.Process(sched, h.RegisterJob(v2))
			if e := h.LastEval(); len(e.FailedTGAllocs) != 0 || len(h.Created) != 0 {
				t.Fatalf("failed %v, created %v: the node is full only of an allocation on its way out", e.FailedTGAllocs, h.Created)
			}
			live := h.Live("default", "agent")
			if len(live) != 1 || live[0].JobVersion != v2.Version {
				t.Fatalf("live %v, want one allocation of version %d", live, v2.Version)
			}
			if a := h.State().Alloc(victim.ID); a.ModifyIndex != evicted.ModifyIndex || a.PreemptedByAllocation != evicted.PreemptedByAllocation {
				t.Fatalf("the evicted allocation was marked again: %+v, was %+v", a, evicted)
			}
		})
	}
}

// A system placement that preempts is scored on its fit alone, as Nomad's
// system stack scores it: no "preemption" score (the node is the only
// choice), and the normalized score is the fit.
func TestSystem_PreemptingPlacementScoresFitOnly(t *testing.T) {
	for _, typ := range []string{sdk.JobTypeSystem, sdk.JobTypeSysBatch} {
		t.Run(typ, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Node("n1"))
			low := schedtest.ServiceJob("low", 1)
			low.Priority = 20
			low.TaskGroups[0].Tasks[0].Resources.MemoryMB = 8100
			h.UpsertJob(low)
			h.UpsertAllocs(schedtest.Alloc(low, 0, "n1"))
			cfg := sdk.DefaultSchedulerConfiguration()
			cfg.PreemptionConfig.SysBatchSchedulerEnabled = true
			h.SetSchedulerConfig(cfg)
			job := schedtest.SystemJob("agent")
			job.Type = typ
			h.Process(sched, h.RegisterJob(job))
			placed := schedtest.Placed(h.LastPlan())
			if len(placed) != 1 || len(placed[0].PreemptedAllocations) != 1 {
				t.Fatalf("placed %+v", placed)
			}
			meta := placed[0].Metrics.ScoreMetaData
			if len(meta) != 1 {
				t.Fatalf("score metadata of %d nodes, want 1", len(meta))
			}
			if s := meta[0].Scores; len(s) != 1 || s[0].Name != "binpack" || meta[0].NormScore != s[0].Score {
				t.Fatalf("scores %+v normalized %v, want binpack alone", s, meta[0].NormScore)
			}
		})
	}
}

// An eval whose plans never commit fails with Nomad's description, the
// attempts counted per scheduler.
func TestSystem_MaxPlanAttemptsDescription(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		attempts int
	}{
		{sdk.JobTypeSystem, 5},
		{sdk.JobTypeSysBatch, 2},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Nodes("n", 2)...)
			h.RejectAll()
			job := schedtest.SystemJob("agent")
			job.Type = tc.typ
			h.Process(sched, h.RegisterJob(job))
			e := h.LastEval()
			want := fmt.Sprintf("maximum attempts reached (%d)", tc.attempts)
			if len(h.Plans) != tc.attempts || e.Status != sdk.EvalStatusFailed || e.StatusDescription != want {
				t.Fatalf("%d plans, eval %s %q; want %d plans, failed %q", len(h.Plans), e.Status, e.StatusDescription, tc.attempts, want)
			}
		})
	}
}

// A system placement takes a static port from lower-priority allocations
// holding it (Nomad's network preemption), and only from them, and only
// on the address it asks for the port on: the node has its default
// address ("", as the fixtures') and a public one, 203.0.113.5.
func TestSystem_PreemptsForStaticPorts(t *testing.T) {
	const public = "203.0.113.5"
	withPortOn := func(job *sdk.Job, port int, ip string) *sdk.Allocation {
		a := schedtest.Alloc(job, 0, "n1")
		a.AllocatedResources.Shared.Networks = []*sdk.NetworkResource{{Mode: "host",
			ReservedPorts: []sdk.Port{{Label: "http", Value: port}}}}
		a.AllocatedResources.Shared.Ports = []sdk.PortMapping{{Label: "http", Value: port, HostIP: ip}}
		return a
	}
	withPort := func(job *sdk.Job, port int) *sdk.Allocation { return withPortOn(job, port, "") }
	lowJob := func(id string, prio, mem int) *sdk.Job {
		j := schedtest.ServiceJob(id, 1)
		j.Priority = prio
		j.TaskGroups[0].Tasks[0].Resources.MemoryMB = mem
		return j
	}
	for _, tc := range []struct {
		name      string
		allocs    func(h *schedtest.Harness) []*sdk.Allocation
		reserved  string
		network   string   // the host network the port is asked on
		preempted []string // alloc IDs, sorted; nil: not placed
		exhausted string
	}{
		{name: "a lower priority holds the port",
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				j := lowJob("low", 20, 256)
				h.UpsertJob(j)
				return []*sdk.Allocation{withPort(j, 8080)}
			},
			preempted: []string{"low-alloc-000"}},
		{name: "the holder is within 10 priorities",
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				j := lowJob("near", 91, 256)
				h.UpsertJob(j)
				return []*sdk.Allocation{withPort(j, 8080)}
			},
			exhausted: "network: reserved port collision http=8080"},
		{name: "the node reserves the port",
			allocs:    func(*schedtest.Harness) []*sdk.Allocation { return nil },
			reserved:  "22,8080",
			exhausted: "network: reserved port collision http=8080"},
		{name: "the port and memory from two allocations",
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				port := lowJob("port", 30, 64)
				big := lowJob("big", 20, 8100)
				h.UpsertJob(port)
				h.UpsertJob(big)
				return []*sdk.Allocation{withPort(port, 8080), schedtest.Alloc(big, 0, "n1")}
			},
			preempted: []string{"big-alloc-000", "port-alloc-000"}},
		{name: "a lower priority holds the port on the address asked for",
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				j := lowJob("low", 20, 256)
				h.UpsertJob(j)
				return []*sdk.Allocation{withPortOn(j, 8080, public)}
			},
			network:   "public",
			preempted: []string{"low-alloc-000"}},
		{name: "a lower priority holds the port on another address",
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				j := lowJob("low", 20, 256)
				h.UpsertJob(j)
				return []*sdk.Allocation{withPort(j, 8080)}
			},
			network:   "public",
			preempted: []string{}},
		{name: "a lower priority holds the port on the public address, asked on the default",
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				j := lowJob("low", 20, 256)
				h.UpsertJob(j)
				return []*sdk.Allocation{withPortOn(j, 8080, public)}
			},
			preempted: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			n := schedtest.Node("n1")
			n.ReservedResources.Networks.ReservedHostPorts = tc.reserved
			n.NodeResources.NodeNetworks = []*sdk.NodeNetworkResource{{Mode: "host", Device: "eth1",
				Addresses: []sdk.NodeNetworkAddress{{Family: "ipv4", Alias: "public", Address: public}}}}
			n.ComputeClass()
			h.UpsertNodes(n)
			h.UpsertAllocs(tc.allocs(h)...)
			job := schedtest.SystemJob("agent")
			job.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host",
				ReservedPorts: []sdk.Port{{Label: "http", Value: 8080, HostNetwork: tc.network}}}}
			h.Process(sched, h.RegisterJob(job))
			placed := preemptingPlacement(t, h, tc.exhausted, tc.preempted)
			if placed == nil {
				return
			}
			if len(placed.PreemptedAllocations) != len(tc.preempted) {
				t.Fatalf("placed preempting %v; want %v", placed.PreemptedAllocations, tc.preempted)
			}
			if ports := placed.AllocatedResources.Shared.Ports; len(ports) != 1 || ports[0].Value != 8080 {
				t.Fatalf("ports %+v, want http=8080", ports)
			}
			for _, id := range tc.preempted {
				if a := h.Alloc(id); a.DesiredStatus != sdk.AllocDesiredStatusEvict || a.PreemptedByAllocation != placed.ID {
					t.Fatalf("%s: desired %s by %q", id, a.DesiredStatus, a.PreemptedByAllocation)
				}
			}
		})
	}
}

// A system placement takes device instances from lower-priority
// allocations holding them (Nomad's device preemption): of the matching
// device groups, the one whose holders have the lowest priorities.
func TestSystem_PreemptsForDevices(t *testing.T) {
	group := func(model string, n int) *sdk.NodeDeviceResource {
		d := &sdk.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model}
		for i := 0; i < n; i++ {
			d.Instances = append(d.Instances, &sdk.NodeDevice{ID: fmt.Sprintf("%s-%d", model, i), Healthy: true})
		}
		return d
	}
	// holding runs an allocation of a job of priority prio holding the
	// device instances.
	holding := func(h *schedtest.Harness, id string, prio int, model string, instances ...string) *sdk.Allocation {
		j := schedtest.ServiceJob(id, 1)
		j.Priority = prio
		h.UpsertJob(j)
		a := schedtest.Alloc(j, 0, "n1")
		a.AllocatedResources.Tasks["web"].Devices = []*sdk.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: model, DeviceIDs: instances}}
		return a
	}
	for _, tc := range []struct {
		name      string
		devices   []*sdk.NodeDeviceResource
		allocs    func(h *schedtest.Harness) []*sdk.Allocation
		count     uint64
		reqs      []*sdk.RequestedDevice // instead of count of nvidia/gpu
		preempted []string               // alloc IDs, sorted; nil: not placed
	}{
		{name: "a lower priority holds the only instance",
			devices: []*sdk.NodeDeviceResource{group("1080ti", 1)},
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				return []*sdk.Allocation{holding(h, "low", 20, "1080ti", "1080ti-0")}
			},
			count: 1, preempted: []string{"low-alloc-000"}},
		{name: "the holder is within 10 priorities",
			devices: []*sdk.NodeDeviceResource{group("1080ti", 1)},
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				return []*sdk.Allocation{holding(h, "near", 95, "1080ti", "1080ti-0")}
			},
			count: 1},
		{name: "the group whose holders have the lower priority",
			devices: []*sdk.NodeDeviceResource{group("1080ti", 1), group("2080ti", 1)},
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				return []*sdk.Allocation{holding(h, "mid", 40, "1080ti", "1080ti-0"), holding(h, "low", 20, "2080ti", "2080ti-0")}
			},
			count: 1, preempted: []string{"low-alloc-000"}},
		{name: "only what is missing beside a free instance",
			devices: []*sdk.NodeDeviceResource{group("1080ti", 3)},
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				return []*sdk.Allocation{holding(h, "a", 30, "1080ti", "1080ti-0"), holding(h, "b", 20, "1080ti", "1080ti-1")}
			},
			count: 2, preempted: []string{"b-alloc-000"}},
		{name: "not the lower priority that the higher one's instances make unneeded",
			devices: []*sdk.NodeDeviceResource{group("1080ti", 3)},
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				return []*sdk.Allocation{holding(h, "low", 20, "1080ti", "1080ti-0"),
					holding(h, "mid", 30, "1080ti", "1080ti-1", "1080ti-2")}
			},
			count: 2, preempted: []string{"mid-alloc-000"}},
		// Taken in order, the request for any GPU takes the free A100 (it
		// prefers it) and the A100's own request finds no holder to
		// evict; the other order evicts the T4's holder.
		{name: "another order of the requests",
			devices: []*sdk.NodeDeviceResource{group("a100", 1), group("t4", 1)},
			allocs: func(h *schedtest.Harness) []*sdk.Allocation {
				return []*sdk.Allocation{holding(h, "low", 20, "t4", "t4-0")}
			},
			reqs: []*sdk.RequestedDevice{
				{Name: "gpu", Count: 1, Affinities: []*sdk.Affinity{{LTarget: "${device.model}", RTarget: "a100", Operand: "=", Weight: 50}}},
				{Name: "nvidia/gpu/a100", Count: 1}},
			preempted: []string{"low-alloc-000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			n := schedtest.Node("n1")
			n.NodeResources.Devices = tc.devices
			h.UpsertNodes(n)
			h.UpsertAllocs(tc.allocs(h)...)
			job := schedtest.SystemJob("agent")
			reqs := tc.reqs
			if reqs == nil {
				reqs = []*sdk.RequestedDevice{{Name: "nvidia/gpu", Count: tc.count}}
			}
			job.TaskGroups[0].Tasks[0].Resources.Devices = reqs
			h.Process(sched, h.RegisterJob(job))
			placed := preemptingPlacement(t, h, "devices: no devices match request", tc.preempted)
			if placed == nil {
				return
			}
			devs := placed.AllocatedResources.Tasks["agent"].Devices
			if len(devs) != len(reqs) {
				t.Fatalf("devices %+v, want %d", devs, len(reqs))
			}
			for i, d := range devs {
				if uint64(len(d.DeviceIDs)) != reqs[i].Count {
					t.Fatalf("devices %+v, want %d instances for request %d", devs, reqs[i].Count, i)
				}
			}
		})
	}
}

// preemptingPlacement checks the agent group's one placement on the last
// plan and the allocations it preempts (sorted IDs), and returns it; with
// preempted nil, it checks instead that nothing was placed, the group
// failing on exhausted, and returns nil.
func preemptingPlacement(t *testing.T, h *schedtest.Harness, exhausted string, preempted []string) *sdk.Allocation {
	t.Helper()
	if preempted == nil {
		m := h.LastEval().FailedTGAllocs["agent"]
		if len(h.Plans) != 0 || m == nil || m.DimensionExhausted[exhausted] != 1 {
			t.Fatalf("plans %d, failed %+v; want no plan, exhausted on %q", len(h.Plans), m, exhausted)
		}
		return nil
	}
	plan := h.LastPlan()
	placed := schedtest.Placed(plan)
	var pre []string
	for _, a := range schedtest.Preempted(plan) {
		pre = append(pre, a.ID)
	}
	slices.Sort(pre)
	if len(placed) != 1 || !slices.Equal(pre, preempted) {
		t.Fatalf("placed %d, preempted %v; want 1 placed, preempting %v", len(placed), pre, preempted)
	}
	return placed[0]
}

func TestSysBatch_DoesNotRerunFinished(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(schedtest.Nodes("n", 3)...)
	job := schedtest.SystemJob("once")
	job.Type = sdk.JobTypeSysBatch
	h.Process(sched, h.RegisterJob(job))
	placed := schedtest.Placed(h.LastPlan())
	if len(placed) != 3 {
		t.Fatalf("placed %d", len(placed))
	}
	h.SetClientStatus(sdk.AllocClientStatusComplete, placed...)
	n := len(h.Plans)
	h.Process(sched, h.NewEval(job, sdk.EvalTriggerNodeUpdate))
	if len(h.Plans) != n {
		t.Fatalf("finished sysbatch allocations were run again: %+v", schedtest.Placed(h.LastPlan()))
	}
}

// A dry run (AnnotatePlan, as job plan asks) counts what each group would
// do: placements on new nodes next to allocations left alone.
func TestSystem_AnnotatesPlan(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(schedtest.Nodes("n", 3)...)
	job := schedtest.SystemJob("agent")
	h.Process(sched, h.RegisterJob(job))
	h.UpsertNodes(schedtest.Node("n-new"))
	e := h.NewEval(job, sdk.EvalTriggerJobRegister)
	e.AnnotatePlan = true
	h.Process(sched, e)
	ann := h.LastPlan().Annotations
	if ann == nil || ann.DesiredTGUpdates["agent"] == nil {
		t.Fatalf("annotations = %+v", ann)
	}
	if u := ann.DesiredTGUpdates["agent"]; u.Place != 1 || u.Ignore != 3 || u.Stop != 0 {
		t.Fatalf("agent: %+v", u)
	}

	// Nodes the group's constraints filter out are not counted as
	// placements.
	win := schedtest.Node("win")
	win.Attributes["kernel.name"] = "windows"
	h.UpsertNodes(win, schedtest.Node("n-newer"))
	e = h.NewEval(job, sdk.EvalTriggerJobRegister)
	e.AnnotatePlan = true
	h.Process(sched, e)
	if u := h.LastPlan().Annotations.DesiredTGUpdates["agent"]; u.Place != 1 || len(schedtest.Placed(h.LastPlan())) != 1 {
		t.Fatalf("with a filtered node: %+v, placed %d", u, len(schedtest.Placed(h.LastPlan())))
	}

	// A node that stops meeting them during a destructive update takes
	// nothing back from the placements (there are none to take).
	n0 := h.State().Node("n-000").Copy()
	n0.Attributes["kernel.name"] = "windows"
	n0.ComputeClass()
	h.UpsertNodes(n0)
	next := h.State().Job("default", "agent").Copy()
	next.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": "/bin/v2"}
	e = h.RegisterJob(next)
	e.AnnotatePlan = true
	h.Process(sched, e)
	if u := h.LastPlan().Annotations.DesiredTGUpdates["agent"]; u.Place != 0 || u.DestructiveUpdate == 0 {
		t.Fatalf("destructive update beside a filtered node: %+v", u)
	}
}

// On a disconnected node a system job's running allocation is marked
// unknown when its group tolerates disconnects, and lost once lost_after
// is over; one whose group does not tolerate it is left running, as
// Nomad's diffSystemAllocsForNode leaves it (the node goes down when no
// window is left, and it is lost then); nothing is placed elsewhere.
func TestSystem_DisconnectedNode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lostAfter  time.Duration
		elapsed    time.Duration
		wantStatus string
		wantDesire string
	}{
		{"not tolerated: left running", 0, 0, sdk.AllocClientStatusRunning, sdk.AllocDesiredStatusRun},
		{"tolerated: unknown", time.Minute, 0, sdk.AllocClientStatusUnknown, sdk.AllocDesiredStatusRun},
		{"tolerated, window over: lost", time.Minute, 2 * time.Minute, sdk.AllocClientStatusLost, sdk.AllocDesiredStatusStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			nodes := schedtest.Nodes("n", 2)
			h.UpsertNodes(nodes...)
			job := schedtest.SystemJob("agent")
			if tc.lostAfter > 0 {
				job.TaskGroups[0].Disconnect = &sdk.DisconnectStrategy{LostAfter: tc.lostAfter}
			}
			h.Process(sched, h.RegisterJob(job))
			var onN0 *sdk.Allocation
			for _, a := range h.Live("default", "agent") {
				h.SetClientStatus(sdk.AllocClientStatusRunning, a)
				if a.NodeID == "n-000" {
					onN0 = a
				}
			}
			n0 := h.State().Node("n-000").Copy()
			n0.Status = sdk.NodeStatusDisconnected
			h.UpsertNodes(n0)
			if tc.elapsed > 0 {
				// The allocation went unknown when the node disconnected.
				h.Process(sched, h.NewEval(job, sdk.EvalTriggerNodeUpdate))
				h.Now = h.Now.Add(tc.elapsed)
			}
			h.Process(sched, h.NewEval(job, sdk.EvalTriggerNodeUpdate))
			got := h.State().Alloc(onN0.ID)
			if got.ClientStatus != tc.wantStatus || got.DesiredStatus != tc.wantDesire {
				t.Fatalf("allocation on the disconnected node: %s/%s, want %s/%s", got.ClientStatus, got.DesiredStatus,
					tc.wantStatus, tc.wantDesire)
			}
			for _, a := range h.Live("default", "agent") {
				if a.ID != onN0.ID && a.NodeID != "n-001" {
					t.Fatalf("placed %s on %s", a.Name, a.NodeID)
				}
			}
		})
	}
}

// TestSystem_DistinctHostsDoesNotApply: system jobs place one allocation
// of each group per node, and Nomad v1.6.1's system stack has no
// distinct_hosts check (scheduler/stack.go, NewSystemStack): every group
// of a job under a job-level distinct_hosts places on every node, and a
// node still running an allocation of the job that the servers stopped
// takes its successor (the service stack waits until the node reports it
// finished).
func TestSystem_DistinctHostsDoesNotApply(t *testing.T) {
	cases := []struct {
		name   string
		typ    string
		groups int
		// stopping: n-000 still runs an allocation of the job the
		// servers stopped; n-001 runs a live one.
		stopping bool
		want     map[string]int // placements per node
	}{
		{"two groups", sdk.JobTypeSystem, 2, false, map[string]int{"n-000": 2, "n-001": 2}},
		{"beside a stopped allocation still running", sdk.JobTypeSystem, 1, true, map[string]int{"n-000": 1}},
		// As in Nomad, a sysbatch job does not run a stopped allocation
		// again.
		{"sysbatch beside a stopped allocation still running", sdk.JobTypeSysBatch, 1, true, map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Nodes("n", 2)...)
			job := schedtest.SystemJob("agent")
			job.Type = tc.typ
			for i := 1; i < tc.groups; i++ {
				tg := job.Copy().TaskGroups[0]
				tg.Name = fmt.Sprintf("group%d", i)
				job.TaskGroups = append(job.TaskGroups, tg)
			}
			job.Constraints = append(job.Constraints, &sdk.Constraint{Operand: sdk.ConstraintDistinctHosts})
			h.UpsertJob(job)
			if tc.stopping {
				old, live := schedtest.Alloc(job, 0, "n-000"), schedtest.Alloc(job, 0, "n-001")
				live.ID = "agent-alloc-001"
				old.DesiredStatus = sdk.AllocDesiredStatusStop
				h.UpsertAllocs(old, live)
			}

			n := len(h.Plans)
			h.Process(sched, h.NewEval(job, sdk.EvalTriggerJobRegister))
			per := map[string]int{}
			if len(h.Plans) > n {
				for _, a := range schedtest.Placed(h.LastPlan()) {
					per[a.NodeID]++
				}
			}
			if !maps.Equal(per, tc.want) {
				t.Fatalf("placed per node %v, want %v", per, tc.want)
			}
			if e := h.LastEval(); len(e.FailedTGAllocs) != 0 {
				t.Fatalf("failed: %+v", e.FailedTGAllocs)
			}
		})
	}
}

// An in-place update keeps the devices and ports the allocation's tasks
// hold, as Nomad's does: fresh ones would be recorded for tasks that keep
// using the old, and freed for others while in use.
func TestSystem_InPlaceUpdateKeepsDevicesAndPorts(t *testing.T) {
	h := schedtest.New(t)
	n := schedtest.Node("n1")
	gpus := &sdk.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "1080ti"}
	for i := 0; i < 4; i++ {
		gpus.Instances = append(gpus.Instances, &sdk.NodeDevice{ID: fmt.Sprintf("gpu-%d", i), Healthy: true})
	}
	n.NodeResources.Devices = []*sdk.NodeDeviceResource{gpus}
	n.ComputeClass()
	h.UpsertNodes(n)
	job := schedtest.SystemJob("agent")
	res := job.TaskGroups[0].Tasks[0].Resources
	res.Devices = []*sdk.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	res.Networks = []*sdk.NetworkResource{{DynamicPorts: []sdk.Port{{Label: "http"}}}}
	h.UpsertJob(job)
	a := schedtest.Alloc(job, 0, "n1")
	held := a.AllocatedResources.Tasks["agent"]
	held.Devices = []*sdk.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "1080ti", DeviceIDs: []string{"gpu-3"}}}
	held.Networks = []*sdk.NetworkResource{{IP: "127.0.0.1", DynamicPorts: []sdk.Port{{Label: "http", Value: 25001}}}}
	h.UpsertAllocs(a)

	next := h.State().Job("default", "agent").Copy()
	next.Constraints = append(next.Constraints, &sdk.Constraint{LTarget: "${attr.arch}", RTarget: "x86", Operand: "="})
	h.Process(sched, h.RegisterJob(next))
	updated := schedtest.Placed(h.LastPlan())
	if len(updated) != 1 || updated[0].ID != a.ID || len(schedtest.Stopped(h.LastPlan())) != 0 {
		t.Fatalf("want one in-place update of %s: placed %+v", a.ID, updated)
	}
	tr := updated[0].AllocatedResources.Tasks["agent"]
	if len(tr.Devices) != 1 || len(tr.Devices[0].DeviceIDs) != 1 || tr.Devices[0].DeviceIDs[0] != "gpu-3" ||
		len(tr.Networks) != 1 || tr.Networks[0].DynamicPorts[0].Value != 25001 {
		t.Fatalf("updated in place with devices %+v and networks %+v, want gpu-3 and port 25001", tr.Devices, tr.Networks)
	}
}

// A blocked system eval waits again while a node lacks room for the job,
// and completes, with the failure, once no node meets its constraints:
// more room would not help, and Nomad's system scheduler does not block
// on that.
func TestSystem_BlockedEvalReblocksOnlyForRoom(t *testing.T) {
	setup := func() (*schedtest.Harness, *sdk.Evaluation) {
		h := schedtest.New(t)
		h.UpsertNodes(schedtest.Node("n1"))
		low := schedtest.ServiceJob("low", 1)
		low.TaskGroups[0].Tasks[0].Resources.CPU = 4000
		h.UpsertJob(low)
		h.UpsertAllocs(schedtest.Alloc(low, 0, "n1"))
		c := sdk.DefaultSchedulerConfiguration()
		c.PreemptionConfig.SystemSchedulerEnabled = false
		h.SetSchedulerConfig(c)
		h.Process(sched, h.RegisterJob(schedtest.SystemJob("agent")))
		if len(h.Created) != 1 || h.Created[0].Status != sdk.EvalStatusBlocked {
			t.Fatalf("created %+v, want one blocked eval", h.Created)
		}
		return h, h.Created[0]
	}

	h, blocked := setup()
	h.Process(sched, blocked)
	if len(h.Reblocked) != 1 || h.Reblocked[0].ID != blocked.ID {
		t.Fatalf("still no room: reblocked %+v, want the blocked eval", h.Reblocked)
	}

	h, blocked = setup()
	n := h.State().Node("n1").Copy()
	n.Attributes["kernel.name"] = "windows"
	n.ComputeClass()
	h.UpsertNodes(n)
	h.Process(sched, blocked)
	last := h.Updated[len(h.Updated)-1]
	if len(h.Reblocked) != 0 || last.ID != blocked.ID || last.Status != sdk.EvalStatusComplete || last.FailedTGAllocs["agent"] == nil {
		t.Fatalf("every node filtered: reblocked %d, last update %s %s (failed %v), want the blocked eval complete with its failure",
			len(h.Reblocked), last.ID, last.Status, last.FailedTGAllocs)
	}
}

// An allocation on a node that is not ready (here ineligible) is left
// alone, as Nomad leaves it, even when the job has left that node's
// datacenter meanwhile: the node's state decides first.
func TestSystem_NotReadyNodeOutsideTheNewDatacentersIsLeftAlone(t *testing.T) {
	h := schedtest.New(t)
	n1, n2 := schedtest.Node("n1"), schedtest.Node("n2")
	n2.Datacenter = "dc2"
	n2.ComputeClass()
	h.UpsertNodes(n1, n2)
	job := schedtest.SystemJob("agent")
	job.Datacenters = []string{"dc1", "dc2"}
	h.Process(sched, h.RegisterJob(job))
	if placed := schedtest.Placed(h.LastPlan()); len(placed) != 2 {
		t.Fatalf("placed %d, want one per node", len(placed))
	}
	ineligible := h.State().Node("n2").Copy()
	ineligible.SchedulingEligibility = sdk.NodeSchedulingIneligible
	h.UpsertNodes(ineligible)
	next := h.State().Job("default", "agent").Copy()
	next.Datacenters = []string{"dc1"}
	h.Process(sched, h.RegisterJob(next))
	for _, a := range schedtest.Stopped(h.LastPlan()) {
		t.Fatalf("stopped the allocation on %s (%s)", a.NodeID, a.DesiredDescription)
	}
}

// TestSystem_DryRunCountsAsNomad: what a dry run counts per group where
// Drover's counts once differed from Nomad v1.6.1's, which come from
// desiredUpdates (scheduler/util.go) over diffSystemAllocs
// (scheduler/system_util.go) and inplaceUpdate (scheduler/util.go). Nodes
// are n-000 and n-001; the group is agent (and other, where there are
// two). What the plan does is checked too: the counts changed, not it.
func TestSystem_DryRunCountsAsNomad(t *testing.T) {
	// placed registers the job on both nodes and reports its allocations
	// running; it returns them by node.
	placed := func(h *schedtest.Harness, job *sdk.Job) map[string][]*sdk.Allocation {
		h.UpsertNodes(schedtest.Nodes("n", 2)...)
		h.Process(sched, h.RegisterJob(job))
		byNode := map[string][]*sdk.Allocation{}
		for _, a := range h.Live(job.Namespace, job.ID) {
			h.SetClientStatus(sdk.AllocClientStatusRunning, a)
			byNode[a.NodeID] = append(byNode[a.NodeID], a)
		}
		return byNode
	}
	sysbatch := func(groups ...string) *sdk.Job {
		job := schedtest.SystemJob("agent")
		job.Type = sdk.JobTypeSysBatch
		for _, g := range groups {
			tg := job.Copy().TaskGroups[0]
			tg.Name = g
			job.TaskGroups = append(job.TaskGroups, tg)
		}
		return job
	}
	// finish reports the allocations of group g complete.
	finish := func(h *schedtest.Harness, byNode map[string][]*sdk.Allocation, g string, nodes ...string) {
		for _, n := range nodes {
			for _, a := range byNode[n] {
				if a.TaskGroup == g {
					h.SetClientStatus(sdk.AllocClientStatusComplete, a)
				}
			}
		}
	}
	setNode := func(h *schedtest.Harness, id string, f func(n *sdk.Node)) {
		n := h.State().Node(id).Copy()
		f(n)
		h.UpsertNodes(n)
	}
	inPlace := func(h *schedtest.Harness) *sdk.Evaluation { // a new version that updates in place
		next := h.State().Job("default", "agent").Copy()
		next.Constraints = append(next.Constraints, &sdk.Constraint{LTarget: "${attr.arch}", RTarget: "x86", Operand: "="})
		return h.RegisterJob(next)
	}
	destructive := func(h *schedtest.Harness) *sdk.Evaluation { // a new version that replaces
		next := h.State().Job("default", "agent").Copy()
		for _, tg := range next.TaskGroups {
			tg.Tasks[0].Config = sdk.Opaque{"command": "/bin/v2"}
		}
		return h.RegisterJob(next)
	}
	same := func(h *schedtest.Harness) *sdk.Evaluation { // the job as it is
		return h.NewEval(h.State().Job("default", "agent"), sdk.EvalTriggerJobRegister)
	}
	disconnect := func(h *schedtest.Harness, job *sdk.Job) {
		placed(h, job)
		setNode(h, "n-000", func(n *sdk.Node) { n.Status = sdk.NodeStatusDisconnected })
	}
	tolerant := func() *sdk.Job {
		job := schedtest.SystemJob("agent")
		job.TaskGroups[0].Disconnect = &sdk.DisconnectStrategy{LostAfter: time.Minute}
		return job
	}

	cases := []struct {
		name  string
		setup func(h *schedtest.Harness) *sdk.Evaluation
		want  map[string]sdk.DesiredUpdates
		// allocs and stops: how many allocations the plan places,
		// updates or marks, and how many it stops.
		allocs, stops int
	}{
		{
			// inplaceUpdate: "Terminal batch allocations are not filtered
			// when they are completed successfully": a finished
			// allocation whose tasks did not change is counted updated in
			// place, with nothing in the plan
			// (TestDiffSystemAllocsForNode_Sysbatch_terminal, "outdated
			// job", puts it among the updates).
			"sysbatch: a finished allocation is updated in place",
			func(h *schedtest.Harness) *sdk.Evaluation {
				byNode := placed(h, sysbatch())
				finish(h, byNode, "agent", "n-000")
				return inPlace(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {InPlaceUpdate: 2}},
			1, 0,
		},
		{
			// desiredUpdates counts no lost allocation (diff.lost is not
			// among its sets; TestDiffSystemAllocsForNode_LostNode).
			"lost: the node is down",
			func(h *schedtest.Harness) *sdk.Evaluation {
				placed(h, schedtest.SystemJob("agent"))
				setNode(h, "n-000", func(n *sdk.Node) { n.Status = sdk.NodeStatusDown })
				return same(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 1}},
			0, 1,
		},
		{
			// diffSystemAllocsForNode: a node that no longer exists is
			// tainted (nil), and its allocations lost.
			"lost: the node is gone",
			func(h *schedtest.Harness) *sdk.Evaluation {
				placed(h, schedtest.SystemJob("agent"))
				h.DeleteNode("n-000")
				return same(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 1}},
			0, 1,
		},
		{
			// TestDiffSystemAllocsForNode_DisconnectedNode, "alloc in
			// disconnected client is marked as unknown": disconnecting,
			// which desiredUpdates does not count.
			"disconnecting: running on a disconnected node",
			func(h *schedtest.Harness) *sdk.Evaluation {
				disconnect(h, tolerant())
				return same(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 1}},
			1, 0,
		},
		{
			// TestDiffSystemAllocsForNode_DisconnectedNode, "disconnected
			// alloc is lost after it expires": lost, not counted.
			"lost: unknown past lost_after",
			func(h *schedtest.Harness) *sdk.Evaluation {
				disconnect(h, tolerant())
				h.Process(sched, same(h))
				h.Now = h.Now.Add(2 * time.Minute)
				return same(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 1}},
			0, 1,
		},
		{
			// A group that does not tolerate disconnects: Nomad's system
			// scheduler leaves its allocation on a disconnected node
			// running (diffSystemAllocsForNode marks disconnecting only
			// when supportsDisconnectedClients) and counts it ignored.
			"ignored: disconnected, not tolerated",
			func(h *schedtest.Harness) *sdk.Evaluation {
				disconnect(h, schedtest.SystemJob("agent"))
				return same(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 2}},
			0, 0,
		},
		{
			// diffSystemAllocs diffs every node with a live allocation of
			// the job, and diffSystemAllocsForNode finds a sysbatch
			// job's finished allocations there before it skips a node
			// that is not ready: one of the job's version is ignored.
			"sysbatch: finished beside a running one on a node not ready",
			func(h *schedtest.Harness) *sdk.Evaluation {
				byNode := placed(h, sysbatch("other"))
				finish(h, byNode, "other", "n-000", "n-001")
				setNode(h, "n-000", func(n *sdk.Node) { n.SchedulingEligibility = sdk.NodeSchedulingIneligible })
				return same(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 2}, "other": {Ignore: 2}},
			0, 0,
		},
		{
			// The same under a new version: an update, counted in place
			// on both nodes (inplaceUpdate's terminal case), though
			// nothing is placed on the node that is not ready.
			"sysbatch: finished on a node not ready, new version in place",
			func(h *schedtest.Harness) *sdk.Evaluation {
				byNode := placed(h, sysbatch("other"))
				finish(h, byNode, "other", "n-000", "n-001")
				setNode(h, "n-000", func(n *sdk.Node) { n.SchedulingEligibility = sdk.NodeSchedulingIneligible })
				return inPlace(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 1, InPlaceUpdate: 1}, "other": {InPlaceUpdate: 2}},
			1, 0,
		},
		{
			// Under a version that replaces, Nomad counts a destructive
			// update on the node that is not ready too: it stops the
			// finished allocation and queues a replacement that finds no
			// node (computePlacements: "could not find node"). Drover
			// leaves that allocation alone, and counts it ignored.
			"sysbatch: finished on a node not ready, new version replaces",
			func(h *schedtest.Harness) *sdk.Evaluation {
				byNode := placed(h, sysbatch("other"))
				finish(h, byNode, "other", "n-000", "n-001")
				setNode(h, "n-000", func(n *sdk.Node) { n.SchedulingEligibility = sdk.NodeSchedulingIneligible })
				return destructive(h)
			},
			map[string]sdk.DesiredUpdates{"agent": {Ignore: 1, DestructiveUpdate: 1}, "other": {Ignore: 1, DestructiveUpdate: 1}},
			2, 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			e := tc.setup(h)
			e.AnnotatePlan = true
			h.Process(sched, e)
			ann := h.LastPlan().Annotations
			if ann == nil {
				t.Fatal("no annotations")
			}
			got := map[string]sdk.DesiredUpdates{}
			for g, u := range ann.DesiredTGUpdates {
				got[g] = *u
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("annotations %+v, want %+v", got, tc.want)
			}
			plan := h.LastPlan()
			if n, s := len(schedtest.Placed(plan)), len(schedtest.Stopped(plan)); n != tc.allocs || s != tc.stops {
				t.Fatalf("the plan places, updates or marks %d and stops %d, want %d and %d", n, s, tc.allocs, tc.stops)
			}
		})
	}
}

// TestSystem_CountAsNomad: a system or sysbatch group runs Count
// allocations on each node, JOB.GROUP[0] to [Count-1], as Nomad v1.6.1's
// materializeSystemTaskGroups (scheduler/system_util.go) names them; the
// server's canonicalisation makes a system group's count 0 a 1 and its
// validation refuses more than 1, so counts other than 1 come from
// sysbatch jobs (or from jobs that reach the scheduler otherwise). Nodes
// are n-000 and n-001 (4000 MHz each).
func TestSystem_CountAsNomad(t *testing.T) {
	job := func(typ string, count int) *sdk.Job {
		j := schedtest.SystemJob("agent")
		j.Type = typ
		j.TaskGroups[0].Count = count
		return j
	}
	register := func(h *schedtest.Harness, j *sdk.Job) {
		h.UpsertNodes(schedtest.Nodes("n", 2)...)
		h.Process(sched, h.RegisterJob(j))
		h.SetClientStatus(sdk.AllocClientStatusRunning, h.Live(j.Namespace, j.ID)...)
	}
	names := func(allocs []*sdk.Allocation) []string {
		var out []string
		for _, a := range allocs {
			out = append(out, a.NodeID+" "+a.Name)
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		name  string
		setup func(h *schedtest.Harness) *sdk.Evaluation
		// placed and stopped: the last plan's allocations, "node name".
		placed, stopped []string
		// want: the dry run's counts (the last eval is a dry run then).
		want map[string]sdk.DesiredUpdates
		// queued, failed: the eval's queued allocations and whether it
		// failed placements (and created a blocked eval).
		queued int
		failed bool
		check  func(t *testing.T, h *schedtest.Harness)
	}{
		{
			// materializeSystemTaskGroups: tg.Count names per node.
			name: "sysbatch: count 3 runs three on every node",
			setup: func(h *schedtest.Harness) *sdk.Evaluation {
				h.UpsertNodes(schedtest.Nodes("n", 2)...)
				return h.RegisterJob(job(sdk.JobTypeSysBatch, 3))
			},
			placed: []string{"n-000 agent.agent[0]", "n-000 agent.agent[1]", "n-000 agent.agent[2]",
				"n-001 agent.agent[0]", "n-001 agent.agent[1]", "n-001 agent.agent[2]"},
		},
		{
			// A group of count 0 has no name to materialize: nothing is
			// placed, and diffSystemAllocsForNode stops what runs ("not
			// required").
			name: "system: count 0 stops the group",
			setup: func(h *schedtest.Harness) *sdk.Evaluation {
				register(h, job(sdk.JobTypeSystem, 1))
				return h.RegisterJob(job(sdk.JobTypeSystem, 0))
			},
			stopped: []string{"n-000 agent.agent[0]", "n-001 agent.agent[0]"},
		},
		{
			name: "sysbatch: count 0 places nothing",
			setup: func(h *schedtest.Harness) *sdk.Evaluation {
				h.UpsertNodes(schedtest.Nodes("n", 2)...)
				return h.RegisterJob(job(sdk.JobTypeSysBatch, 0))
			},
		},
		{
			// A lower count stops the names past it, on every node.
			name: "sysbatch: count 2 to 1 stops index 1",
			setup: func(h *schedtest.Harness) *sdk.Evaluation {
				register(h, job(sdk.JobTypeSysBatch, 2))
				return h.RegisterJob(job(sdk.JobTypeSysBatch, 1))
			},
			// Index 0 is updated in place: the count is part of the
			// new version.
			placed:  []string{"n-000 agent.agent[0]", "n-001 agent.agent[0]"},
			stopped: []string{"n-000 agent.agent[1]", "n-001 agent.agent[1]"},
		},
		{
			// desiredUpdates counts every materialized name.
			name: "sysbatch: a dry run counts every index",
			setup: func(h *schedtest.Harness) *sdk.Evaluation {
				register(h, job(sdk.JobTypeSysBatch, 1))
				e := h.RegisterJob(job(sdk.JobTypeSysBatch, 3))
				e.AnnotatePlan = true
				return e
			},
			placed: []string{"n-000 agent.agent[0]", "n-000 agent.agent[1]", "n-000 agent.agent[2]",
				"n-001 agent.agent[0]", "n-001 agent.agent[1]", "n-001 agent.agent[2]"},
			want: map[string]sdk.DesiredUpdates{"agent": {Place: 4, InPlaceUpdate: 2}},
		},
		{
			// computePlacements: each name is a placement on its node;
			// the third on a node does not fit, the failures coalesce
			// into one metric, the eval blocks and two stay queued.
			name: "sysbatch: placements past a node's room fail, queued and blocked",
			setup: func(h *schedtest.Harness) *sdk.Evaluation {
				h.UpsertNodes(schedtest.Nodes("n", 2)...)
				j := job(sdk.JobTypeSysBatch, 3)
				j.TaskGroups[0].Tasks[0].Resources.CPU = 1500
				return h.RegisterJob(j)
			},
			placed: []string{"n-000 agent.agent[0]", "n-000 agent.agent[1]", "n-001 agent.agent[0]", "n-001 agent.agent[1]"},
			queued: 2, failed: true,
			check: func(t *testing.T, h *schedtest.Harness) {
				if m := h.LastEval().FailedTGAllocs["agent"]; m.CoalescedFailures != 1 {
					t.Fatalf("coalesced failures %d, want 1", m.CoalescedFailures)
				}
			},
		},
		{
			// evictAndPlace: max_parallel counts allocations, not nodes.
			name: "sysbatch: a rolling update replaces max_parallel allocations",
			setup: func(h *schedtest.Harness) *sdk.Evaluation {
				register(h, job(sdk.JobTypeSysBatch, 2))
				next := job(sdk.JobTypeSysBatch, 2)
				next.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": "/bin/v2"}
				next.Update = sdk.UpdateStrategy{MaxParallel: 3, Stagger: time.Minute}
				return h.RegisterJob(next)
			},
			check: func(t *testing.T, h *schedtest.Harness) {
				plan := h.LastPlan()
				if p, s := len(schedtest.Placed(plan)), len(schedtest.Stopped(plan)); p != 3 || s != 3 {
					t.Fatalf("replaced %d, stopped %d, want 3 and 3", p, s)
				}
				if len(h.Created) != 1 || h.Created[0].TriggeredBy != sdk.EvalTriggerRollingUpdate {
					t.Fatalf("created %+v, want a rolling-update eval", h.Created)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			e := tc.setup(h)
			h.Created = nil
			plans := len(h.Plans)
			h.Process(sched, e)
			var plan *sdk.Plan
			if len(h.Plans) > plans {
				plan = h.LastPlan()
			}
			if tc.placed != nil || tc.stopped != nil {
				if plan == nil {
					t.Fatal("no plan")
				}
				if got := names(schedtest.Placed(plan)); !slices.Equal(got, tc.placed) {
					t.Fatalf("placed %q, want %q", got, tc.placed)
				}
				if got := names(schedtest.Stopped(plan)); !slices.Equal(got, tc.stopped) {
					t.Fatalf("stopped %q, want %q", got, tc.stopped)
				}
			} else if tc.check == nil && plan != nil && len(schedtest.Placed(plan))+len(schedtest.Stopped(plan)) != 0 {
				t.Fatalf("plan places %d and stops %d, want nothing", len(schedtest.Placed(plan)), len(schedtest.Stopped(plan)))
			}
			if tc.want != nil {
				got := map[string]sdk.DesiredUpdates{}
				for g, u := range plan.Annotations.DesiredTGUpdates {
					got[g] = *u
				}
				if !maps.Equal(got, tc.want) {
					t.Fatalf("annotations %+v, want %+v", got, tc.want)
				}
			}
			ev := h.LastEval()
			if ev.QueuedAllocations["agent"] != tc.queued {
				t.Fatalf("queued %v, want %d", ev.QueuedAllocations, tc.queued)
			}
			if failed := len(ev.FailedTGAllocs) != 0; failed != tc.failed || (ev.BlockedEval != "") != tc.failed {
				t.Fatalf("failed %v, blocked eval %q, want failures: %v", ev.FailedTGAllocs, ev.BlockedEval, tc.failed)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

// TestSystem_DisconnectAsNomad: what becomes of an allocation on a node
// that disconnected, as Nomad v1.6.1's diffSystemAllocsForNode
// (scheduler/system_util.go) decides, for the cases where Drover once
// decided otherwise. Nodes are n-000 (the one that disconnects) and
// n-001; the job's group tolerates a minute's disconnect unless the case
// says not.
func TestSystem_DisconnectAsNomad(t *testing.T) {
	setNode := func(h *schedtest.Harness, status string) {
		n := h.State().Node("n-000").Copy()
		n.Status = status
		h.UpsertNodes(n)
	}
	cases := []struct {
		name      string
		tolerated bool
		// client: the allocation's status when n-000 disconnects.
		client string
		// then runs after n-000 disconnected (and an eval marked its
		// running allocation unknown, when tolerated); it returns the
		// eval to check.
		then func(h *schedtest.Harness, job *sdk.Job) *sdk.Evaluation
		// want: the allocation on n-000, client and desired status.
		wantClient, wantDesired string
		// stops and placed: the last eval's plan (-1: no plan).
		stops, placed int
	}{
		{
			// Tainted, not supportsDisconnectedClients, the node not
			// terminal: IGNORE.
			name: "running, not tolerated: left running", client: sdk.AllocClientStatusRunning,
			then: func(h *schedtest.Harness, job *sdk.Job) *sdk.Evaluation {
				return h.NewEval(job, sdk.EvalTriggerNodeUpdate)
			},
			wantClient: sdk.AllocClientStatusRunning, wantDesired: sdk.AllocDesiredStatusRun, stops: -1,
		},
		{
			// TestSystemSched_NodeDisconnected, "system-ignore-ineligible":
			// only a running allocation is marked disconnecting.
			name: "pending, tolerated: left pending", tolerated: true, client: sdk.AllocClientStatusPending,
			then: func(h *schedtest.Harness, job *sdk.Job) *sdk.Evaluation {
				return h.NewEval(job, sdk.EvalTriggerNodeUpdate)
			},
			wantClient: sdk.AllocClientStatusPending, wantDesired: sdk.AllocDesiredStatusRun, stops: -1,
		},
		{
			// "Ignore unknown allocs that we want to reconnect
			// eventually": back on a ready node, an unknown allocation
			// is not updated to the job's new version; the other node's
			// is.
			name: "unknown, node ready again, new version: left alone", tolerated: true,
			client: sdk.AllocClientStatusRunning,
			then: func(h *schedtest.Harness, job *sdk.Job) *sdk.Evaluation {
				setNode(h, sdk.NodeStatusReady)
				next := job.Copy()
				next.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": "/bin/v2"}
				return h.RegisterJob(next)
			},
			wantClient: sdk.AllocClientStatusUnknown, wantDesired: sdk.AllocDesiredStatusRun, stops: 1, placed: 1,
		},
		{
			// TestSystemSched_NodeDisconnected, "sysbatch-unknown-expired"
			// (a ready node): expired unknown allocations are lost.
			name: "unknown, node ready again, window over: lost", tolerated: true,
			client: sdk.AllocClientStatusRunning,
			then: func(h *schedtest.Harness, job *sdk.Job) *sdk.Evaluation {
				setNode(h, sdk.NodeStatusReady)
				h.Now = h.Now.Add(2 * time.Minute)
				return h.NewEval(job, sdk.EvalTriggerNodeUpdate)
			},
			wantClient: sdk.AllocClientStatusLost, wantDesired: sdk.AllocDesiredStatusStop, stops: 1,
		},
		{
			// The unknown allocation is ignored before diffSystemAllocsForNode
			// stops allocations on nodes no longer targeted; the other
			// node's stops.
			name: "unknown, node ready again, no longer targeted: left alone", tolerated: true,
			client: sdk.AllocClientStatusRunning,
			then: func(h *schedtest.Harness, job *sdk.Job) *sdk.Evaluation {
				setNode(h, sdk.NodeStatusReady)
				next := job.Copy()
				next.Datacenters = []string{"elsewhere"}
				return h.RegisterJob(next)
			},
			wantClient: sdk.AllocClientStatusUnknown, wantDesired: sdk.AllocDesiredStatusRun, stops: 1,
		},
		{
			// Kept from Drover, not Nomad (which ignores it until its
			// window ends): on a down node an unknown allocation is lost
			// at once, there being no later eval to lose it (see
			// reconcile.System).
			name: "unknown, node down: lost", tolerated: true, client: sdk.AllocClientStatusRunning,
			then: func(h *schedtest.Harness, job *sdk.Job) *sdk.Evaluation {
				setNode(h, sdk.NodeStatusDown)
				return h.NewEval(job, sdk.EvalTriggerNodeUpdate)
			},
			wantClient: sdk.AllocClientStatusLost, wantDesired: sdk.AllocDesiredStatusStop, stops: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Nodes("n", 2)...)
			job := schedtest.SystemJob("agent")
			if tc.tolerated {
				job.TaskGroups[0].Disconnect = &sdk.DisconnectStrategy{LostAfter: time.Minute}
			}
			h.Process(sched, h.RegisterJob(job))
			var onN0 *sdk.Allocation
			for _, a := range h.Live("default", "agent") {
				status := sdk.AllocClientStatusRunning
				if a.NodeID == "n-000" {
					onN0, status = a, tc.client
				}
				h.SetClientStatus(status, a)
			}
			setNode(h, sdk.NodeStatusDisconnected)
			h.Process(sched, h.NewEval(job, sdk.EvalTriggerNodeUpdate))
			if tc.tolerated && tc.client == sdk.AllocClientStatusRunning {
				if got := h.State().Alloc(onN0.ID).ClientStatus; got != sdk.AllocClientStatusUnknown {
					t.Fatalf("after the disconnect: %s, want unknown", got)
				}
			}
			plans := len(h.Plans)
			h.Process(sched, tc.then(h, job))
			got := h.State().Alloc(onN0.ID)
			if got.ClientStatus != tc.wantClient || got.DesiredStatus != tc.wantDesired {
				t.Fatalf("allocation on n-000: %s/%s, want %s/%s", got.ClientStatus, got.DesiredStatus, tc.wantClient, tc.wantDesired)
			}
			switch {
			case tc.stops < 0:
				if len(h.Plans) != plans {
					t.Fatalf("a plan: places %d, stops %d; want none", len(schedtest.Placed(h.LastPlan())),
						len(schedtest.Stopped(h.LastPlan())))
				}
			case len(h.Plans) == plans:
				t.Fatal("no plan")
			default:
				plan := h.LastPlan()
				if s, p := len(schedtest.Stopped(plan)), len(schedtest.Placed(plan)); s != tc.stops || p != tc.placed {
					t.Fatalf("the plan stops %d and places %d, want %d and %d", s, p, tc.stops, tc.placed)
				}
				for _, a := range schedtest.Placed(plan) {
					if a.NodeID == "n-000" {
						t.Fatalf("placed %s on n-000", a.Name)
					}
				}
			}
		})
	}
}

// A system job mounting a multi-node-reader CSI volume runs on the nodes
// that run the volume's plugin; the others are filtered, which is not a
// failure. With a single-node-writer volume, one node takes the claim and
// the rest are filtered on it, as Nomad's system scheduler counts a node
// its CSI check filters.
func TestSystem_CSIVolumes(t *testing.T) {
	for _, c := range []struct {
		mode     string
		readOnly bool
		placed   int
	}{
		{sdk.CSIAccessModeMultiNodeReader, true, 3},
		{sdk.CSIAccessModeSingleNodeWriter, false, 1},
	} {
		t.Run(c.mode, func(t *testing.T) {
			h := schedtest.New(t)
			nodes := schedtest.Nodes("n", 5)
			for _, n := range nodes[:3] {
				n.CSINodePlugins = map[string]*sdk.CSIInfo{"nfs": {PluginID: "nfs", Healthy: true, NodeInfo: &sdk.CSINodeInfo{ID: n.ID}}}
			}
			h.UpsertNodes(nodes...)
			h.UpsertCSIVolume(&sdk.CSIVolume{ID: "shared", PluginID: "nfs", RequestedCapabilities: []*sdk.CSIVolumeCapability{
				{AccessMode: c.mode, AttachmentMode: sdk.CSIAttachmentModeFilesystem}}})
			job := schedtest.SystemJob("agent")
			job.TaskGroups[0].Volumes = map[string]sdk.Opaque{"shared": {"Type": "csi", "Source": "shared", "ReadOnly": c.readOnly,
				"AccessMode": c.mode, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}
			h.Process(sched, h.RegisterJob(job))
			placed := schedtest.Placed(h.LastPlan())
			if len(placed) != c.placed {
				t.Fatalf("placed %d, want %d", len(placed), c.placed)
			}
			for _, a := range placed {
				if h.Node(a.NodeID).CSINodePlugins == nil {
					t.Fatalf("placed on %s, which does not run the plugin", a.NodeID)
				}
			}
			if len(h.LastEval().FailedTGAllocs) != 0 {
				t.Fatalf("failed groups %+v", h.LastEval().FailedTGAllocs)
			}
			v := h.CSIVolume("default", "shared")
			if r, w := v.LiveClaims(nil); r+w != c.placed {
				t.Fatalf("claims %d+%d, want %d", r, w, c.placed)
			}
		})
	}
}
