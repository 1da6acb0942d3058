package main

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestAwaitsPromotion(t *testing.T) {
	canaries := func(desired, healthy int, promoted, auto bool) *sdk.DeploymentState {
		return &sdk.DeploymentState{DesiredCanaries: desired, HealthyAllocs: healthy, Promoted: promoted, AutoPromote: auto,
			DesiredTotal: 3}
	}
	rolling := &sdk.DeploymentState{DesiredTotal: 3, HealthyAllocs: 1}
	for _, tc := range []struct {
		name   string
		status string
		groups map[string]*sdk.DeploymentState
		want   bool
	}{
		{"no canaries", sdk.DeploymentStatusRunning, map[string]*sdk.DeploymentState{"a": rolling}, false},
		{"canary not yet healthy", sdk.DeploymentStatusRunning, map[string]*sdk.DeploymentState{"a": canaries(2, 1, false, false)}, false},
		{"healthy canaries, manual", sdk.DeploymentStatusRunning, map[string]*sdk.DeploymentState{"a": canaries(2, 2, false, false)}, true},
		{"healthy canaries, auto promote", sdk.DeploymentStatusRunning, map[string]*sdk.DeploymentState{"a": canaries(2, 2, false, true)}, false},
		{"already promoted", sdk.DeploymentStatusRunning, map[string]*sdk.DeploymentState{"a": canaries(1, 3, true, false)}, false},
		{"another group's canaries still unhealthy", sdk.DeploymentStatusRunning,
			map[string]*sdk.DeploymentState{"a": canaries(1, 1, false, false), "b": canaries(1, 0, false, false)}, false},
		{"manual and auto groups both healthy", sdk.DeploymentStatusRunning,
			map[string]*sdk.DeploymentState{"a": canaries(1, 1, false, true), "b": canaries(1, 1, false, false), "c": rolling}, true},
		{"paused", sdk.DeploymentStatusPaused, map[string]*sdk.DeploymentState{"a": canaries(1, 1, false, false)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &sdk.Deployment{Status: tc.status, TaskGroups: tc.groups}
			if got := awaitsPromotion(d); got != tc.want {
				t.Errorf("awaitsPromotion = %t, want %t", got, tc.want)
			}
		})
	}
}
