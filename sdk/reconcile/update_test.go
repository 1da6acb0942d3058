package reconcile_test

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// TestTasksUpdated_CopyIsNoChange: copying a job (as a new version that
// only scales it does) or decoding it turns its nil maps and slices into
// empty ones; that is no change to its tasks.
func TestTasksUpdated_CopyIsNoChange(t *testing.T) {
	job := sdktest.Job("web", 1)
	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 3
	decoded := &sdk.Job{}
	b, err := job.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decoded.UnmarshalMsg(b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		next *sdk.Job
	}{
		{"copy", scaled},
		{"decoded", decoded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pair := range [][2]*sdk.Job{{job, tc.next}, {tc.next, job}} {
				if changed, why := reconcile.TasksUpdated(pair[0], pair[1], "web"); changed {
					t.Fatalf("TasksUpdated = true (%s), want no change", why)
				}
			}
		})
	}
}

// TestTasksUpdated_Table: what needs new allocations and what is applied
// in place, as Nomad's tasksUpdated decides.
func TestTasksUpdated_Table(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(j *sdk.Job)
		why    string // "" for an in-place update
	}{
		{"count", func(j *sdk.Job) { j.TaskGroups[0].Count = 5 }, ""},
		{"constraints", func(j *sdk.Job) {
			j.Constraints = append(j.Constraints, &sdk.Constraint{LTarget: "${attr.arch}", RTarget: "amd64", Operand: "="})
		}, ""},
		{"driver", func(j *sdk.Job) { j.TaskGroups[0].Tasks[0].Driver = "exec" }, "task driver"},
		{"env", func(j *sdk.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"A": "1"} }, "task env"},
		{"job consul namespace", func(j *sdk.Job) { j.ConsulNamespace = "other" }, "consul namespace"},
		{"group consul namespace", func(j *sdk.Job) { j.TaskGroups[0].Consul = sdk.Opaque{"Namespace": "other"} }, "consul namespace"},
		{"lifecycle", func(j *sdk.Job) {
			j.TaskGroups[0].Tasks[0].Lifecycle = &sdk.TaskLifecycle{Hook: sdk.TaskLifecycleHookPoststart}
		}, "task lifecycle"},
		{"device requests reordered", func(j *sdk.Job) { slices.Reverse(j.TaskGroups[0].Tasks[0].Resources.Devices) }, ""},
		{"a device request's constraints reordered", func(j *sdk.Job) {
			slices.Reverse(j.TaskGroups[0].Tasks[0].Resources.Devices[0].Constraints)
		}, ""},
		{"a device request's count", func(j *sdk.Job) { j.TaskGroups[0].Tasks[0].Resources.Devices[1].Count = 2 }, "task resources"},
		{"a device request's constraint", func(j *sdk.Job) {
			j.TaskGroups[0].Tasks[0].Resources.Devices[0].Constraints[1].RTarget = "8 GiB"
		}, "task resources"},
		{"a second request for the same device", func(j *sdk.Job) {
			r := j.TaskGroups[0].Tasks[0].Resources
			r.Devices = append(r.Devices, &sdk.RequestedDevice{Name: "nvidia/gpu", Count: 1})
		}, "task resources"},
		{"group names the job's namespace", func(j *sdk.Job) {
			j.ConsulNamespace, j.TaskGroups[0].Consul = "", sdk.Opaque{"Namespace": "ns"}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := sdktest.Job("web", 1)
			base.ConsulNamespace = "ns"
			base.TaskGroups[0].Tasks[0].Resources.Devices = []*sdk.RequestedDevice{
				{Name: "nvidia/gpu", Count: 1, Constraints: []*sdk.Constraint{
					{LTarget: "${device.model}", RTarget: "1080ti", Operand: "="},
					{LTarget: "${device.attr.memory}", RTarget: "4 GiB", Operand: ">="}}},
				{Name: "fpga", Count: 1}}
			next := base.Copy()
			tc.change(next)
			for _, pair := range [][2]*sdk.Job{{base, next}, {next, base}} {
				changed, why := reconcile.TasksUpdated(pair[0], pair[1], "web")
				if changed != (tc.why != "") || why != tc.why {
					t.Fatalf("TasksUpdated = %v (%q), want %q", changed, why, tc.why)
				}
			}
		})
	}
}
