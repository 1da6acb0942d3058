package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// TestRegisterNode_EvaluatesTheSystemJobsThatCouldRunThere: as Nomad's
// createNodeEvals and shouldCreateNodeEval, a node registering evaluates
// the system jobs whose node pool and datacenters take it (not sysbatch
// jobs, which run on the nodes there were when they were evaluated), and a
// node registering again does so when what feasibility reads changed
// (meta, attributes, drivers, class, datacenter, name, host volumes,
// devices, and in Drover CSI plugins), not when only its resources or
// nothing changed.
func TestRegisterNode_EvaluatesTheSystemJobsThatCouldRunThere(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	servertest.NodePools(t, s, "gpu")
	job := func(id, typ string, mut func(*sdk.Job)) {
		t.Helper()
		j := servertest.Job(id, typ, 1, 100, 64)
		if mut != nil {
			mut(j)
		}
		evalID, _, err := s.RegisterJob(j)
		if err != nil {
			t.Fatal(err)
		}
		servertest.WaitForEval(t, s, evalID)
	}
	job("sys", sdk.JobTypeSystem, nil)
	job("sys-glob", sdk.JobTypeSystem, func(j *sdk.Job) { j.Datacenters = []string{"dc*"} })
	job("sys-dc2", sdk.JobTypeSystem, func(j *sdk.Job) { j.Datacenters = []string{"dc2"} })
	job("sys-all-pools", sdk.JobTypeSystem, func(j *sdk.Job) { j.NodePool = sdk.AllNodePool })
	job("sys-gpu-pool", sdk.JobTypeSystem, func(j *sdk.Job) { j.NodePool = "gpu" })
	job("sysbatch", sdk.JobTypeSysBatch, nil)
	job("service", sdk.JobTypeService, nil)

	evaluated := func(w server.NodeWrite) []string {
		var out []string
		for _, id := range w.EvalIDs {
			e := s.Store().Snapshot().Eval(id)
			if e.TriggeredBy != sdk.EvalTriggerNodeUpdate {
				t.Fatalf("eval %s triggered by %s", e.JobID, e.TriggeredBy)
			}
			out = append(out, e.JobID)
		}
		slices.Sort(out)
		return out
	}
	node := servertest.Node(1, 8000, 8192)
	node.Drivers = map[string]*sdk.DriverInfo{"docker": {Detected: true, Healthy: true, UpdateTime: time.Unix(1_700_000_000, 0).UTC()}}
	_, w, err := s.RegisterNode(node)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := evaluated(w), []string{"sys", "sys-all-pools", "sys-glob"}; !slices.Equal(got, want) {
		t.Fatalf("a new node in dc1 evaluated %v, want %v", got, want)
	}

	cases := []struct {
		name      string
		change    func(*sdk.Node)
		evaluates bool
	}{
		{"nothing changed", func(*sdk.Node) {}, false},
		{"nothing changed, sent as JSON (as PUT /v1/nodes)", func(n *sdk.Node) {
			b, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			var back sdk.Node
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			*n = back
		}, false},
		{"no devices, listed empty", func(n *sdk.Node) { n.NodeResources.Devices = []*sdk.NodeDeviceResource{} }, false},
		{"more memory", func(n *sdk.Node) { n.NodeResources.Memory.MemoryMB *= 2 }, false},
		{"meta", func(n *sdk.Node) { n.Meta["role"] = "edge" }, true},
		{"an attribute", func(n *sdk.Node) { n.Attributes["driver.exec"] = "1" }, true},
		{"a driver", func(n *sdk.Node) { n.Drivers = map[string]*sdk.DriverInfo{"exec": {Detected: true, Healthy: true}} }, true},
		{"a driver turning unhealthy", func(n *sdk.Node) { n.Drivers = map[string]*sdk.DriverInfo{"exec": {Detected: true}} }, true},
		{"the class", func(n *sdk.Node) { n.NodeClass = "edge" }, true},
		{"the name", func(n *sdk.Node) { n.Name = "renamed" }, true},
		{"a host volume", func(n *sdk.Node) { n.HostVolumes = map[string]sdk.Opaque{"data": {"Path": "/data"}} }, true},
		{"a device", func(n *sdk.Node) {
			n.NodeResources.Devices = []*sdk.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "t4"}}
		}, true},
		// CSI plugins, compared as drivers are, which Nomad 1.6 does not.
		{"a CSI node plugin coming up", func(n *sdk.Node) {
			n.CSINodePlugins = map[string]*sdk.CSIInfo{"hostpath": {PluginID: "hostpath", AllocID: "a1", Healthy: true,
				HealthDescription: "healthy", UpdateTime: time.Unix(1_700_000_000, 0).UTC(), NodeInfo: &sdk.CSINodeInfo{ID: n.ID}}}
		}, true},
		{"CSI plugins unchanged, sent as JSON", func(n *sdk.Node) {
			b, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			var back sdk.Node
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			*n = back
		}, false},
		{"a CSI plugin fingerprinted again", func(n *sdk.Node) {
			n.CSINodePlugins["hostpath"].UpdateTime = time.Unix(1_700_000_100, 0).UTC()
		}, false},
		{"a CSI plugin run by a new allocation, healthy as before", func(n *sdk.Node) {
			n.CSINodePlugins["hostpath"].AllocID = "a2"
		}, false},
		{"a CSI plugin turning unhealthy", func(n *sdk.Node) {
			n.CSINodePlugins["hostpath"].Healthy, n.CSINodePlugins["hostpath"].HealthDescription = false, "unhealthy"
		}, true},
		{"a CSI plugin's volume limit", func(n *sdk.Node) { n.CSINodePlugins["hostpath"].NodeInfo.MaxVolumes = 3 }, true},
		{"a CSI controller", func(n *sdk.Node) {
			n.CSIControllerPlugins = map[string]*sdk.CSIInfo{"hostpath": {PluginID: "hostpath", AllocID: "a2", Healthy: true,
				RequiresControllerPlugin: true, ControllerInfo: &sdk.CSIControllerInfo{SupportsAttachDetach: true}}}
		}, true},
		{"the CSI plugins gone", func(n *sdk.Node) { n.CSINodePlugins, n.CSIControllerPlugins = nil, nil }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Store().Snapshot().Node(node.ID)
			again := before.Copy()
			tc.change(again)
			_, w, err := s.RegisterNode(again)
			if err != nil {
				t.Fatal(err)
			}
			if got := evaluated(w); (len(got) > 0) != tc.evaluates {
				t.Fatalf("registering again evaluated %v, want evals: %v", got, tc.evaluates)
			}
		})
	}
}

