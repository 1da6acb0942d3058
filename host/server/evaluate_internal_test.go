package server

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestForceReschedulable: a forced reschedule marks a job's failed
// allocations, not yet replaced nor marked, of groups that reschedule at
// all, as Nomad's Job.Evaluate does. It used to mark those of a group with
// rescheduling disabled (no attempts, not unlimited) or no longer in the
// job too.
func TestForceReschedulable(t *testing.T) {
	yes := true
	job := &sdk.Job{ID: "web", TaskGroups: []*sdk.TaskGroup{
		{Name: "attempts", ReschedulePolicy: &sdk.ReschedulePolicy{Attempts: 1}},
		{Name: "unlimited", ReschedulePolicy: &sdk.ReschedulePolicy{Unlimited: true}},
		{Name: "disabled", ReschedulePolicy: &sdk.ReschedulePolicy{Attempts: 0}},
		{Name: "none"}, // a system job's group has no policy
	}}
	for _, tc := range []struct {
		name  string
		alloc sdk.Allocation
		want  bool
	}{
		{"failed, attempts", sdk.Allocation{TaskGroup: "attempts", ClientStatus: sdk.AllocClientStatusFailed}, true},
		{"failed, unlimited", sdk.Allocation{TaskGroup: "unlimited", ClientStatus: sdk.AllocClientStatusFailed}, true},
		{"failed, rescheduling disabled", sdk.Allocation{TaskGroup: "disabled", ClientStatus: sdk.AllocClientStatusFailed}, false},
		{"failed, no policy", sdk.Allocation{TaskGroup: "none", ClientStatus: sdk.AllocClientStatusFailed}, false},
		{"failed, group removed", sdk.Allocation{TaskGroup: "gone", ClientStatus: sdk.AllocClientStatusFailed}, false},
		{"running", sdk.Allocation{TaskGroup: "attempts", ClientStatus: sdk.AllocClientStatusRunning}, false},
		{"failed, replaced", sdk.Allocation{TaskGroup: "attempts", ClientStatus: sdk.AllocClientStatusFailed, NextAllocation: "b"}, false},
		{"failed, marked already", sdk.Allocation{TaskGroup: "attempts", ClientStatus: sdk.AllocClientStatusFailed,
			DesiredTransition: sdk.DesiredTransition{ForceReschedule: &yes}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alloc
			got := forceReschedulable(job, []*sdk.Allocation{&a})
			if slices.Contains(got, &a) != tc.want {
				t.Fatalf("marked %v, want %v", len(got) == 1, tc.want)
			}
		})
	}
}
