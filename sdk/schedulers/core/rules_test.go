package core_test

import (
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/schedulers/core"
)

// collectFrom applies sync to a new mirror and runs one collection of kind
// at now under th.
func collectFrom(t *testing.T, sync *abi.StateSync, kind string, th core.Thresholds) *sdk.GCRequest {
	t.Helper()
	sync.Full, sync.Index = true, 10
	m := mirror.New()
	if err := m.Apply(sync); err != nil {
		t.Fatal(err)
	}
	req, err := core.Collect(kind, core.View{State: m, Evals: m, Catalog: m}, now, th)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// sorted returns a sorted copy of ids (nil for none).
func sorted(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func eval(id, job, typ string, age time.Duration) *sdk.Evaluation {
	return &sdk.Evaluation{ID: id, Namespace: "default", JobID: job, Type: typ, Status: sdk.EvalStatusComplete, ModifyTime: ago(age)}
}

func alloc(id, job, evalID string, version uint64, desired, client string, age time.Duration) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Namespace: "default", JobID: job, JobVersion: version, EvalID: evalID, NodeID: "n", TaskGroup: "g",
		DesiredStatus: desired, ClientStatus: client, ModifyTime: ago(age)}
}

// TestCollect_EvalGC_EarlierInstanceOfARunningBatchJob: a batch job
// purged and registered again counts its versions from 0 again; the
// finished allocations the earlier instance left, and their evals, are
// collected while the new instance runs, as Nomad's (which compares
// indexes), whether or not the earlier instance's version is still known.
func TestCollect_EvalGC_EarlierInstanceOfARunningBatchJob(t *testing.T) {
	for _, typ := range []string{sdk.JobTypeBatch, sdk.JobTypeSysBatch} {
		t.Run(typ, func(t *testing.T) {
			job := &sdk.Job{Namespace: "default", ID: "j", Type: typ, Status: sdk.JobStatusRunning, Version: 0,
				CreateIndex: 500, JobModifyIndex: 500, SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
			earlier := *job
			earlier.CreateIndex, earlier.JobModifyIndex, earlier.Version = 100, 120, 2
			cur := alloc("a-new", "j", "e-new", 0, "run", "running", 50*time.Hour)
			cur.JobModifyIndex = 500
			old0 := alloc("a-old-v0", "j", "e-old", 0, "stop", "complete", 49*time.Hour)
			old0.JobModifyIndex = 100 // its version is gone with the purge
			old2 := alloc("a-old-v2", "j", "e-old", 2, "run", "complete", 49*time.Hour)
			old2.JobModifyIndex = 120 // its version is still known
			sync := &abi.StateSync{
				Nodes:       []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:        []*sdk.Job{job},
				JobVersions: []*sdk.Job{&earlier},
				Evals:       []*sdk.Evaluation{eval("e-old", "j", typ, 50*time.Hour), eval("e-new", "j", typ, 50*time.Hour)},
				Allocs:      []*sdk.Allocation{cur, old0, old2},
			}
			req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
			if got, want := sorted(req.Evals), []string{"e-old"}; !slices.Equal(got, want) {
				t.Errorf("evals = %v, want %v", got, want)
			}
			if got, want := sorted(req.Allocs), []string{"a-old-v0", "a-old-v2"}; !slices.Equal(got, want) {
				t.Errorf("allocs = %v, want %v", got, want)
			}
		})
	}
}

// TestCollect_EvalGC_LiveBatchJob: a batch job that still runs keeps the
// allocations of its current version, or the scheduler would run them
// again; but an eval whose allocations are all collectable terminal ones
// of older versions, or that placed nothing, goes with them, as in Nomad.
func TestCollect_EvalGC_LiveBatchJob(t *testing.T) {
	for _, typ := range []string{sdk.JobTypeBatch, sdk.JobTypeSysBatch} {
		t.Run(typ, func(t *testing.T) {
			job := &sdk.Job{Namespace: "default", ID: "j", Type: typ, Status: sdk.JobStatusRunning, Version: 2,
				SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
			v0, v1 := *job, *job
			v0.Version, v1.Version = 0, 1
			sync := &abi.StateSync{
				Nodes:       []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:        []*sdk.Job{job},
				JobVersions: []*sdk.Job{&v0, &v1},
				Evals: []*sdk.Evaluation{
					eval("e-none", "j", typ, 2*time.Hour),      // placed nothing
					eval("e-older", "j", typ, 2*time.Hour),     // only older versions' terminal allocations
					eval("e-mixed", "j", typ, 2*time.Hour),     // an older and a current one
					eval("e-young-old", "j", typ, 2*time.Hour), // an older one, changed recently
				},
				Allocs: []*sdk.Allocation{
					alloc("a-older-0", "j", "e-older", 0, "run", "complete", 2*time.Hour),
					alloc("a-older-1", "j", "e-older", 1, "stop", "complete", 2*time.Hour),
					alloc("a-mixed-old", "j", "e-mixed", 1, "run", "failed", 2*time.Hour),
					alloc("a-mixed-cur", "j", "e-mixed", 2, "run", "complete", 2*time.Hour),
					alloc("a-young-old", "j", "e-young-old", 1, "run", "complete", time.Minute),
				},
			}
			req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
			if got, want := sorted(req.Evals), []string{"e-none", "e-older"}; !slices.Equal(got, want) {
				t.Errorf("evals = %v, want %v", got, want)
			}
			if got, want := sorted(req.Allocs), []string{"a-mixed-old", "a-older-0", "a-older-1"}; !slices.Equal(got, want) {
				t.Errorf("allocs = %v, want %v", got, want)
			}
		})
	}
}

// TestCollect_JobGC_AllocStillRunning: a stopped job whose allocation is
// told to stop but still runs on its node stays, with it, even when the
// eval that placed the allocation is gone (deleted by the eval delete
// endpoint): the node would lose track of a running allocation.
func TestCollect_JobGC_AllocStillRunning(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	for _, tc := range []struct {
		name   string
		client string
		jobs   []string
	}{
		{"running", sdk.AllocClientStatusRunning, nil},
		{"complete", sdk.AllocClientStatusComplete, []string{"default/j"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sync := &abi.StateSync{
				Nodes:  []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:   []*sdk.Job{job},
				Evals:  []*sdk.Evaluation{eval("e-stop", "j", sdk.JobTypeService, 5*time.Hour)},
				Allocs: []*sdk.Allocation{alloc("a", "j", "e-deleted", 0, "stop", tc.client, 5*time.Hour)},
			}
			req := collectFrom(t, sync, sdk.CoreJobJobGC, th)
			var jobs []string
			for _, j := range req.Jobs {
				jobs = append(jobs, j.String())
			}
			if !slices.Equal(jobs, tc.jobs) {
				t.Errorf("jobs = %v, want %v", jobs, tc.jobs)
			}
			if collected := slices.Contains(req.Allocs, "a"); collected != (tc.jobs != nil) {
				t.Errorf("allocation collected = %v with the job %v", collected, tc.jobs)
			}
		})
	}
}

// TestCollect_Thresholds: eval GC holds batch evals (and their
// allocations) to the batch eval threshold and others to the eval
// threshold; job GC holds a job's evals and allocations to the job
// threshold alone, as Nomad does.
func TestCollect_Thresholds(t *testing.T) {
	th := core.Thresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour, Node: 24 * time.Hour, Deployment: time.Hour}
	// The jobs of the evals below are purged: only age decides.
	evals := &abi.StateSync{
		Nodes: []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
		Evals: []*sdk.Evaluation{
			eval("service-2h", "gone-s", sdk.JobTypeService, 2*time.Hour),
			eval("batch-2h", "gone-b", sdk.JobTypeBatch, 2*time.Hour),
			eval("batch-25h", "gone-b", sdk.JobTypeBatch, 25*time.Hour),
			eval("sysbatch-2h", "gone-sb", sdk.JobTypeSysBatch, 2*time.Hour),
		},
		Allocs: []*sdk.Allocation{
			alloc("a-batch-2h", "gone-b", "batch-2h", 0, "run", "complete", 2*time.Hour),
			alloc("a-batch-25h", "gone-b", "batch-25h", 0, "run", "complete", 25*time.Hour),
		},
	}
	req := collectFrom(t, evals, sdk.CoreJobEvalGC, th)
	if got, want := sorted(req.Evals), []string{"batch-25h", "service-2h", "sysbatch-2h"}; !slices.Equal(got, want) {
		t.Errorf("eval GC: evals = %v, want %v", got, want)
	}
	if got, want := sorted(req.Allocs), []string{"a-batch-25h"}; !slices.Equal(got, want) {
		t.Errorf("eval GC: allocs = %v, want %v", got, want)
	}

	// A dead batch job and a stopped service job, changed 5h ago: past the
	// job threshold, short of the batch eval threshold and (second run) of
	// an eval threshold set above the job threshold.
	jobs := func() *abi.StateSync {
		return &abi.StateSync{
			Nodes: []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
			Jobs: []*sdk.Job{
				{Namespace: "default", ID: "b", Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead, SubmitTime: ago(5 * time.Hour),
					TaskGroups: []*sdk.TaskGroup{{Name: "g"}}},
				{Namespace: "default", ID: "s", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead, SubmitTime: ago(5 * time.Hour),
					TaskGroups: []*sdk.TaskGroup{{Name: "g"}}},
			},
			Evals: []*sdk.Evaluation{eval("e-b", "b", sdk.JobTypeBatch, 5*time.Hour), eval("e-s", "s", sdk.JobTypeService, 5*time.Hour)},
			Allocs: []*sdk.Allocation{
				alloc("a-b", "b", "e-b", 0, "run", "complete", 5*time.Hour),
				alloc("a-s", "s", "e-s", 0, "stop", "complete", 5*time.Hour),
			},
		}
	}
	high := th
	high.Eval = 6 * time.Hour
	for name, th := range map[string]core.Thresholds{"defaults": th, "eval threshold above job threshold": high} {
		t.Run(name, func(t *testing.T) {
			req := collectFrom(t, jobs(), sdk.CoreJobJobGC, th)
			var got []string
			for _, j := range req.Jobs {
				got = append(got, j.String())
			}
			if want := []string{"default/b", "default/s"}; !slices.Equal(sorted(got), want) {
				t.Errorf("job GC: jobs = %v, want %v", got, want)
			}
			if got, want := sorted(req.Evals), []string{"e-b", "e-s"}; !slices.Equal(got, want) {
				t.Errorf("job GC: evals = %v, want %v", got, want)
			}
			if got, want := sorted(req.Allocs), []string{"a-b", "a-s"}; !slices.Equal(got, want) {
				t.Errorf("job GC: allocs = %v, want %v", got, want)
			}
		})
	}
}

// TestCollect_EvalGC_LiveBatchJob_CurrentVersionKept: Nomad v1.6 takes an
// allocation created before the job's last change for an older version's,
// and collects it once terminal, even when it was updated in place to the
// current version (the scheduler would then run it again) or is still
// running on its node after being told to stop. Drover goes by the
// allocation's job version and by what the node reports.
func TestCollect_EvalGC_LiveBatchJob_CurrentVersionKept(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeBatch, Status: sdk.JobStatusRunning, Version: 1, JobModifyIndex: 50,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	v0 := *job
	v0.Version, v0.JobModifyIndex = 0, 5
	inPlace := alloc("a-in-place", "j", "e", 1, "run", "complete", 2*time.Hour)
	inPlace.CreateIndex, inPlace.JobModifyIndex = 6, 50
	stopping := alloc("a-stopping", "j", "e", 0, "stop", "running", 2*time.Hour)
	stopping.CreateIndex, stopping.JobModifyIndex = 6, 5
	sync := &abi.StateSync{
		Nodes:       []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
		Jobs:        []*sdk.Job{job},
		JobVersions: []*sdk.Job{&v0},
		Evals:       []*sdk.Evaluation{eval("e", "j", sdk.JobTypeBatch, 2*time.Hour)},
		Allocs:      []*sdk.Allocation{inPlace, stopping},
	}
	req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
	if len(req.Evals) != 0 || len(req.Allocs) != 0 {
		t.Fatalf("collected evals %v, allocs %v; want nothing", req.Evals, req.Allocs)
	}
}

// TestCollect_DeploymentGC_Referenced: a finished, old deployment stays
// while any allocation names it, a terminal one included (Nomad v1.6 keeps
// it only for live ones), so that no allocation names a deployment that is
// gone; it goes in the same pass as its last allocations.
func TestCollect_DeploymentGC_Referenced(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Status: sdk.JobStatusRunning, Version: 1,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	v0 := *job
	v0.Version = 0
	old := alloc("a-old", "j", "e-old", 0, "stop", "complete", 2*time.Hour)
	old.DeploymentID = "d-0"
	sync := func() *abi.StateSync {
		return &abi.StateSync{
			Nodes:       []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
			Jobs:        []*sdk.Job{job},
			JobVersions: []*sdk.Job{&v0},
			Evals:       []*sdk.Evaluation{eval("e-old", "j", sdk.JobTypeService, 2*time.Hour)},
			Allocs:      []*sdk.Allocation{old},
			Deployments: []*sdk.Deployment{{ID: "d-0", Namespace: "default", JobID: "j", Status: sdk.DeploymentStatusSuccessful,
				ModifyTime: ago(2 * time.Hour)}},
		}
	}
	if req := collectFrom(t, sync(), sdk.CoreJobDeploymentGC, th); len(req.Deployments) != 0 {
		t.Errorf("deployment GC collected %v while a terminal allocation names it", req.Deployments)
	}
	req := collectFrom(t, sync(), sdk.CoreJobForceGC, core.Thresholds{})
	if !slices.Equal(req.Deployments, []string{"d-0"}) || !slices.Equal(req.Allocs, []string{"a-old"}) {
		t.Errorf("forced GC collected deployments %v, allocs %v; want both", req.Deployments, req.Allocs)
	}
}

// TestCollect_EvalGC_OrphanedAllocs: allocations whose eval is gone
// (deleted by the eval delete endpoint) are collected by eval GC under the
// rules and thresholds their eval would have had; Nomad reaches
// allocations only through their evals and keeps these forever.
func TestCollect_EvalGC_OrphanedAllocs(t *testing.T) {
	th := core.Thresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour, Node: 24 * time.Hour, Deployment: time.Hour}
	svc := &sdk.Job{Namespace: "default", ID: "svc", Type: sdk.JobTypeService, Status: sdk.JobStatusRunning,
		SubmitTime: ago(30 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	batch := &sdk.Job{Namespace: "default", ID: "b", Type: sdk.JobTypeBatch, Status: sdk.JobStatusRunning, Version: 1,
		SubmitTime: ago(30 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	batch0 := *batch
	batch0.Version = 0
	sync := &abi.StateSync{
		Nodes:       []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
		Jobs:        []*sdk.Job{svc, batch},
		JobVersions: []*sdk.Job{&batch0},
		Allocs: []*sdk.Allocation{
			alloc("svc-stopped", "svc", "gone", 0, "stop", "complete", 2*time.Hour),
			alloc("svc-running", "svc", "gone", 0, "run", "running", 2*time.Hour),
			alloc("svc-young", "svc", "gone", 0, "stop", "complete", time.Minute),
			alloc("b-current", "b", "gone", 1, "run", "complete", 25*time.Hour),
			alloc("b-older", "b", "gone", 0, "run", "complete", 25*time.Hour),
			alloc("b-older-2h", "b", "gone", 0, "run", "complete", 2*time.Hour),
			// The job is purged too: its type is unknown, so the longer of
			// the eval thresholds holds.
			alloc("purged-25h", "purged", "gone", 0, "stop", "complete", 25*time.Hour),
			alloc("purged-2h", "purged", "gone", 0, "stop", "complete", 2*time.Hour),
		},
	}
	req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
	if got, want := sorted(req.Allocs), []string{"b-older", "purged-25h", "svc-stopped"}; !slices.Equal(got, want) {
		t.Errorf("allocs = %v, want %v", got, want)
	}
	if len(req.Evals) != 0 {
		t.Errorf("evals = %v, want none", req.Evals)
	}
}

// TestCollect_EvalGC_AllocOfPurgedJobOnGoneNode: an allocation whose job
// was purged and whose node was collected is reached through its eval,
// as in Nomad, and goes with it; once the eval is gone too, it is
// collected as an orphan. Neither a job nor a node leads to it.
func TestCollect_EvalGC_AllocOfPurgedJobOnGoneNode(t *testing.T) {
	th := core.Thresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour, Node: 24 * time.Hour, Deployment: time.Hour}
	onGone := func(a *sdk.Allocation) *sdk.Allocation { a.NodeID = "gone"; return a }
	sync := &abi.StateSync{
		Evals: []*sdk.Evaluation{eval("e1", "purged", sdk.JobTypeService, 2*time.Hour)},
		Allocs: []*sdk.Allocation{
			onGone(alloc("with-eval", "purged", "e1", 0, "stop", "complete", 2*time.Hour)),
			onGone(alloc("orphan", "purged", "gone", 0, "stop", "complete", 25*time.Hour)),
		},
	}
	req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
	if got, want := sorted(req.Allocs), []string{"orphan", "with-eval"}; !slices.Equal(got, want) {
		t.Errorf("allocs = %v, want %v", got, want)
	}
	if got, want := sorted(req.Evals), []string{"e1"}; !slices.Equal(got, want) {
		t.Errorf("evals = %v, want %v", got, want)
	}
}

// TestCollect_ForceIgnoresClockSkew: a forced collection has no age, as
// Nomad's (its threshold index is the largest): an object whose last
// change is stamped after the plugin's clock (the leader's clock ahead of
// the worker's) is collected too.
func TestCollect_ForceIgnoresClockSkew(t *testing.T) {
	ahead := now.Add(50 * time.Millisecond).UnixNano()
	job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead,
		SubmitTime: ahead, TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	e := eval("e", "j", sdk.JobTypeService, 0)
	e.ModifyTime = ahead
	a := alloc("a", "j", "e", 0, "stop", "complete", 0)
	a.ModifyTime = ahead
	sync := &abi.StateSync{
		Nodes:       []*sdk.Node{{ID: "n", Status: sdk.NodeStatusDown, StatusUpdatedAt: now.Add(time.Second).Unix()}},
		Jobs:        []*sdk.Job{job},
		Evals:       []*sdk.Evaluation{e},
		Allocs:      []*sdk.Allocation{a},
		Deployments: []*sdk.Deployment{{ID: "d", Namespace: "default", JobID: "j", Status: sdk.DeploymentStatusSuccessful, ModifyTime: ahead}},
	}
	req := collectFrom(t, sync, sdk.CoreJobForceGC, core.Thresholds{})
	if !slices.Equal(req.Evals, []string{"e"}) || !slices.Equal(req.Allocs, []string{"a"}) || len(req.Jobs) != 1 ||
		!slices.Equal(req.Nodes, []string{"n"}) || !slices.Equal(req.Deployments, []string{"d"}) {
		t.Fatalf("forced GC collected %+v, want everything", req)
	}
}

// TestCollect_EvalGC_AllocRules: which terminal allocations of a live
// service job eval GC may collect, each placed by its own eval (which goes
// exactly when its allocation may), as Nomad's allocGCEligible decides.
func TestCollect_EvalGC_AllocRules(t *testing.T) {
	limited := &sdk.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: time.Minute}
	tracked := func(age time.Duration) *sdk.RescheduleTracker {
		return &sdk.RescheduleTracker{Events: []*sdk.RescheduleEvent{{RescheduleTime: ago(age)}}}
	}
	cases := []struct {
		name            string
		policy          *sdk.ReschedulePolicy
		desired, client string
		next            string
		tracker         *sdk.RescheduleTracker
		collect         bool
	}{
		{"complete", nil, "run", "complete", "", nil, true},
		{"lost", nil, "run", "lost", "", nil, true},
		{"failed, no reschedule policy", nil, "run", "failed", "", nil, true},
		{"failed, rescheduling disabled", &sdk.ReschedulePolicy{}, "run", "failed", "", nil, true},
		{"failed, unlimited, not replaced", &sdk.ReschedulePolicy{Unlimited: true, Delay: time.Minute}, "run", "failed", "", nil, false},
		{"failed, unlimited, replaced", &sdk.ReschedulePolicy{Unlimited: true, Delay: time.Minute}, "run", "failed", "next", nil, true},
		{"failed, limited, never rescheduled", limited, "run", "failed", "", nil, false},
		{"failed, limited, rescheduled within the interval", limited, "run", "failed", "", tracked(30 * time.Minute), false},
		{"failed, limited, rescheduled before the interval", limited, "run", "failed", "", tracked(2 * time.Hour), true},
		{"failed, told to stop", &sdk.ReschedulePolicy{Unlimited: true}, "stop", "failed", "", nil, true},
		{"told to stop, still running", nil, "stop", "running", "", nil, false},
		{"told to stop, disconnected", nil, "stop", "unknown", "", nil, true},
		{"disconnected", nil, "run", "unknown", "", nil, false},
		{"pending", nil, "run", "pending", "", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Status: sdk.JobStatusRunning, SubmitTime: ago(10 * time.Hour),
				TaskGroups: []*sdk.TaskGroup{{Name: "g", ReschedulePolicy: tc.policy}}}
			a := alloc("a", "j", "e", 0, tc.desired, tc.client, 2*time.Hour)
			a.NextAllocation, a.RescheduleTracker = tc.next, tc.tracker
			sync := &abi.StateSync{
				Nodes:  []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:   []*sdk.Job{job},
				Evals:  []*sdk.Evaluation{eval("e", "j", sdk.JobTypeService, 2*time.Hour)},
				Allocs: []*sdk.Allocation{a},
			}
			req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
			if got := slices.Equal(req.Allocs, []string{"a"}); got != tc.collect {
				t.Errorf("allocation collected = %v, want %v", got, tc.collect)
			}
			if got := slices.Equal(req.Evals, []string{"e"}); got != tc.collect {
				t.Errorf("eval collected = %v, want %v", got, tc.collect)
			}
		})
	}
}

