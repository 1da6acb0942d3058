package generic_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/schedtest"
	"github.com/drover-sched/drover/sdk/schedulers/system"
)

// randomCluster returns n nodes of varied size, racks, zones and kernels,
// some with reserved ports.
func randomCluster(r *rand.Rand, n int) []*sdk.Node {
	nodes := make([]*sdk.Node, n)
	for i := range nodes {
		node := schedtest.Node(fmt.Sprintf("n-%03d", i))
		node.NodeResources.Cpu.CpuShares = []int64{1000, 2000, 4000, 8000}[r.IntN(4)]
		node.NodeResources.Memory.MemoryMB = []int64{1024, 2048, 8192}[r.IntN(3)]
		node.Meta["rack"] = fmt.Sprintf("r%d", r.IntN(5))
		node.Meta["zone"] = []string{"a", "b", "c"}[r.IntN(3)]
		if r.IntN(6) == 0 {
			node.Attributes["kernel.name"] = "windows"
		}
		if r.IntN(3) == 0 {
			node.ReservedResources.Networks.ReservedHostPorts = "22,8080"
			node.NodeResources.MinDynamicPort, node.NodeResources.MaxDynamicPort = 20000, 20000+r.IntN(8)
		}
		nodes[i] = node
	}
	return nodes
}

// randomJob returns a service or batch job of one to three groups with
// random counts, resources, task lifecycles, constraints, distinct_hosts,
// spreads, affinities and ports.
func randomJob(r *rand.Rand, id string) *sdk.Job {
	job := schedtest.ServiceJob(id, 1)
	if r.IntN(3) == 0 {
		job.Type = sdk.JobTypeBatch
	}
	if r.IntN(4) == 0 {
		job.Constraints = append(job.Constraints, &sdk.Constraint{LTarget: "${meta.rack}", RTarget: "r4", Operand: "!="})
	}
	if r.IntN(5) == 0 {
		job.Constraints = append(job.Constraints, &sdk.Constraint{Operand: sdk.ConstraintDistinctHosts})
	}
	if r.IntN(6) == 0 {
		// Across all the job's groups.
		job.Constraints = append(job.Constraints, &sdk.Constraint{LTarget: "${meta.zone}", RTarget: "3", Operand: sdk.ConstraintDistinctProperty})
	}
	var groups []*sdk.TaskGroup
	for g := 0; g < 1+r.IntN(3); g++ {
		tg := &sdk.TaskGroup{Name: fmt.Sprintf("g%d", g), Count: 1 + r.IntN(25), EphemeralDisk: &sdk.EphemeralDisk{SizeMB: 100},
			Tasks: []*sdk.Task{{Name: "t", Driver: "exec",
				Resources: &sdk.Resources{CPU: []int{100, 250, 500, 1000}[r.IntN(4)], MemoryMB: []int{64, 256, 512}[r.IntN(3)]}}}}
		if r.IntN(3) == 0 {
			// A task that runs beside or around the main one: the stack and
			// the applier must fold it alike (sdk.TaskPhases).
			hooks := []string{sdk.TaskLifecycleHookPrestart, sdk.TaskLifecycleHookPoststart, sdk.TaskLifecycleHookPoststop}
			tg.Tasks = append(tg.Tasks, &sdk.Task{Name: "aside", Driver: "exec",
				Lifecycle: &sdk.TaskLifecycle{Hook: hooks[r.IntN(3)], Sidecar: r.IntN(2) == 0},
				Resources: &sdk.Resources{CPU: []int{100, 800, 1500}[r.IntN(3)], MemoryMB: []int{64, 1024}[r.IntN(2)]}})
		}
		if r.IntN(3) == 0 {
			tg.Constraints = append(tg.Constraints, &sdk.Constraint{LTarget: "${meta.zone}", RTarget: "a,b", Operand: sdk.ConstraintSetContainsAny})
		}
		if r.IntN(4) == 0 {
			tg.Constraints = append(tg.Constraints, &sdk.Constraint{Operand: sdk.ConstraintDistinctHosts})
		}
		if r.IntN(5) == 0 {
			tg.Constraints = append(tg.Constraints, &sdk.Constraint{LTarget: "${meta.rack}", RTarget: "2", Operand: sdk.ConstraintDistinctProperty})
		}
		if r.IntN(3) == 0 {
			tg.Spreads = []*sdk.Spread{{Attribute: "${meta.zone}", Weight: 50}}
		}
		if r.IntN(3) == 0 {
			tg.Affinities = []*sdk.Affinity{{LTarget: "${meta.rack}", RTarget: "r1", Operand: "=", Weight: 50}}
		}
		if r.IntN(3) == 0 {
			tg.Networks = []*sdk.NetworkResource{{Mode: "host", DynamicPorts: []sdk.Port{{Label: "http"}}}}
			if r.IntN(2) == 0 {
				tg.Networks[0].ReservedPorts = []sdk.Port{{Label: "admin", Value: 9000 + r.IntN(3)}}
			}
		}
		groups = append(groups, tg)
	}
	job.TaskGroups = groups
	return job
}

