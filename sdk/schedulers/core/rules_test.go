package core_test

import (
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/schedulers/core"
)

// collectFrom applies sync to a new mirror and runs one collection of kind
// at now under th.
func collectFrom(t *testing.T, sync *abi.StateSync, kind string, th core.Thresholds) *sdk.GCRequest {
	t.Helper()
	sync.Full, sync.Index = true, 10
	m := mirror.New()
	if err := m.Apply(sync); err != nil {
		t.Fatal(err)
	}
	req, err := core.Collect(kind, core.View{State: m, Evals: m, Catalog: m}, now, th)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// sorted returns a sorted copy of ids (nil for none).
func sorted(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func eval(id, job, typ string, age time.Duration) *sdk.Evaluation {
	return &sdk.Evaluation{ID: id, Namespace: "default", JobID: job, Type: typ, Status: sdk.EvalStatusComplete, ModifyTime: ago(age)}
}

func alloc(id, job, evalID string, version uint64, desired, client string, age time.Duration) *sdk.Allocation {
	return &sdk.Allocation{ID: id, Namespace: "default", JobID: job, JobVersion: version, EvalID: evalID, NodeID: "n", TaskGroup: "g",
		DesiredStatus: desired, ClientStatus: client, ModifyTime: ago(age)}
}

// TestCollect_EvalGC_LiveBatchJob: a batch job that still runs keeps the
// allocations of its current version, or the scheduler would run them
// again; but an eval whose allocations are all collectable terminal ones
// of older versions, or that placed nothing, goes with them, as in Nomad.
func TestCollect_EvalGC_LiveBatchJob(t *testing.T) {
	for _, typ := range []string{sdk.JobTypeBatch, sdk.JobTypeSysBatch} {
		t.Run(typ, func(t *testing.T) {
			job := &sdk.Job{Namespace: "default", ID: "j", Type: typ, Status: sdk.JobStatusRunning, Version: 2,
				SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
			v0, v1 := *job, *job
			v0.Version, v1.Version = 0, 1
			sync := &abi.StateSync{
				Nodes:       []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:        []*sdk.Job{job},
				JobVersions: []*sdk.Job{&v0, &v1},
				Evals: []*sdk.Evaluation{
					eval("e-none", "j", typ, 2*time.Hour),      // placed nothing
					eval("e-older", "j", typ, 2*time.Hour),     // only older versions' terminal allocations
					eval("e-mixed", "j", typ, 2*time.Hour),     // an older and a current one
					eval("e-young-old", "j", typ, 2*time.Hour), // an older one, changed recently
				},
				Allocs: []*sdk.Allocation{
					alloc("a-older-0", "j", "e-older", 0, "run", "complete", 2*time.Hour),
					alloc("a-older-1", "j", "e-older", 1, "stop", "complete", 2*time.Hour),
					alloc("a-mixed-old", "j", "e-mixed", 1, "run", "failed", 2*time.Hour),
					alloc("a-mixed-cur", "j", "e-mixed", 2, "run", "complete", 2*time.Hour),
					alloc("a-young-old", "j", "e-young-old", 1, "run", "complete", time.Minute),
				},
			}
			req := collectFrom(t, sync, sdk.CoreJobEvalGC, th)
			if got, want := sorted(req.Evals), []string{"e-none", "e-older"}; !slices.Equal(got, want) {
				t.Errorf("evals = %v, want %v", got, want)
			}
			if got, want := sorted(req.Allocs), []string{"a-mixed-old", "a-older-0", "a-older-1"}; !slices.Equal(got, want) {
				t.Errorf("allocs = %v, want %v", got, want)
			}
		})
	}
}

// TestCollect_JobGC_AllocStillRunning: a stopped job whose allocation is
// told to stop but still runs on its node stays, with it, even when the
// eval that placed the allocation is gone (deleted by the eval delete
// endpoint): the node would lose track of a running allocation.
func TestCollect_JobGC_AllocStillRunning(t *testing.T) {
	job := &sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead,
		SubmitTime: ago(10 * time.Hour), TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	for _, tc := range []struct {
		name   string
		client string
		jobs   []string
	}{
		{"running", sdk.AllocClientStatusRunning, nil},
		{"complete", sdk.AllocClientStatusComplete, []string{"default/j"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sync := &abi.StateSync{
				Nodes:  []*sdk.Node{{ID: "n", Status: sdk.NodeStatusReady}},
				Jobs:   []*sdk.Job{job},
				Evals:  []*sdk.Evaluation{eval("e-stop", "j", sdk.JobTypeService, 5*time.Hour)},
				Allocs: []*sdk.Allocation{alloc("a", "j", "e-deleted", 0, "stop", tc.client, 5*time.Hour)},
			}
			req := collectFrom(t, sync, sdk.CoreJobJobGC, th)
			var jobs []string
			for _, j := range req.Jobs {
				jobs = append(jobs, j.String())
			}
			if !slices.Equal(jobs, tc.jobs) {
				t.Errorf("jobs = %v, want %v", jobs, tc.jobs)
			}
			if collected := slices.Contains(req.Allocs, "a"); collected != (tc.jobs != nil) {
				t.Errorf("allocation collected = %v with the job %v", collected, tc.jobs)
			}
		})
	}
}