// TestCollect_JobGC_Kinds: which dead or stopped jobs job GC collects, as
// Nomad's jobs-by-GC index has it.
func TestCollect_JobGC_Kinds(t *testing.T) {
	periodic := &sdk.PeriodicConfig{Enabled: true, Spec: "@hourly"}
	cases := []struct {
		name    string
		job     sdk.Job
		collect bool
	}{
		{"stopped service", sdk.Job{Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead}, true},
		{"dead service, not stopped", sdk.Job{Type: sdk.JobTypeService, Status: sdk.JobStatusDead}, false},
		{"dead system, not stopped", sdk.Job{Type: sdk.JobTypeSystem, Status: sdk.JobStatusDead}, false},
		{"dead batch", sdk.Job{Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead}, true},
		{"dead sysbatch", sdk.Job{Type: sdk.JobTypeSysBatch, Status: sdk.JobStatusDead}, true},
		{"running batch", sdk.Job{Type: sdk.JobTypeBatch, Status: sdk.JobStatusRunning}, false},
		{"periodic template", sdk.Job{Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead, Periodic: periodic}, false},
		{"stopped periodic template", sdk.Job{Type: sdk.JobTypeBatch, Stop: true, Status: sdk.JobStatusDead, Periodic: periodic}, true},
		{"disabled periodic block", sdk.Job{Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead, Periodic: &sdk.PeriodicConfig{Spec: "@hourly"}}, true},
		{"parameterized template", sdk.Job{Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead, ParameterizedJob: &sdk.ParameterizedJobConfig{}}, false},
		{"dispatched child", sdk.Job{Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead, ParameterizedJob: &sdk.ParameterizedJobConfig{}, Dispatched: true}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job
			job.Namespace, job.ID, job.SubmitTime = "default", "j", ago(10*time.Hour)
			job.TaskGroups = []*sdk.TaskGroup{{Name: "g"}}
			sync := &abi.StateSync{
				Nodes:  []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:   []*sdk.Job{&job},
				Evals:  []*sdk.Evaluation{eval("e", "j", job.Type, 5*time.Hour)},
				Allocs: []*sdk.Allocation{alloc("a", "j", "e", 0, "stop", "complete", 5*time.Hour)},
			}
			req := collectFrom(t, sync, sdk.CoreJobJobGC, th)
			if got := len(req.Jobs) == 1; got != tc.collect {
				t.Errorf("job collected = %v, want %v (request %+v)", got, tc.collect, req)
			}
		})
	}
}

