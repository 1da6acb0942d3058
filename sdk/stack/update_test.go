package stack_test

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/sdktest"
)

func TestStack_UpdateFunc(t *testing.T) {
	cases := []struct {
		name string
		// change makes the new version from a copy of the running one.
		change          func(j *sdk.Job)
		wantIgnore      bool
		wantDestructive bool
	}{
		{"same version", nil, true, false},
		{"count only", func(j *sdk.Job) { j.TaskGroups[0].Count = 5 }, false, false},
		{"task changed", func(j *sdk.Job) { j.TaskGroups[0].Tasks[0].Resources.MemoryMB = 512 }, false, true},
		{"node left the datacenters", func(j *sdk.Job) { j.Datacenters = []string{"dc2"} }, false, true},
		{"node no longer feasible", func(j *sdk.Job) {
			j.Constraints = []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: sdk.ConstraintEqual}}
		}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.New()
			h.UpsertNode(sdktest.Node("n1", 4000, 4096))
			job := sdktest.Job("web", 1)
			h.UpsertJob(job)
			running := &sdk.Allocation{ID: "a0", Namespace: "default", JobID: "web", TaskGroup: "web", Name: "web.web[0]",
				NodeID: "n1", JobVersion: job.Version, AllocatedResources: sdk.RequestedResources(job.TaskGroups[0]),
				DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
				Metrics: &sdk.AllocMetric{NodesEvaluated: 3}}
			// What it was given on its node: an in-place update keeps it.
			running.AllocatedResources.Tasks["app"].Networks = []*sdk.NetworkResource{{DynamicPorts: []sdk.Port{{Label: "http", Value: 23456}}}}
			h.UpsertAlloc(running)
			if tc.change != nil {
				next := job.Copy()
				tc.change(next)
				h.UpsertJob(next)
			}
			st, plan, state := webStack(t, h, "e2")
			evalID, current := plan.EvalID, state.Job("default", "web")

			existing := state.Alloc("a0")
			ignore, destructive, updated := st.UpdateFunc(evalID)(existing, current, current.TaskGroups[0])
			if ignore != tc.wantIgnore || destructive != tc.wantDestructive {
				t.Fatalf("ignore, destructive = %v, %v; want %v, %v", ignore, destructive, tc.wantIgnore, tc.wantDestructive)
			}
			inPlace := !ignore && !destructive
			if inPlace != (updated != nil) {
				t.Fatalf("updated = %+v", updated)
			}
			if inPlace && (updated.JobVersion != current.Version || updated.JobModifyIndex != current.JobModifyIndex ||
				updated.EvalID != evalID || updated.NodeID != "n1" || updated.Job != nil) {
				t.Fatalf("in-place update = %+v, want version %d of the job on n1 for e2", updated, current.Version)
			}
			if inPlace {
				// No metrics: the allocation keeps its placement's.
				if updated.Metrics != nil {
					t.Fatalf("in-place update carries metrics %+v", updated.Metrics)
				}
				nets := updated.AllocatedResources.Tasks["app"].Networks
				if len(nets) != 1 || len(nets[0].DynamicPorts) != 1 || nets[0].DynamicPorts[0].Value != 23456 {
					t.Fatalf("in-place update's networks %+v, want the port it holds", nets)
				}
			}
			if len(plan.NodeUpdate) != 0 {
				t.Fatalf("the probe left stops in the plan: %+v", plan.NodeUpdate)
			}
		})
	}
}
