package carry

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// TestDeployedVersion: a non-canary placement while canaries await
// promotion runs the version of the job's newest deployment in which its
// group was promoted or had no canaries, in that deployment, as Nomad's
// downgradedJobForPlacement; allocations updated in place to a version
// whose canaries were never promoted do not make that version deployed (a
// differential QA run found Drover placing such a version, which it took
// from the newest live allocation). With no such deployment, a minimum
// version without an update block is taken; otherwise nothing.
func TestDeployedVersion(t *testing.T) {
	update := &sdk.UpdateStrategy{MaxParallel: 3, Canary: 1}
	type dep struct {
		version           uint64
		canaries          int
		promoted, earlier bool // earlier: of a purged instance of the job
	}
	cases := []struct {
		name        string
		noUpdate    bool // versions without an update block
		deps        []dep
		min         uint64
		wantVersion int // -1: no downgrade
		wantDep     int // index in deps; -1: none
	}{
		{"the newest deployment without canaries", false, []dep{{0, 0, false, false}, {1, 1, false, false}, {2, 1, false, false}}, 0, 0, 0},
		{"a promoted one is deployed", false, []dep{{0, 0, false, false}, {1, 1, true, false}, {2, 1, false, false}}, 0, 1, 1},
		{"older than the placement's minimum", false, []dep{{0, 0, false, false}, {1, 1, false, false}, {2, 1, false, false}}, 1, -1, -1},
		{"an earlier instance's deployment does not count", false, []dep{{0, 0, false, true}, {1, 1, false, false}}, 0, -1, -1},
		{"no deployment: the minimum if it had no update block", true, []dep{{2, 1, false, false}}, 1, 1, -1},
		{"no deployment, and the minimum had an update block", false, []dep{{2, 1, false, false}}, 1, -1, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.New()
			h.UpsertNode(sdktest.Node("n1", 64000, 64000))
			var versions []*sdk.Job
			for v := range 3 {
				j := sdktest.Job("web", 3)
				j.TaskGroups[0].Tasks[0].Config = sdk.Opaque{"command": fmt.Sprintf("/bin/v%d", v)}
				if !tc.noUpdate || v == 2 {
					j.TaskGroups[0].Update = update
				}
				if v > 0 {
					j.CreateIndex = versions[0].CreateIndex // one instance
				}
				h.UpsertJob(j)
				versions = append(versions, j)
			}
			job := versions[2]
			var ids []string
			for i, d := range tc.deps {
				id := fmt.Sprintf("d%d", i)
				ids = append(ids, id)
				created := job.CreateIndex
				if d.earlier {
					created--
				}
				h.UpsertDeployment(&sdk.Deployment{ID: id, Namespace: "default", JobID: "web", JobVersion: d.version, JobCreateIndex: created,
					Status: sdk.DeploymentStatusRunning, TaskGroups: map[string]*sdk.DeploymentState{
						"web": {DesiredTotal: 3, DesiredCanaries: d.canaries, Promoted: d.promoted}}})
				// An allocation of each version names its deployment.
				h.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: "web", TaskGroup: "web",
					Name: sdk.AllocName("web", "web", i), NodeID: "n1", Job: versions[d.version], DeploymentID: id,
					DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
			}
			// Allocations of every version run, most in place on version 1.
			for v, j := range versions {
				h.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("live%d", v), Namespace: "default", JobID: "web", TaskGroup: "web",
					Name: sdk.AllocName("web", "web", 5+v), NodeID: "n1", Job: j,
					DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning})
			}
			state := mirror.New()
			if err := state.Apply(h.FullSync(false)); err != nil {
				t.Fatal(err)
			}
			cur := state.Job("default", "web")
			eval := h.RegisterEval(cur)
			p := &Pass{in: Input{Ctx: sdk.NewContext(state, nil, nil, time.Unix(0, 0), nil, eval.ID), Plan: stack.NewPlan(state, eval, cur)}}
			got, ok := p.deployedVersion(reconcile.Placement{TaskGroup: cur.TaskGroups[0], MinJobVersion: tc.min})
			switch {
			case tc.wantVersion < 0:
				if ok {
					t.Fatalf("downgraded to version %d in %q, want none", got.job.Version, got.deploymentID)
				}
			case !ok || got.job.Version != uint64(tc.wantVersion):
				t.Fatalf("got %v %+v, want version %d", ok, got, tc.wantVersion)
			case tc.wantDep < 0 && got.deploymentID != "", tc.wantDep >= 0 && got.deploymentID != ids[tc.wantDep]:
				t.Fatalf("deployment %q, want %d", got.deploymentID, tc.wantDep)
			}
		})
	}
}