// checkInvariants checks the committed state against the safety rules
// every scheduler decision must keep.
func checkInvariants(t *testing.T, h *schedtest.Harness, nodes []*sdk.Node) {
	t.Helper()
	for _, res := range h.Results {
		if len(res.RejectedNodes) > 0 {
			t.Fatalf("the applier rejected nodes %v: the scheduler proposed an over-commit", res.RejectedNodes)
		}
	}
	ch := feasible.NewChecker()
	for _, n := range nodes {
		var live []*sdk.Allocation
		for _, a := range h.State().AllocsByNode(n.ID) {
			if !a.TerminalStatus() {
				live = append(live, a)
			}
		}
		if ok, dim := feasible.AllocsFit(n, live); !ok {
			t.Fatalf("node %s is over-committed (%s)", n.ID, dim)
		}
		jobs, groups := map[string]int{}, map[string]int{}
		for _, a := range live {
			job := a.Job
			tg := job.LookupTaskGroup(a.TaskGroup)
			checks := feasible.NewGroupChecks(job, tg)
			if reason := checks.Check(ch, n); reason != "" {
				t.Fatalf("allocation %s on %s violates %q", a.Name, n.ID, reason)
			}
			// distinct_hosts binds the allocations of the job's current
			// version (older ones followed their own version's rules).
			if cur := h.State().Job(a.Namespace, a.JobID); cur == nil || a.JobVersion != cur.Version {
				continue
			}
			jobs[a.JobID]++
			groups[a.JobID+"/"+a.TaskGroup]++
			if feasible.DistinctHostsEnabled(job.Constraints) && jobs[a.JobID] > 1 {
				t.Fatalf("job %s has %d allocations on %s despite distinct_hosts", a.JobID, jobs[a.JobID], n.ID)
			}
			if feasible.DistinctHostsEnabled(tg.Constraints) && groups[a.JobID+"/"+a.TaskGroup] > 1 {
				t.Fatalf("group %s has two allocations on %s despite distinct_hosts", a.TaskGroup, n.ID)
			}
		}
	}
}

// checkDistinctProperty verifies distinct_property constraints of job: a
// group's over its allocations, the job's over all of them.
func checkDistinctProperty(t *testing.T, h *schedtest.Harness, job *sdk.Job) {
	t.Helper()
	for _, c := range job.Constraints {
		if c.Operand != sdk.ConstraintDistinctProperty {
			continue
		}
		limit, _ := strconv.Atoi(c.RTarget)
		counts := map[string]int{}
		for _, a := range h.Live(job.Namespace, job.ID) {
			if a.JobVersion != job.Version {
				continue
			}
			v, _ := feasible.ResolveTarget(c.LTarget, h.State().Node(a.NodeID))
			counts[v]++
			if counts[v] > limit {
				t.Fatalf("job %s has %d allocations with %s = %s, allowed %d", job.ID, counts[v], c.LTarget, v, limit)
			}
		}
	}
	for _, tg := range job.TaskGroups {
		for _, c := range tg.Constraints {
			if c.Operand != sdk.ConstraintDistinctProperty {
				continue
			}
			counts := map[string]int{}
			for _, a := range h.Live(job.Namespace, job.ID) {
				if a.TaskGroup != tg.Name || a.JobVersion != job.Version {
					continue
				}
				v, _ := feasible.ResolveTarget(c.LTarget, h.State().Node(a.NodeID))
				counts[v]++
				if counts[v] > 2 {
					t.Fatalf("group %s has %d allocations with %s = %s, allowed 2", tg.Name, counts[v], c.LTarget, v)
				}
			}
		}
	}
}

func TestProperty_SafetyOverRandomClustersAndJobs(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			h := schedtest.New(t)
			nodes := randomCluster(r, 5+r.IntN(30))
			h.UpsertNodes(nodes...)
			var jobs []*sdk.Job
			for j := 0; j < 1+r.IntN(3); j++ {
				job := randomJob(r, fmt.Sprintf("job-%d", j))
				jobs = append(jobs, job)
				s := &generic.Scheduler{Batch: job.Type == sdk.JobTypeBatch}
				h.Process(s, h.RegisterJob(job))
				// Scale the job and run it again: updates must keep the
				// rules too.
				if r.IntN(2) == 0 {
					scaled := randomJob(rand.New(rand.NewPCG(seed, uint64(j))), job.ID)
					scaled.Type = job.Type
					h.Process(s, h.RegisterJob(scaled))
					jobs[len(jobs)-1] = scaled
				}
			}
			checkInvariants(t, h, nodes)
			for _, job := range jobs {
				checkDistinctProperty(t, h, job)
			}
		})
	}
}

