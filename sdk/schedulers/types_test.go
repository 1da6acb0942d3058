package schedulers_test

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/carry"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/system"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// TestBuiltins_RefuseOtherJobTypes: any job may name any plugin
// (scheduler = "NAME"), so a built-in, or a plugin built on carry, can be
// handed a job of a type it does not schedule. The service scheduler gave
// a system job one allocation, not one per node, and would replace a
// batch job's finished allocations; the system scheduler gave a service
// job one per node. The eval fails instead, naming the job's type, and
// submits no plan; a job stopped is still stopped, whatever its type.
func TestBuiltins_RefuseOtherJobTypes(t *testing.T) {
	first := carry.Scheduler{Choose: func(carry.Placement, []carry.Candidate) int { return 0 }}
	tests := []struct {
		name  string
		sched sdk.Scheduler
		typ   string
	}{
		{"service given batch", &generic.Scheduler{}, sdk.JobTypeBatch},
		{"service given system", &generic.Scheduler{}, sdk.JobTypeSystem},
		{"batch given service", &generic.Scheduler{Batch: true}, sdk.JobTypeService},
		{"batch given sysbatch", &generic.Scheduler{Batch: true}, sdk.JobTypeSysBatch},
		{"system given service", &system.Scheduler{}, sdk.JobTypeService},
		{"system given batch", &system.Scheduler{}, sdk.JobTypeBatch},
		{"carry given system", first, sdk.JobTypeSystem},
		{"carry given sysbatch", first, sdk.JobTypeSysBatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.New()
			h.UpsertNode(sdktest.Node("a", 4000, 8192), sdktest.Node("b", 4000, 8192))
			job := sdktest.Job("web", 1)
			job.Type = tc.typ
			h.UpsertJob(job)
			e := h.RegisterEval(job)
			if err := h.Process(tc.sched, e); err != nil {
				t.Fatal(err)
			}
			if len(h.Plans) != 0 {
				t.Fatalf("%d plans submitted for a %s job, want none", len(h.Plans), tc.typ)
			}
			got := h.Updated[len(h.Updated)-1]
			if got.ID != e.ID || got.Status != sdk.EvalStatusFailed || !strings.Contains(got.StatusDescription, "not "+tc.typ+" job") {
				t.Fatalf("eval %s %s: %q, want it failed, naming the job's type", got.ID, got.Status, got.StatusDescription)
			}

			h.UpsertAlloc(&sdk.Allocation{ID: "old", Namespace: job.Namespace, JobID: job.ID, Name: "web.web[0]",
				TaskGroup: "web", NodeID: "a", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
			stopped := job.Copy()
			stopped.Stop = true
			h.UpsertJob(stopped)
			if err := h.Process(tc.sched, h.RegisterEval(stopped)); err != nil {
				t.Fatal(err)
			}
			if len(h.Plans) != 1 || len(h.Plans[0].NodeUpdate["a"]) != 1 {
				t.Fatalf("plans %+v, want one stopping the job's allocation", h.Plans)
			}
		})
	}
}