// TestLeader_WritesTheDefaultSchedulerConfig: as Nomad's leader, the first
// one writes the scheduler configuration the cluster starts with (the
// server's default_scheduler_config), so it reads back with its indexes
// and a check-and-set against them works. It writes it before anything
// schedules: the first eval is scheduled under it, not under Nomad's
// default (the write used to run beside the workers, and a job registered
// in a new cluster's first moments could be placed by binpack).
func TestLeader_WritesTheDefaultSchedulerConfig(t *testing.T) {
	start := sdk.DefaultSchedulerConfiguration()
	start.SchedulerAlgorithm = sdk.SchedulerAlgorithmSpread
	seen := make(chan string, 1)
	s := servertest.New(t, servertest.Func(t, 1, func(ctx *sdk.Context, e *sdk.Evaluation) error {
		select {
		case seen <- ctx.State.SchedulerConfig().SchedulerAlgorithm:
		default:
		}
		return placer(ctx, e)
	}), func(c *server.Config) {
		// Durable: raft's log on disk leaves the window the write ran in.
		c.Dev, c.DataDir = false, t.TempDir()
		c.DefaultSchedulerConfig = start
	})
	// Written once the server leads, before it returns from New.
	snap := s.Store().Snapshot()
	if !snap.SchedulerConfigSet() {
		t.Fatal("the server leads and no scheduler configuration is written")
	}
	c := snap.SchedulerConfig()
	evalID := registerJob(t, s, servertest.Job("web", sdk.JobTypeService, 1, 100, 64))
	servertest.WaitForEval(t, s, evalID)
	if got := <-seen; got != sdk.SchedulerAlgorithmSpread {
		t.Errorf("the first eval was scheduled with %q, want spread", got)
	}
	if c.SchedulerAlgorithm != sdk.SchedulerAlgorithmSpread || c.CreateIndex == 0 || c.ModifyIndex != c.CreateIndex {
		t.Fatalf("written %+v, want spread with its indexes", c)
	}
	c2 := *c
	c2.SchedulerAlgorithm = sdk.SchedulerAlgorithmBinpack
	if ok, _, err := s.SetSchedulerConfigCAS(&c2, c.ModifyIndex); err != nil || !ok {
		t.Fatalf("check-and-set at the written index: %v %v", ok, err)
	}
}

// TestConfig_RefusesABadDefaultSchedulerConfig: a default configuration
// the leader could not write is refused when the server starts, not
// logged at every leadership.
func TestConfig_RefusesABadDefaultSchedulerConfig(t *testing.T) {
	cfg := servertest.Config()
	cfg.DefaultSchedulerConfig = &sdk.SchedulerConfiguration{SchedulerAlgorithm: "fastest"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `"fastest" is not binpack or spread`) {
		t.Fatalf("validate: %v, want the algorithm refused", err)
	}
	cfg.DefaultSchedulerConfig.SchedulerAlgorithm = ""
	if err := cfg.Validate(); err != nil || cfg.DefaultSchedulerConfig.SchedulerAlgorithm != "" {
		t.Fatalf("validate of an empty algorithm: %v, %q (the configuration must not change)", err, cfg.DefaultSchedulerConfig.SchedulerAlgorithm)
	}
}
