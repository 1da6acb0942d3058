package generic_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
)

// csiNode is a node running the node plugin of CSI plugin "ebs", healthy,
// with room for max volumes (0: no limit).
func csiNode(id string, max int64) *sdk.Node {
	n := schedtest.Node(id)
	n.CSINodePlugins = map[string]*sdk.CSIInfo{"ebs": {PluginID: "ebs", Healthy: true,
		NodeInfo: &sdk.CSINodeInfo{ID: id, MaxVolumes: max}}}
	return n
}

func csiVolume(id, mode string) *sdk.CSIVolume {
	return &sdk.CSIVolume{ID: id, Name: id, PluginID: "ebs", RequestedCapabilities: []*sdk.CSIVolumeCapability{
		{AccessMode: mode, AttachmentMode: sdk.CSIAttachmentModeFilesystem}}}
}

// csiJob is a service job of count allocations mounting volume source.
func csiJob(count int, source, mode string, readOnly, perAlloc bool) *sdk.Job {
	job := schedtest.ServiceJob("db", count)
	job.TaskGroups[0].Volumes = map[string]sdk.Opaque{"data": {"Type": "csi", "Source": source, "ReadOnly": readOnly,
		"PerAlloc": perAlloc, "AccessMode": mode, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}
	return job
}

// The service scheduler places allocations that mount CSI volumes as
// Nomad's CSIVolumeChecker allows, and explains the rest in the eval's
// failed allocations, as Nomad reports them.
func TestService_CSIVolumes(t *testing.T) {
	cases := []struct {
		name    string
		nodes   []*sdk.Node
		volumes []*sdk.CSIVolume
		job     *sdk.Job
		// placed is how many are placed; filtered the reasons nodes were
		// filtered for in the failed group's metric ("" when none fails).
		placed   int
		filtered string
	}{
		{"a volume not registered", []*sdk.Node{csiNode("n1", 0)}, nil,
			csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false), 0, "missing CSI Volume data"},
		{"only the nodes running the plugin", []*sdk.Node{schedtest.Node("plain"), csiNode("n1", 0)},
			[]*sdk.CSIVolume{csiVolume("data", sdk.CSIAccessModeSingleNodeWriter)},
			csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false), 1, ""},
		{"a single writer", []*sdk.Node{csiNode("n1", 0), csiNode("n2", 0)},
			[]*sdk.CSIVolume{csiVolume("data", sdk.CSIAccessModeSingleNodeWriter)},
			csiJob(2, "data", sdk.CSIAccessModeSingleNodeWriter, false, false), 1, "CSI volume data has exhausted its available writer claims"},
		{"many readers", []*sdk.Node{csiNode("n1", 0), csiNode("n2", 0)},
			[]*sdk.CSIVolume{csiVolume("data", sdk.CSIAccessModeMultiNodeReader)},
			csiJob(3, "data", sdk.CSIAccessModeMultiNodeReader, true, false), 3, ""},
		{"a reader-only volume asked for writes", []*sdk.Node{csiNode("n1", 0)},
			[]*sdk.CSIVolume{csiVolume("data", sdk.CSIAccessModeMultiNodeReader)},
			csiJob(1, "data", sdk.CSIAccessModeMultiNodeReader, false, false), 0, "CSI volume data is unschedulable or is read-only"},
		{"a mode the volume does not offer", []*sdk.Node{csiNode("n1", 0)},
			[]*sdk.CSIVolume{csiVolume("data", sdk.CSIAccessModeSingleNodeWriter)},
			csiJob(1, "data", sdk.CSIAccessModeMultiNodeMultiWriter, false, false), 0,
			"CSI volume data does not offer access mode multi-node-multi-writer with attachment mode file-system"},
		{"one volume per allocation", []*sdk.Node{csiNode("n1", 0), csiNode("n2", 0)},
			[]*sdk.CSIVolume{csiVolume("data[0]", sdk.CSIAccessModeSingleNodeWriter), csiVolume("data[1]", sdk.CSIAccessModeSingleNodeWriter)},
			csiJob(3, "data", sdk.CSIAccessModeSingleNodeWriter, false, true), 2, "missing CSI Volume data[2]"},
		{"a node's limit of volumes", []*sdk.Node{csiNode("n1", 1), csiNode("n2", 1)},
			[]*sdk.CSIVolume{csiVolume("data[0]", sdk.CSIAccessModeSingleNodeWriter), csiVolume("data[1]", sdk.CSIAccessModeSingleNodeWriter),
				csiVolume("data[2]", sdk.CSIAccessModeSingleNodeWriter)},
			csiJob(3, "data", sdk.CSIAccessModeSingleNodeWriter, false, true), 2, "CSI plugin ebs has the maximum number of volumes on client n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(c.nodes...)
			h.UpsertCSIVolume(c.volumes...)
			h.Process(service, h.RegisterJob(c.job))
			live := h.Live("default", "db")
			if len(live) != c.placed {
				t.Fatalf("placed %d, want %d", len(live), c.placed)
			}
			perNode := map[string]int{}
			for _, a := range live {
				if n := h.Node(a.NodeID); n.CSINodePlugins["ebs"] == nil {
					t.Fatalf("%s placed on %s, which does not run the plugin", a.Name, a.NodeID)
				}
				perNode[a.NodeID]++
			}
			if c.filtered == "" {
				if m := h.LastEval().FailedTGAllocs["web"]; m != nil {
					t.Fatalf("failed: %+v", m)
				}
				return
			}
			m := h.LastEval().FailedTGAllocs["web"]
			if m == nil {
				t.Fatalf("nothing failed; want %q", c.filtered)
			}
			found := false
			for reason := range m.ConstraintFiltered {
				found = found || strings.HasPrefix(reason, c.filtered)
			}
			if !found {
				t.Fatalf("filtered %v, want %q", m.ConstraintFiltered, c.filtered)
			}
			if len(h.Created) != 1 || h.Created[0].Status != sdk.EvalStatusBlocked {
				t.Fatalf("no blocked eval: %v", h.Created)
			}
		})
	}
}

