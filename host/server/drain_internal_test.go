package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// drainWorld is a state for the drainer's decisions: nodes (those in
// strategies drain with that strategy), jobs (current versions) and
// allocations.
type drainWorld struct {
	strategies  map[string]sdk.DrainStrategy
	jobs        []*sdk.Job
	deployments []*sdk.Deployment
	allocs      []*sdk.Allocation
}

// decide stores w and returns the drain decisions at now, checking what
// holds of every decision: a node marks only its own allocations, and
// each with an eval for its job.
func (w drainWorld) decide(t *testing.T, now time.Time) []drainDecision {
	t.Helper()
	ds, _ := w.decideJobs(t, now)
	return ds
}

// decideJobs is decide, also returning the jobs that get a node-drain
// eval.
func (w drainWorld) decideJobs(t *testing.T, now time.Time) ([]drainDecision, []sdk.NamespacedID) {
	t.Helper()
	store, _ := state.NewStore()
	err := store.Write(1, func(tx *state.Txn) error {
		nodes := map[string]bool{}
		for id := range w.strategies {
			nodes[id] = true
		}
		for _, a := range w.allocs {
			nodes[a.NodeID] = true
		}
		for id := range nodes {
			n := &sdk.Node{ID: id, Status: sdk.NodeStatusReady}
			if ds, ok := w.strategies[id]; ok {
				n.DrainStrategy = &ds
			}
			if err := tx.UpsertNode(n); err != nil {
				return err
			}
		}
		for _, j := range w.jobs {
			if err := tx.UpsertJob(j); err != nil {
				return err
			}
		}
		for _, d := range w.deployments {
			if err := tx.UpsertDeployment(d); err != nil {
				return err
			}
		}
		for _, a := range w.allocs {
			if err := tx.UpsertAlloc(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := store.Snapshot()
	ds := decideDrains(snap, now)
	if len(ds) != len(w.strategies) {
		t.Fatalf("%d decisions for %d draining nodes", len(ds), len(w.strategies))
	}
	jobs := drainJobs(snap, ds)
	want := map[sdk.NamespacedID]bool{}
	for _, d := range ds {
		for _, id := range d.migrate {
			a := snap.Alloc(id)
			if a.NodeID != d.node.ID {
				t.Fatalf("node %s marked %s, which is on %s", d.node.ID, id, a.NodeID)
			}
			want[sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}] = true
		}
	}
	if len(jobs) != len(want) {
		t.Fatalf("evals for jobs %v, want one for each of %v", jobs, want)
	}
	for _, jk := range jobs {
		if !want[jk] {
			t.Fatalf("evals for jobs %v, want one for each of %v", jobs, want)
		}
	}
	return ds, jobs
}

// TestDrainJobs_OneEvalPerJobAcrossNodes: as Nomad's drainer, a round's
// marks get one node-drain eval per job, however many nodes they are on.
func TestDrainJobs_OneEvalPerJobAcrossNodes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	web, api := drainJob("web", sdk.JobTypeService, 4, 4), drainJob("api", sdk.JobTypeService, 2, 2)
	w := drainWorld{strategies: map[string]sdk.DrainStrategy{"n1": {}, "n2": {}},
		allocs: []*sdk.Allocation{drainAlloc("a1", web, "n1"), drainAlloc("a2", web, "n2"),
			drainAlloc("a3", web, "n1"), drainAlloc("a4", web, "n2"), drainAlloc("b1", api, "n1"), drainAlloc("b2", api, "n2")}}
	ds, jobs := w.decideJobs(t, now)
	if got := marked(ds); fmt.Sprint(got) != "[a1 a2 a3 a4 b1 b2]" {
		t.Fatalf("marked %v, want all", got)
	}
	if fmt.Sprint(jobs) != "[default/api default/web]" {
		t.Fatalf("evals for %v, want one for api and one for web", jobs)
	}
}

// marked is every allocation the decisions mark, sorted.
func marked(ds []drainDecision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.migrate...)
	}
	slices.Sort(out)
	return out
}

// drainJob is a job of one group "g" of count allocations, migrating at
// most maxParallel at a time.
func drainJob(id, typ string, count, maxParallel int) *sdk.Job {
	return &sdk.Job{Namespace: "default", ID: id, Type: typ,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: count, Migrate: &sdk.MigrateStrategy{MaxParallel: maxParallel}}}}
}

// drainAlloc is a running allocation of j's group on node, its health
// reported healthy, changed by mut.
func drainAlloc(id string, j *sdk.Job, node string, mut ...func(*sdk.Allocation)) *sdk.Allocation {
	healthy := true
	a := &sdk.Allocation{ID: id, Namespace: "default", JobID: j.ID, Job: j, TaskGroup: "g", NodeID: node,
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
		DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}}
	for _, m := range mut {
		m(a)
	}
	return a
}

