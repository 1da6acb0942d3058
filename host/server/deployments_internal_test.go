package server

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

func TestDeploymentLateGroups(t *testing.T) {
	now := time.Unix(1000, 0)
	cases := []struct {
		name  string
		state sdk.DeploymentState
		want  string
	}{
		{"healthy and on time", sdk.DeploymentState{DesiredTotal: 2, HealthyAllocs: 1, ProgressDeadline: time.Minute,
			RequireProgressBy: now.Add(time.Second)}, ""},
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
			if late := lateGroups(d, now); (len(late) == 1) != (tc.want != "") {
				t.Fatalf("late groups = %v, want a failure %q", late, tc.want)
			}
		})
	}
}

// An unhealthy allocation fails its deployment at once without a progress
// deadline or with no reschedule left (Nomad's shouldFailEarly); otherwise
// it is to be replaced, once.
func TestDeploymentWatch_Unhealthy(t *testing.T) {
	now := time.Unix(10_000, 0)
	yes, no := true, false
	cases := []struct {
		name       string
		deadline   time.Duration
		policy     sdk.ReschedulePolicy
		events     int
		marked     bool
		healthy    bool
		fail       bool
		reschedule bool
	}{
		{"no progress deadline", 0, sdk.ReschedulePolicy{Unlimited: true}, 0, false, false, true, false},
		{"unlimited", time.Minute, sdk.ReschedulePolicy{Unlimited: true}, 5, false, false, false, true},
		{"attempts left", time.Minute, sdk.ReschedulePolicy{Attempts: 2, Interval: time.Hour}, 1, false, false, false, true},
		{"attempts used", time.Minute, sdk.ReschedulePolicy{Attempts: 2, Interval: time.Hour}, 2, false, false, true, false},
		{"rescheduling off", time.Minute, sdk.ReschedulePolicy{}, 0, false, false, true, false},
		{"already marked", time.Minute, sdk.ReschedulePolicy{Unlimited: true}, 0, true, false, false, false},
		{"healthy", 0, sdk.ReschedulePolicy{}, 0, false, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := state.NewStore()
			job := &sdk.Job{Namespace: "default", ID: "web", Type: sdk.JobTypeService,
				TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1, ReschedulePolicy: &tc.policy}}}
			d := &sdk.Deployment{ID: "d", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning,
				TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 1, ProgressDeadline: tc.deadline, UnhealthyAllocs: 1}}}
			a := &sdk.Allocation{ID: "a", Namespace: "default", JobID: "web", TaskGroup: "g", DeploymentID: "d", NodeID: "n1",
				ClientStatus: sdk.AllocClientStatusFailed, DesiredStatus: sdk.AllocDesiredStatusRun,
				DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &no}, RescheduleTracker: &sdk.RescheduleTracker{}}
			if tc.healthy {
				a.DeploymentStatus.Healthy = &yes
			}
			if tc.marked {
				a.DesiredTransition.Reschedule = &yes
			}
			for i := range tc.events {
				a.RescheduleTracker.Events = append(a.RescheduleTracker.Events,
					&sdk.RescheduleEvent{RescheduleTime: now.Add(-time.Duration(i+1) * time.Minute).UnixNano()})
			}
			err := store.Write(1, func(tx *state.Txn) error {
				if err := tx.UpsertJob(job); err != nil {
					return err
				}
				a.Job = tx.Job("default", "web")
				if err := tx.UpsertDeployment(d); err != nil {
					return err
				}
				return tx.UpsertAlloc(a)
			})
			if err != nil {
				t.Fatal(err)
			}
			failGroup, reschedule := unhealthy(store.Snapshot(), d, now)
			if (failGroup == "g") != tc.fail || (len(reschedule) == 1) != tc.reschedule {
				t.Fatalf("unhealthy = %q %v, want fail %v, reschedule %v", failGroup, reschedule, tc.fail, tc.reschedule)
			}
		})
	}
}

// As Nomad's: a failure reverts when a group it concerns has auto_revert;
// an operator's fail (no groups named) when any group has it.
func TestAutoRevert_ByTheGroupsAFailureConcerns(t *testing.T) {
	d := &sdk.Deployment{TaskGroups: map[string]*sdk.DeploymentState{"api": {AutoRevert: true}, "web": {}}}
	for _, tc := range []struct {
		groups []string
		want   bool
	}{{nil, true}, {[]string{"api"}, true}, {[]string{"web"}, false}, {[]string{"web", "api"}, true}} {
		if got := autoRevert(d, tc.groups); got != tc.want {
			t.Errorf("autoRevert(%v) = %v, want %v", tc.groups, got, tc.want)
		}
	}
}
