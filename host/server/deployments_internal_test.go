package server

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

func TestDeploymentFailure(t *testing.T) {
	now := time.Unix(1000, 0)
	cases := []struct {
		name  string
		state sdk.DeploymentState
		want  string
	}{
		{"healthy and on time", sdk.DeploymentState{DesiredTotal: 2, HealthyAllocs: 1, ProgressDeadline: time.Minute,
			RequireProgressBy: now.Add(time.Second)}, ""},
		{"unhealthy allocation", sdk.DeploymentState{DesiredTotal: 2, UnhealthyAllocs: 1}, sdk.DeploymentDescriptionFailedAllocations},
		{"progress deadline passed", sdk.DeploymentState{DesiredTotal: 2, HealthyAllocs: 1, ProgressDeadline: time.Minute,
			RequireProgressBy: now.Add(-time.Second)}, sdk.DeploymentDescriptionProgressDeadline},
		{"deadline passed but complete", sdk.DeploymentState{DesiredTotal: 2, HealthyAllocs: 2, ProgressDeadline: time.Minute,
			RequireProgressBy: now.Add(-time.Second)}, ""},
		{"deadline passed, canaries not promoted", sdk.DeploymentState{DesiredTotal: 2, DesiredCanaries: 1, HealthyAllocs: 2,
			ProgressDeadline: time.Minute, RequireProgressBy: now.Add(-time.Second)}, sdk.DeploymentDescriptionProgressDeadline},
		{"no progress deadline", sdk.DeploymentState{DesiredTotal: 2, RequireProgressBy: now.Add(-time.Hour)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.state
			d := &sdk.Deployment{ID: "d", Status: sdk.DeploymentStatusRunning, TaskGroups: map[string]*sdk.DeploymentState{"g": &st}}
			desc, failed := failure(d, now)
			if desc != tc.want || failed != (tc.want != "") {
				t.Fatalf("failure = %q %v, want %q", desc, failed, tc.want)
			}
		})
	}
}