// Claims follow the allocations: a volume's writer claim goes to the
// allocation placed, a destructive update's replacement takes it over
// from the allocation it stops, and a finished allocation frees it for a
// blocked eval.
func TestService_CSIClaimsFollowAllocations(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(csiNode("n1", 0), csiNode("n2", 0))
	h.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeSingleNodeWriter))
	job := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
	h.Process(service, h.RegisterJob(job))
	first := h.Live("default", "db")
	if len(first) != 1 {
		t.Fatalf("placed %d", len(first))
	}
	if v := h.CSIVolume("default", "data"); len(v.WriteClaims) != 1 || v.WriteClaims[first[0].ID] == nil {
		t.Fatalf("claims %v", v.WriteClaims)
	}

	// A destructive update: the replacement takes the claim over.
	job2 := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
	job2.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": "/bin/true"}
	h.Process(service, h.RegisterJob(job2))
	second := h.Live("default", "db")
	if len(second) != 1 || second[0].ID == first[0].ID {
		t.Fatalf("not replaced: %v", names(second))
	}
	if m := h.LastEval().FailedTGAllocs; len(m) != 0 {
		t.Fatalf("replacement failed: %+v", m["web"])
	}

	// Another job cannot write the volume while the replacement runs.
	other := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
	other.ID, other.Name = "other", "other"
	h.Process(service, h.RegisterJob(other))
	if len(h.Live("default", "other")) != 0 {
		t.Fatal("a second writer was placed")
	}
	blocked := h.Created[len(h.Created)-1]
	// Once the job's allocations finish, the blocked eval places it.
	h.SetClientStatus(sdk.AllocClientStatusComplete, h.Live("default", "db")...)
	for _, a := range h.AllocsByJob("default", "db") {
		if !a.ClientTerminalStatus() {
			h.SetClientStatus(sdk.AllocClientStatusComplete, a)
		}
	}
	if v := h.CSIVolume("default", "data"); v.InUse(nil) {
		t.Fatalf("claims left: %v", v.WriteClaims)
	}
	h.Process(service, blocked)
	if len(h.Live("default", "other")) != 1 {
		t.Fatalf("blocked eval did not place: %+v", h.LastEval())
	}
}

