package zones_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/examples/plugins/zones/zones"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// cluster returns a harness with nodes per zone, each node cpu MHz.
func cluster(perZone map[string]int, cpu int64) *sdktest.Harness {
	h := sdktest.New()
	for zone, n := range perZone {
		for i := 0; i < n; i++ {
			node := sdktest.Node(fmt.Sprintf("%s-%d", zone, i), cpu, 8192)
			node.Meta["zone"] = zone
			h.UpsertNode(node)
		}
	}
	return h
}

func perZone(h *sdktest.Harness, job string) map[string]int {
	out := map[string]int{}
	for _, a := range h.AllocsByJob("default", job) {
		if !a.TerminalStatus() {
			out[h.Node(a.NodeID).Meta["zone"]]++
		}
	}
	return out
}

func TestZones_SpreadsEvenly(t *testing.T) {
	// Zone a has three times the nodes of b and c; best fit alone would
	// pile everything there.
	h := cluster(map[string]int{"a": 6, "b": 2, "c": 2}, 4000)
	job := sdktest.Job("web", 9)
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if got := perZone(h, "web"); got["a"] != 3 || got["b"] != 3 || got["c"] != 3 {
		t.Fatalf("allocations per zone = %v, want 3 each", got)
	}
	if h.Updated[0].Status != sdk.EvalStatusComplete {
		t.Fatalf("eval = %+v", h.Updated[0])
	}
}

// placed returns a cluster of zones (4,000 MHz nodes, counts by zone) on
// which the zones plugin placed the job "web" with count allocations.
func placed(t *testing.T, zoneNodes map[string]int, count int) (*sdktest.Harness, *sdktest.Plugin, *sdk.Job) {
	t.Helper()
	h := cluster(zoneNodes, 4000)
	job := sdktest.Job("web", count)
	h.UpsertJob(job)
	p := h.Plugin(plugin.Info{Name: "zones"}, zones.Scheduler{})
	if err := p.Process(h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	return h, p, job
}

func TestZones_ScaleUpFillsTheEmptiestZone(t *testing.T) {
	h, p, _ := placed(t, map[string]int{"a": 2, "b": 2}, 3)
	grown := sdktest.Job("web", 4)
	h.UpsertJob(grown)
	if err := p.Process(h.RegisterEval(grown)); err != nil {
		t.Fatal(err)
	}
	if got := perZone(h, "web"); got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("allocations per zone = %v, want 2 and 2", got)
	}
}

func TestZones_ConfigNamesTheAttribute(t *testing.T) {
	h := sdktest.New()
	for i, rack := range []string{"r1", "r1", "r1", "r2"} {
		n := sdktest.Node(fmt.Sprintf("n%d", i), 4000, 8192)
		n.Attributes["platform.rack"] = rack
		h.UpsertNode(n)
	}
	h.Config = map[string]string{zones.ConfigZoneAttribute: "attr.platform.rack"}
	job := sdktest.Job("web", 2)
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	racks := map[string]int{}
	for _, a := range h.AllocsByJob("default", "web") {
		racks[h.Node(a.NodeID).Attributes["platform.rack"]]++
	}
	if racks["r1"] != 1 || racks["r2"] != 1 {
		t.Fatalf("allocations per rack = %v", racks)
	}
}