// TestCollect_NodeGC: only down nodes, down for the node threshold, with
// no live allocation, go; a disconnected node (max_client_disconnect)
// stays with its unknown allocations.
func TestCollect_NodeGC(t *testing.T) {
	down := func(id, status string, age time.Duration) *sdk.Node {
		return &sdk.Node{ID: id, Status: status, StatusUpdatedAt: now.Add(-age).Unix()}
	}
	sync := &abi.StateSync{
		Nodes: []*sdk.Node{
			down("down-old", sdk.NodeStatusDown, 48*time.Hour),
			down("down-young", sdk.NodeStatusDown, time.Hour),
			down("down-lost-allocs", sdk.NodeStatusDown, 48*time.Hour),
			down("down-live-alloc", sdk.NodeStatusDown, 48*time.Hour),
			down("disconnected", sdk.NodeStatusDisconnected, 48*time.Hour),
			down("ready", sdk.NodeStatusReady, 48*time.Hour),
		},
		Allocs: []*sdk.Allocation{
			{ID: "lost", Namespace: "default", JobID: "gone", EvalID: "e", NodeID: "down-lost-allocs", TaskGroup: "g", DesiredStatus: "run", ClientStatus: "lost"},
			{ID: "live", Namespace: "default", JobID: "gone", EvalID: "e", NodeID: "down-live-alloc", TaskGroup: "g", DesiredStatus: "run", ClientStatus: "running"},
			{ID: "unknown", Namespace: "default", JobID: "gone", EvalID: "e", NodeID: "disconnected", TaskGroup: "g", DesiredStatus: "run", ClientStatus: "unknown"},
		},
	}
	req := collectFrom(t, sync, sdk.CoreJobNodeGC, th)
	if got, want := sorted(req.Nodes), []string{"down-lost-allocs", "down-old"}; !slices.Equal(got, want) {
		t.Errorf("nodes = %v, want %v", got, want)
	}
}

