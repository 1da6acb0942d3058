package core_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/schedulers/core"
)

var now = time.Unix(1_700_000_000, 0)

func ago(d time.Duration) int64 { return now.Add(-d).UnixNano() }

// cluster is a state with one object of each interesting kind.
func cluster(t *testing.T) *mirror.Mirror {
	t.Helper()
	m := mirror.New()
	stopped := &sdk.Job{Namespace: "default", ID: "stopped", Type: "service", Stop: true, Status: sdk.JobStatusDead, SubmitTime: ago(10 * time.Hour),
		TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	running := &sdk.Job{Namespace: "default", ID: "running", Type: "service", Status: sdk.JobStatusRunning, SubmitTime: ago(10 * time.Hour),
		TaskGroups: []*sdk.TaskGroup{{Name: "g", ReschedulePolicy: &sdk.ReschedulePolicy{Unlimited: true, Delay: time.Minute}}}}
	batchLive := &sdk.Job{Namespace: "default", ID: "batch-live", Type: "batch", Status: sdk.JobStatusRunning, Version: 1,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	batchDone := &sdk.Job{Namespace: "default", ID: "batch-done", Type: "batch", Status: sdk.JobStatusDead, SubmitTime: ago(10 * time.Hour),
		TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	sysLive := &sdk.Job{Namespace: "default", ID: "sys-live", Type: "sysbatch", Status: sdk.JobStatusRunning,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	sysDone := &sdk.Job{Namespace: "default", ID: "sys-done", Type: "sysbatch", Status: sdk.JobStatusDead,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	batchOld := *batchLive
	batchOld.Version = 0
	sync := &abi.StateSync{Full: true, Index: 10,
		Nodes: []*sdk.Node{
			{ID: "up", Status: sdk.NodeStatusReady},
			{ID: "down-old", Status: sdk.NodeStatusDown, StatusUpdatedAt: now.Add(-48 * time.Hour).Unix()},
			{ID: "down-new", Status: sdk.NodeStatusDown, StatusUpdatedAt: now.Add(-time.Hour).Unix()},
			{ID: "down-busy", Status: sdk.NodeStatusDown, StatusUpdatedAt: now.Add(-48 * time.Hour).Unix()},
		},
		Jobs:        []*sdk.Job{stopped, running, batchLive, batchDone, sysLive, sysDone},
		JobVersions: []*sdk.Job{&batchOld},
		Evals: []*sdk.Evaluation{
			{ID: "e-stopped", Namespace: "default", JobID: "stopped", Type: "service", Status: sdk.EvalStatusComplete, ModifyTime: ago(5 * time.Hour)},
			{ID: "e-running-old", Namespace: "default", JobID: "running", Type: "service", Status: sdk.EvalStatusComplete, ModifyTime: ago(2 * time.Hour)},
			{ID: "e-running-new", Namespace: "default", JobID: "running", Type: "service", Status: sdk.EvalStatusComplete, ModifyTime: ago(time.Minute)},
			{ID: "e-running-failed", Namespace: "default", JobID: "running", Type: "service", Status: sdk.EvalStatusComplete, ModifyTime: ago(2 * time.Hour)},
			{ID: "e-pending", Namespace: "default", JobID: "running", Type: "service", Status: sdk.EvalStatusPending, ModifyTime: ago(5 * time.Hour)},
			{ID: "e-batch-live", Namespace: "default", JobID: "batch-live", Type: "batch", Status: sdk.EvalStatusComplete, ModifyTime: ago(5 * time.Hour)},
			{ID: "e-batch-done", Namespace: "default", JobID: "batch-done", Type: "batch", Status: sdk.EvalStatusComplete, ModifyTime: ago(5 * time.Hour)},
			{ID: "e-sys-live", Namespace: "default", JobID: "sys-live", Type: "sysbatch", Status: sdk.EvalStatusComplete, ModifyTime: ago(5 * time.Hour)},
			{ID: "e-sys-done", Namespace: "default", JobID: "sys-done", Type: "sysbatch", Status: sdk.EvalStatusComplete, ModifyTime: ago(5 * time.Hour)},
		},
		Allocs: []*sdk.Allocation{
			{ID: "a-stopped", Namespace: "default", JobID: "stopped", EvalID: "e-stopped", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "stop", ClientStatus: "complete", ModifyTime: ago(5 * time.Hour)},
			{ID: "a-running-old", Namespace: "default", JobID: "running", EvalID: "e-running-old", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "stop", ClientStatus: "complete", ModifyTime: ago(2 * time.Hour)},
			{ID: "a-live", Namespace: "default", JobID: "running", EvalID: "e-running-new", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "running", ModifyTime: ago(2 * time.Hour)},
			// Failed, unlimited reschedule, not replaced yet: kept.
			{ID: "a-failed", Namespace: "default", JobID: "running", EvalID: "e-running-failed", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "failed", ModifyTime: ago(2 * time.Hour)},
			{ID: "a-batch-cur", Namespace: "default", JobID: "batch-live", JobVersion: 1, EvalID: "e-batch-live", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "complete", ModifyTime: ago(5 * time.Hour)},
			{ID: "a-batch-v0", Namespace: "default", JobID: "batch-live", JobVersion: 0, EvalID: "e-batch-live", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "complete", ModifyTime: ago(5 * time.Hour)},
			{ID: "a-batch-done", Namespace: "default", JobID: "batch-done", EvalID: "e-batch-done", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "complete", ModifyTime: ago(5 * time.Hour)},
			{ID: "a-on-busy", Namespace: "default", JobID: "running", EvalID: "e-running-new", NodeID: "down-busy", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "running", ModifyTime: ago(2 * time.Hour)},
			// A sysbatch job still running elsewhere keeps the allocation
			// that completed on this node, or it would run there again.
			{ID: "a-sys-live", Namespace: "default", JobID: "sys-live", EvalID: "e-sys-live", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "complete", ModifyTime: ago(5 * time.Hour)},
			{ID: "a-sys-done", Namespace: "default", JobID: "sys-done", EvalID: "e-sys-done", NodeID: "up", TaskGroup: "g",
				DesiredStatus: "run", ClientStatus: "complete", ModifyTime: ago(5 * time.Hour)},
		},
		Deployments: []*sdk.Deployment{
			{ID: "d-done", Namespace: "default", JobID: "stopped", Status: sdk.DeploymentStatusSuccessful, ModifyTime: ago(2 * time.Hour)},
			{ID: "d-active", Namespace: "default", JobID: "running", Status: sdk.DeploymentStatusRunning, ModifyTime: ago(2 * time.Hour)},
			{ID: "d-fresh", Namespace: "default", JobID: "running", Status: sdk.DeploymentStatusFailed, ModifyTime: ago(time.Minute)},
		},
	}
	if err := m.Apply(sync); err != nil {
		t.Fatal(err)
	}
	return m
}

var th = core.Thresholds{Eval: time.Hour, BatchEval: time.Hour, Job: 4 * time.Hour, Node: 24 * time.Hour, Deployment: time.Hour}

func TestCollect(t *testing.T) {
	cases := []struct {
		kind                                    string
		evals, allocs, jobs, nodes, deployments []string
	}{
		{sdk.CoreJobEvalGC,
			// Batch and sysbatch jobs keep their current allocations, and
			// the evals that placed them, until the job itself is collected
			// (or the scheduler would run them again), but lose older
			// versions' allocations; a-failed waits for its reschedule.
			[]string{"e-running-old", "e-stopped"},
			[]string{"a-batch-v0", "a-running-old", "a-stopped"}, nil, nil, nil},
		// Dead batch and sysbatch jobs end on their own and go.
		{sdk.CoreJobJobGC, []string{"e-batch-done", "e-stopped", "e-sys-done"}, []string{"a-batch-done", "a-stopped", "a-sys-done"},
			[]string{"default/batch-done", "default/stopped", "default/sys-done"}, nil, nil},
		{sdk.CoreJobNodeGC, nil, nil, nil, []string{"down-old"}, nil},
		{sdk.CoreJobDeploymentGC, nil, nil, nil, nil, []string{"d-done"}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			m := cluster(t)
			req, err := core.Collect(tc.kind, core.View{State: m, Evals: m, Catalog: m}, now, th)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got, want []string) {
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			var jobs []string
			for _, j := range req.Jobs {
				jobs = append(jobs, j.String())
			}
			check("evals", req.Evals, tc.evals)
			check("allocs", req.Allocs, tc.allocs)
			check("jobs", jobs, tc.jobs)
			check("nodes", req.Nodes, tc.nodes)
			check("deployments", req.Deployments, tc.deployments)
		})
	}
}

func TestCollect_ForceIgnoresAge(t *testing.T) {
	m := cluster(t)
	req, err := core.Collect(sdk.CoreJobForceGC, core.View{State: m, Evals: m, Catalog: m}, now, core.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(req.Evals, "e-stopped") || !slices.Contains(req.Jobs, sdk.NamespacedID{Namespace: "default", ID: "batch-done"}) ||
		!slices.Contains(req.Nodes, "down-new") || !slices.Contains(req.Deployments, "d-fresh") {
		t.Fatalf("force collected %+v", req)
	}
	if slices.Contains(req.Allocs, "a-live") || slices.Contains(req.Evals, "e-pending") || slices.Contains(req.Evals, "e-running-new") ||
		slices.Contains(req.Nodes, "down-busy") ||
		slices.Contains(req.Deployments, "d-active") {
		t.Fatalf("force collected something live: %+v", req)
	}
	if _, err := core.Collect("no-such-gc", core.View{State: m, Evals: m, Catalog: m}, now, th); !errors.Is(err, core.ErrUnknownCollection) {
		t.Fatalf("err = %v", err)
	}
}

func TestSplit(t *testing.T) {
	req := &sdk.GCRequest{Allocs: []string{"a1", "a2", "a3"}, Evals: []string{"e1"}, Jobs: []sdk.NamespacedID{{Namespace: "default", ID: "j"}}}
	parts := core.Split(req, 2)
	if len(parts) != 3 || len(parts[0].Allocs) != 2 || parts[1].Allocs[0] != "a3" || parts[1].Evals[0] != "e1" || len(parts[2].Jobs) != 1 {
		t.Fatalf("parts = %+v %+v %+v", parts[0], parts[1], parts[2])
	}
	if core.Split(&sdk.GCRequest{}, 2) != nil {
		t.Fatal("an empty request was split into parts")
	}
}

// fakePlanner records eval updates and collections.
type fakePlanner struct {
	updates []*sdk.Evaluation
	gcs     []*sdk.GCRequest
}

func (f *fakePlanner) SubmitPlan(*sdk.Plan) (*sdk.PlanResult, error) { return &sdk.PlanResult{}, nil }
func (f *fakePlanner) UpdateEval(e *sdk.Evaluation) error {
	f.updates = append(f.updates, e)
	return nil
}
func (f *fakePlanner) CreateEval(*sdk.Evaluation) error      { return nil }
func (f *fakePlanner) ReblockEval(*sdk.Evaluation) error     { return nil }
func (f *fakePlanner) GarbageCollect(r *sdk.GCRequest) error { f.gcs = append(f.gcs, r); return nil }

func TestProcess(t *testing.T) {
	m := cluster(t)
	p := &fakePlanner{}
	config := map[string]string{sdk.ConfigEvalGCThreshold: "1h", sdk.ConfigBatchEvalGCThreshold: "24h", sdk.ConfigJobGCThreshold: "4h",
		sdk.ConfigNodeGCThreshold: "24h", sdk.ConfigDeploymentGCThreshold: "1h"}
	eval := &sdk.Evaluation{ID: "core-1", Type: sdk.JobTypeCore, JobID: sdk.CoreJobNodeGC, TriggeredBy: sdk.EvalTriggerScheduled, Status: sdk.EvalStatusPending}
	ctx := sdk.NewContext(m, p, nil, now, config, eval.ID)
	if err := (&core.Scheduler{}).Process(ctx, eval); err != nil {
		t.Fatal(err)
	}
	if len(p.gcs) != 1 || !slices.Equal(p.gcs[0].Nodes, []string{"down-old"}) || len(p.updates) != 1 || p.updates[0].Status != sdk.EvalStatusComplete {
		t.Fatalf("gcs %+v updates %+v", p.gcs, p.updates)
	}
	// A bad threshold fails the eval rather than collecting by guess.
	p = &fakePlanner{}
	ctx = sdk.NewContext(m, p, nil, now, map[string]string{sdk.ConfigNodeGCThreshold: "a day"}, eval.ID)
	if err := (&core.Scheduler{}).Process(ctx, eval); err != nil {
		t.Fatal(err)
	}
	if len(p.gcs) != 0 || p.updates[0].Status != sdk.EvalStatusFailed {
		t.Fatalf("gcs %+v updates %+v", p.gcs, p.updates)
	}
	// A threshold the host does not set (a host older than the key) is
	// Nomad's default: 24h for nodes.
	p = &fakePlanner{}
	ctx = sdk.NewContext(m, p, nil, now, map[string]string{}, eval.ID)
	if err := (&core.Scheduler{}).Process(ctx, eval); err != nil {
		t.Fatal(err)
	}
	if len(p.gcs) != 1 || !slices.Equal(p.gcs[0].Nodes, []string{"down-old"}) || p.updates[0].Status != sdk.EvalStatusComplete {
		t.Fatalf("gcs %+v updates %+v", p.gcs, p.updates)
	}
}
