package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

func TestGCThresholdsFor(t *testing.T) {
	cfg := map[string]string{sdk.ConfigEvalGCThreshold: "1h", sdk.ConfigJobGCThreshold: "4h",
		sdk.ConfigNodeGCThreshold: "24h", sdk.ConfigDeploymentGCThreshold: "30m"}
	th, err := gcThresholdsFor(sdk.CoreJobEvalGC, cfg)
	if err != nil || th != (gcThresholds{eval: time.Hour, job: 4 * time.Hour, node: 24 * time.Hour, deployment: 30 * time.Minute}) {
		t.Fatalf("thresholds %+v %v", th, err)
	}
	if th, err := gcThresholdsFor(sdk.CoreJobForceGC, nil); err != nil || th != (gcThresholds{}) {
		t.Fatalf("force-gc thresholds %+v %v", th, err)
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
			if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "j-" + id, Stop: true, SubmitTime: mt,
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
	th := gcThresholds{eval: time.Hour, job: time.Hour, node: time.Hour, deployment: time.Hour}
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
				if err := checkCollectable(snap, req, gcThresholds{}, now); err != nil {
					t.Fatalf("a forced collection refused a terminal %s: %v", what, err)
				}
			})
		}
	}
}
