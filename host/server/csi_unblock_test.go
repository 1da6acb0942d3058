package server_test

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// csiPlacer places the job's one allocation on the first ready node whose
// CSI plugin "hostpath" can mount volume "data" (sdk.CSINodeCheck), and
// blocks otherwise. As Nomad's CSI check (one of its stack's tgAvailable
// checks, run without touching the computed class), a node it fails
// leaves its class eligible: the blocked eval records every class it saw
// as eligible.
func csiPlacer(ctx *sdk.Context, e *sdk.Evaluation) error {
	st := ctx.State
	job := st.Job(e.Namespace, e.JobID)
	done := e.Copy()
	done.Status = sdk.EvalStatusComplete
	for _, a := range st.AllocsByJob(e.Namespace, e.JobID) {
		if !a.TerminalStatus() {
			return ctx.Planner.UpdateEval(done)
		}
	}
	vol := &sdk.CSIVolume{ID: "data", PluginID: "hostpath"}
	classes := map[string]bool{}
	tg := job.TaskGroups[0]
	for _, n := range st.Nodes() {
		if !n.Ready() {
			continue
		}
		classes[n.ComputedClass] = true
		if sdk.CSINodeCheck(n, vol, 0) != "" {
			continue
		}
		plan := &sdk.Plan{EvalID: e.ID, Job: job}
		plan.AppendAlloc(&sdk.Allocation{ID: ctx.NewID(), Namespace: job.Namespace, JobID: job.ID,
			Name: sdk.AllocName(job.ID, tg.Name, 0), TaskGroup: tg.Name, NodeID: n.ID, AllocatedResources: sdk.RequestedResources(tg)})
		if _, err := ctx.Planner.SubmitPlan(plan); err != nil {
			return err
		}
		return ctx.Planner.UpdateEval(done)
	}
	failed := map[string]*sdk.AllocMetric{tg.Name: {}}
	if e.Status == sdk.EvalStatusBlocked {
		re := e.Copy()
		re.ClassEligibility, re.FailedTGAllocs = classes, failed
		return ctx.Planner.ReblockEval(re)
	}
	blocked := e.CreateBlockedEval(ctx.NewID(), classes, false, "", failed, false)
	if err := ctx.Planner.CreateEval(blocked); err != nil {
		return err
	}
	done.FailedTGAllocs, done.BlockedEval = failed, blocked.ID
	return ctx.Planner.UpdateEval(done)
}

// TestRegisterNode_CSIPluginComingUpUnblocks: an eval blocked because no
// node runs a volume's plugin is unblocked when a node of a class it saw
// registers again with the plugin: CSI plugins are not part of the
// computed class (Nomad's), so the node's class stays the same, and the
// tracker unblocks the class, which the eval recorded eligible.
func TestRegisterNode_CSIPluginComingUpUnblocks(t *testing.T) {
	s := rig(t, csiPlacer)
	n := registerNode(t, s, 0, 4000)
	registerNode(t, s, 1, 4000)
	first := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("app", sdk.JobTypeService, 1, 100, 64)))
	if first.BlockedEval == "" {
		t.Fatalf("placed without a plugin: %+v", first)
	}
	servertest.WaitFor(t, "the eval to be tracked as blocked", func() bool {
		b := s.Blocked().Blocked("default", "app")
		return b != nil && b.ID == first.BlockedEval
	})

	again := n.Copy()
	again.CSINodePlugins = map[string]*sdk.CSIInfo{"hostpath": {PluginID: "hostpath", AllocID: "p1", Healthy: true,
		HealthDescription: "healthy", UpdateTime: time.Now().UTC(), NodeInfo: &sdk.CSINodeInfo{ID: n.ID}}}
	if _, _, err := s.RegisterNode(again); err != nil {
		t.Fatal(err)
	}
	if got := s.Store().Snapshot().Node(n.ID).ComputedClass; got != n.ComputedClass {
		t.Fatalf("the plugin changed the node's computed class (%s, was %s)", got, n.ComputedClass)
	}
	servertest.WaitForEval(t, s, first.BlockedEval, sdk.EvalStatusComplete)
	var on []string
	for _, a := range s.Store().Snapshot().AllocsByJob("default", "app") {
		on = append(on, a.NodeID)
	}
	if len(on) != 1 || on[0] != n.ID {
		t.Fatalf("placed on %v, want the node with the plugin (%s)", on, n.ID)
	}
}