// jobIDs returns the request's jobs as "namespace/id", sorted.
func jobIDs(req *sdk.GCRequest) []string {
	var out []string
	for _, j := range req.Jobs {
		out = append(out, j.String())
	}
	return sorted(out)
}

// TestCollect_EvalGC_Partial mirrors Nomad's TestCoreScheduler_EvalGC_Partial:
// an old eval with a stopped, a lost and a running allocation of a live
// service job (rescheduling off) stays with the running one; the other two
// go.
func TestCollect_EvalGC_Partial(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Status: sdk.JobStatusRunning, SubmitTime: ago(10 * time.Hour),
		TaskGroups: []*sdk.TaskGroup{{Name: "g", ReschedulePolicy: &sdk.ReschedulePolicy{}}}}
	sync := &abi.StateSync{
		Nodes: []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
		Jobs:  []*sdk.Job{job},
		Evals: []*sdk.Evaluation{eval("e", "j", sdk.JobTypeService, 2*time.Hour)},
		Allocs: []*sdk.Allocation{
			alloc("stopped", "j", "e", 0, "stop", "complete", 2*time.Hour),
			alloc("lost", "j", "e", 0, "run", "lost", 2*time.Hour),
			alloc("running", "j", "e", 0, "run", "running", 2*time.Hour),
		},
	}
	req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
	if len(req.Evals) != 0 {
		t.Errorf("evals = %v, want none", req.Evals)
	}
	if got, want := sorted(req.Allocs), []string{"lost", "stopped"}; !slices.Equal(got, want) {
		t.Errorf("allocs = %v, want %v", got, want)
	}
}