// TestZones_CheckConfig: the agent asks zones about its configuration as
// it loads the plugin (ABI 1.7); zones takes zone_attribute alone, naming
// a node attribute or meta key, and says what is wrong with anything else.
func TestZones_CheckConfig(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]string
		want   string // "" when accepted
	}{
		{"none: meta.zone", nil, ""},
		{"meta key", map[string]string{zones.ConfigZoneAttribute: "meta.rack"}, ""},
		{"attribute", map[string]string{zones.ConfigZoneAttribute: "attr.platform.aws.placement.availability-zone"}, ""},
		{"bare attribute", map[string]string{zones.ConfigZoneAttribute: "unique.hostname"}, ""},
		{"typo in the key", map[string]string{"zone_atribute": "meta.rack"},
			`unknown configuration key "zone_atribute" (it takes "zone_attribute")`},
		{"empty", map[string]string{zones.ConfigZoneAttribute: ""},
			`zone_attribute = "": empty: name a node attribute ("attr.X" or "X") or meta key ("meta.X"), or leave it out for "meta.zone"`},
		{"prefix alone", map[string]string{zones.ConfigZoneAttribute: "meta."}, `zone_attribute = "meta.": names no key after the prefix`},
		{"interpolation", map[string]string{zones.ConfigZoneAttribute: "${meta.rack}"},
			`zone_attribute = "${meta.rack}": write the name without ${ }: "meta.rack"`},
		{"a node field", map[string]string{zones.ConfigZoneAttribute: "node.datacenter"},
			`zone_attribute = "node.datacenter": zones reads node attributes`},
		{"a space", map[string]string{zones.ConfigZoneAttribute: "meta.my zone"},
			`zone_attribute = "meta.my zone": ' ' cannot be part of an attribute or meta key`},
		{"an empty part", map[string]string{zones.ConfigZoneAttribute: "attr.platform..rack"},
			`zone_attribute = "attr.platform..rack": a name's dotted parts cannot be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := sdktest.New()
			h.Config = tt.config
			sdktest.WantConfig(t, h.CheckConfig(zones.Scheduler{}), tt.want)
		})
	}
}

// TestZones_ConfigRefusedFailsTheEval: under a host older than ABI 1.7,
// which does not check the configuration at load, an eval with a
// configuration zones refuses fails, saying why, and places nothing.
func TestZones_ConfigRefusedFailsTheEval(t *testing.T) {
	h := cluster(map[string]int{"a": 1, "b": 1}, 4000)
	h.Config = map[string]string{zones.ConfigZoneAttribute: ""}
	job := sdktest.Job("web", 2)
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if len(h.Plans) != 0 || len(h.Updated) != 1 || h.Updated[0].Status != sdk.EvalStatusFailed ||
		!strings.HasPrefix(h.Updated[0].StatusDescription, `zones: config zone_attribute = "": empty`) {
		t.Fatalf("plans %d, updates %+v", len(h.Plans), h.Updated)
	}
}

func TestZones_PartialCommitRetriesAndStillBalances(t *testing.T) {
	h := cluster(map[string]int{"a": 2, "b": 2}, 4000)
	job := sdktest.Job("web", 4)
	h.UpsertJob(job)
	h.RejectNodes("a-0", "a-1")
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if len(h.Plans) != 2 || h.Results[0].RefreshIndex == 0 {
		t.Fatalf("want a partial commit then a retry, got %d plans", len(h.Plans))
	}
	if got := perZone(h, "web"); got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("allocations per zone = %v, want 2 and 2", got)
	}
}

func TestZones_NoRoomBlocks(t *testing.T) {
	h := cluster(map[string]int{"a": 1}, 1000)
	job := sdktest.Job("web", 3) // 500 MHz each: two fit
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	e := h.Updated[len(h.Updated)-1]
	if e.QueuedAllocations["web"] != 1 || e.BlockedEval == "" || len(h.Created) != 1 || h.Created[0].Status != sdk.EvalStatusBlocked {
		t.Fatalf("eval = %+v, created = %+v", e, h.Created)
	}
}

func TestZones_NewVersionReplacesAllocations(t *testing.T) {
	h, p, job := placed(t, map[string]int{"a": 1, "b": 1}, 2)
	next := job.Copy()
	next.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"image": "nginx:1.28"}
	h.UpsertJob(next)
	if err := p.Process(h.RegisterEval(next)); err != nil {
		t.Fatal(err)
	}
	current := h.Job("default", "web")
	for _, a := range h.AllocsByJob("default", "web") {
		if !a.TerminalStatus() && a.JobVersion != current.Version {
			t.Fatalf("%s still runs version %d, want %d", a.Name, a.JobVersion, current.Version)
		}
	}
	if got := perZone(h, "web"); got["a"] != 1 || got["b"] != 1 {
		t.Fatalf("allocations per zone = %v, want 1 and 1", got)
	}
}

func TestZones_ScalingKeepsAllocations(t *testing.T) {
	h, p, job := placed(t, map[string]int{"a": 2, "b": 2}, 2)
	before := map[string]bool{}
	for _, a := range h.AllocsByJob("default", "web") {
		before[a.ID] = true
	}
	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 4
	h.UpsertJob(scaled)
	if err := p.Process(h.RegisterEval(scaled)); err != nil {
		t.Fatal(err)
	}
	for _, a := range h.AllocsByJob("default", "web") {
		if before[a.ID] && a.TerminalStatus() {
			t.Fatalf("scaling up stopped %s", a.Name)
		}
	}
	if got := perZone(h, "web"); got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("allocations per zone = %v, want 2 and 2", got)
	}
}

func TestZones_PlacementsJoinTheDeployment(t *testing.T) {
	h := cluster(map[string]int{"a": 1, "b": 1}, 4000)
	job := sdktest.Job("web", 2)
	job.TaskGroups[0].Update = &sdk.UpdateStrategy{MaxParallel: 1, ProgressDeadline: 10 * time.Minute}
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	d := h.Plans[0].Deployment
	if d == nil {
		t.Fatal("no deployment for a job with an update block")
	}
	for _, a := range h.AllocsByJob("default", "web") {
		if a.DeploymentID != d.ID {
			t.Fatalf("%s in deployment %q, want %q", a.Name, a.DeploymentID, d.ID)
		}
	}
	// The eval names it, for `drover job run` to follow.
	if e := h.Updated[len(h.Updated)-1]; e.DeploymentID != d.ID {
		t.Fatalf("eval's deployment = %q, want %q", e.DeploymentID, d.ID)
	}
}

func TestZones_AssignsPorts(t *testing.T) {
	h := cluster(map[string]int{"a": 1, "b": 1}, 4000)
	job := sdktest.Job("web", 3)
	job.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}}
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	// One static port per node: two placed, each holding it, one queued.
	if got := perZone(h, "web"); got["a"] != 1 || got["b"] != 1 {
		t.Fatalf("allocations per zone = %v, want 1 and 1", got)
	}
	for _, a := range h.AllocsByJob("default", "web") {
		if ps := a.AllocatedResources.Shared.Ports; len(ps) != 1 || ps[0].Value != 8080 {
			t.Fatalf("%s holds ports %+v, want http = 8080", a.Name, ps)
		}
	}
	if e := h.Updated[len(h.Updated)-1]; e.QueuedAllocations["web"] != 1 || e.BlockedEval == "" {
		t.Fatalf("eval = %+v", e)
	}
}

func TestZones_RejectedPlansFailTheEval(t *testing.T) {
	h := cluster(map[string]int{"a": 1}, 4000)
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	h.RejectAll()
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	e := h.Updated[len(h.Updated)-1]
	if e.Status != sdk.EvalStatusFailed || e.BlockedEval == "" || e.StatusDescription != "maximum attempts reached (5)" ||
		e.QueuedAllocations["web"] != 1 {
		t.Fatalf("eval = %+v, want failed with Nomad's description, a blocked eval and web's allocation queued", e)
	}
	if b := h.Eval(e.BlockedEval); b == nil || b.TriggeredBy != sdk.EvalTriggerMaxPlans {
		t.Fatalf("blocked eval = %+v, want one triggered by %s", b, sdk.EvalTriggerMaxPlans)
	}
}

// TestZones_ScalesAJobWhoseAllocationsHoldNoPorts: allocations placed
// before the host checked ports (zones placed with sdk.RequestedResources,
// holding none) are updated in place, keeping what they hold, when their
// job is scaled: the host does not refuse the plan for them.
func TestZones_ScalesAJobWhoseAllocationsHoldNoPorts(t *testing.T) {
	h := cluster(map[string]int{"a": 2}, 4000)
	job := sdktest.Job("web", 1)
	job.TaskGroups[0].Networks = []*sdk.NetworkResource{{Mode: "host", DynamicPorts: []sdk.Port{{Label: "http"}}}}
	h.UpsertJob(job)
	h.UpsertAlloc(&sdk.Allocation{ID: "a0", Namespace: "default", JobID: "web", TaskGroup: "web", Name: "web.web[0]",
		NodeID: "a-0", JobVersion: job.Version, AllocatedResources: sdk.RequestedResources(job.TaskGroups[0]),
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
	next := job.Copy()
	next.TaskGroups[0].Count = 2
	h.UpsertJob(next)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(next)); err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, a := range h.AllocsByJob("default", "web") {
		if !a.TerminalStatus() {
			live++
		}
	}
	if live != 2 || h.Alloc("a0").JobVersion != next.Version {
		t.Fatalf("%d live allocations, a0 at version %d; want 2, a0 updated in place to %d", live, h.Alloc("a0").JobVersion, next.Version)
	}
}

// TestZones_AssignsDevices: zones places with the stack's Assign, which
// hands out the devices a task asks for: an allocation holds two of its
// node's GPUs, and a node without them (or whose GPUs are taken) is not
// used, so the host does not refuse the plan for missing devices.
func TestZones_AssignsDevices(t *testing.T) {
	h := cluster(map[string]int{"a": 1, "b": 1}, 4000)
	gpus := h.Node("a-0").Copy()
	gpus.NodeResources.Devices = []*sdk.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "1080ti",
		Instances: []*sdk.NodeDevice{{ID: "g0", Healthy: true}, {ID: "g1", Healthy: true}, {ID: "g2", Healthy: true}}}}
	h.UpsertNode(gpus)
	job := sdktest.Job("train", 2)
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*sdk.RequestedDevice{{Name: "nvidia/gpu", Count: 2}}
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	allocs := h.AllocsByJob("default", "train")
	if len(allocs) != 1 || allocs[0].NodeID != "a-0" {
		t.Fatalf("allocations %+v, want one, on a-0", allocs)
	}
	if ds := allocs[0].AllocatedResources.Tasks["app"].Devices; len(ds) != 1 || len(ds[0].DeviceIDs) != 2 {
		t.Fatalf("it holds devices %+v, want two GPUs", ds)
	}
	if e := h.Updated[len(h.Updated)-1]; e.QueuedAllocations["web"] != 1 || e.BlockedEval == "" {
		t.Fatalf("eval = %+v, want one allocation queued in a blocked eval", e)
	}
}

// TestZones_DryRunAnnotatesThePlan: a dry run (AnnotatePlan, as `drover job
// plan` asks) submits the plan with the reconciler's count of what each
// group would do, even when that is nothing.
func TestZones_DryRunAnnotatesThePlan(t *testing.T) {
	h, p, _ := placed(t, map[string]int{"a": 2, "b": 2}, 2)
	for _, tc := range []struct {
		name  string
		count int
		want  sdk.DesiredUpdates
	}{
		{"unchanged", 2, sdk.DesiredUpdates{Ignore: 2}},
		{"scaled up", 3, sdk.DesiredUpdates{Place: 1, InPlaceUpdate: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := h.Job("default", "web")
			if tc.count != next.TaskGroups[0].Count {
				next = next.Copy()
				next.TaskGroups[0].Count = tc.count
				h.UpsertJob(next)
			}
			eval := h.RegisterEval(next)
			eval.AnnotatePlan = true
			plans := len(h.Plans)
			if err := p.Process(eval); err != nil {
				t.Fatal(err)
			}
			if len(h.Plans) != plans+1 {
				t.Fatalf("%d plans submitted, want 1", len(h.Plans)-plans)
			}
			ann := h.Plans[len(h.Plans)-1].Annotations
			if ann == nil || ann.DesiredTGUpdates["web"] == nil || *ann.DesiredTGUpdates["web"] != tc.want {
				t.Fatalf("annotations = %+v, want web: %+v", ann, tc.want)
			}
		})
	}
}

// TestZones_NonCanaryPlacementsKeepTheDeployedVersion: while a canary of a
// new version awaits promotion, the replacement of a lost allocation runs
// the version already deployed (the reconciler's DowngradeNonCanary), not
// the canaried one, as in the built-in service scheduler.
func TestZones_NonCanaryPlacementsKeepTheDeployedVersion(t *testing.T) {
	h := cluster(map[string]int{"a": 2, "b": 2}, 4000)
	update := &sdk.UpdateStrategy{MaxParallel: 1, Canary: 1, MinHealthyTime: time.Second, HealthyDeadline: time.Minute}
	v0 := sdktest.Job("web", 2)
	v0.TaskGroups[0].Update = update
	h.UpsertJob(v0)
	v0 = h.Job("default", "web")
	// The deployment v0's registration made (the first: no canaries),
	// which makes v0 the deployed version, as in Nomad.
	h.UpsertDeployment(&sdk.Deployment{ID: "d0", Namespace: "default", JobID: "web", JobVersion: v0.Version,
		JobCreateIndex: v0.CreateIndex, Status: sdk.DeploymentStatusSuccessful,
		TaskGroups: map[string]*sdk.DeploymentState{"web": {DesiredTotal: 2, PlacedAllocs: 2, HealthyAllocs: 2}}})
	for i, node := range []string{"a-0", "b-0"} {
		h.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("old%d", i), Namespace: "default", JobID: "web", TaskGroup: "web",
			Name: sdk.AllocName("web", "web", i), NodeID: node, JobVersion: v0.Version, DeploymentID: "d0",
			AllocatedResources: sdk.RequestedResources(v0.TaskGroups[0]),
			DesiredStatus:      sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
	}
	v1 := v0.Copy()
	v1.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"image": "nginx:1.28"}
	h.UpsertJob(v1)
	v1 = h.Job("default", "web")
	p := h.Plugin(plugin.Info{Name: "zones"}, zones.Scheduler{})
	if err := p.Process(h.RegisterEval(v1)); err != nil {
		t.Fatal(err)
	}
	canary := false
	for _, a := range h.AllocsByJob("default", "web") {
		canary = canary || (a.DeploymentStatus != nil && a.DeploymentStatus.Canary && a.JobVersion == v1.Version)
	}
	if !canary {
		t.Fatal("no canary of the new version was placed")
	}

	down := h.Node("a-0").Copy()
	down.Status = sdk.NodeStatusDown
	h.UpsertNode(down)
	eval := h.RegisterEval(v1)
	eval.TriggeredBy = sdk.EvalTriggerNodeUpdate
	if err := p.Process(eval); err != nil {
		t.Fatal(err)
	}
	var repl *sdk.Allocation
	for _, a := range h.AllocsByJob("default", "web") {
		if a.PreviousAllocation == "old0" {
			repl = a
		}
	}
	if repl == nil {
		t.Fatal("the lost allocation was not replaced")
	}
	if repl.JobVersion != v0.Version || repl.DeploymentStatus != nil {
		t.Fatalf("replacement runs version %d (deployment status %+v), want the deployed version %d",
			repl.JobVersion, repl.DeploymentStatus, v0.Version)
	}
}

// TestZones_FailedPlacementsAreExplainedOnce: as in the built-in
// schedulers, a group's failed placement is explained by the metric of its
// own attempt (nodes exhausted then, and what its tasks asked for), the
// group's further placements in the pass are counted as coalesced failures,
// and the allocations placed keep metrics of their own.
func TestZones_FailedPlacementsAreExplainedOnce(t *testing.T) {
	h := cluster(map[string]int{"a": 2}, 1000)
	job := sdktest.Job("web", 6) // 500 MHz each: two fit on each node
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	e := h.Updated[len(h.Updated)-1]
	m := e.FailedTGAllocs["web"]
	if e.QueuedAllocations["web"] != 2 || m == nil {
		t.Fatalf("eval = %+v, want 2 queued and the group's failure explained", e)
	}
	if m.NodesEvaluated != 2 || m.NodesExhausted != 2 || m.DimensionExhausted["cpu"] != 2 || m.CoalescedFailures != 1 {
		t.Fatalf("failure = %+v, want the 2 nodes evaluated and exhausted on cpu, 1 coalesced failure", m)
	}
	if r := m.ResourcesExhausted["app"]; r == nil || r.CPU != 2*500 {
		t.Fatalf("resources exhausted = %+v, want app's cpu for both failures", m.ResourcesExhausted)
	}
	for _, a := range h.AllocsByJob("default", "web") {
		if a.Metrics == nil || a.Metrics.CoalescedFailures != 0 || a.Metrics.NodesExhausted > 1 {
			t.Fatalf("%s explained by %+v, want its own placement's metric", a.Name, a.Metrics)
		}
	}
}

// A failed allocation waiting for a delayed reschedule makes a follow-up
// eval; what found no room this time waits for it rather than in a
// blocked eval of its own, as Nomad's generic scheduler does.
func TestZones_DelayedRescheduleWaitsInsteadOfBlocking(t *testing.T) {
	h := cluster(map[string]int{"a": 2}, 600) // room for one 500 MHz allocation each
	job := sdktest.Job("web", 3)
	job.TaskGroups[0].ReschedulePolicy = &sdk.ReschedulePolicy{Delay: time.Minute, DelayFunction: sdk.DelayFunctionConstant, Unlimited: true}
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	live := h.AllocsByJob("default", "web")
	if len(live) != 2 {
		t.Fatalf("first eval placed %d, want 2", len(live))
	}
	// One fails; another job's allocation takes its room.
	failed := live[0].Copy()
	failed.ClientStatus = sdk.AllocClientStatusFailed
	failed.TaskStates = map[string]sdk.Opaque{"app": {"State": "dead", "Failed": true, "FinishedAt": h.Now.Format(time.RFC3339Nano)}}
	other := sdktest.Job("other", 1)
	h.UpsertJob(other)
	h.UpsertAlloc(failed, &sdk.Allocation{ID: "filler", Namespace: "default", JobID: "other", TaskGroup: "other",
		Name: sdk.AllocName("other", "other", 0), NodeID: failed.NodeID, AllocatedResources: sdk.RequestedResources(other.TaskGroups[0]),
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
	created := len(h.Created)

	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	var followups, blocked int
	for _, e := range h.Created[created:] {
		switch {
		case e.Status == sdk.EvalStatusBlocked:
			blocked++
		case !e.WaitUntil.IsZero():
			followups++
		}
	}
	e := h.Updated[len(h.Updated)-1]
	if followups != 1 || blocked != 0 || e.BlockedEval != "" || len(e.FailedTGAllocs) == 0 {
		t.Fatalf("created %d follow-ups and %d blocked evals, eval %+v; want one follow-up, no blocked eval, the failure explained",
			followups, blocked, e)
	}
}

// zones balances a service or batch job's allocations; a system job that
// names it (any job may name any plugin) would get one allocation per
// group, not one per node. Its eval fails, saying why.
func TestZones_RefusesSystemJobs(t *testing.T) {
	h := cluster(map[string]int{"a": 2, "b": 2}, 4000)
	job := sdktest.Job("web", 1)
	job.Type = sdk.JobTypeSystem
	h.UpsertJob(job)
	if err := h.Process(zones.Scheduler{}, h.RegisterEval(job)); err != nil {
		t.Fatal(err)
	}
	if len(h.Plans) != 0 {
		t.Fatalf("%d plans for a system job, want none", len(h.Plans))
	}
	if got := h.Updated[0]; got.Status != sdk.EvalStatusFailed || !strings.Contains(got.StatusDescription, "system job") {
		t.Fatalf("eval %s: %q, want failed, naming the job's type", got.Status, got.StatusDescription)
	}
}
