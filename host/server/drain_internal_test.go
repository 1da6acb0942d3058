package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

func TestDecideDrain(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	yes := true
	job := func(id, typ string, maxParallel int) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: id, Type: typ,
			TaskGroups: []*sdk.TaskGroup{{Name: "g", Migrate: &sdk.MigrateStrategy{MaxParallel: maxParallel}}}}
	}
	alloc := func(id string, j *sdk.Job, mut ...func(*sdk.Allocation)) *sdk.Allocation {
		a := &sdk.Allocation{ID: id, Namespace: "default", JobID: j.ID, Job: j, TaskGroup: "g", NodeID: "n0",
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning}
		for _, m := range mut {
			m(a)
		}
		return a
	}
	migrating := func(a *sdk.Allocation) { a.DesiredTransition.Migrate = &yes }
	stopped := func(a *sdk.Allocation) { a.DesiredStatus = sdk.AllocDesiredStatusStop }
	web, web1 := job("web", sdk.JobTypeService, 2), job("web1", sdk.JobTypeService, 0)
	batch, sys := job("batch", sdk.JobTypeBatch, 1), job("sys", sdk.JobTypeSystem, 1)

	cases := []struct {
		name     string
		allocs   []*sdk.Allocation
		strategy sdk.DrainStrategy
		want     []string
		done     bool
	}{
		{name: "max_parallel bounds each group",
			allocs: []*sdk.Allocation{alloc("w1", web), alloc("w2", web), alloc("w3", web), alloc("x1", web1), alloc("x2", web1)},
			want:   []string{"w1", "w2", "x1"}},
		{name: "moves in flight count against max_parallel",
			allocs: []*sdk.Allocation{alloc("w1", web, migrating), alloc("w2", web), alloc("w3", web)},
			want:   []string{"w2"}},
		{name: "a move is in flight until its replacement runs",
			allocs: []*sdk.Allocation{alloc("w1", web, migrating, stopped, func(a *sdk.Allocation) { a.NextAllocation = "r1" }),
				alloc("w2", web, migrating, stopped, func(a *sdk.Allocation) { a.NextAllocation = "r2" }),
				alloc("w3", web),
				{ID: "r1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", ClientStatus: "pending"},
				{ID: "r2", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", ClientStatus: "running"}},
			want: []string{"w3"}},
		{name: "batch allocations run to completion",
			allocs: []*sdk.Allocation{alloc("b1", batch)}},
		{name: "batch allocations move at the deadline",
			allocs:   []*sdk.Allocation{alloc("b1", batch)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			want:     []string{"b1"}},
		{name: "system allocations wait for the rest",
			allocs: []*sdk.Allocation{alloc("w1", web), alloc("s1", sys)},
			want:   []string{"w1"}},
		{name: "system allocations go last",
			allocs: []*sdk.Allocation{alloc("w1", web, stopped), alloc("s1", sys)},
			want:   []string{"s1"}},
		{name: "ignored system allocations stay",
			allocs:   []*sdk.Allocation{alloc("s1", sys)},
			strategy: sdk.DrainStrategy{IgnoreSystemJobs: true},
			done:     true},
		{name: "an empty node is drained", done: true},
		{name: "past the deadline, a node whose allocations all moved is drained",
			allocs:   []*sdk.Allocation{alloc("b1", batch, migrating, stopped), alloc("w1", web, func(a *sdk.Allocation) { a.ClientStatus = "complete" })},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			done:     true},
		{name: "past the deadline, a move in flight is waited for",
			allocs: []*sdk.Allocation{alloc("w1", web, migrating, stopped, func(a *sdk.Allocation) { a.NextAllocation = "r1" }),
				{ID: "r1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", ClientStatus: "pending"}},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := state.NewStore()
			err := store.Write(1, func(tx *state.Txn) error {
				for _, a := range tc.allocs {
					if err := tx.UpsertAlloc(a); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ds := tc.strategy
			n := &sdk.Node{ID: "n0", DrainStrategy: &ds}
			d := decideDrain(store.Snapshot(), n, now)
			slices.Sort(d.migrate)
			if fmt.Sprint(d.migrate) != fmt.Sprint(tc.want) || d.done != tc.done {
				t.Fatalf("migrate %v done %v, want %v done %v", d.migrate, d.done, tc.want, tc.done)
			}
			if len(d.migrate) > 0 && len(d.jobs) == 0 {
				t.Fatal("allocations marked without an eval for their job")
			}
		})
	}
}
