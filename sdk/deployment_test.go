package sdk

import (
	"testing"
	"time"
)

func TestDeployment_CountHealth(t *testing.T) {
	yes, no := true, false
	healthy, unhealthy := &AllocDeploymentStatus{Healthy: &yes}, &AllocDeploymentStatus{Healthy: &no}
	now := time.Unix(100, 0)
	cases := []struct {
		name                    string
		before, after           *AllocDeploymentStatus
		changed                 bool
		healthyN, unhealthyN    int
		deadlineMovedFromPassed bool
	}{
		{"unset to healthy", nil, healthy, true, 1, 0, true},
		{"unset to unhealthy", nil, unhealthy, true, 0, 1, false},
		{"healthy to unhealthy", healthy, unhealthy, true, 0, 1, false},
		{"healthy again", healthy, healthy, false, 1, 0, false},
		{"unhealthy again", unhealthy, unhealthy, false, 0, 1, false},
		{"unhealthy to healthy", unhealthy, healthy, true, 1, 0, true},
		{"status without health", nil, &AllocDeploymentStatus{Canary: true}, false, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The counts before hold this allocation as it was.
			s := &DeploymentState{ProgressDeadline: time.Minute, RequireProgressBy: time.Unix(50, 0)}
			if c.before.IsHealthy() {
				s.HealthyAllocs = 1
			}
			if c.before.IsUnhealthy() {
				s.UnhealthyAllocs = 1
			}
			d := &Deployment{ID: "d1", TaskGroups: map[string]*DeploymentState{"web": s}}
			a := &Allocation{ID: "a1", DeploymentID: "d1", TaskGroup: "web"}
			if got := d.CountHealth(a, c.before, c.after, now); got != c.changed {
				t.Fatalf("changed = %v", got)
			}
			if s.HealthyAllocs != c.healthyN || s.UnhealthyAllocs != c.unhealthyN {
				t.Fatalf("healthy %d unhealthy %d, want %d %d", s.HealthyAllocs, s.UnhealthyAllocs, c.healthyN, c.unhealthyN)
			}
			if moved := s.RequireProgressBy.Equal(now.Add(time.Minute)); moved != c.deadlineMovedFromPassed {
				t.Fatalf("progress deadline %v", s.RequireProgressBy)
			}
		})
	}
}
