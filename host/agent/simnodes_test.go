package agent_test

import (
	"os"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
)

// A purged dev node registers again at its next heartbeat, as a running
// Nomad client does.
func TestAgent_PurgedDevNodeRegistersAgain(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	s := startAgent(t, dir, nil).Server()
	nodes := s.Store().Snapshot().Nodes()
	if len(nodes) != 3 {
		t.Fatalf("%d dev nodes", len(nodes))
	}
	id := nodes[0].ID
	if _, err := s.DeregisterNode(id); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); s.Store().Snapshot().Node(id) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the purged dev node did not register again")
		}
	}
}

// A dev node reports the CSI plugin its allocation runs once the
// allocation runs, through its registration (the servers see it in the
// node), and reports it unhealthy once the allocation stopped.
func TestAgent_DevNodesReportTheirCSIPlugins(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	s := startAgent(t, dir, nil).Server()
	job := servertest.Job("hostpath", sdk.JobTypeService, 1, 100, 64)
	job.Datacenters = []string{"*"}
	job.TaskGroups[0].Tasks[0].CSIPluginConfig = sdk.Opaque{"ID": "hostpath", "Type": sdk.CSIPluginTypeMonolith}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if e := servertest.WaitForEval(t, s, evalID); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval %s: %s", e.Status, e.StatusDescription)
	}
	allocs := s.Store().Snapshot().AllocsByJob("default", "hostpath")
	if len(allocs) != 1 {
		t.Fatalf("%d allocations", len(allocs))
	}
	a := allocs[0]
	reported := func(healthy bool) func() bool {
		return func() bool {
			n := s.Store().Snapshot().Node(a.NodeID)
			c, p := n.CSIControllerPlugins["hostpath"], n.CSINodePlugins["hostpath"]
			return c != nil && p != nil && c.AllocID == a.ID && p.AllocID == a.ID && c.Healthy == healthy && p.Healthy == healthy &&
				p.NodeInfo != nil && p.NodeInfo.ID == a.NodeID && c.ControllerInfo != nil
		}
	}
	servertest.WaitFor(t, "the node to report the plugin healthy", reported(true))
	for _, n := range s.Store().Snapshot().Nodes() {
		if n.ID != a.NodeID && (len(n.CSINodePlugins) > 0 || len(n.CSIControllerPlugins) > 0) {
			t.Fatalf("node %s, which runs no plugin, reports %v %v", n.Name, n.CSIControllerPlugins, n.CSINodePlugins)
		}
	}
	if _, _, err := s.DeregisterJob("default", "hostpath", false); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the node to report the plugin unhealthy", reported(false))
}

// examples/csi/plugin.hcl, run on a dev agent, puts the hostpath plugin
// on every dev node, controller and node plugin, healthy.
func TestAgent_CSIExamplePluginRunsOnEveryDevNode(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	install(t, wasmtest.Build(t, "./plugins/system"), dir, "system.wasm")
	s := startAgent(t, dir, nil).Server()
	src, err := os.ReadFile("../../examples/csi/plugin.hcl")
	if err != nil {
		t.Fatal(err)
	}
	p, diags := jobspec.Parse(jobspec.Config{Path: "plugin.hcl", Body: src})
	if diags.HasErrors() {
		t.Fatal(jobspec.FormatDiagnostics(p.Sources, diags))
	}
	job, err := p.Job.SDK()
	if err != nil {
		t.Fatal(err)
	}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if e := servertest.WaitForEval(t, s, evalID); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval %s: %s", e.Status, e.StatusDescription)
	}
	servertest.WaitFor(t, "every dev node to report the plugin", func() bool {
		nodes := s.Store().Snapshot().Nodes()
		for _, n := range nodes {
			c, p := n.CSIControllerPlugins["hostpath"], n.CSINodePlugins["hostpath"]
			if c == nil || p == nil || !c.Healthy || !p.Healthy {
				return false
			}
		}
		plugin := sdk.CSIPlugins(nodes)["hostpath"]
		return len(nodes) == 3 && plugin.Schedulable() && plugin.NodesHealthy == 3 && plugin.ControllersHealthy == 3
	})
}
