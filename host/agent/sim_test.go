package agent

import (
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/sdk"
)

// TestSimNext_ReportsHealthAfterMinHealthyTime: as Nomad's health
// watcher, a dev node judges a service allocation healthy once it has run
// for min_healthy_time, unhealthy once healthy_deadline passed without
// that: by the group's update block within a deployment, by its migrate
// block (Nomad's defaults without one) outside one.
func TestSimNext_ReportsHealthAfterMinHealthyTime(t *testing.T) {
	now := time.Unix(1000, 0)
	group := func(u *sdk.UpdateStrategy, m *sdk.MigrateStrategy) *sdk.Job {
		return &sdk.Job{Type: sdk.JobTypeService, TaskGroups: []*sdk.TaskGroup{{Name: "g", Update: u, Migrate: m}}}
	}
	job := group(&sdk.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}, nil)
	manual := group(&sdk.UpdateStrategy{MaxParallel: 1, HealthCheck: "manual", MinHealthyTime: 10 * time.Second}, nil)
	migrate := group(nil, &sdk.MigrateStrategy{MaxParallel: 1, MinHealthyTime: 30 * time.Second, HealthyDeadline: 2 * time.Minute})
	batch := &sdk.Job{Type: sdk.JobTypeBatch, TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	// A task that fails every 2 s and restarts: never up for
	// min_healthy_time.
	flap := func(j *sdk.Job) *sdk.Job {
		j.TaskGroups[0].Tasks = []*sdk.Task{{Name: "t", Driver: "mock_driver", Config: sdk.Opaque{"run_for": "2s", "exit_code": 1},
			RestartPolicy: &sdk.RestartPolicy{Mode: "delay", Delay: time.Second}}}
		return j
	}
	flapping := flap(group(&sdk.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}, nil))
	flappingMigrate := flap(group(nil, &sdk.MigrateStrategy{MaxParallel: 1, MinHealthyTime: 30 * time.Second, HealthyDeadline: 2 * time.Minute}))
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixNano() }
	healthy := true
	cases := []struct {
		name          string
		job           *sdk.Job
		alloc         sdk.Allocation
		wantUpdate    bool
		wantHealthy   bool
		wantUnhealthy bool
	}{
		{"pending starts running", job, sdk.Allocation{ClientStatus: sdk.AllocClientStatusPending, DeploymentID: "d"}, true, false, false},
		{"running too briefly", job, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: ago(5 * time.Second)}, false, false, false},
		{"running long enough", job, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: ago(11 * time.Second)}, true, true, false},
		// QA found allocations updated in place (a scale-up, a revert)
		// reported unhealthy at once: the deadline was counted from their
		// creation. A task that runs is judged from its last change.
		{"updated in place long after it was created", job, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			CreateTime: ago(time.Hour), ModifyTime: ago(5 * time.Second)}, false, false, false},
		{"updated in place, then running long enough", job, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			CreateTime: ago(time.Hour), ModifyTime: ago(11 * time.Second)}, true, true, false},
		{"restarting too often, before healthy_deadline", flapping, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			CreateTime: ago(30 * time.Second), ModifyTime: ago(20 * time.Second)}, false, false, false},
		{"restarting too often, past healthy_deadline", flapping, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			CreateTime: ago(2 * time.Minute), ModifyTime: ago(5 * time.Second)}, true, false, true},
		{"already healthy", job, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}, ModifyTime: ago(time.Hour)}, false, false, false},
		{"manual health: left to the operator", manual, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning, DeploymentID: "d",
			ModifyTime: ago(time.Hour)}, false, false, false},
		{"outside a deployment, by Nomad's default migrate block", job, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning,
			ModifyTime: ago(11 * time.Second)}, true, true, false},
		{"outside a deployment, running too briefly for the migrate block", migrate, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning,
			ModifyTime: ago(20 * time.Second)}, false, false, false},
		{"outside a deployment, running long enough for the migrate block", migrate, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning,
			ModifyTime: ago(31 * time.Second)}, true, true, false},
		{"outside a deployment, restarting too often past the migrate block's healthy_deadline", flappingMigrate, sdk.Allocation{
			ClientStatus: sdk.AllocClientStatusRunning, CreateTime: ago(3 * time.Minute), ModifyTime: ago(20 * time.Second)}, true, false, true},
		{"a batch allocation's health is not judged", batch, sdk.Allocation{ClientStatus: sdk.AllocClientStatusRunning,
			CreateTime: ago(time.Second), ModifyTime: ago(time.Second)}, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alloc
			a.ID, a.Job, a.TaskGroup, a.DesiredStatus = "a1", tc.job, "g", sdk.AllocDesiredStatusRun
			if a.CreateTime == 0 {
				a.CreateTime = a.ModifyTime
			}
			u, ok := simNext(&a, now)
			if ok != tc.wantUpdate || u.DeploymentStatus.IsHealthy() != tc.wantHealthy || u.DeploymentStatus.IsUnhealthy() != tc.wantUnhealthy {
				t.Fatalf("update %v %+v (%+v), want update %v healthy %v unhealthy %v", ok, u, u.DeploymentStatus,
					tc.wantUpdate, tc.wantHealthy, tc.wantUnhealthy)
			}
		})
	}
}