// TestProperty_SpreadWithinOneOfTarget places spread jobs on roomy
// clusters (capacity never binds) and checks that every value's count is
// within one allocation of its target: the percentages of the targets, or
// an even share for a spread without targets.
func TestProperty_SpreadWithinOneOfTarget(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			racks := 2 + r.IntN(4)
			var nodes []*sdk.Node
			for i := 0; i < racks*(2+r.IntN(5)); i++ {
				n := schedtest.Node(fmt.Sprintf("n-%03d", i))
				n.NodeResources.Cpu.CpuShares, n.NodeResources.Memory.MemoryMB = 64000, 64000
				n.Meta["rack"] = fmt.Sprintf("r%d", i%racks)
				nodes = append(nodes, n)
			}
			h := schedtest.New(t)
			h.UpsertNodes(nodes...)
			job := schedtest.ServiceJob("spread", 5+r.IntN(60))
			tg := job.TaskGroups[0]
			tg.Tasks[0].Resources = &sdk.Resources{CPU: 100, MemoryMB: 64}
			sp := &sdk.Spread{Attribute: "${meta.rack}", Weight: 100}
			want := map[string]float64{}
			if r.IntN(2) == 0 {
				// Targets over some racks, summing to 100%.
				left := 100
				for i := 0; i < racks-1 && left > 0; i++ {
					p := r.IntN(left + 1)
					if i == racks-2 {
						p = left
					}
					sp.SpreadTarget = append(sp.SpreadTarget, &sdk.SpreadTarget{Value: fmt.Sprintf("r%d", i), Percent: uint8(p)})
					want[fmt.Sprintf("r%d", i)] = float64(p) / 100 * float64(tg.Count)
					left -= p
				}
			} else {
				for i := 0; i < racks; i++ {
					want[fmt.Sprintf("r%d", i)] = float64(tg.Count) / float64(racks)
				}
			}
			tg.Spreads = []*sdk.Spread{sp}
			h.Process(&generic.Scheduler{}, h.RegisterJob(job))
			got := map[string]int{}
			for _, a := range h.Live("default", "spread") {
				got[h.State().Node(a.NodeID).Meta["rack"]]++
			}
			for v, w := range want {
				if d := float64(got[v]) - w; d > 1 || d < -1 {
					t.Fatalf("rack %s has %d allocations, target %.1f (count %d, targets %v): got %v", v, got[v], w, tg.Count, want, got)
				}
			}
		})
	}
}

// TestProperty_RolloutsLeaveOneAllocationPerIndex runs random sequences
// of updates (resizes, destructive changes, canaries, max_parallel) of a
// service group to the end of each deployment, promoting canaries once
// they are healthy, and checks what every finished rollout must leave:
// count allocations, all of the job's version, named with the indexes 0
// to count-1 once each.
func TestProperty_RolloutsLeaveOneAllocationPerIndex(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			h := schedtest.New(t)
			h.UpsertNodes(schedtest.Nodes("n", 12)...)
			s := &generic.Scheduler{}
			var history []string
			for u := 0; u < 1+r.IntN(4); u++ {
				job := schedtest.ServiceJob("web", 1+r.IntN(6))
				tg := job.TaskGroups[0]
				tg.Tasks[0].Config = sdk.Opaque{"command": fmt.Sprintf("/bin/v%d", r.IntN(2))}
				if r.IntN(4) != 0 {
					tg.Update = &sdk.UpdateStrategy{MaxParallel: 1 + r.IntN(3), Canary: r.IntN(3),
						MinHealthyTime: time.Second, HealthyDeadline: time.Minute}
				}
				history = append(history, fmt.Sprintf("count %d %s update %+v", tg.Count, tg.Tasks[0].Config["command"], tg.Update))
				h.Process(s, h.RegisterJob(job))
				job = h.State().Job("default", "web")
				for step := 0; ; step++ {
					if step == 20 {
						t.Fatalf("rollout not finished after %d evals; updates:\n%s", step, strings.Join(history, "\n"))
					}
					var unhealthy []*sdk.Allocation
					for _, a := range h.Live("default", "web") {
						if !a.DeploymentStatus.IsHealthy() {
							unhealthy = append(unhealthy, a)
						}
					}
					h.SetHealth(true, unhealthy...)
					d := h.State().LatestDeployment("default", "web")
					if d == nil || d.JobVersion != job.Version || d.Status == sdk.DeploymentStatusSuccessful {
						break
					}
					if st := d.TaskGroups["web"]; st.DesiredCanaries > 0 && !st.Promoted {
						d = d.Copy()
						d.TaskGroups["web"].Promoted = true
						h.UpsertDeployment(d)
					}
					h.Process(s, h.NewEval(job, sdk.EvalTriggerDeploymentWatcher))
				}
				live := h.Live("default", "web")
				var want []string
				for i := 0; i < job.TaskGroups[0].Count; i++ {
					want = append(want, sdk.AllocName("web", "web", i))
				}
				sort.Strings(want)
				if got := names(live); !slices.Equal(got, want) {
					t.Fatalf("after update %d: live names %v, want %v; updates:\n%s", u, got, want, strings.Join(history, "\n"))
				}
				for _, a := range live {
					if a.JobVersion != job.Version {
						t.Fatalf("after update %d: %s on version %d, want %d; updates:\n%s", u, a.Name, a.JobVersion, job.Version, strings.Join(history, "\n"))
					}
				}
			}
		})
	}
}