// A plugin that needs a controller takes no claims while no controller of
// it is healthy.
func TestService_CSIControllerRequired(t *testing.T) {
	h := schedtest.New(t)
	n := csiNode("n1", 0)
	ctl := schedtest.Node("ctl")
	ctl.CSIControllerPlugins = map[string]*sdk.CSIInfo{"ebs": {PluginID: "ebs", Healthy: false, RequiresControllerPlugin: true}}
	h.UpsertNodes(n, ctl)
	h.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeSingleNodeWriter))
	h.Process(service, h.RegisterJob(csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)))
	if len(h.Live("default", "db")) != 0 {
		t.Fatal("placed without a healthy controller")
	}
	m := h.LastEval().FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered["CSI volume data is unschedulable or is read-only"] == 0 {
		t.Fatalf("metric %+v", m)
	}
	ctl.CSIControllerPlugins["ebs"].Healthy = true
	h.UpsertNodes(ctl)
	h.Process(service, h.Created[len(h.Created)-1])
	if got := len(h.Live("default", "db")); got != 1 {
		t.Fatalf("placed %d once the controller is healthy", got)
	}
}

// The host's check of a plan (the harness runs the applier's) refuses a
// second writer a scheduler places on a single-writer volume, whatever the
// scheduler thought.
func TestService_CSIHostRefusesASecondWriter(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(csiNode("n1", 0), csiNode("n2", 0))
	h.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeSingleNodeWriter))
	job := csiJob(2, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
	e := h.RegisterJob(job)
	h.UpsertEval(e)
	a0, a1 := schedtest.Alloc(job, 0, "n1"), schedtest.Alloc(job, 1, "n2")
	plan := &sdk.Plan{EvalID: e.ID, Job: job, NodeAllocation: map[string][]*sdk.Allocation{"n1": {a0}, "n2": {a1}}}
	res, err := h.SubmitPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.RejectedNodes) != "[n2]" || len(res.NodeAllocation["n1"]) != 1 {
		t.Fatalf("result %+v", res)
	}
}

// TestProperty_CSIClaimsOverRandomClusters places random jobs mounting
// random CSI volumes on random clusters, some nodes running the plugin
// with a limit of volumes, and checks what must always hold: the host
// never refuses what the scheduler proposes, every allocation mounting a
// volume is on a node running its plugin, no single-writer volume has two
// live writers, no node mounts more volumes than its plugin allows, and
// each volume's claims are exactly its live allocations'.
func TestProperty_CSIClaimsOverRandomClusters(t *testing.T) {
	modes := []string{sdk.CSIAccessModeSingleNodeWriter, sdk.CSIAccessModeMultiNodeSingleWriter,
		sdk.CSIAccessModeMultiNodeReader, sdk.CSIAccessModeMultiNodeMultiWriter}
	for seed := uint64(1); seed <= 100; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 13))
			h := schedtest.New(t)
			var nodes []*sdk.Node
			for i := 0; i < 3+r.IntN(10); i++ {
				n := schedtest.Node(fmt.Sprintf("n-%02d", i))
				if r.IntN(3) != 0 {
					n = csiNode(n.ID, int64(r.IntN(4)))
				}
				nodes = append(nodes, n)
			}
			h.UpsertNodes(nodes...)
			var vols []*sdk.CSIVolume
			for i := 0; i < 1+r.IntN(4); i++ {
				mode := modes[r.IntN(len(modes))]
				vols = append(vols, csiVolume(fmt.Sprintf("v%d", i), mode))
				for k := 0; k < 3; k++ {
					vols = append(vols, csiVolume(fmt.Sprintf("v%d[%d]", i, k), mode))
				}
			}
			h.UpsertCSIVolume(vols...)
			for j := 0; j < 1+r.IntN(4); j++ {
				v := vols[4*r.IntN(len(vols)/4)]
				mode := v.RequestedCapabilities[0].AccessMode
				readOnly := mode == sdk.CSIAccessModeMultiNodeReader || r.IntN(3) == 0
				job := csiJob(1+r.IntN(5), v.ID, mode, readOnly, r.IntN(2) == 0)
				job.ID, job.Name = fmt.Sprintf("job-%d", j), fmt.Sprintf("job-%d", j)
				job.TaskGroups[0].Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 64}
				h.Process(service, h.RegisterJob(job))
				if r.IntN(3) == 0 {
					// A destructive update of what runs.
					tg := job.TaskGroups[0]
					job2 := csiJob(tg.Count, v.ID, mode, readOnly, sdk.CSIVolumeRequests(tg, "")[0].PerAlloc)
					job2.ID, job2.Name = job.ID, job.Name
					job2.TaskGroups[0].Tasks[0].Resources = tg.Tasks[0].Resources
					job2.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": fmt.Sprint(r.IntN(100))}
					h.Process(service, h.RegisterJob(job2))
				}
				if r.IntN(3) == 0 {
					live := h.Live("default", job.ID)
					if len(live) > 0 {
						h.SetClientStatus(sdk.AllocClientStatusComplete, live[r.IntN(len(live))])
					}
				}
			}
			for _, res := range h.Results {
				if len(res.RejectedNodes) > 0 {
					t.Fatalf("the host refused nodes %v", res.RejectedNodes)
				}
			}
			mounted := map[string]map[string]bool{}
			want := map[string]map[string]bool{} // volume -> allocations that should claim it
			for _, n := range nodes {
				for _, a := range h.State().AllocsByNode(n.ID) {
					if a.ClientTerminalStatus() {
						continue
					}
					for _, req := range sdk.CSIVolumeRequests(a.Job.LookupTaskGroup(a.TaskGroup), a.Name) {
						if n.CSINodePlugins["ebs"] == nil {
							t.Fatalf("%s mounts %s on %s, which does not run the plugin", a.Name, req.Source, n.ID)
						}
						if mounted[n.ID] == nil {
							mounted[n.ID] = map[string]bool{}
						}
						mounted[n.ID][req.Source] = true
						if want[req.Source] == nil {
							want[req.Source] = map[string]bool{}
						}
						want[req.Source][a.ID] = true
					}
				}
				if max := n.CSINodePlugins["ebs"]; max != nil && max.NodeInfo.MaxVolumes > 0 && int64(len(mounted[n.ID])) > max.NodeInfo.MaxVolumes {
					t.Fatalf("%s mounts %d volumes, its plugin allows %d", n.ID, len(mounted[n.ID]), max.NodeInfo.MaxVolumes)
				}
			}
			for _, v := range vols {
				cur := h.CSIVolume("default", v.ID)
				got := map[string]bool{}
				for id := range cur.ReadClaims {
					got[id] = true
				}
				writers := 0
				for id := range cur.WriteClaims {
					got[id] = true
					if a := h.Alloc(id); a != nil && a.DesiredStatus == sdk.AllocDesiredStatusRun {
						writers++
					}
				}
				if !maps.Equal(got, want[v.ID]) && !(len(got) == 0 && len(want[v.ID]) == 0) {
					t.Fatalf("volume %s claimed by %v, live allocations %v", v.ID, got, want[v.ID])
				}
				if m := cur.AccessMode; (m == sdk.CSIAccessModeSingleNodeWriter || m == sdk.CSIAccessModeMultiNodeSingleWriter) && writers > 1 {
					t.Fatalf("volume %s (%s) has %d running writers", v.ID, m, writers)
				}
			}
		})
	}
}

