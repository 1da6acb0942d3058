package agent

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// csiJob is a job whose group "g" runs a plugin task of type typ (plugin
// ID "hostpath") beside a task that is no plugin.
func csiJob(typ string, config sdk.Opaque) *sdk.Job {
	return &sdk.Job{ID: "plugin", Type: sdk.JobTypeSystem, TaskGroups: []*sdk.TaskGroup{{Name: "g", Tasks: []*sdk.Task{
		{Name: "sidecar", Driver: "docker"},
		{Name: "plugin", Driver: "docker", Config: config,
			CSIPluginConfig: sdk.Opaque{"ID": "hostpath", "Type": typ, "MountDir": "/csi"}},
	}}}}
}

func csiAlloc(id string, job *sdk.Job, status string, createIndex uint64) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Job: job, TaskGroup: "g", ClientStatus: status, DesiredStatus: sdk.AllocDesiredStatusRun,
		CreateIndex: createIndex}
}

// TestSimCSIPlugins_ByType: a running allocation's plugin task is
// reported healthy, as a node plugin (node, monolith) with the node's ID
// and no volume limit, and as a controller (controller, monolith) that
// attaches volumes; a controller or a monolith requires a controller, a
// node plugin alone does not. The provider is the task config's, or the
// plugin ID and "simulated".
func TestSimCSIPlugins_ByType(t *testing.T) {
	now := time.Unix(1000, 0)
	node := func(requiresController bool, provider, version string) *sdk.CSIInfo {
		return &sdk.CSIInfo{PluginID: "hostpath", AllocID: "a1", Healthy: true, HealthDescription: "healthy",
			UpdateTime: now.UTC(), Provider: provider, ProviderVersion: version, RequiresControllerPlugin: requiresController,
			NodeInfo: &sdk.CSINodeInfo{ID: "n1"}}
	}
	controller := func(provider, version string) *sdk.CSIInfo {
		return &sdk.CSIInfo{PluginID: "hostpath", AllocID: "a1", Healthy: true, HealthDescription: "healthy",
			UpdateTime: now.UTC(), Provider: provider, ProviderVersion: version, RequiresControllerPlugin: true,
			ControllerInfo: &sdk.CSIControllerInfo{SupportsAttachDetach: true}}
	}
	cases := []struct {
		name        string
		typ         string
		config      sdk.Opaque
		controllers map[string]*sdk.CSIInfo
		nodes       map[string]*sdk.CSIInfo
	}{
		{"node", sdk.CSIPluginTypeNode, nil, nil,
			map[string]*sdk.CSIInfo{"hostpath": node(false, "hostpath", "simulated")}},
		{"controller", sdk.CSIPluginTypeController, nil,
			map[string]*sdk.CSIInfo{"hostpath": controller("hostpath", "simulated")}, nil},
		{"monolith", sdk.CSIPluginTypeMonolith, nil,
			map[string]*sdk.CSIInfo{"hostpath": controller("hostpath", "simulated")},
			map[string]*sdk.CSIInfo{"hostpath": node(true, "hostpath", "simulated")}},
		{"provider from the task config", sdk.CSIPluginTypeNode,
			sdk.Opaque{"csi_provider": "hostpath.csi.k8s.io", "csi_provider_version": "v1.11.0"}, nil,
			map[string]*sdk.CSIInfo{"hostpath": node(false, "hostpath.csi.k8s.io", "v1.11.0")}},
		{"a type Nomad does not know", "sidecar", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := simCSIPlugins("n1", []*sdk.Allocation{csiAlloc("a1", csiJob(tc.typ, tc.config), sdk.AllocClientStatusRunning, 10)},
				simCSI{}, now)
			if !reflect.DeepEqual(got.controllers, tc.controllers) || !reflect.DeepEqual(got.nodes, tc.nodes) {
				t.Fatalf("reported controllers %s nodes %s, want %s and %s", show(got.controllers), show(got.nodes),
					show(tc.controllers), show(tc.nodes))
			}
		})
	}
}

func show(m map[string]*sdk.CSIInfo) string {
	out := "{"
	for k, v := range m {
		out += k + ": " + sprintInfo(v) + " "
	}
	return out + "}"
}

func sprintInfo(i *sdk.CSIInfo) string {
	if i == nil {
		return "nil"
	}
	c := *i
	s := ""
	if c.NodeInfo != nil {
		s += " node " + c.NodeInfo.ID
	}
	if c.ControllerInfo != nil {
		s += " controller"
	}
	c.NodeInfo, c.ControllerInfo = nil, nil
	return fmt.Sprintf("%+v", c) + s
}

