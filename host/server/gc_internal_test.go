package server

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

func TestGCThresholdsFor(t *testing.T) {
	cfg := map[string]string{sdk.ConfigEvalGCThreshold: "1h", sdk.ConfigBatchEvalGCThreshold: "24h", sdk.ConfigJobGCThreshold: "4h",
		sdk.ConfigNodeGCThreshold: "24h", sdk.ConfigDeploymentGCThreshold: "30m"}
	th, err := gcThresholdsFor(sdk.CoreJobEvalGC, cfg)
	if err != nil || th != (sdk.GCThresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour, Node: 24 * time.Hour, Deployment: 30 * time.Minute}) {
		t.Fatalf("thresholds %+v %v", th, err)
	}
	if th, err := gcThresholdsFor(sdk.CoreJobForceGC, nil); err != nil || th != (sdk.GCThresholds{}) {
		t.Fatalf("force-gc thresholds %+v %v", th, err)
	}
	// A host older than a key does not set it: its default holds.
	delete(cfg, sdk.ConfigBatchEvalGCThreshold)
	if th, err := gcThresholdsFor(sdk.CoreJobEvalGC, cfg); err != nil || th.BatchEval != sdk.DefaultGCThresholds().BatchEval {
		t.Fatalf("thresholds without %s: %+v %v", sdk.ConfigBatchEvalGCThreshold, th, err)
	}
	cfg[sdk.ConfigNodeGCThreshold] = "a day"
	if _, err := gcThresholdsFor(sdk.CoreJobNodeGC, cfg); err == nil || !strings.Contains(err.Error(), "node_gc_threshold") {
		t.Fatalf("bad threshold accepted: %v", err)
	}
}