// TestProperty_SystemJobsOverRandomClusters fills random clusters with
// random lower-priority service and batch jobs, then runs a system job, or
// a sysbatch job of count 1 to 3, of random size, constraints and priority
// (preempting when it is high enough and preemption is on) and checks the
// safety rules, and that the job runs on every node its checks pass as
// many allocations as fit there, up to its count, beside what may not be
// preempted.
func TestProperty_SystemJobsOverRandomClusters(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 13))
			h := schedtest.New(t)
			nodes := randomCluster(r, 5+r.IntN(25))
			h.UpsertNodes(nodes...)
			for j := 0; j < 1+r.IntN(3); j++ {
				job := randomJob(r, fmt.Sprintf("job-%d", j))
				job.Priority = []int{20, 50}[r.IntN(2)]
				h.Process(&generic.Scheduler{Batch: job.Type == sdk.JobTypeBatch}, h.RegisterJob(job))
			}
			sys := schedtest.SystemJob("agent")
			sys.Priority = []int{30, 50, 90}[r.IntN(3)]
			tg := sys.TaskGroups[0]
			if r.IntN(2) == 0 {
				// A sysbatch group runs count allocations on each node.
				sys.Type, tg.Count = sdk.JobTypeSysBatch, 1+r.IntN(3)
			}
			tg.Tasks[0].Resources = &sdk.Resources{CPU: []int{100, 500, 1500}[r.IntN(3)], MemoryMB: []int{64, 512, 1024}[r.IntN(3)]}
			if r.IntN(3) == 0 {
				tg.Constraints = append(tg.Constraints, &sdk.Constraint{LTarget: "${meta.zone}", RTarget: "c", Operand: "!="})
			}
			preempt := r.IntN(2) == 0
			c := sdk.DefaultSchedulerConfiguration()
			c.PreemptionConfig.SystemSchedulerEnabled = preempt
			c.PreemptionConfig.SysBatchSchedulerEnabled = preempt
			h.SetSchedulerConfig(c)
			h.Process(&system.Scheduler{}, h.RegisterJob(sys))
			checkInvariants(t, h, nodes)

			ch := feasible.NewChecker()
			checks := feasible.NewGroupChecks(sys, tg)
			ask := sdk.Usage{CPU: int64(tg.Tasks[0].Resources.CPU), MemoryMB: int64(tg.Tasks[0].Resources.MemoryMB),
				DiskMB: int64(tg.EphemeralDisk.SizeMB)}
			for _, n := range nodes {
				var mine int
				var kept sdk.Usage // what the system job may not preempt
				for _, a := range h.State().AllocsByNode(n.ID) {
					switch {
					case a.TerminalStatus():
					case a.JobID == sys.ID:
						mine++
					case !preempt || sys.Priority-a.Job.Priority < 10:
						kept.Add(a.Usage())
					}
				}
				if mine > tg.Count {
					t.Fatalf("node %s runs %d allocations of the %s job of count %d", n.ID, mine, sys.Type, tg.Count)
				}
				// As many as fit beside what may not be preempted.
				can := 0
				for can < tg.Count && checks.Check(ch, n) == "" {
					kept.Add(ask)
					if fits, _ := kept.Fits(n.Capacity()); !fits {
						break
					}
					can++
				}
				if can != mine {
					t.Fatalf("node %s: room for %d, %s allocations %d of count %d (priority %d, preemption %v)",
						n.ID, can, sys.Type, mine, tg.Count, sys.Priority, preempt)
				}
			}
			for _, res := range h.Results {
				for _, victims := range res.NodePreemptions {
					for _, v := range victims {
						if old := h.State().Alloc(v.ID); old == nil || sys.Priority-old.Job.Priority < 10 {
							t.Fatalf("preempted %s, not at least 10 below priority %d", v.ID, sys.Priority)
						}
					}
				}
			}
		})
	}
}
