package carry

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/mirror"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/drover-sched/drover/sdk/stack"
)

// scanDeployedVersion is deployedVersion as it was before its scan was
// cached per group: every allocation of the job, for every placement.
func scanDeployedVersion(state sdk.State, job *sdk.Job, pl reconcile.Placement) *sdk.Allocation {
	var best *sdk.Allocation
	consider := func(a *sdk.Allocation) {
		j := a.Job
		if j == nil || j.JobModifyIndex == job.JobModifyIndex || j.Version < pl.MinJobVersion ||
			j.LookupTaskGroup(pl.TaskGroup.Name) == nil || (a.DeploymentStatus != nil && a.DeploymentStatus.Canary) {
			return
		}
		if best == nil || j.Version > best.Job.Version {
			best = a
		}
	}
	for _, a := range state.AllocsByJob(job.Namespace, job.ID) {
		if a.TaskGroup == pl.TaskGroup.Name && !a.TerminalStatus() {
			consider(a)
		}
	}
	if best == nil && pl.Previous != nil {
		consider(pl.Previous)
	}
	return best
}

// The per-group cache answers every placement of a pass as the full scan
// does: random versions (some without a group), canaries, finished and
// stopped allocations, minimum versions and replaced allocations.
func TestDeployedVersion_EqualsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		h := sdktest.New()
		h.UpsertNode(sdktest.Node("n1", 64000, 64000))
		var versions []*sdk.Job
		for v := range 1 + rng.IntN(5) {
			job := sdktest.Job("web", 3)
			if v%2 == 1 { // odd versions have a second group
				api := *job.TaskGroups[0]
				api.Name = "api"
				job.TaskGroups = append(job.TaskGroups, &api)
			}
			h.UpsertJob(job)
			versions = append(versions, job)
		}
		for i := range rng.IntN(12) {
			j := versions[rng.IntN(len(versions))]
			a := &sdk.Allocation{ID: fmt.Sprintf("a%02d", i), Namespace: "default", JobID: "web",
				TaskGroup: []string{"web", "api"}[rng.IntN(2)], NodeID: "n1", Job: j, DesiredStatus: sdk.AllocDesiredStatusRun,
				ClientStatus: sdk.AllocClientStatusRunning}
			a.Name = sdk.AllocName("web", a.TaskGroup, i)
			switch rng.IntN(5) {
			case 0:
				a.DeploymentStatus = &sdk.AllocDeploymentStatus{Canary: true}
			case 1:
				a.ClientStatus = sdk.AllocClientStatusComplete
			case 2:
				a.DesiredStatus = sdk.AllocDesiredStatusStop
			}
			h.UpsertAlloc(a)
		}
		state := mirror.New()
		if err := state.Apply(h.FullSync(false)); err != nil {
			t.Fatal(err)
		}
		job := state.Job("default", "web")
		eval := h.RegisterEval(job)
		p := &Pass{in: Input{Ctx: sdk.NewContext(state, nil, nil, time.Unix(0, 0), nil, eval.ID), Plan: stack.NewPlan(state, eval, job)}}
		allocs := state.AllocsByJob("default", "web")
		for range 10 {
			group := job.TaskGroups[rng.IntN(len(job.TaskGroups))]
			pl := reconcile.Placement{TaskGroup: group, MinJobVersion: uint64(rng.IntN(len(versions) + 1))}
			if len(allocs) > 0 && rng.IntN(2) == 0 {
				pl.Previous = allocs[rng.IntN(len(allocs))]
			}
			want := scanDeployedVersion(state, job, pl)
			if got := p.deployedVersion(pl); got != want {
				t.Fatalf("round %d, group %s, minimum %d, previous %v: got %v, want %v", round, group.Name,
					pl.MinJobVersion, pl.Previous, got, want)
			}
		}
	}
}
