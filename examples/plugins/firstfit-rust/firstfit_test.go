//go:build foreignabi

// The Rust plugin, built with rustc and run in Drover's wasm runtime
// against the sdktest harness: the ABI as a plugin in another language
// sees it. Run by make foreign-abi, which installs the toolchain.
package firstfitrust_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

const name = "firstfit-rust"

// newPlugin loads the Rust module as the agent does (deadlines enforced,
// so the module goes through the interrupt rewrite) behind a pool of one
// instance.
func newPlugin(t *testing.T) *runtime.Plugin {
	t.Helper()
	m, err := wasm.LoadFile(context.Background(), wasmtest.BuildRust(t, "./examples/plugins/firstfit-rust"), wasm.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := runtime.DefaultPoolConfig(1)
	p := runtime.NewPlugin(m, cfg, zerolog.Nop())
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

func job(id string, count int) *sdk.Job {
	j := sdktest.Job(id, count)
	j.Scheduler = name
	return j
}

func run(t *testing.T, p *runtime.Plugin, h *sdktest.Harness, eval *sdk.Evaluation) {
	t.Helper()
	if err := runtimetest.Process(p, h, eval, 10*time.Second); err != nil {
		t.Fatalf("eval %s: %v", eval.ID, err)
	}
	last := h.Updated[len(h.Updated)-1]
	if last.ID != eval.ID {
		t.Fatalf("last eval update is of %s, not %s", last.ID, eval.ID)
	}
}

// live returns the job's allocations that are not terminal, by node.
func live(h *sdktest.Harness, jobID string) map[string]int {
	out := map[string]int{}
	for _, a := range h.AllocsByJob("default", jobID) {
		if !a.TerminalStatus() {
			out[a.NodeID]++
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// checkNotOvercommitted fails if any node's live allocations exceed it.
func checkNotOvercommitted(t *testing.T, h *sdktest.Harness, nodes []string) {
	t.Helper()
	byNode := map[string][]*sdk.Allocation{}
	for _, id := range nodes {
		byNode[id] = nil
	}
	for _, j := range []string{"web", "api", "batch"} {
		for _, a := range h.AllocsByJob("default", j) {
			if !a.TerminalStatus() {
				byNode[a.NodeID] = append(byNode[a.NodeID], a)
			}
		}
	}
	for id, as := range byNode {
		if ok, dim := feasible.AllocsFit(h.Node(id), as); !ok {
			t.Fatalf("node %s is over-committed (%s) by %d allocations", id, dim, len(as))
		}
	}
}

func TestForeignABI_LoadsWithItsInfo(t *testing.T) {
	info := newPlugin(t).Info()
	if info.Name != name || len(info.Types) != 0 || info.ABI != uint32(abi.MakeVersion(1, 3)) || info.PluginVersion != "0.1.0" {
		t.Fatalf("info = %+v", info)
	}
}

// TestForeignABI_PlacesScalesAndStops runs a job's life through one
// instance: placement (full sync), scale up (a delta with the kept plan),
// a status-only job change (a job status), scale down and stop.
func TestForeignABI_PlacesScalesAndStops(t *testing.T) {
	p := newPlugin(t)
	h := sdktest.New()
	// 2000 MHz fits four 500 MHz tasks: first fit fills n1, then n2.
	h.UpsertNode(sdktest.Node("n1", 2000, 4096), sdktest.Node("n2", 2000, 4096), sdktest.Node("n3", 2000, 4096))
	nodes := []string{"n1", "n2", "n3"}
	j := job("web", 5)
	h.UpsertJob(j)
	run(t, p, h, h.RegisterEval(j))
	if got := live(h, "web"); got["n1"] != 4 || got["n2"] != 1 || total(got) != 5 {
		t.Fatalf("placed %v, want n1:4 n2:1", got)
	}
	if e := h.Updated[0]; e.Status != sdk.EvalStatusComplete || e.JobID != "web" {
		t.Fatalf("eval update = %+v", e)
	}
	for _, a := range h.AllocsByJob("default", "web") {
		if a.Index() < 0 || a.Index() > 4 || a.EvalID != h.Updated[0].ID || a.DesiredStatus != sdk.AllocDesiredStatusRun {
			t.Fatalf("allocation %s: name %q, eval %s, desired %q", a.ID, a.Name, a.EvalID, a.DesiredStatus)
		}
	}

	// The server marks the job running: only its status changes, and the
	// next delta carries it as a job status, with the kept plan.
	status := *j
	status.Status = sdk.JobStatusRunning
	version, jmi := j.Version, j.JobModifyIndex
	h.UpsertJob(&status)
	status.Version, status.JobModifyIndex = version, jmi
	run(t, p, h, h.RegisterEval(&status))
	st := p.Stats()
	if len(h.Plans) != 1 || st.FullSyncs.Load() != 1 || st.DeltaSyncs.Load() != 1 || st.KeptPlans.Load() != 1 || st.JobStatuses.Load() != 1 {
		t.Fatalf("%d plans; syncs: %d full, %d delta, %d kept plans, %d job statuses; want 1; 1, 1, 1, 1", len(h.Plans),
			st.FullSyncs.Load(), st.DeltaSyncs.Load(), st.KeptPlans.Load(), st.JobStatuses.Load())
	}

	scaled := status
	scaled.TaskGroups = []*sdk.TaskGroup{{Name: "web", Count: 7, Tasks: j.TaskGroups[0].Tasks}}
	h.UpsertJob(&scaled)
	run(t, p, h, h.RegisterEval(&scaled))
	if got := live(h, "web"); got["n1"] != 4 || got["n2"] != 3 || total(got) != 7 {
		t.Fatalf("after scaling to 7: %v, want n1:4 n2:3", got)
	}
	checkNotOvercommitted(t, h, nodes)

	down := scaled
	down.TaskGroups = []*sdk.TaskGroup{{Name: "web", Count: 2, Tasks: j.TaskGroups[0].Tasks}}
	h.UpsertJob(&down)
	run(t, p, h, h.RegisterEval(&down))
	names := map[string]bool{}
	for _, a := range h.AllocsByJob("default", "web") {
		if !a.TerminalStatus() {
			names[a.Name] = true
		}
	}
	if len(names) != 2 || !names["web.web[0]"] || !names["web.web[1]"] {
		t.Fatalf("after scaling to 2, live: %v; want web.web[0] and [1]", names)
	}

	stopped := down
	stopped.Stop = true
	h.UpsertJob(&stopped)
	run(t, p, h, h.RegisterEval(&stopped))
	if got := live(h, "web"); total(got) != 0 {
		t.Fatalf("after stop, live: %v", got)
	}
	if st.Failures.Load() != 0 || st.FullSyncs.Load() != 1 {
		t.Fatalf("%d failures, %d full syncs", st.Failures.Load(), st.FullSyncs.Load())
	}
}

// TestForeignABI_FeasibleNodesOnly: a down node, an ineligible one, a
// draining one and one of another datacenter get nothing.
func TestForeignABI_FeasibleNodesOnly(t *testing.T) {
	p := newPlugin(t)
	h := sdktest.New()
	down, inel, drain, dc2, ok := sdktest.Node("a-down", 8000, 8192), sdktest.Node("b-inel", 8000, 8192),
		sdktest.Node("c-drain", 8000, 8192), sdktest.Node("d-dc2", 8000, 8192), sdktest.Node("e-ok", 8000, 8192)
	down.Status = sdk.NodeStatusDown
	inel.SchedulingEligibility = sdk.NodeSchedulingIneligible
	drain.DrainStrategy = &sdk.DrainStrategy{}
	dc2.Datacenter = "dc2"
	// Reservations count against a node: e-ok offers 8000-6000 MHz.
	ok.ReservedResources = &sdk.NodeReservedResources{Cpu: sdk.NodeReservedCpuResources{CpuShares: 6000}}
	h.UpsertNode(down, inel, drain, dc2, ok)
	j := job("web", 6)
	h.UpsertJob(j)
	run(t, p, h, h.RegisterEval(j))
	if got := live(h, "web"); got["e-ok"] != 4 || total(got) != 4 {
		t.Fatalf("placed %v, want e-ok:4", got)
	}
	// Two found no room: a blocked eval carries them.
	if len(h.Created) != 1 || h.Created[0].Status != sdk.EvalStatusBlocked ||
		h.Created[0].TriggeredBy != sdk.EvalTriggerQueuedAllocs || h.Created[0].PreviousEval != h.Updated[0].ID {
		t.Fatalf("created evals = %+v", h.Created)
	}
	if u := h.Updated[0]; u.Status != sdk.EvalStatusComplete || u.BlockedEval != h.Created[0].ID {
		t.Fatalf("eval update = %+v", u)
	}
	checkNotOvercommitted(t, h, []string{"a-down", "b-inel", "c-drain", "d-dc2", "e-ok"})

	// Unblocked with still no room, the blocked eval is reblocked.
	blocked := h.Created[0]
	if err := runtimetest.Process(p, h, blocked, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(h.Reblocked) != 1 || h.Reblocked[0].ID != blocked.ID || h.Reblocked[0].Status != sdk.EvalStatusBlocked {
		t.Fatalf("reblocked = %+v", h.Reblocked)
	}
}

// TestForeignABI_GroupsAskingForWhatItDoesNotAssignWait: the plugin hands
// out no ports and no devices, and the host refuses a placement without
// the ports its group or the devices its tasks ask for, so such a group is
// never placed, even on a node that has them: it waits in a blocked eval,
// and the job's other groups still place.
func TestForeignABI_GroupsAskingForWhatItDoesNotAssignWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group *sdk.TaskGroup
	}{
		{"ports", &sdk.TaskGroup{Name: "api", Count: 1,
			Networks: []*sdk.NetworkResource{{DynamicPorts: []sdk.Port{{Label: "http"}}}},
			Tasks:    []*sdk.Task{{Name: "app", Driver: "docker", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}},
		{"devices", &sdk.TaskGroup{Name: "train", Count: 1,
			Tasks: []*sdk.Task{{Name: "app", Driver: "docker", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256,
				Devices: []*sdk.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t)
			h := sdktest.New()
			n := sdktest.Node("n1", 8000, 8192)
			n.NodeResources.Devices = []*sdk.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "1080ti",
				Instances: []*sdk.NodeDevice{{ID: "g0", Healthy: true}, {ID: "g1", Healthy: true}}}}
			h.UpsertNode(n)
			j := job("web", 2)
			j.TaskGroups = append(j.TaskGroups, tc.group)
			h.UpsertJob(j)
			run(t, p, h, h.RegisterEval(j))
			groups := map[string]int{}
			for _, a := range h.AllocsByJob("default", "web") {
				groups[a.TaskGroup]++
			}
			if groups["web"] != 2 || groups[tc.group.Name] != 0 {
				t.Fatalf("placed %v, want web:2 and no %s", groups, tc.group.Name)
			}
			if len(h.Created) != 1 || h.Created[0].Status != sdk.EvalStatusBlocked {
				t.Fatalf("created evals = %+v, want one blocked eval for %s", h.Created, tc.group.Name)
			}
			if u := h.Updated[0]; u.Status != sdk.EvalStatusComplete || u.BlockedEval != h.Created[0].ID {
				t.Fatalf("eval update = %+v, want complete, naming the blocked eval", u)
			}
		})
	}
}

// TestForeignABI_PartialCommitRefreshes: the applier rejects a node; the
// plugin applies the refresh the plan's answer carries and places the
// rest elsewhere.
func TestForeignABI_PartialCommitRefreshes(t *testing.T) {
	p := newPlugin(t)
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 2000, 4096), sdktest.Node("n2", 2000, 4096), sdktest.Node("n3", 2000, 4096))
	// Another eval places half of n1 while the plugin plans, so the
	// applier rejects the plugin's placements there.
	other := sdktest.Job("api", 4)
	h.UpsertJob(other)
	j := job("web", 6)
	h.UpsertJob(j)
	h.OnPlan = func(*sdk.Plan) sdktest.Verdict {
		h.OnPlan = nil
		tg := other.TaskGroups[0]
		for i := 0; i < 2; i++ {
			h.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("api-%d", i), Namespace: "default", JobID: "api", TaskGroup: tg.Name,
				Name: sdk.AllocName("api", tg.Name, i), NodeID: "n1", AllocatedResources: sdk.RequestedResources(tg),
				DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
		}
		return sdktest.Verdict{Reject: []string{"n1"}}
	}
	run(t, p, h, h.RegisterEval(j))
	if len(h.Plans) != 2 {
		t.Fatalf("%d plans, want 2 (a partial commit, then the retry)", len(h.Plans))
	}
	if got := live(h, "web"); got["n1"] != 2 || got["n2"] != 4 || total(got) != 6 {
		t.Fatalf("placed %v, want n1:2 n2:4", got)
	}
	if h.Updated[0].Status != sdk.EvalStatusComplete {
		t.Fatalf("eval update = %+v", h.Updated[0])
	}
	checkNotOvercommitted(t, h, []string{"n1", "n2", "n3"})
}

// TestForeignABI_ManyJobsNeverOvercommit is a property test: random
// nodes, jobs and scalings through one instance; after every eval no node
// holds more than it offers, and every group that fits is at its count.
func TestForeignABI_ManyJobsNeverOvercommit(t *testing.T) {
	p := newPlugin(t)
	h := sdktest.New()
	r := rand.New(rand.NewPCG(7, 7))
	var nodes []string
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("n%d", i)
		nodes = append(nodes, id)
		h.UpsertNode(sdktest.Node(id, int64(1000+r.IntN(4)*1000), int64(1024+r.IntN(4)*1024)))
	}
	for i := 0; i < 40; i++ {
		id := []string{"web", "api", "batch"}[r.IntN(3)]
		j := job(id, r.IntN(12))
		j.TaskGroups[0].Tasks[0].Resources = &sdk.Resources{CPU: 100 + r.IntN(8)*100, MemoryMB: 64 + r.IntN(8)*64}
		h.UpsertJob(j)
		run(t, p, h, h.RegisterEval(j))
		checkNotOvercommitted(t, h, nodes)
		if u := h.Updated[len(h.Updated)-1]; u.BlockedEval == "" && total(live(h, id)) != j.TaskGroups[0].Count {
			t.Fatalf("eval %d: job %s has %d live allocations, want %d", i, id, total(live(h, id)), j.TaskGroups[0].Count)
		}
	}
	if st := p.Stats(); st.Failures.Load() != 0 || st.FullSyncs.Load() != 1 {
		t.Fatalf("%d failures, %d full syncs", st.Failures.Load(), st.FullSyncs.Load())
	}
}