// migrating and stopped are drainAlloc changes.
func migrating(a *sdk.Allocation) {
	yes := true
	a.DesiredTransition.Migrate = &yes
}

func stopped(a *sdk.Allocation) { a.DesiredStatus = sdk.AllocDesiredStatusStop }

// pending is a drainAlloc change: not running yet, so without health.
func pending(a *sdk.Allocation) {
	a.ClientStatus, a.DeploymentStatus = sdk.AllocClientStatusPending, nil
}

// unjudged is a drainAlloc change: running, its health not reported yet.
func unjudged(a *sdk.Allocation) { a.DeploymentStatus = nil }

// complete is a drainAlloc change: its node reported it stopped.
func complete(a *sdk.Allocation) { a.ClientStatus = sdk.AllocClientStatusComplete }

// next is a drainAlloc change: replaced by the allocation id.
func next(id string) func(*sdk.Allocation) { return func(a *sdk.Allocation) { a.NextAllocation = id } }

func TestDecideDrain(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	alloc := func(id string, j *sdk.Job, mut ...func(*sdk.Allocation)) *sdk.Allocation {
		return drainAlloc(id, j, "n0", mut...)
	}
	web, web1 := drainJob("web", sdk.JobTypeService, 3, 2), drainJob("web1", sdk.JobTypeService, 2, 0)
	batch, sys := drainJob("batch", sdk.JobTypeBatch, 1, 1), drainJob("sys", sdk.JobTypeSystem, 1, 1)
	sysbatch := drainJob("sysbatch", sdk.JobTypeSysBatch, 1, 1)
	bare := drainJob("bare", sdk.JobTypeService, 3, 0)
	bare.TaskGroups[0].Migrate = nil
	moved := func(id, replacement string) *sdk.Allocation {
		return alloc(id, web, migrating, stopped, complete, next(replacement))
	}

	cases := []struct {
		name     string
		allocs   []*sdk.Allocation
		strategy sdk.DrainStrategy
		want     []string
		done     bool
		deadline bool
	}{
		{name: "max_parallel bounds each group",
			allocs: []*sdk.Allocation{alloc("w1", web), alloc("w2", web), alloc("w3", web), alloc("x1", web1), alloc("x2", web1)},
			want:   []string{"w1", "w2"}},
		{name: "max_parallel 0 moves nothing before the deadline",
			allocs: []*sdk.Allocation{alloc("x1", web1), alloc("x2", web1)}},
		{name: "max_parallel 0 moves everything at the deadline",
			allocs:   []*sdk.Allocation{alloc("x1", web1), alloc("x2", web1)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			want:     []string{"x1", "x2"}, done: true, deadline: true},
		{name: "a group without a migrate block moves one at a time",
			allocs: []*sdk.Allocation{alloc("n1", bare), alloc("n2", bare), alloc("n3", bare)},
			want:   []string{"n1"}},
		{name: "moves in flight count against max_parallel",
			allocs: []*sdk.Allocation{alloc("w1", web, migrating), alloc("w2", web), alloc("w3", web)},
			want:   []string{"w2"}},
		{name: "a move is in flight until its replacement's health is reported",
			allocs: []*sdk.Allocation{alloc("w1", web, migrating, stopped, func(a *sdk.Allocation) { a.NextAllocation = "r1" }),
				alloc("w2", web, migrating, stopped, func(a *sdk.Allocation) { a.NextAllocation = "r2" }),
				alloc("w3", web, migrating, stopped, func(a *sdk.Allocation) { a.NextAllocation = "r3" }),
				alloc("w4", web),
				drainAlloc("r1", web, "n1", pending), drainAlloc("r2", web, "n1", unjudged), drainAlloc("r3", web, "n1")},
			want: []string{"w4"}},
		{name: "batch allocations run to completion",
			allocs: []*sdk.Allocation{alloc("b1", batch)}},
		{name: "batch allocations move at the deadline",
			allocs:   []*sdk.Allocation{alloc("b1", batch)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			want:     []string{"b1"}, done: true, deadline: true},
		{name: "system allocations wait for the rest",
			allocs: []*sdk.Allocation{alloc("w1", web), alloc("w2", web), alloc("w3", web), alloc("s1", sys)},
			want:   []string{"w1", "w2"}},
		{name: "system allocations wait for the node to stop the rest",
			allocs: []*sdk.Allocation{alloc("w1", web, stopped), alloc("s1", sys)}},
		{name: "system allocations go last, and the drain ends in the same step",
			allocs: []*sdk.Allocation{alloc("w1", web, stopped, complete), alloc("s1", sys)},
			want:   []string{"s1"}, done: true},
		{name: "sysbatch allocations go with the system ones",
			allocs: []*sdk.Allocation{moved("w1", "r1"), drainAlloc("r1", web, "n1", pending), alloc("s1", sysbatch)},
			want:   []string{"s1"}, done: true},
		{name: "a marked system allocation still running does not hold the drain",
			allocs: []*sdk.Allocation{alloc("w1", web, stopped, complete), alloc("s1", sys, migrating)},
			done:   true},
		{name: "the drain ends once the node stopped its allocations, whatever the replacements' health",
			allocs: []*sdk.Allocation{moved("w1", "r1"), moved("w2", "r2"), moved("w3", "r3"),
				drainAlloc("r1", web, "n1", pending), drainAlloc("r2", web, "n1", unjudged), drainAlloc("r3", web, "n1")},
			done: true},
		{name: "an allocation lost with its node counts as stopped",
			allocs: []*sdk.Allocation{alloc("w1", web, func(a *sdk.Allocation) { a.ClientStatus = sdk.AllocClientStatusLost })},
			done:   true},
		{name: "not drained while the node still runs an allocation told to stop",
			allocs: []*sdk.Allocation{alloc("w1", web, migrating, stopped, next("r1")), drainAlloc("r1", web, "n1")}},
		{name: "ignored sysbatch allocations stay",
			allocs:   []*sdk.Allocation{alloc("s1", sysbatch)},
			strategy: sdk.DrainStrategy{IgnoreSystemJobs: true},
			done:     true},
		{name: "ignored system allocations stay",
			allocs:   []*sdk.Allocation{alloc("s1", sys)},
			strategy: sdk.DrainStrategy{IgnoreSystemJobs: true},
			done:     true},
		{name: "an empty node is drained", done: true},
		{name: "past the deadline, a node whose allocations all moved is drained",
			allocs:   []*sdk.Allocation{alloc("b1", batch, migrating, stopped, complete), alloc("w1", web, complete)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			done:     true, deadline: true},
		{name: "the deadline ends the drain with a move in flight",
			allocs: []*sdk.Allocation{alloc("w1", web, migrating, stopped, next("r1")),
				{ID: "r1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", DesiredStatus: "run", ClientStatus: "pending"}},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			done:     true, deadline: true},
		{name: "the deadline ends the drain with replacements whose health is not reported",
			allocs: []*sdk.Allocation{moved("w1", "r1"), alloc("w2", web), alloc("w3", web),
				drainAlloc("r1", web, "n1", unjudged)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			want:     []string{"w2", "w3"}, done: true, deadline: true},
		{name: "the deadline marks system allocations with the rest, and ends the drain",
			allocs:   []*sdk.Allocation{alloc("w1", web), alloc("b1", batch), alloc("s1", sys), alloc("s2", sysbatch)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			want:     []string{"b1", "s1", "s2", "w1"}, done: true, deadline: true},
		{name: "the deadline leaves ignored system allocations",
			allocs:   []*sdk.Allocation{alloc("w1", web), alloc("s1", sys), alloc("s2", sysbatch)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second), IgnoreSystemJobs: true},
			want:     []string{"w1"}, done: true, deadline: true},
		{name: "a drain at once (negative deadline, no ForceDeadline) is past its deadline",
			allocs:   []*sdk.Allocation{alloc("w1", web)},
			strategy: sdk.DrainStrategy{Deadline: -1},
			want:     []string{"w1"}, done: true, deadline: true},
		{name: "the deadline ends the drain of a move the scheduler could not place",
			allocs:   []*sdk.Allocation{alloc("w1", web, migrating)},
			strategy: sdk.DrainStrategy{ForceDeadline: now.Add(-time.Second)},
			done:     true, deadline: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The jobs are not stored: each allocation's own job version
			// governs its moves.
			w := drainWorld{strategies: map[string]sdk.DrainStrategy{"n0": tc.strategy}, allocs: tc.allocs}
			ds := w.decide(t, now)
			if len(ds) != 1 || ds[0].node.ID != "n0" {
				t.Fatalf("decisions %+v, want n0's alone", ds)
			}
			d := ds[0]
			slices.Sort(d.migrate)
			if fmt.Sprint(d.migrate) != fmt.Sprint(tc.want) || d.done != tc.done || d.deadlineReached != tc.deadline {
				t.Fatalf("migrate %v done %v (deadline %v), want %v done %v (deadline %v)",
					d.migrate, d.done, d.deadlineReached, tc.want, tc.done, tc.deadline)
			}
		})
	}
}

// TestDecideDrains_BudgetAcrossNodes: as in Nomad, a task group's
// migrations are budgeted across every draining node: at most its healthy
// allocations beyond count - max_parallel are marked, however many nodes
// drain at once.
func TestDecideDrains_BudgetAcrossNodes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	// web and api: six allocations each, web one move at a time, api two.
	web, api := drainJob("web", sdk.JobTypeService, 6, 1), drainJob("api", sdk.JobTypeService, 6, 2)
	// The stored versions of web in the cases below are of web's own
	// instance, which decide creates at index 1.
	web.CreateIndex = 1
	alloc := drainAlloc
	inDeployment := func(a *sdk.Allocation) { a.DeploymentID = "d1" }
	unhealthy := func(a *sdk.Allocation) {
		no := false
		a.DeploymentStatus = &sdk.AllocDeploymentStatus{Healthy: &no}
	}
	// spread places two allocations of j on each node, named after the
	// node's letter: a0, a1 on n0, b0, b1 on n1, and so on.
	spread := func(j *sdk.Job, nodes ...string) []*sdk.Allocation {
		var out []*sdk.Allocation
		for _, n := range nodes {
			for i := range 2 {
				out = append(out, alloc(fmt.Sprintf("%s%c%d", j.ID[:1], 'a'+n[1]-'0', i), j, n))
			}
		}
		return out
	}
	// with replaces allocations of set by ID (the same ID, changed).
	with := func(set []*sdk.Allocation, changed ...*sdk.Allocation) []*sdk.Allocation {
		out := slices.Clone(set)
		for _, c := range changed {
			i := slices.IndexFunc(out, func(a *sdk.Allocation) bool { return a.ID == c.ID })
			if i < 0 {
				out = append(out, c)
			} else {
				out[i] = c
			}
		}
		return out
	}
	draining := func(nodes ...string) map[string]sdk.DrainStrategy {
		out := map[string]sdk.DrainStrategy{}
		for _, n := range nodes {
			out[n] = sdk.DrainStrategy{}
		}
		return out
	}
	active := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusRunning}
	finished := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", Status: sdk.DeploymentStatusSuccessful}
	webs := spread(web, "n0", "n1", "n2")
	// fresh is job "web" registered again after purged was purged (the
	// store gives fresh a create index of its own).
	fresh, purged := drainJob("web", sdk.JobTypeService, 3, 1), drainJob("web", sdk.JobTypeService, 3, 1)

	cases := []struct {
		name string
		w    drainWorld
		want []string
	}{
		{name: "max_parallel 1, two nodes draining: one move in all",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: webs},
			want: []string{"wa0"}},
		{name: "max_parallel 1, every node draining: one move in all",
			w:    drainWorld{strategies: draining("n0", "n1", "n2"), allocs: webs},
			want: []string{"wa0"}},
		{name: "max_parallel 1, three of four nodes draining: one move in all",
			w: drainWorld{strategies: draining("n0", "n1", "n2"),
				allocs: []*sdk.Allocation{alloc("a", web, "n0"), alloc("b", web, "n1"), alloc("c", web, "n2"),
					alloc("d", web, "n3"), alloc("e", web, "n3"), alloc("f", web, "n3")}},
			want: []string{"a"}},
		{name: "max_parallel 2, two nodes draining: two moves in all",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: spread(api, "n0", "n1", "n2")},
			want: []string{"aa0", "aa1"}},
		{name: "max_parallel 2, one allocation per draining node",
			w: drainWorld{strategies: draining("n0", "n1", "n2"),
				allocs: []*sdk.Allocation{alloc("a", api, "n0"), alloc("b", api, "n1"), alloc("c", api, "n2"),
					alloc("d", api, "n3"), alloc("e", api, "n3"), alloc("f", api, "n3")}},
			want: []string{"a", "b"}},
		{name: "each group has its own budget",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: append(slices.Clone(webs), spread(api, "n0", "n1", "n2")...)},
			want: []string{"aa0", "aa1", "wa0"}},
		{name: "a move in flight on one node holds the budget of the others",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: with(webs, alloc("wa0", web, "n0", migrating))},
			want: nil},
		{name: "max_parallel 2: a move in flight on one node leaves one for the other",
			w: drainWorld{strategies: draining("n0", "n1"),
				allocs: []*sdk.Allocation{alloc("a", api, "n0", migrating), alloc("b", api, "n1"), alloc("c", api, "n1"),
					alloc("d", api, "n2"), alloc("e", api, "n2"), alloc("f", api, "n2")}},
			want: []string{"b"}},
		{name: "max_parallel 2: moves in flight on both nodes hold it all",
			w: drainWorld{strategies: draining("n0", "n1"),
				allocs: with(spread(api, "n0", "n1", "n2"), alloc("aa0", api, "n0", migrating), alloc("ab0", api, "n1", migrating))},
			want: nil},
		{name: "a replacement not running yet holds the budget",
			w: drainWorld{strategies: draining("n0", "n1"),
				allocs: with(webs, alloc("wa0", web, "n0", migrating, stopped, next("r")), alloc("r", web, "n2", pending))},
			want: nil},
		{name: "once the replacement's health is reported, the next move starts, on either node",
			w: drainWorld{strategies: draining("n0", "n1"),
				allocs: with(webs, alloc("wa0", web, "n0", migrating, stopped, next("r")), alloc("r", web, "n2"))},
			want: []string{"wa1"}},
		{name: "an allocation not running on a node not draining holds the budget",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: with(webs, alloc("wc1", web, "n2", pending))},
			want: nil},
		{name: "max_parallel 2: an allocation not running leaves one move",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: with(spread(api, "n0", "n1", "n2"), alloc("ac1", api, "n2", pending))},
			want: []string{"aa0"}},
		{name: "an allocation not running on a draining node is moved but not counted",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: with(spread(api, "n0", "n1", "n2"), alloc("aa0", api, "n0", pending))},
			want: []string{"aa0"}},
		{name: "a group short of its current count waits",
			w:    drainWorld{strategies: draining("n0", "n1"), jobs: []*sdk.Job{drainJob("web", sdk.JobTypeService, 7, 1)}, allocs: webs},
			want: nil},
		{name: "the current job's max_parallel applies",
			w:    drainWorld{strategies: draining("n0", "n1"), jobs: []*sdk.Job{drainJob("web", sdk.JobTypeService, 6, 3)}, allocs: webs},
			want: []string{"wa0", "wa1", "wb0"}},
		{name: "a running replacement whose health is not reported yet holds the budget",
			w: drainWorld{strategies: draining("n0", "n1"),
				allocs: with(webs, alloc("wa0", web, "n0", migrating, stopped, next("r")), alloc("r", web, "n2", unjudged))},
			want: nil},
		{name: "a replacement reported unhealthy counts, as in Nomad",
			w: drainWorld{strategies: draining("n0", "n1"),
				allocs: with(webs, alloc("wa0", web, "n0", migrating, stopped, next("r")), alloc("r", web, "n2", unhealthy))},
			want: []string{"wa1"}},
		{name: "a running allocation not on a draining node, its health not reported, holds the budget",
			w:    drainWorld{strategies: draining("n0", "n1"), allocs: with(webs, alloc("wc1", web, "n2", unjudged))},
			want: nil},
		{name: "health counts, not whether a deployment is over",
			w: drainWorld{strategies: draining("n0", "n1"), deployments: []*sdk.Deployment{finished},
				allocs: with(webs, alloc("wa0", web, "n0", migrating, stopped, next("r")), alloc("r", web, "n2", inDeployment, unjudged))},
			want: nil},
		{name: "in an active deployment, a replacement reported healthy counts",
			w: drainWorld{strategies: draining("n0", "n1"), deployments: []*sdk.Deployment{active},
				allocs: with(webs, alloc("wa0", web, "n0", migrating, stopped, next("r")), alloc("r", web, "n2", inDeployment))},
			want: []string{"wa1"}},
		{name: "a purged instance's allocations do not add to the budget",
			w: drainWorld{strategies: draining("n0", "n1"), jobs: []*sdk.Job{fresh},
				allocs: []*sdk.Allocation{alloc("a", fresh, "n0"), alloc("b", fresh, "n1"), alloc("c", fresh, "n2"),
					alloc("o1", purged, "n3"), alloc("o2", purged, "n3"), alloc("o3", purged, "n3")}},
			want: []string{"a"}},
		{name: "a node past its deadline moves everything, and that holds the others' budget",
			w: drainWorld{strategies: map[string]sdk.DrainStrategy{"n0": {ForceDeadline: now.Add(-time.Second)}, "n1": {}},
				allocs: webs},
			want: []string{"wa0", "wa1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := tc.w.decide(t, now)
			if got := marked(ds); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("marked %v, want %v", got, tc.want)
			}
			for _, d := range ds {
				if d.done && !d.deadlineReached {
					t.Fatalf("node %s is done with allocations left", d.node.ID)
				}
			}
		})
	}
}