// The host checks a placement's claims against the job version it runs:
// a placement of an older kept version (PlacedVersion: a non-canary
// placement during a deployment) claims that version's volumes as it
// commits, so those are the ones the applier must find free, whatever the
// plan's job mounts.
func TestService_CSIHostChecksThePlacedVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		// newer changes the job's new version.
		newer func(*sdk.Job)
	}{
		{"the new version mounts none", func(j *sdk.Job) { j.TaskGroups[0].Volumes = nil }},
		{"the new version mounts another", func(j *sdk.Job) { j.TaskGroups[0].Volumes["data"]["Source"] = "other" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.New(t)
			h.UpsertNodes(csiNode("n1", 0), csiNode("n2", 0))
			h.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeSingleNodeWriter), csiVolume("other", sdk.CSIAccessModeSingleNodeWriter))
			rival := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
			rival.ID, rival.Name = "rival", "rival"
			h.RegisterJob(rival)
			h.UpsertAllocs(schedtest.Alloc(rival, 0, "n2"))
			v1 := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
			h.RegisterJob(v1)
			v2 := v1.Copy()
			tc.newer(v2)
			e := h.RegisterJob(v2)
			if v1.JobModifyIndex == v2.JobModifyIndex {
				t.Fatal("the versions share a job modify index")
			}
			h.UpsertEval(e)
			a := schedtest.Alloc(v2, 0, "n1")
			a.Job, a.JobVersion, a.JobModifyIndex = nil, v1.Version, v1.JobModifyIndex // runs v1
			res, err := h.SubmitPlan(&sdk.Plan{EvalID: e.ID, Job: v2, NodeAllocation: map[string][]*sdk.Allocation{"n1": {a}}})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(res.RejectedNodes) != "[n1]" {
				t.Fatalf("rejected %v, want [n1]; data's writers %v", res.RejectedNodes, slices.Sorted(maps.Keys(h.CSIVolume("default", "data").WriteClaims)))
			}
		})
	}
}