// TestSimCSIPlugins_Lifecycle: a plugin appears once its allocation runs
// (not while it is pending), keeps its update time while nothing
// changes, turns unhealthy with the description of Nomad's last
// fingerprint when its allocation stops or fails, and leaves the node
// once the allocation is collected. A plugin that never ran is never
// reported. A newer allocation running the plugin takes it over.
func TestSimCSIPlugins_Lifecycle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	job := csiJob(sdk.CSIPluginTypeMonolith, nil)
	a := csiAlloc("a1", job, sdk.AllocClientStatusPending, 10)

	r := simCSIPlugins("n1", []*sdk.Allocation{a}, simCSI{}, t0)
	if r.controllers != nil || r.nodes != nil {
		t.Fatalf("a pending allocation's plugin is reported: %s %s", show(r.controllers), show(r.nodes))
	}

	a.ClientStatus = sdk.AllocClientStatusRunning
	up := simCSIPlugins("n1", []*sdk.Allocation{a}, r, t0)
	if n := up.nodes["hostpath"]; n == nil || !n.Healthy || up.controllers["hostpath"] == nil || !up.controllers["hostpath"].Healthy {
		t.Fatalf("the running allocation's plugin: %s %s", show(up.controllers), show(up.nodes))
	}
	if up.equal(r) {
		t.Fatal("a plugin coming up is no change")
	}

	again := simCSIPlugins("n1", []*sdk.Allocation{a}, up, t0.Add(time.Minute))
	if !again.equal(up) {
		t.Fatalf("nothing changed, and the report did: %s, was %s", show(again.nodes), show(up.nodes))
	}

	for _, status := range []string{sdk.AllocClientStatusComplete, sdk.AllocClientStatusFailed} {
		t.Run(status, func(t *testing.T) {
			stopped := *a
			stopped.ClientStatus = status
			t1 := t0.Add(2 * time.Minute)
			down := simCSIPlugins("n1", []*sdk.Allocation{&stopped}, up, t1)
			for role, m := range map[string]map[string]*sdk.CSIInfo{"node": down.nodes, "controller": down.controllers} {
				info := m["hostpath"]
				if info == nil || info.Healthy || info.HealthDescription != simCSIStopped || info.AllocID != "a1" ||
					!info.UpdateTime.Equal(t1) {
					t.Fatalf("%s plugin of the stopped allocation: %s", role, sprintInfo(info))
				}
			}
			if down.equal(up) {
				t.Fatal("a plugin turning unhealthy is no change")
			}
			if still := simCSIPlugins("n1", []*sdk.Allocation{&stopped}, down, t1.Add(time.Minute)); !still.equal(down) {
				t.Fatalf("the stopped plugin's report changed by itself: %s", show(still.nodes))
			}
			gone := simCSIPlugins("n1", nil, down, t1.Add(time.Hour))
			if gone.controllers != nil || gone.nodes != nil {
				t.Fatalf("the plugin of a collected allocation is still reported: %s %s", show(gone.controllers), show(gone.nodes))
			}
		})
	}

	t.Run("never ran", func(t *testing.T) {
		failed := csiAlloc("a2", job, sdk.AllocClientStatusFailed, 11)
		if r := simCSIPlugins("n1", []*sdk.Allocation{failed}, simCSI{}, t0); r.controllers != nil || r.nodes != nil {
			t.Fatalf("a plugin that never ran is reported: %s", show(r.nodes))
		}
	})

	t.Run("replaced by a newer allocation", func(t *testing.T) {
		old := *a
		old.ClientStatus = sdk.AllocClientStatusComplete
		newer := csiAlloc("a0", job, sdk.AllocClientStatusRunning, 20)
		r := simCSIPlugins("n1", []*sdk.Allocation{&old, newer}, up, t0.Add(time.Minute))
		if n := r.nodes["hostpath"]; n == nil || n.AllocID != "a0" || !n.Healthy {
			t.Fatalf("the newer allocation does not report the plugin: %s", sprintInfo(n))
		}
		both := *a
		r = simCSIPlugins("n1", []*sdk.Allocation{newer, &both}, simCSI{}, t0)
		if n := r.nodes["hostpath"]; n == nil || n.AllocID != "a0" {
			t.Fatalf("of two running allocations, the older reports the plugin: %s", sprintInfo(n))
		}
	})
}

// TestSimCSIPlugins_ControllerRequirement: node plugins alone make a
// schedulable plugin; once a controller of it is deployed, it needs that
// controller healthy (sdk.CSIPlugin.Schedulable over the nodes' reports).
func TestSimCSIPlugins_ControllerRequirement(t *testing.T) {
	now := time.Unix(1000, 0)
	dev := func(id string, csi simCSI) *sdk.Node {
		return &sdk.Node{ID: id, Status: sdk.NodeStatusReady, CSIControllerPlugins: csi.controllers, CSINodePlugins: csi.nodes}
	}
	nodeAlloc := csiAlloc("n", csiJob(sdk.CSIPluginTypeNode, nil), sdk.AllocClientStatusRunning, 10)
	ctlAlloc := csiAlloc("c", csiJob(sdk.CSIPluginTypeController, nil), sdk.AllocClientStatusRunning, 11)

	n1 := simCSIPlugins("n1", []*sdk.Allocation{nodeAlloc}, simCSI{}, now)
	if p := sdk.CSIPlugins([]*sdk.Node{dev("n1", n1)})["hostpath"]; !p.Schedulable() || p.ControllerRequired {
		t.Fatalf("node plugins alone: %+v, want schedulable without a controller", p)
	}

	n2 := simCSIPlugins("n2", []*sdk.Allocation{ctlAlloc}, simCSI{}, now)
	if p := sdk.CSIPlugins([]*sdk.Node{dev("n1", n1), dev("n2", n2)})["hostpath"]; !p.Schedulable() || !p.ControllerRequired ||
		p.ControllersHealthy != 1 || p.NodesHealthy != 1 {
		t.Fatalf("with a healthy controller: %+v, want schedulable, the controller required", p)
	}

	stopped := *ctlAlloc
	stopped.ClientStatus = sdk.AllocClientStatusComplete
	n2 = simCSIPlugins("n2", []*sdk.Allocation{&stopped}, n2, now.Add(time.Minute))
	if p := sdk.CSIPlugins([]*sdk.Node{dev("n1", n1), dev("n2", n2)})["hostpath"]; p.Schedulable() || p.ControllersHealthy != 0 {
		t.Fatalf("its controller stopped: %+v, want unschedulable", p)
	}
}