// TestCollect_EvalGC_StoppedJobReschedulable mirrors Nomad's
// TestCoreScheduler_EvalGC_StoppedJob_Reschedulable and
// TestCoreScheduler_EvalGC_ReschedulingAllocs: a lost allocation rescheduled
// minutes ago goes once its job is stopped (nothing will reschedule it);
// of a live job's failed allocations, the one already replaced goes and the
// one rescheduled minutes ago, not yet replaced, stays, with its eval.
func TestCollect_EvalGC_StoppedJobReschedulable(t *testing.T) {
	policy := &sdk.ReschedulePolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 5 * time.Second}
	tracked := func(a *sdk.Allocation, age time.Duration) *sdk.Allocation {
		a.RescheduleTracker = &sdk.RescheduleTracker{Events: []*sdk.RescheduleEvent{{RescheduleTime: ago(age), PrevAllocID: "p", PrevNodeID: "n"}}}
		return a
	}
	stopped := &sdk.Job{Namespace: "default", ID: "stopped", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g", ReschedulePolicy: policy}}}
	live := &sdk.Job{Namespace: "default", ID: "live", Type: sdk.JobTypeService, Status: sdk.JobStatusRunning,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g", ReschedulePolicy: policy}}}
	replaced := tracked(alloc("replaced", "live", "e-live", 0, "run", "failed", 2*time.Hour), time.Hour)
	replaced.NextAllocation = "next"
	sync := &abi.StateSync{
		Nodes: []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
		Jobs:  []*sdk.Job{stopped, live},
		Evals: []*sdk.Evaluation{eval("e-stopped", "stopped", sdk.JobTypeService, 2*time.Hour), eval("e-live", "live", sdk.JobTypeService, 2*time.Hour)},
		Allocs: []*sdk.Allocation{
			tracked(alloc("lost", "stopped", "e-stopped", 0, "run", "lost", 2*time.Hour), 3*time.Minute),
			replaced,
			tracked(alloc("rescheduling", "live", "e-live", 0, "run", "failed", 2*time.Hour), 3*time.Minute),
		},
	}
	req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
	if got, want := sorted(req.Evals), []string{"e-stopped"}; !slices.Equal(got, want) {
		t.Errorf("evals = %v, want %v", got, want)
	}
	if got, want := sorted(req.Allocs), []string{"lost", "replaced"}; !slices.Equal(got, want) {
		t.Errorf("allocs = %v, want %v", got, want)
	}
}

// TestCollect_JobGC_Outstanding mirrors Nomad's
// TestCoreScheduler_JobGC_OutstandingEvals, _OutstandingAllocs and _OneShot:
// a dead batch job stays while one of its evals is open, or one of its
// allocations runs or failed and may still be rescheduled; once they are
// done, it goes with all of them.
func TestCollect_JobGC_Outstanding(t *testing.T) {
	job := func() *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead, SubmitTime: ago(10 * time.Hour),
			TaskGroups: []*sdk.TaskGroup{{Name: "g", ReschedulePolicy: &sdk.ReschedulePolicy{Unlimited: true, Delay: time.Minute}}}}
	}
	cases := []struct {
		name    string
		modify  func(e2 *sdk.Evaluation, a2 *sdk.Allocation)
		collect bool
	}{
		{"done", func(*sdk.Evaluation, *sdk.Allocation) {}, true},
		{"an open eval", func(e2 *sdk.Evaluation, _ *sdk.Allocation) { e2.Status = sdk.EvalStatusPending }, false},
		{"a running allocation", func(_ *sdk.Evaluation, a2 *sdk.Allocation) { a2.ClientStatus = sdk.AllocClientStatusRunning }, false},
		{"a failed allocation, not replaced", func(_ *sdk.Evaluation, a2 *sdk.Allocation) { a2.ClientStatus = sdk.AllocClientStatusFailed }, true},
		{"a young allocation", func(_ *sdk.Evaluation, a2 *sdk.Allocation) { a2.ModifyTime = ago(time.Hour) }, false},
		{"a young eval", func(e2 *sdk.Evaluation, _ *sdk.Allocation) { e2.ModifyTime = ago(time.Hour) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e1, e2 := eval("e1", "j", sdk.JobTypeBatch, 5*time.Hour), eval("e2", "j", sdk.JobTypeBatch, 5*time.Hour)
			a1, a2 := alloc("a1", "j", "e1", 0, "stop", "complete", 5*time.Hour), alloc("a2", "j", "e2", 0, "run", "complete", 5*time.Hour)
			tc.modify(e2, a2)
			sync := &abi.StateSync{
				Nodes:  []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:   []*sdk.Job{job()},
				Evals:  []*sdk.Evaluation{e1, e2},
				Allocs: []*sdk.Allocation{a1, a2},
			}
			req := collectFrom(t, sync, sdk.CoreJobJobGC, th)
			var wantJobs, wantEvals, wantAllocs []string
			if tc.collect {
				wantJobs, wantEvals, wantAllocs = []string{"default/j"}, []string{"e1", "e2"}, []string{"a1", "a2"}
			}
			if got := jobIDs(req); !slices.Equal(got, wantJobs) {
				t.Errorf("jobs = %v, want %v", got, wantJobs)
			}
			if got := sorted(req.Evals); !slices.Equal(got, wantEvals) {
				t.Errorf("evals = %v, want %v", got, wantEvals)
			}
			if got := sorted(req.Allocs); !slices.Equal(got, wantAllocs) {
				t.Errorf("allocs = %v, want %v", got, wantAllocs)
			}
		})
	}
}

// TestCollect_JobGC_AgeIsLastRegistration: a job's age is that of its last
// registration (SubmitTime), not of its creation as in Nomad (job GC skips
// a job whose CreateIndex is past the threshold index): a job created
// long ago, registered again an hour ago and stopped, whose evals and
// allocations eval GC already took, stays until the job threshold has
// passed since that registration; Nomad's job GC would take it at once.
// Drover's state maps no index to a time, and waiting longer never
// collects what Nomad keeps.
func TestCollect_JobGC_AgeIsLastRegistration(t *testing.T) {
	for _, tc := range []struct {
		submitted time.Duration
		collect   bool
	}{{time.Hour, false}, {5 * time.Hour, true}} {
		job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead, Version: 3,
			CreateIndex: 1, SubmitTime: ago(tc.submitted), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
		sync := &abi.StateSync{Nodes: []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}}, Jobs: []*sdk.Job{job}}
		req := collectFrom(t, sync, sdk.CoreJobJobGC, th)
		if got := len(req.Jobs) == 1; got != tc.collect {
			t.Errorf("registered %s ago: job collected = %v, want %v", tc.submitted, got, tc.collect)
		}
	}
}