// TestSimNext_MockDriverOptions: mock_driver tasks fail to start with
// start_error, and exit after run_for with exit_code (failed) or 0
// (complete), unhealthy if their health was not judged yet (a service
// allocation, in a deployment or not); other drivers ignore those
// options.
func TestSimNext_MockDriverOptions(t *testing.T) {
	now := time.Unix(1000, 0)
	job := func(driver string, config sdk.Opaque) *sdk.Job {
		// Nothing runs long enough to be judged healthy.
		return &sdk.Job{Type: sdk.JobTypeService, TaskGroups: []*sdk.TaskGroup{{Name: "g",
			Update:  &sdk.UpdateStrategy{MaxParallel: 1, MinHealthyTime: time.Minute, HealthyDeadline: 5 * time.Minute},
			Migrate: &sdk.MigrateStrategy{MaxParallel: 1, MinHealthyTime: time.Minute, HealthyDeadline: 5 * time.Minute},
			Tasks:   []*sdk.Task{{Name: "ok", Driver: "mock_driver"}, {Name: "t", Driver: driver, Config: config}}}}}
	}
	batch := job("mock_driver", sdk.Opaque{"run_for": "5s", "exit_code": 3})
	batch.Type = sdk.JobTypeBatch
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
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 3", true},
		{"a batch allocation has no health", batch, sdk.AllocClientStatusRunning, "",
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 3", false},
		{"exit code as HCL numbers decode", job("mock_driver", sdk.Opaque{"run_for": "5s", "exit_code": float64(1)}), sdk.AllocClientStatusRunning, "d",
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 1", true},
		{"exits cleanly after run_for", job("mock_driver", sdk.Opaque{"run_for": "5s"}), sdk.AllocClientStatusRunning, "",
			true, sdk.AllocClientStatusComplete, "All tasks have completed", true},
		// As Nomad's health tracker: a task that finished before it was
		// judged healthy is unhealthy.
		{"exits cleanly in a deployment before it is healthy", job("mock_driver", sdk.Opaque{"run_for": "5s"}), sdk.AllocClientStatusRunning, "d",
			true, sdk.AllocClientStatusComplete, "All tasks have completed", true},
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

// TestDevNode_DriversSayWhenFingerprinted: a dev node's drivers carry the
// time of their fingerprint, as a Nomad client's do, which nomad node
// status -verbose shows.
func TestDevNode_DriversSayWhenFingerprinted(t *testing.T) {
	before := time.Now()
	n := devNode(0, "127.0.0.1:4646")
	if len(n.Drivers) == 0 {
		t.Fatal("no drivers")
	}
	for name, d := range n.Drivers {
		if d.UpdateTime.Before(before.Truncate(time.Second)) || d.UpdateTime.After(time.Now()) {
			t.Errorf("driver %s: UpdateTime %v", name, d.UpdateTime)
		}
	}
}

// TestSimNext_LifecycleTasks: as on Nomad's clients, an allocation's
// tasks end with its main tasks: a prestart or poststart task that exits
// leaves a service running (it is not replaced over and over), and one
// that would fail after the main tasks ended does not fail it.
func TestSimNext_LifecycleTasks(t *testing.T) {
	now := time.Unix(1000, 0)
	created := now.Add(-10 * time.Second).UnixNano()
	mock := func(name, hook string, sidecar bool, config sdk.Opaque) *sdk.Task {
		t := &sdk.Task{Name: name, Driver: "mock_driver", Config: config,
			RestartPolicy: &sdk.RestartPolicy{Mode: "fail"}}
		if hook != "" {
			t.Lifecycle = &sdk.TaskLifecycle{Hook: hook, Sidecar: sidecar}
		}
		return t
	}
	docker := &sdk.Task{Name: "main", Driver: "docker"}
	healthy := true
	cases := []struct {
		name       string
		typ        string
		tasks      []*sdk.Task
		wantUpdate bool
		wantStatus string
		wantDesc   string
	}{
		{"a prestart task that exits leaves the service running", sdk.JobTypeService,
			[]*sdk.Task{mock("init", sdk.TaskLifecycleHookPrestart, false, sdk.Opaque{"run_for": "1s"}), docker}, false, "", ""},
		{"a poststart sidecar that exits leaves the service running", sdk.JobTypeService,
			[]*sdk.Task{docker, mock("side", sdk.TaskLifecycleHookPoststart, true, sdk.Opaque{"run_for": "2s"})}, false, "", ""},
		{"a prestart task runs no longer than the batch's main task", sdk.JobTypeBatch,
			[]*sdk.Task{mock("init", sdk.TaskLifecycleHookPrestart, false, sdk.Opaque{"run_for": "1s"}),
				mock("main", "", false, sdk.Opaque{"run_for": "30s"})}, false, "", ""},
		{"the main task's end ends the allocation, its sidecar with it", sdk.JobTypeService,
			[]*sdk.Task{mock("side", sdk.TaskLifecycleHookPrestart, true, nil), mock("main", "", false, sdk.Opaque{"run_for": "5s"})},
			true, sdk.AllocClientStatusComplete, "All tasks have completed"},
		{"a prestart task that fails fails the allocation", sdk.JobTypeService,
			[]*sdk.Task{mock("init", sdk.TaskLifecycleHookPrestart, false, sdk.Opaque{"run_for": "2s", "exit_code": 1}), docker},
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 1"},
		{"a sidecar that would fail after the main task ended does not", sdk.JobTypeService,
			[]*sdk.Task{mock("main", "", false, sdk.Opaque{"run_for": "3s"}),
				mock("side", sdk.TaskLifecycleHookPoststart, true, sdk.Opaque{"run_for": "20s", "exit_code": 1})},
			true, sdk.AllocClientStatusComplete, "All tasks have completed"},
		// Whichever comes first in the group, a main task's failure counts.
		{"a main task fails the allocation, after a sidecar that would fail later", sdk.JobTypeService,
			[]*sdk.Task{mock("side", sdk.TaskLifecycleHookPoststart, true, sdk.Opaque{"run_for": "20s", "exit_code": 1}),
				mock("main", "", false, sdk.Opaque{"run_for": "3s", "exit_code": 2})},
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 2"},
		{"a main task fails the allocation, before a sidecar that would fail later", sdk.JobTypeService,
			[]*sdk.Task{mock("main", "", false, sdk.Opaque{"run_for": "3s", "exit_code": 2}),
				mock("side", sdk.TaskLifecycleHookPoststart, true, sdk.Opaque{"run_for": "20s", "exit_code": 1})},
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 2"},
		{"the first of two failing tasks gives the exit code", sdk.JobTypeService,
			[]*sdk.Task{mock("main", "", false, sdk.Opaque{"run_for": "8s", "exit_code": 2}),
				mock("init", sdk.TaskLifecycleHookPrestart, false, sdk.Opaque{"run_for": "2s", "exit_code": 3})},
			true, sdk.AllocClientStatusFailed, "Task exited with exit code 3"},
		// Restarted, a prestart task's last exit (2s, 2s of delay, 2s
		// again: 6s) comes after the main task's end (5s).
		{"a prestart task whose restarts outlast the main task does not fail it", sdk.JobTypeService,
			[]*sdk.Task{{Name: "init", Driver: "mock_driver", Config: sdk.Opaque{"run_for": "2s", "exit_code": 1},
				Lifecycle:     &sdk.TaskLifecycle{Hook: sdk.TaskLifecycleHookPrestart},
				RestartPolicy: &sdk.RestartPolicy{Mode: "fail", Attempts: 1, Delay: 2 * time.Second}},
				mock("main", "", false, sdk.Opaque{"run_for": "5s"})},
			true, sdk.AllocClientStatusComplete, "All tasks have completed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &sdk.Job{Type: tc.typ, TaskGroups: []*sdk.TaskGroup{{Name: "g", Tasks: tc.tasks}}}
			// Judged healthy already: the only report left is its end.
			a := sdk.Allocation{ID: "a1", Job: job, TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusRun,
				ClientStatus: sdk.AllocClientStatusRunning, CreateTime: created, ModifyTime: created,
				DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}}
			u, ok := simNext(&a, now)
			if ok != tc.wantUpdate || u.ClientStatus != tc.wantStatus || u.ClientDescription != tc.wantDesc {
				t.Fatalf("update %v %+v, want %v %q %q", ok, u, tc.wantUpdate, tc.wantStatus, tc.wantDesc)
			}
		})
	}
}

// TestSimTaskStates: each transition a dev node reports gives every task a
// Nomad-shaped state whose events follow those reported before, through
// the raft log's codec; a task ends with its own exit code, and a task's
// failure to start kills its siblings.
func TestSimTaskStates(t *testing.T) {
	now := time.Unix(1000, 0)
	task := func(name string, config sdk.Opaque) *sdk.Task {
		return &sdk.Task{Name: name, Driver: "mock_driver", Config: config}
	}
	job := func(tasks ...*sdk.Task) *sdk.Job {
		return &sdk.Job{Type: sdk.JobTypeBatch, TaskGroups: []*sdk.TaskGroup{{Name: "g", Tasks: tasks}}}
	}
	// roundTrip stores a's update as the FSM would, through msgpack.
	roundTrip := func(t *testing.T, a *sdk.Allocation, u server.AllocUpdate) *sdk.Allocation {
		t.Helper()
		c := *a
		c.ClientStatus, c.TaskStates = u.ClientStatus, u.TaskStates
		b, err := c.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		var back sdk.Allocation
		if _, err := back.UnmarshalMsg(b); err != nil {
			t.Fatal(err)
		}
		return &back
	}
	types := func(st sdk.Opaque) []string {
		var out []string
		for _, e := range st["Events"].([]any) {
			out = append(out, e.(map[string]any)["Type"].(string))
		}
		return out
	}
	check := func(t *testing.T, a *sdk.Allocation, name, state string, failed bool, events ...string) {
		t.Helper()
		st := a.TaskStates[name]
		if st["State"] != state || st["Failed"] != failed || !slices.Equal(types(st), events) {
			t.Fatalf("task %s: %s failed %v events %v, want %s %v %v", name, st["State"], st["Failed"], types(st), state, failed, events)
		}
	}

	t.Run("run then exit with each task's code", func(t *testing.T) {
		a := &sdk.Allocation{ID: "a", TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
			CreateTime: now.UnixNano(), Job: job(task("ok", sdk.Opaque{"run_for": "2s"}), task("bad", sdk.Opaque{"run_for": "3s", "exit_code": "3"}))}
		u, ok := simNext(a, now)
		if !ok || u.ClientStatus != sdk.AllocClientStatusRunning {
			t.Fatalf("start: %v %+v", ok, u)
		}
		a = roundTrip(t, a, u)
		check(t, a, "ok", "running", false, "Received", "Task Setup", "Started")
		u, ok = simNext(a, now.Add(3*time.Second))
		if !ok || u.ClientStatus != sdk.AllocClientStatusFailed {
			t.Fatalf("exit: %v %+v", ok, u)
		}
		a = roundTrip(t, a, u)
		check(t, a, "ok", "dead", false, "Received", "Task Setup", "Started", "Terminated")
		check(t, a, "bad", "dead", true, "Received", "Task Setup", "Started", "Terminated")
		if _, started := a.TaskStates["bad"]["StartedAt"].(time.Time); !started {
			t.Fatalf("started at %#v", a.TaskStates["bad"]["StartedAt"])
		}
	})
	t.Run("a failed start kills the siblings", func(t *testing.T) {
		a := &sdk.Allocation{ID: "a", TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending,
			Job: job(task("main", nil), task("broken", sdk.Opaque{"start_error": "no image"}))}
		u, _ := simNext(a, now)
		a = roundTrip(t, a, u)
		check(t, a, "broken", "dead", true, "Received", "Task Setup", "Driver Failure")
		check(t, a, "main", "dead", false, "Received", "Task Setup", "Sibling Task Failed", "Killed")
	})
	t.Run("stopped by the server", func(t *testing.T) {
		a := &sdk.Allocation{ID: "a", TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusStop, ClientStatus: sdk.AllocClientStatusRunning,
			Job: job(task("main", nil))}
		u, _ := simNext(a, now)
		a = roundTrip(t, a, u)
		check(t, a, "main", "dead", false, "Killing", "Killed")
	})
	t.Run("health leaves the tasks as they are", func(t *testing.T) {
		j := job(task("main", nil))
		j.Type = sdk.JobTypeService
		j.TaskGroups[0].Update = &sdk.UpdateStrategy{MaxParallel: 1}
		a := &sdk.Allocation{ID: "a", TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
			DeploymentID: "d", Job: j}
		if u, ok := simNext(a, now); !ok || u.DeploymentStatus == nil || u.TaskStates != nil {
			t.Fatalf("health report %v %+v", ok, u)
		}
	})
	t.Run("at most ten events", func(t *testing.T) {
		var old []any
		for i := 0; i < 12; i++ {
			old = append(old, map[string]any{"Type": "Old"})
		}
		a := &sdk.Allocation{ID: "a", TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusStop, ClientStatus: sdk.AllocClientStatusRunning,
			Job: job(task("main", nil)), TaskStates: map[string]sdk.Opaque{"main": {"Events": old}}}
		u, _ := simNext(a, now)
		if ev := u.TaskStates["main"]["Events"].([]any); len(ev) != simMaxEvents || ev[len(ev)-1].(map[string]any)["Type"] != "Killed" {
			t.Fatalf("events %v", ev)
		}
	})
}

// A failing mock_driver task restarts as its restart block says before it
// fails its allocation, as Nomad's task runner does: in mode "fail" after
// its attempts (its task state counting them), in mode "delay" never.
func TestSimRestarts(t *testing.T) {
	start := time.Unix(1000, 0)
	job := func(mode string) *sdk.Job {
		return &sdk.Job{Type: sdk.JobTypeBatch, TaskGroups: []*sdk.TaskGroup{{Name: "g",
			RestartPolicy: &sdk.RestartPolicy{Attempts: 2, Delay: time.Second, Interval: time.Hour, Mode: mode},
			Tasks:         []*sdk.Task{{Name: "t", Driver: "mock_driver", Config: sdk.Opaque{"run_for": "5s", "exit_code": 3}}}}}}
	}
	alloc := func(j *sdk.Job) *sdk.Allocation {
		return &sdk.Allocation{ID: "a1", Job: j, TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusRun,
			ClientStatus: sdk.AllocClientStatusRunning, CreateTime: start.UnixNano(), ModifyTime: start.UnixNano()}
	}
	// Runs end at 5s, 11s and 17s (5s runs, 1s apart): the third exit,
	// after two restarts, fails the allocation.
	for _, tc := range []struct {
		mode    string
		after   time.Duration
		failed  bool
		restart int
	}{
		{"fail", 4 * time.Second, false, 0},
		{"fail", 6 * time.Second, false, 0},
		{"fail", 16 * time.Second, false, 0},
		{"fail", 17 * time.Second, true, 2},
		{"delay", time.Hour, false, 0},
	} {
		a := alloc(job(tc.mode))
		u, ok := simNext(a, start.Add(tc.after))
		if ok != tc.failed || (ok && u.ClientStatus != sdk.AllocClientStatusFailed) {
			t.Fatalf("mode %s after %s: update %v %+v", tc.mode, tc.after, ok, u)
		}
		if !ok {
			continue
		}
		st := u.TaskStates["t"]
		events, _ := st["Events"].([]any)
		last, _ := events[len(events)-1].(map[string]any)
		if st["Restarts"] != tc.restart || last["Type"] != "Not Restarting" || len(events) != 2*tc.restart+2 {
			t.Fatalf("mode %s: task state %+v", tc.mode, st)
		}
	}
}
