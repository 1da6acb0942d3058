package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// lateGroups, as Nomad's watcher at a progress deadline: once the
// earliest deadline of a group in progress has passed, the groups that
// fall short fail the deployment. A group whose canaries are all healthy
// waits for its operator's promotion however long (the case read wrong
// before: it failed such a deployment at its deadline).
func TestDeploymentLateGroups(t *testing.T) {
	now := time.Unix(1000, 0)
	passed, ahead := now.Add(-time.Second), now.Add(time.Hour)
	cases := []struct {
		name   string
		groups map[string]sdk.DeploymentState
		want   []string
	}{
		{"healthy and on time", map[string]sdk.DeploymentState{"g": {DesiredTotal: 2, HealthyAllocs: 1, ProgressDeadline: time.Minute,
			RequireProgressBy: ahead}}, nil},
		{"progress deadline passed", map[string]sdk.DeploymentState{"g": {DesiredTotal: 2, HealthyAllocs: 1, ProgressDeadline: time.Minute,
			RequireProgressBy: passed}}, []string{"g"}},
		{"deadline passed but complete", map[string]sdk.DeploymentState{"g": {DesiredTotal: 2, HealthyAllocs: 2, ProgressDeadline: time.Minute,
			RequireProgressBy: passed}}, nil},
		{"deadline passed, healthy canaries await promotion", map[string]sdk.DeploymentState{"g": {DesiredTotal: 2, DesiredCanaries: 1,
			HealthyAllocs: 1, ProgressDeadline: time.Minute, RequireProgressBy: passed}}, nil},
		{"deadline passed, canaries not healthy", map[string]sdk.DeploymentState{"g": {DesiredTotal: 2, DesiredCanaries: 2,
			HealthyAllocs: 1, ProgressDeadline: time.Minute, RequireProgressBy: passed}}, []string{"g"}},
		{"deadline passed, promoted but not all healthy", map[string]sdk.DeploymentState{"g": {DesiredTotal: 2, DesiredCanaries: 1,
			Promoted: true, HealthyAllocs: 1, ProgressDeadline: time.Minute, RequireProgressBy: passed}}, []string{"g"}},
		{"no progress deadline", map[string]sdk.DeploymentState{"g": {DesiredTotal: 2, RequireProgressBy: now.Add(-time.Hour)}}, nil},
		// One group's deadline fails every group that falls short, those
		// without a deadline or with a later one too (and their
		// auto_revert counts).
		{"one group late, another short", map[string]sdk.DeploymentState{
			"a": {DesiredTotal: 1, ProgressDeadline: time.Minute, RequireProgressBy: passed},
			"b": {DesiredTotal: 1, ProgressDeadline: time.Hour, RequireProgressBy: ahead},
			"c": {DesiredTotal: 1, HealthyAllocs: 1, ProgressDeadline: time.Hour, RequireProgressBy: ahead}}, []string{"a", "b"}},
		{"a done group's passed deadline does not count", map[string]sdk.DeploymentState{
			"a": {DesiredTotal: 1, HealthyAllocs: 1, ProgressDeadline: time.Minute, RequireProgressBy: passed},
			"b": {DesiredTotal: 1, ProgressDeadline: time.Hour, RequireProgressBy: ahead}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &sdk.Deployment{ID: "d", Status: sdk.DeploymentStatusRunning, TaskGroups: map[string]*sdk.DeploymentState{}}
			for name, st := range tc.groups {
				d.TaskGroups[name] = &st
			}
			if late := lateGroups(d, now); !slices.Equal(late, tc.want) {
				t.Fatalf("late groups = %v, want %v", late, tc.want)
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
			failGroups, reschedule := unhealthy(store.Snapshot(), d, now)
			if slices.Equal(failGroups, []string{"g"}) != tc.fail || (len(reschedule) == 1) != tc.reschedule {
				t.Fatalf("unhealthy = %v %v, want fail %v, reschedule %v", failGroups, reschedule, tc.fail, tc.reschedule)
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

// watchFixture is a store holding job "web" of groups a and b at version
// 0 (stable) and 1 (a new spec), deployment d of version 1 with the given
// group states, and allocs (of version 1, in d); evals of the job are
// written at index 10.
func watchFixture(t *testing.T, status string, groups map[string]*sdk.DeploymentState, allocs []*sdk.Allocation, evals ...*sdk.Evaluation) *state.Snapshot {
	t.Helper()
	store, _ := state.NewStore()
	job := func(image string) *sdk.Job {
		j := &sdk.Job{Namespace: "default", ID: "web", Type: sdk.JobTypeService, Priority: 50}
		for _, g := range []string{"a", "b"} {
			j.TaskGroups = append(j.TaskGroups, &sdk.TaskGroup{Name: g, Count: 1, ReschedulePolicy: &sdk.ReschedulePolicy{},
				Tasks: []*sdk.Task{{Name: "t", Driver: "exec", Config: sdk.Opaque{"image": image}}}})
		}
		return j
	}
	steps := []func(tx *state.Txn) error{
		func(tx *state.Txn) error { return tx.UpsertJob(job("v0")) },
		func(tx *state.Txn) error { return tx.SetJobStability("default", "web", 0, true) },
		func(tx *state.Txn) error { return tx.UpsertJob(job("v1")) },
		func(tx *state.Txn) error {
			v1 := tx.Job("default", "web")
			if err := tx.UpsertDeployment(&sdk.Deployment{ID: "d", Namespace: "default", JobID: "web", JobVersion: 1,
				JobCreateIndex: v1.CreateIndex, Status: status, TaskGroups: groups}); err != nil {
				return err
			}
			for _, a := range allocs {
				a.Namespace, a.JobID, a.Job, a.JobVersion, a.DeploymentID = "default", "web", v1, 1, "d"
				if err := tx.UpsertAlloc(a); err != nil {
					return err
				}
			}
			return nil
		},
	}
	for i, step := range steps {
		if err := store.Write(uint64(i+1), step); err != nil {
			t.Fatal(err)
		}
	}
	if len(evals) > 0 {
		if err := store.Write(10, func(tx *state.Txn) error {
			for _, e := range evals {
				if err := tx.UpsertEval(e); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return store.Snapshot()
}

func deployAlloc(id, group string, healthy *bool, canary bool, healthIndex uint64) *sdk.Allocation {
	return &sdk.Allocation{ID: id, TaskGroup: group, NodeID: "n1", DesiredStatus: sdk.AllocDesiredStatusRun,
		ClientStatus:     sdk.AllocClientStatusRunning,
		DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: healthy, Canary: canary, ModifyIndex: healthIndex}}
}

func decideOnce(snap *state.Snapshot, now time.Time) []deploymentAction {
	n := 0
	return newDeploymentWatch().decide(snap, now, func() string { n++; return fmt.Sprintf("e%d", n) })
}

// What the watcher decides against Nomad v1.6.1's watcher, case by case
// (a differential found each of these different before).
func TestDeploymentWatch_Decisions(t *testing.T) {
	now := time.Unix(10_000, 0)
	yes, no := true, false
	running, paused := sdk.DeploymentStatusRunning, sdk.DeploymentStatusPaused
	type want struct {
		kind   deploymentActionKind // 0: no action
		desc   string
		revert bool
	}
	cases := []struct {
		name   string
		status string
		groups map[string]*sdk.DeploymentState
		allocs []*sdk.Allocation
		evals  []*sdk.Evaluation
		want   want
	}{
		{"unhealthy allocations of two groups: the one with auto_revert reverts", running,
			map[string]*sdk.DeploymentState{"a": {DesiredTotal: 1, UnhealthyAllocs: 1}, "b": {DesiredTotal: 1, UnhealthyAllocs: 1, AutoRevert: true}},
			[]*sdk.Allocation{deployAlloc("x1", "a", &no, false, 4), deployAlloc("x2", "b", &no, false, 4)}, nil,
			want{actionFail, "Failed due to unhealthy allocations - rolling back to job version 0", true}},
		{"a late group without auto_revert, another short with it: reverts", running,
			map[string]*sdk.DeploymentState{
				"a": {DesiredTotal: 1, ProgressDeadline: time.Second, RequireProgressBy: now.Add(-time.Second)},
				"b": {DesiredTotal: 1, ProgressDeadline: time.Hour, RequireProgressBy: now.Add(time.Hour), AutoRevert: true}},
			nil, nil, want{actionFail, "Failed due to progress deadline - rolling back to job version 0", true}},
		{"healthy canaries awaiting manual promotion past the deadline wait", running,
			map[string]*sdk.DeploymentState{"a": {DesiredTotal: 1, DesiredCanaries: 1, HealthyAllocs: 1, PlacedCanaries: []string{"c"},
				ProgressDeadline: time.Second, RequireProgressBy: now.Add(-time.Second)}},
			[]*sdk.Allocation{deployAlloc("c", "a", &yes, true, 4)}, []*sdk.Evaluation{{ID: "seen", Namespace: "default", JobID: "web", Status: sdk.EvalStatusComplete}},
			want{}},
		{"auto-promote waits for a group promoted by hand that does not auto-promote", running,
			map[string]*sdk.DeploymentState{
				"a": {DesiredTotal: 1, DesiredCanaries: 1, HealthyAllocs: 1, Promoted: true, PlacedCanaries: []string{"c1"}},
				"b": {DesiredTotal: 1, DesiredCanaries: 1, HealthyAllocs: 1, AutoPromote: true, PlacedCanaries: []string{"c2"}}},
			[]*sdk.Allocation{deployAlloc("c1", "a", &yes, false, 4), deployAlloc("c2", "b", &yes, true, 4)},
			[]*sdk.Evaluation{{ID: "seen", Namespace: "default", JobID: "web", Status: sdk.EvalStatusComplete}}, want{}},
		{"a paused deployment fails on an unhealthy allocation", paused,
			map[string]*sdk.DeploymentState{"a": {DesiredTotal: 1, UnhealthyAllocs: 1, AutoRevert: true}},
			[]*sdk.Allocation{deployAlloc("x", "a", &no, false, 4)}, nil,
			want{actionFail, "Failed due to unhealthy allocations - rolling back to job version 0", true}},
		{"a paused deployment does not fail at its deadline", paused,
			map[string]*sdk.DeploymentState{"a": {DesiredTotal: 1, ProgressDeadline: time.Second, RequireProgressBy: now.Add(-time.Second)}},
			nil, nil, want{}},
		{"health the job's latest eval saw makes no eval", running,
			map[string]*sdk.DeploymentState{"a": {DesiredTotal: 2, HealthyAllocs: 1}},
			[]*sdk.Allocation{deployAlloc("h", "a", &yes, false, 10)},
			[]*sdk.Evaluation{{ID: "with-health", Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending}}, want{}},
		{"health newer than the job's latest eval makes one", running,
			map[string]*sdk.DeploymentState{"a": {DesiredTotal: 2, HealthyAllocs: 1}},
			[]*sdk.Allocation{deployAlloc("h", "a", &yes, false, 11)},
			[]*sdk.Evaluation{{ID: "older", Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending}}, want{kind: actionEval}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := watchFixture(t, tc.status, tc.groups, tc.allocs, tc.evals...)
			got := decideOnce(snap, now)
			if tc.want.kind == 0 {
				if len(got) != 0 {
					t.Fatalf("actions %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].kind != tc.want.kind || got[0].desc != tc.want.desc || (got[0].revert != nil) != tc.want.revert {
				t.Fatalf("actions %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A deployment of a group with auto_revert and no stable version to go
// back to says so when it fails (as Nomad's watcher and fail endpoint
// do; its health endpoint does not).
func TestDeploymentWatch_NoStableVersionToRevertTo(t *testing.T) {
	store, _ := state.NewStore()
	no := false
	err := store.Write(1, func(tx *state.Txn) error {
		if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "web", Type: sdk.JobTypeService,
			TaskGroups: []*sdk.TaskGroup{{Name: "a", Count: 1}}}); err != nil {
			return err
		}
		if err := tx.UpsertDeployment(&sdk.Deployment{ID: "d", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning,
			TaskGroups: map[string]*sdk.DeploymentState{"a": {DesiredTotal: 1, UnhealthyAllocs: 1, AutoRevert: true}}}); err != nil {
			return err
		}
		a := deployAlloc("x", "a", &no, false, 1)
		a.Namespace, a.JobID, a.DeploymentID = "default", "web", "d"
		return tx.UpsertAlloc(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	got := decideOnce(store.Snapshot(), time.Unix(10_000, 0))
	if len(got) != 1 || got[0].desc != "Failed due to unhealthy allocations - no stable job version to auto revert to" || got[0].revert != nil {
		t.Fatalf("actions %+v", got)
	}
}

// Allocations becoming healthy one after the other within a second make
// one eval, as Nomad's watcher batches them; a later one makes another.
func TestDeploymentWatch_EvalsAreBatched(t *testing.T) {
	yes := true
	now := time.Unix(10_000, 0)
	snap := watchFixture(t, sdk.DeploymentStatusRunning, map[string]*sdk.DeploymentState{"a": {DesiredTotal: 3, HealthyAllocs: 1}},
		[]*sdk.Allocation{deployAlloc("h", "a", &yes, false, 11)},
		&sdk.Evaluation{ID: "older", Namespace: "default", JobID: "web", Status: sdk.EvalStatusPending})
	w := newDeploymentWatch()
	newID := func() string { return "e" }
	for i, tc := range []struct {
		at   time.Duration
		want int
	}{{0, 1}, {300 * time.Millisecond, 0}, {600 * time.Millisecond, 0}, {1100 * time.Millisecond, 1}} {
		if got := w.decide(snap, now.Add(tc.at), newID); len(got) != tc.want {
			t.Fatalf("pass %d at +%v: %d actions, want %d", i, tc.at, len(got), tc.want)
		}
	}
}