// A preempted allocation keeps its CSI claims until its node reports it
// finished (the FSM releases them then), as Nomad's: it still runs, and
// writes. So neither the host nor a scheduler lets a preemptor of another
// job take a single writer's claim it holds: two jobs would write at once.
func TestService_CSIPreemptedWriterKeepsItsClaim(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(csiNode("n1", 0))
	h.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeSingleNodeWriter))
	low := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
	low.ID, low.Name, low.Priority = "low", "low", 10
	h.RegisterJob(low)
	victim := schedtest.Alloc(low, 0, "n1")
	h.UpsertAllocs(victim)
	high := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
	high.Priority = 100
	e := h.RegisterJob(high)
	h.UpsertEval(e)
	a := schedtest.Alloc(high, 0, "n1")
	p := &sdk.Plan{EvalID: e.ID, Job: high, NodeAllocation: map[string][]*sdk.Allocation{"n1": {a}}}
	p.AppendPreemptedAlloc(victim, a.ID)
	res, err := h.SubmitPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.RejectedNodes) != "[n1]" {
		t.Fatalf("rejected %v, want [n1]; data's writers %v", res.RejectedNodes, slices.Sorted(maps.Keys(h.CSIVolume("default", "data").WriteClaims)))
	}

	// Nor does a scheduler count on it: group "cpu" of the high job
	// preempts the victim for room; group "db" then finds the volume's
	// claim still taken.
	h2 := schedtest.New(t)
	h2.UpsertNodes(csiNode("n1", 0))
	h2.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeSingleNodeWriter))
	low2 := low.Copy()
	low2.TaskGroups[0].Tasks[0].Resources.CPU = 3800
	h2.RegisterJob(low2)
	h2.UpsertAllocs(schedtest.Alloc(low2, 0, "n1"))
	cfg := sdk.DefaultSchedulerConfiguration()
	cfg.PreemptionConfig.ServiceSchedulerEnabled = true
	h2.SetSchedulerConfig(cfg)
	high2 := high.Copy()
	cpu := high.Copy().TaskGroups[0]
	cpu.Name, cpu.Volumes = "cpu", nil
	high2.TaskGroups = append([]*sdk.TaskGroup{cpu}, high2.TaskGroups...)
	high2.TaskGroups[1].Tasks[0].Resources.CPU = 100
	h2.Process(service, h2.RegisterJob(high2))
	pl := h2.LastPlan()
	if pl == nil || len(schedtest.Preempted(pl)) != 1 {
		t.Fatalf("plan %+v: want the victim preempted for group cpu", pl)
	}
	for _, a := range schedtest.Placed(pl) {
		if a.TaskGroup == high2.TaskGroups[1].Name {
			t.Fatalf("placed %s, which writes the volume the preempted allocation still writes", a.Name)
		}
	}
}

// An in-place update may not change the CSI volumes an allocation mounts:
// its claims are taken as it is placed. The host refuses a plan that
// tries, whatever the scheduler thought.
func TestService_CSIHostRefusesAnInPlaceVolumeChange(t *testing.T) {
	h := schedtest.New(t)
	h.UpsertNodes(csiNode("n1", 0))
	h.UpsertCSIVolume(csiVolume("data", sdk.CSIAccessModeSingleNodeWriter))
	job := schedtest.ServiceJob("db", 1)
	h.UpsertJob(job)
	old := schedtest.Alloc(job, 0, "n1")
	h.UpsertAllocs(old)
	job2 := csiJob(1, "data", sdk.CSIAccessModeSingleNodeWriter, false, false)
	e := h.RegisterJob(job2)
	h.UpsertEval(e)
	stored := h.Job("default", "db")
	upd := *h.Alloc(old.ID)
	upd.Job, upd.JobVersion, upd.JobModifyIndex = nil, stored.Version, stored.JobModifyIndex
	res, err := h.SubmitPlan(&sdk.Plan{EvalID: e.ID, Job: stored, NodeAllocation: map[string][]*sdk.Allocation{"n1": {&upd}}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.RejectedNodes) != "[n1]" {
		t.Fatalf("an in-place update that mounts a volume was committed: %+v", res)
	}
	if v := h.CSIVolume("default", "data"); v.InUse(nil) {
		t.Fatalf("claims %v", v.WriteClaims)
	}
}