// TestCheckCollectable_Ages: terminal objects younger than their threshold
// are not collected; old enough ones are; a forced collection has no age.
func TestCheckCollectable_Ages(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old, young := now.Add(-2*time.Hour).UnixNano(), now.Add(-time.Minute).UnixNano()
	s, _ := state.NewStore()
	err := s.Write(1, func(tx *state.Txn) error {
		for id, mt := range map[string]int64{"old": old, "young": young} {
			if err := tx.UpsertEval(&sdk.Evaluation{ID: "e-" + id, Namespace: "default", JobID: "j-" + id,
				Status: sdk.EvalStatusComplete, ModifyTime: mt}); err != nil {
				return err
			}
			if err := tx.UpsertAlloc(&sdk.Allocation{ID: "a-" + id, Namespace: "default", JobID: "j-" + id, NodeID: "n-" + id,
				DesiredStatus: sdk.AllocDesiredStatusStop, ModifyTime: mt}); err != nil {
				return err
			}
			if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "j-" + id, Stop: true, Status: sdk.JobStatusDead, SubmitTime: mt,
				TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}); err != nil {
				return err
			}
			if err := tx.UpsertNode(&sdk.Node{ID: "n-" + id, Status: sdk.NodeStatusDown, StatusUpdatedAt: mt / int64(time.Second)}); err != nil {
				return err
			}
			if err := tx.UpsertDeployment(&sdk.Deployment{ID: "d-" + id, Namespace: "default", JobID: "j-" + id, Status: sdk.DeploymentStatusSuccessful, ModifyTime: mt}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	th := sdk.GCThresholds{Eval: time.Hour, Job: time.Hour, Node: time.Hour, Deployment: time.Hour}
	for _, kind := range []string{"old", "young"} {
		reqs := map[string]*sdk.GCRequest{
			"eval":       {Evals: []string{"e-" + kind}},
			"alloc":      {Allocs: []string{"a-" + kind}},
			"job":        {Jobs: []sdk.NamespacedID{{Namespace: "default", ID: "j-" + kind}}},
			"node":       {Nodes: []string{"n-" + kind}},
			"deployment": {Deployments: []string{"d-" + kind}},
		}
		for what, req := range reqs {
			t.Run(kind+" "+what, func(t *testing.T) {
				err := checkCollectable(snap, req, th, now)
				if kind == "old" && err != nil {
					t.Fatalf("an old %s was refused: %v", what, err)
				}
				if kind == "young" && (err == nil || !strings.Contains(err.Error(), "less than 1h0m0s ago")) {
					t.Fatalf("a young %s was accepted: %v", what, err)
				}
				if err := checkCollectable(snap, req, sdk.GCThresholds{}, now); err != nil {
					t.Fatalf("a forced collection refused a terminal %s: %v", what, err)
				}
			})
		}
	}
}

// TestCheckCollectable_EvalThresholds: evals and allocations of batch jobs
// are held to the batch eval threshold, others to the eval threshold, and
// those of a job that is over to the job threshold when it is shorter.
func TestCheckCollectable_EvalThresholds(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ago := func(d time.Duration) int64 { return now.Add(-d).UnixNano() }
	s, _ := state.NewStore()
	err := s.Write(1, func(tx *state.Txn) error {
		for _, j := range []*sdk.Job{
			{Namespace: "default", ID: "stopped", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead, SubmitTime: ago(5 * time.Hour)},
			{Namespace: "default", ID: "running", Type: sdk.JobTypeService, Status: sdk.JobStatusRunning, SubmitTime: ago(5 * time.Hour)},
			{Namespace: "default", ID: "batch", Type: sdk.JobTypeBatch, Status: sdk.JobStatusRunning, SubmitTime: ago(5 * time.Hour)},
		} {
			j.TaskGroups = []*sdk.TaskGroup{{Name: "g"}}
			if err := tx.UpsertJob(j); err != nil {
				return err
			}
		}
		for _, e := range []*sdk.Evaluation{
			{ID: "e-stopped-5h", JobID: "stopped", Type: sdk.JobTypeService, ModifyTime: ago(5 * time.Hour)},
			{ID: "e-running-5h", JobID: "running", Type: sdk.JobTypeService, ModifyTime: ago(5 * time.Hour)},
			{ID: "e-running-2h", JobID: "running", Type: sdk.JobTypeService, ModifyTime: ago(2 * time.Hour)},
			{ID: "e-batch-2h", JobID: "batch", Type: sdk.JobTypeBatch, ModifyTime: ago(2 * time.Hour)},
			{ID: "e-batch-45m", JobID: "batch", Type: sdk.JobTypeBatch, ModifyTime: ago(45 * time.Minute)},
		} {
			e.Namespace, e.Status = "default", sdk.EvalStatusComplete
			if err := tx.UpsertEval(e); err != nil {
				return err
			}
		}
		for _, a := range []*sdk.Allocation{
			{ID: "a-stopped-5h", JobID: "stopped", EvalID: "e-stopped-5h", ModifyTime: ago(5 * time.Hour)},
			{ID: "a-batch-2h", JobID: "batch", EvalID: "e-batch-2h", ModifyTime: ago(2 * time.Hour)},
		} {
			a.Namespace, a.NodeID, a.TaskGroup, a.DesiredStatus = "default", "n", "g", sdk.AllocDesiredStatusStop
			if err := tx.UpsertAlloc(a); err != nil {
				return err
			}
		}
		// The live jobs run an allocation each.
		for _, job := range []string{"running", "batch"} {
			if err := tx.UpsertAlloc(&sdk.Allocation{ID: "a-live-" + job, Namespace: "default", JobID: job, EvalID: "e-live", NodeID: "n",
				TaskGroup: "g", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning, ModifyTime: ago(5 * time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	for _, id := range []string{"running", "batch"} {
		if j := snap.Job("default", id); j.Status != sdk.JobStatusRunning {
			t.Fatalf("job %s is %s, want running", id, j.Status)
		}
	}
	defaults := sdk.GCThresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour, Node: 24 * time.Hour, Deployment: time.Hour}
	shortBatch, longEval := defaults, defaults
	shortBatch.BatchEval = 30 * time.Minute
	longEval.Eval = 6 * time.Hour
	for _, tc := range []struct {
		name    string
		th      sdk.GCThresholds
		req     *sdk.GCRequest
		refused string
	}{
		{"service eval past the eval threshold", defaults, &sdk.GCRequest{Evals: []string{"e-running-2h"}}, ""},
		{"batch eval short of the batch threshold", defaults, &sdk.GCRequest{Evals: []string{"e-batch-2h"}}, "less than 24h0m0s ago"},
		{"batch allocation short of the batch threshold", defaults, &sdk.GCRequest{Allocs: []string{"a-batch-2h"}}, "less than 24h0m0s ago"},
		{"batch eval past a batch threshold below the eval threshold", shortBatch, &sdk.GCRequest{Evals: []string{"e-batch-45m"}}, ""},
		{"live job's eval short of the eval threshold", longEval, &sdk.GCRequest{Evals: []string{"e-running-5h"}}, "less than 6h0m0s ago"},
		{"stopped job's eval and allocation past the job threshold", longEval,
			&sdk.GCRequest{Evals: []string{"e-stopped-5h"}, Allocs: []string{"a-stopped-5h"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCollectable(snap, tc.req, tc.th, now)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("err = %v, want one with %q", err, tc.refused)
			}
		})
	}
}

// TestThresholdsQuery_RoundTrip: a follower's worker forwards a
// collection's thresholds to the leader as query parameters; every one of
// them arrives.
func TestThresholdsQuery_RoundTrip(t *testing.T) {
	th := sdk.GCThresholds{Eval: time.Hour, BatchEval: 24 * time.Hour, Job: 4 * time.Hour, Node: 48 * time.Hour, Deployment: 30 * time.Minute}
	q := url.Values{}
	thresholdsQuery(q, th)
	got, err := thresholdsFromQuery(q)
	if err != nil || got != th {
		t.Fatalf("thresholds %+v (%v), want %+v", got, err, th)
	}
	q.Del("gc_batch_eval")
	if _, err := thresholdsFromQuery(q); err == nil {
		t.Fatal("a collection without its batch eval threshold was accepted")
	}
}

// TestCheckCollectable_ForceIgnoresClockSkew: a forced collection accepts
// objects stamped after the leader's clock (by a former leader running
// ahead), as it accepts any age.
func TestCheckCollectable_ForceIgnoresClockSkew(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ahead := now.Add(50 * time.Millisecond).UnixNano()
	s, _ := state.NewStore()
	err := s.Write(1, func(tx *state.Txn) error {
		if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "j", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead,
			SubmitTime: ahead, TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}); err != nil {
			return err
		}
		if err := tx.UpsertEval(&sdk.Evaluation{ID: "e", Namespace: "default", JobID: "j", Type: sdk.JobTypeService,
			Status: sdk.EvalStatusComplete, ModifyTime: ahead}); err != nil {
			return err
		}
		if err := tx.UpsertAlloc(&sdk.Allocation{ID: "a", Namespace: "default", JobID: "j", EvalID: "e", NodeID: "n", TaskGroup: "g",
			DesiredStatus: sdk.AllocDesiredStatusStop, ClientStatus: sdk.AllocClientStatusComplete, ModifyTime: ahead}); err != nil {
			return err
		}
		if err := tx.UpsertNode(&sdk.Node{ID: "n", Status: sdk.NodeStatusDown, StatusUpdatedAt: now.Add(time.Second).Unix()}); err != nil {
			return err
		}
		return tx.UpsertDeployment(&sdk.Deployment{ID: "d", Namespace: "default", JobID: "j", Status: sdk.DeploymentStatusSuccessful, ModifyTime: ahead})
	})
	if err != nil {
		t.Fatal(err)
	}
	req := &sdk.GCRequest{Evals: []string{"e"}, Allocs: []string{"a"}, Jobs: []sdk.NamespacedID{{Namespace: "default", ID: "j"}},
		Nodes: []string{"n"}, Deployments: []string{"d"}}
	if err := checkCollectable(s.Snapshot(), req, sdk.GCThresholds{}, now); err != nil {
		t.Fatalf("a forced collection was refused: %v", err)
	}
}

// TestCheckCollectable_NomadRules: the host refuses, even in a forced
// collection, what Nomad's core scheduler never collects: an allocation
// told to stop that still runs on its node, or an eval that placed one
// (allocGCEligible, gcEval); a job its jobs-by-GC index does not list
// (jobIsGCable: a dead service job that was not stopped, a periodic or
// parameterized template that was not, a stopped job not yet dead); a
// deployment a live allocation names (deploymentGC).
func TestCheckCollectable_NomadRules(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	old := now.Add(-10 * time.Hour).UnixNano()
	periodic := &sdk.PeriodicConfig{Enabled: true, Spec: "@hourly"}
	s, _ := state.NewStore()
	err := s.Write(1, func(tx *state.Txn) error {
		for _, j := range []*sdk.Job{
			{ID: "stopped", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusDead},
			{ID: "stopping", Type: sdk.JobTypeService, Stop: true, Status: sdk.JobStatusPending},
			{ID: "dead-service", Type: sdk.JobTypeService, Status: sdk.JobStatusDead},
			{ID: "dead-batch", Type: sdk.JobTypeBatch, Status: sdk.JobStatusDead},
			{ID: "periodic", Type: sdk.JobTypeBatch, Status: sdk.JobStatusRunning, Periodic: periodic},
			{ID: "periodic-stopped", Type: sdk.JobTypeBatch, Stop: true, Status: sdk.JobStatusRunning, Periodic: periodic},
			{ID: "parameterized", Type: sdk.JobTypeBatch, Status: sdk.JobStatusRunning, ParameterizedJob: &sdk.ParameterizedJobConfig{}},
			{ID: "running", Type: sdk.JobTypeService, Status: sdk.JobStatusRunning},
		} {
			j.Namespace, j.SubmitTime, j.TaskGroups = "default", old, []*sdk.TaskGroup{{Name: "g"}}
			if err := tx.UpsertJob(j); err != nil {
				return err
			}
		}
		// The state works out each job's status from its evals and
		// allocations, as Nomad's does.
		for _, e := range []*sdk.Evaluation{
			{ID: "e-stopped", JobID: "stopped"},
			{ID: "e-stopping", JobID: "stopping", Status: sdk.EvalStatusPending},
			{ID: "e-dead-service", JobID: "dead-service"},
			{ID: "e-dead-batch", JobID: "dead-batch", Type: sdk.JobTypeBatch},
			{ID: "e-still-running", JobID: "running"}, {ID: "e-done", JobID: "running"}, {ID: "e-live", JobID: "running"},
		} {
			e.Namespace, e.ModifyTime = "default", old
			if e.Type == "" {
				e.Type = sdk.JobTypeService
			}
			if e.Status == "" {
				e.Status = sdk.EvalStatusComplete
			}
			if err := tx.UpsertEval(e); err != nil {
				return err
			}
		}
		for _, a := range []*sdk.Allocation{
			{ID: "still-running", EvalID: "e-still-running", DeploymentID: "d-live", DesiredStatus: sdk.AllocDesiredStatusStop, ClientStatus: sdk.AllocClientStatusRunning},
			{ID: "done", EvalID: "e-done", DeploymentID: "d-done", DesiredStatus: sdk.AllocDesiredStatusStop, ClientStatus: sdk.AllocClientStatusComplete},
			{ID: "live", EvalID: "e-live", DeploymentID: "d-live", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning},
		} {
			a.Namespace, a.JobID, a.NodeID, a.TaskGroup, a.ModifyTime = "default", "running", "n", "g", old
			if err := tx.UpsertAlloc(a); err != nil {
				return err
			}
		}
		for _, d := range []string{"d-live", "d-done"} {
			if err := tx.UpsertDeployment(&sdk.Deployment{ID: d, Namespace: "default", JobID: "running",
				Status: sdk.DeploymentStatusSuccessful, ModifyTime: old}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string) *sdk.GCRequest {
		return &sdk.GCRequest{Jobs: []sdk.NamespacedID{{Namespace: "default", ID: id}}}
	}
	cases := []struct {
		name    string
		req     *sdk.GCRequest
		refused string // what the error says; empty: accepted
	}{
		{"allocation told to stop, still running", &sdk.GCRequest{Allocs: []string{"still-running"}}, "still runs on its node"},
		{"its eval", &sdk.GCRequest{Evals: []string{"e-still-running"}}, "has live allocation still-running"},
		{"complete allocation and its eval", &sdk.GCRequest{Allocs: []string{"done"}, Evals: []string{"e-done"}}, ""},
		{"stopped, dead service job", job("stopped"), ""},
		{"stopped service job, not yet dead", job("stopping"), "is not over"},
		{"dead service job, not stopped", job("dead-service"), "is not over"},
		{"dead batch job", job("dead-batch"), ""},
		{"periodic template", job("periodic"), "is not over"},
		{"stopped periodic template", job("periodic-stopped"), ""},
		{"parameterized template", job("parameterized"), "is not over"},
		{"deployment a live allocation names", &sdk.GCRequest{Deployments: []string{"d-live"}}, "has live allocation live"},
		// Nomad's rule: only live (non-terminal) allocations hold a
		// deployment; Drover's core scheduler waits for every allocation
		// naming it to be collected, a choice the host need not enforce.
		{"deployment only a complete allocation names", &sdk.GCRequest{Deployments: []string{"d-done"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th := sdk.DefaultGCThresholds()
			for _, th := range []sdk.GCThresholds{th, {}} {
				err := checkCollectable(s.Snapshot(), tc.req, th, now)
				switch {
				case tc.refused == "" && err != nil:
					t.Fatalf("refused under %+v: %v", th, err)
				case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
					t.Fatalf("under %+v: err = %v, want one saying %q", th, err, tc.refused)
				}
			}
		})
	}
}
