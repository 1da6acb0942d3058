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
	manual := &sdk.Job{Type: sdk.JobTypeService, TaskGroups: []*sdk.TaskGroup{{Name: "g",
		Update: &sdk.UpdateStrategy{MaxParallel: 1, HealthCheck: "manual", MinHealthyTime: 10 * time.Second}}}}
	healthy := true
	cases := []struct {
		name        string
		alloc       sdk.Allocation
		manual      bool
		wantUpdate  bool
		wantHealthy bool
	}{
		{"pending starts running", sdk.Allocation{ClientStatus: sdk.AllocClientStatusPending, DeploymentID: "d"}, false, true, false},
		{"running too briefly", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: now.Add(-5 * time.Second).UnixNano()}, false, false, false},
		{"running long enough", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: now.Add(-11 * time.Second).UnixNano()}, false, true, true},
		{"already healthy", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}, ModifyTime: now.Add(-time.Hour).UnixNano()}, false, false, false},
		{"not part of a deployment", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning,
			ModifyTime: now.Add(-time.Hour).UnixNano()}, false, false, false},
		{"manual health: left to the operator", sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: now.Add(-time.Hour).UnixNano()}, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alloc
			a.ID, a.Job, a.TaskGroup, a.DesiredStatus = "a1", job, "g", sdk.AllocDesiredStatusRun
			if tc.manual {
				a.Job = manual
			}
			u, ok := simNext(&a, now)
			if ok != tc.wantUpdate || u.DeploymentStatus.IsHealthy() != tc.wantHealthy {
				t.Fatalf("update %v %+v, want update %v healthy %v", ok, u, tc.wantUpdate, tc.wantHealthy)
			}
		})
	}
}

// TestSimNext_MockDriverOptions: mock_driver tasks fail to start with
// start_error, and exit after run_for with exit_code (failed, and
// unhealthy in a deployment that had not judged them) or 0 (complete);
// other drivers ignore those options.
func TestSimNext_MockDriverOptions(t *testing.T) {
	now := time.Unix(1000, 0)
	job := func(driver string, config sdk.Opaque) *sdk.Job {
		return &sdk.Job{Type: sdk.JobTypeService, TaskGroups: []*sdk.TaskGroup{{Name: "g",
			Tasks: []*sdk.Task{{Name: "ok", Driver: "mock_driver"}, {Name: "t", Driver: driver, Config: config}}}}}
	}
	created := now.Add(-10 * time.Second).UnixNano()
	cases := []struct {
		name         string
		job          *sdk.Job
		status       string
		deployment   string
		wantUpdate   bool
		wantStatus   string
		wantDesc     string
		wantUnhealty bool
	}{
		{"start error", job("mock_driver", sdk.Opaque{"start_error": "no image"}), sdk.AllocClientStatusPending, "d",
			true, sdk.AllocClientStatusFailed, "Failed to start tasks: no image", true},
		{"exits with a code after run_for", job("mock_driver", sdk.Opaque{"run_for": "5s", "exit_code": 3}), sdk.AllocClientStatusRunning, "",
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 3", false},
		{"exit code as HCL numbers decode", job("mock_driver", sdk.Opaque{"run_for": "5s", "exit_code": float64(1)}), sdk.AllocClientStatusRunning, "d",
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 1", true},
		{"exits cleanly after run_for", job("mock_driver", sdk.Opaque{"run_for": "5s"}), sdk.AllocClientStatusRunning, "",
			true, sdk.AllocClientStatusComplete, "All tasks have completed", false},
		{"still running", job("mock_driver", sdk.Opaque{"run_for": "1m", "exit_code": 1}), sdk.AllocClientStatusRunning, "",
			false, "", "", false},
		{"other drivers ignore the options", job("docker", sdk.Opaque{"start_error": "x", "run_for": "1s", "exit_code": 1}),
			sdk.AllocClientStatusRunning, "", false, "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := sdk.Allocation{ID: "a1", Job: tc.job, TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusRun,
				ClientStatus: tc.status, DeploymentID: tc.deployment, CreateTime: created, ModifyTime: created}
			u, ok := simNext(&a, now)
			if ok != tc.wantUpdate || u.ClientStatus != tc.wantStatus || u.ClientDescription != tc.wantDesc ||
				u.DeploymentStatus.IsUnhealthy() != tc.wantUnhealty {
				t.Fatalf("update %v %+v (deployment status %+v)", ok, u, u.DeploymentStatus)
			}
		})
	}
}
