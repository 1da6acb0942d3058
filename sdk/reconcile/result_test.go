package reconcile_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/sdktest"
)

func TestResult_ActiveDeployment(t *testing.T) {
	running := &sdk.Deployment{ID: "latest", Status: sdk.DeploymentStatusRunning}
	paused := &sdk.Deployment{ID: "latest", Status: sdk.DeploymentStatusPaused}
	done := &sdk.Deployment{ID: "latest", Status: sdk.DeploymentStatusSuccessful}
	created := &sdk.Deployment{ID: "new", Status: sdk.DeploymentStatusRunning}
	cancel := []*sdk.DeploymentStatusUpdate{{DeploymentID: "latest", Status: sdk.DeploymentStatusCancelled}}
	cases := []struct {
		name   string
		res    reconcile.Result
		latest *sdk.Deployment
		want   string
	}{
		{"none", reconcile.Result{}, nil, ""},
		{"latest running", reconcile.Result{}, running, "latest"},
		{"latest paused", reconcile.Result{}, paused, "latest"},
		{"latest over", reconcile.Result{}, done, ""},
		{"latest ended by the result", reconcile.Result{DeploymentUpdates: cancel}, running, ""},
		{"created", reconcile.Result{Deployment: created, DeploymentUpdates: cancel}, running, "new"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if d := tc.res.ActiveDeployment(tc.latest); d != nil {
				got = d.ID
			}
			if got != tc.want {
				t.Fatalf("ActiveDeployment = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPlacement_Fill(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	tg := &sdk.TaskGroup{Name: "web"}
	failed := &sdk.Allocation{ID: "old", NodeID: "n1", ClientStatus: sdk.AllocClientStatusFailed}
	cases := []struct {
		name       string
		pl         reconcile.Placement
		deployment string
		wantPrev   string
		wantCanary bool
		wantTrack  bool
	}{
		{"new", reconcile.Placement{Name: "j.web[0]", TaskGroup: tg}, "d1", "", false, false},
		{"canary", reconcile.Placement{Name: "j.web[0]", TaskGroup: tg, Canary: true}, "d1", "", true, false},
		{"canary outside a deployment", reconcile.Placement{Name: "j.web[0]", TaskGroup: tg, Canary: true}, "", "", false, false},
		{"reschedule", reconcile.Placement{Name: "j.web[0]", TaskGroup: tg, Previous: failed, Reschedule: true}, "", "old", false, true},
		{"destructive", reconcile.Destructive{Name: "j.web[0]", TaskGroup: tg, Stop: failed}.Placement(), "d1", "old", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a sdk.Allocation
			tc.pl.Fill(&a, tc.deployment, now)
			if a.Name != "j.web[0]" || a.TaskGroup != "web" || a.DeploymentID != tc.deployment || a.PreviousAllocation != tc.wantPrev {
				t.Fatalf("allocation = %+v", a)
			}
			if canary := a.DeploymentStatus != nil && a.DeploymentStatus.Canary; canary != tc.wantCanary {
				t.Fatalf("canary = %v, want %v", canary, tc.wantCanary)
			}
			if track := a.RescheduleTracker != nil; track != tc.wantTrack {
				t.Fatalf("reschedule tracker = %+v, want one: %v", a.RescheduleTracker, tc.wantTrack)
			}
		})
	}
}

// A scheduler that reconciles with Compute and picks nodes its own way
// places each allocation into the deployment the result creates or keeps,
// with Placement.Fill, so the deployment tracks it.
func ExamplePlacement_Fill() {
	job := sdktest.Job("web", 2)
	job.TaskGroups[0].Update = &sdk.UpdateStrategy{MaxParallel: 1, ProgressDeadline: 10 * time.Minute}
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	ids := 0
	res := reconcile.Compute(reconcile.Input{Job: job, EvalID: "e1", Now: now,
		NewID: func() string { ids++; return fmt.Sprintf("id-%d", ids) }})
	d := res.ActiveDeployment(nil) // no deployment before: the one the result creates
	for i, pl := range res.Place {
		a := &sdk.Allocation{ID: fmt.Sprintf("alloc-%d", i), NodeID: "n1"} // the scheduler's node choice
		pl.Fill(a, d.ID, now)
		fmt.Println(a.Name, "in deployment", a.DeploymentID)
	}
	// Unordered output:
	// web.web[0] in deployment id-1
	// web.web[1] in deployment id-1
}

// A batch job purged and registered again counts its versions from 0
// again: a finished allocation of the earlier instance is ignored, not
// rescheduled, even when its job version is no longer known (Job nil; its
// JobModifyIndex, below the new instance's create index, tells).
func TestCompute_BatchIgnoresAnEarlierInstancesFinishedAllocations(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	job := &sdk.Job{Namespace: "default", ID: "b", Type: sdk.JobTypeBatch, CreateIndex: 100, JobModifyIndex: 100,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t"}},
			ReschedulePolicy: &sdk.ReschedulePolicy{Unlimited: true, DelayFunction: sdk.DelayFunctionConstant}}}}
	earlier := &sdk.Allocation{ID: "old", Namespace: "default", JobID: "b", TaskGroup: "g", Name: "b.g[0]", NodeID: "n1",
		JobModifyIndex: 40, DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusFailed,
		ModifyTime: now.Add(-time.Hour).UnixNano()}
	n := 0
	res := reconcile.Compute(reconcile.Input{Job: job, Batch: true, Allocs: []*sdk.Allocation{earlier}, Now: now,
		NewID: func() string { n++; return fmt.Sprint("id-", n) }})
	if len(res.Place) != 1 || res.Place[0].Previous != nil || len(res.Stop) != 0 || len(res.Destructive) != 0 {
		t.Fatalf("placed %+v, stopped %+v, updated %+v; want one new allocation, the earlier instance's left alone", res.Place, res.Stop, res.Destructive)
	}
}

// A finished allocation of an older version of the same instance is
// ignored, not rescheduled, even when its job version is no longer known
// (Job nil): its JobVersion tells.
func TestCompute_BatchIgnoresAnOlderVersionsFinishedAllocationsWithoutTheirJob(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	job := &sdk.Job{Namespace: "default", ID: "b", Type: sdk.JobTypeBatch, Version: 2, CreateIndex: 100, JobModifyIndex: 300,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, Tasks: []*sdk.Task{{Name: "t"}},
			ReschedulePolicy: &sdk.ReschedulePolicy{Unlimited: true, DelayFunction: sdk.DelayFunctionConstant}}}}
	older := &sdk.Allocation{ID: "old", Namespace: "default", JobID: "b", TaskGroup: "g", Name: "b.g[0]", NodeID: "n1",
		JobVersion: 1, JobModifyIndex: 150, DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusFailed,
		ModifyTime: now.Add(-time.Hour).UnixNano()}
	n := 0
	res := reconcile.Compute(reconcile.Input{Job: job, Batch: true, Allocs: []*sdk.Allocation{older}, Now: now,
		NewID: func() string { n++; return fmt.Sprint("id-", n) }})
	if len(res.Place) != 1 || res.Place[0].Previous != nil || len(res.Stop) != 0 || len(res.Destructive) != 0 {
		t.Fatalf("placed %+v, stopped %+v, updated %+v; want one new allocation, the older version's left alone", res.Place, res.Stop, res.Destructive)
	}
}
