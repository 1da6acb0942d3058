package agent

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

func TestSimNext_ReportsHealthAfterMinHealthyTime(t *testing.T) {
	now := time.Unix(1000, 0)
	job := &sdk.Job{Type: sdk.JobTypeService, TaskGroups: []*sdk.TaskGroup{{Name: "g",
		Update: &sdk.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second}}}}
	healthy := true
	cases := []struct {
		name        string
		alloc       sdk.Allocation
		wantUpdate  bool
		wantHealthy bool
	}{
		{"pending starts running", sdk.Allocation{ClientStatus: sdk.AllocClientStatusPending, DeploymentID: "d"}, true, false},
		{"running too briefly", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: now.Add(-5 * time.Second).UnixNano()}, false, false},
		{"running long enough", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: now.Add(-11 * time.Second).UnixNano()}, true, true},
		{"already healthy", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}, ModifyTime: now.Add(-time.Hour).UnixNano()}, false, false},
		{"not part of a deployment", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning,
			ModifyTime: now.Add(-time.Hour).UnixNano()}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alloc
			a.ID, a.Job, a.TaskGroup, a.DesiredStatus = "a1", job, "g", sdk.AllocDesiredStatusRun
			u, ok := simNext(&a, now)
			if ok != tc.wantUpdate || u.DeploymentStatus.IsHealthy() != tc.wantHealthy {
				t.Fatalf("update %v %+v, want update %v healthy %v", ok, u, tc.wantUpdate, tc.wantHealthy)
			}
		})
	}
}
