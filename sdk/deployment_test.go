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

// TestDeployment_ProgressDeadline: as in Nomad's state store, a group's
// progress deadline starts with its first placement; later placements
// (replacements of failed allocations too) leave it, and a healthy
// allocation pushes it out, never in.
func TestDeployment_ProgressDeadline(t *testing.T) {
	yes := true
	healthy := &AllocDeploymentStatus{Healthy: &yes}
	t0 := time.Unix(100, 0)
	s := &DeploymentState{ProgressDeadline: time.Minute}
	d := &Deployment{ID: "d1", TaskGroups: map[string]*DeploymentState{"web": s}}
	alloc := func(id string) *Allocation { return &Allocation{ID: id, DeploymentID: "d1", TaskGroup: "web"} }
	steps := []struct {
		name string
		do   func()
		want time.Time
	}{
		{"the first placement starts it", func() { d.CountPlacement(alloc("a1"), t0) }, t0.Add(time.Minute)},
		{"a later placement leaves it", func() { d.CountPlacement(alloc("a2"), t0.Add(30*time.Second)) }, t0.Add(time.Minute)},
		{"a healthy allocation pushes it out", func() { d.CountHealth(alloc("a1"), nil, healthy, t0.Add(40*time.Second)) },
			t0.Add(100 * time.Second)},
		{"a replacement placed after that leaves it", func() { d.CountPlacement(alloc("a3"), t0.Add(90*time.Second)) },
			t0.Add(100 * time.Second)},
		{"health written with an earlier time does not pull it in", func() { d.CountHealth(alloc("a2"), nil, healthy, t0.Add(20*time.Second)) },
			t0.Add(100 * time.Second)},
	}
	for _, st := range steps {
		st.do()
		if !s.RequireProgressBy.Equal(st.want) {
			t.Fatalf("%s: progress deadline %v, want %v", st.name, s.RequireProgressBy, st.want)
		}
	}
	none := &DeploymentState{}
	(&Deployment{ID: "d1", TaskGroups: map[string]*DeploymentState{"web": none}}).CountPlacement(alloc("a1"), t0)
	if !none.RequireProgressBy.IsZero() {
		t.Fatalf("a group without a progress deadline got one: %v", none.RequireProgressBy)
	}
}
