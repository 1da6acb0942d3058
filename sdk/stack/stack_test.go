package stack

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
)

// cluster is n nodes on 10 racks, the odd racks Windows (so a Linux job
// filters half of them).
func cluster(t *testing.T, n int) sdk.State {
	t.Helper()
	sync := &abi.StateSync{Full: true, Index: 1, SchedulerConfig: sdk.DefaultSchedulerConfiguration()}
	for i := 0; i < n; i++ {
		kernel := "linux"
		if i%10%2 == 1 {
			kernel = "windows"
		}
		node := &sdk.Node{ID: fmt.Sprintf("n-%03d", i), Datacenter: "dc1", NodePool: "default", NodeClass: "c",
			Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible,
			Attributes: map[string]string{"kernel.name": kernel, "driver.exec": "1"},
			Meta:       map[string]string{"rack": fmt.Sprintf("r%d", i%10)},
			NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 2000},
				Memory: sdk.NodeMemoryResources{MemoryMB: 2048}, Disk: sdk.NodeDiskResources{DiskMB: 10000}}}
		node.ComputeClass()
		sync.Nodes = append(sync.Nodes, node)
	}
	m := mirror.New()
	if err := m.Apply(sync); err != nil {
		t.Fatal(err)
	}
	return m
}

// place runs count selections of a spread job, placing each choice, and
// returns the chosen nodes and metrics; indexed false drops the group's
// caches before each selection, so that no index is ever built.
func place(t *testing.T, state sdk.State, count int, indexed bool) ([]string, []*sdk.AllocMetric) {
	t.Helper()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50, Datacenters: []string{"dc1"},
		Constraints: []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Spreads:     []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 100}},
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: count, Tasks: []*sdk.Task{{Name: "t", Driver: "exec",
			Resources: &sdk.Resources{CPU: 300, MemoryMB: 100}}}}}}
	return selectEach(t, state, job, indexed)
}

// TestWalk_IndexedEqualsPlain checks that skipping nodes known to fail
// their checks chooses the same nodes and explains them the same way as
// visiting every node (the index is only an optimisation).
func TestWalk_IndexedEqualsPlain(t *testing.T) {
	for _, n := range []int{40, 333} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			state := cluster(t, n)
			// Enough placements to exhaust nodes: the tail fails, which
			// must be explained alike too.
			count := n*3 + 10
			a, am := place(t, state, count, true)
			b, bm := place(t, state, count, false)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("choices differ:\nindexed %v\nplain   %v", a, b)
			}
			for i := range am {
				x, y := *am[i], *bm[i]
				if x.NodesEvaluated != y.NodesEvaluated || x.NodesFiltered != y.NodesFiltered || x.NodesExhausted != y.NodesExhausted ||
					!reflect.DeepEqual(x.ConstraintFiltered, y.ConstraintFiltered) || !reflect.DeepEqual(x.DimensionExhausted, y.DimensionExhausted) {
					t.Fatalf("placement %d explained differently:\nindexed %+v\nplain   %+v", i, x, y)
				}
			}
		})
	}
}

// busyCluster is cluster(n) with allocations of another job on a third of
// the nodes, so that nodes start with different usage.
func busyCluster(t *testing.T, n int) sdk.State {
	t.Helper()
	m := cluster(t, n).(*mirror.Mirror)
	other := &sdk.Job{Namespace: "default", ID: "other", Type: "service", Priority: 50}
	s := &abi.StateSync{FromIndex: 1, Index: 2, Jobs: []*sdk.Job{other}}
	for i := 0; i < n; i += 3 {
		s.Allocs = append(s.Allocs, &sdk.Allocation{ID: fmt.Sprintf("o-%03d", i), Namespace: "default", JobID: "other",
			TaskGroup: "g", NodeID: fmt.Sprintf("n-%03d", i), DesiredStatus: sdk.AllocDesiredStatusRun,
			ClientStatus: sdk.AllocClientStatusRunning, AllocatedResources: &sdk.AllocatedResources{
				Tasks: map[string]*sdk.AllocatedTaskResources{"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: int64(100 * (1 + i%7))},
					Memory: sdk.AllocatedMemoryResources{MemoryMB: int64(64 * (1 + i%5))}}}}})
	}
	if err := m.Apply(s); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStack_NumberedNodesChooseAsUnnumbered checks that reading nodes by
// the numbers the state mirror gives them (sdk.Node.Slots: the plan's
// records, usage and capacity, the class cache) changes no decision: the
// same selections over the mirror with its numbering hidden choose the
// same nodes and explain them identically, scores included.
func TestStack_NumberedNodesChooseAsUnnumbered(t *testing.T) {
	linux := []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}}
	group := func(count int, cs ...*sdk.Constraint) []*sdk.TaskGroup {
		return []*sdk.TaskGroup{{Name: "g", Count: count, Constraints: cs, Tasks: []*sdk.Task{{Name: "t", Driver: "exec",
			Resources: &sdk.Resources{CPU: 300, MemoryMB: 100}}}}}
	}
	jobs := map[string]*sdk.Job{
		"service": {Type: "service", Constraints: linux, TaskGroups: group(400)},
		"batch":   {Type: "batch", Constraints: linux, TaskGroups: group(400)},
		"spread": {Type: "service", Constraints: linux, Spreads: []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 100}},
			TaskGroups: group(400)},
		"distinct hosts": {Type: "service", TaskGroups: group(200, &sdk.Constraint{Operand: "distinct_hosts"},
			&sdk.Constraint{LTarget: "${meta.rack}", RTarget: "r[0-4]", Operand: "regexp"})},
	}
	for name, job := range jobs {
		t.Run(name, func(t *testing.T) {
			job.Namespace, job.ID, job.Priority, job.Datacenters = "default", "web", 50, []string{"dc1"}
			state := busyCluster(t, 300)
			if _, ok := state.(numberedState); !ok {
				t.Fatal("the mirror does not number its nodes")
			}
			a, am := selectAll(t, state, job)
			b, bm := selectAll(t, hideNumbers(state), job)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("choices differ:\nnumbered   %v\nunnumbered %v", a, b)
			}
			for i := range am {
				if !reflect.DeepEqual(am[i], bm[i]) {
					t.Fatalf("placement %d explained differently:\nnumbered   %+v\nunnumbered %+v", i, am[i], bm[i])
				}
			}
		})
	}
}

// unnumbered is a state whose nodes are unnumbered copies of another's.
type unnumbered struct {
	sdk.State
	nodes []*sdk.Node
	byID  map[string]*sdk.Node
}

func hideNumbers(state sdk.State) *unnumbered {
	u := &unnumbered{State: state, byID: map[string]*sdk.Node{}}
	for _, n := range state.Nodes() {
		c := *n
		c.SetSlots(0, 0)
		u.nodes = append(u.nodes, &c)
		u.byID[c.ID] = &c
	}
	return u
}

func (u *unnumbered) Nodes() []*sdk.Node       { return u.nodes }
func (u *unnumbered) Node(id string) *sdk.Node { return u.byID[id] }

// selectAll selects a node for each allocation of job's group, placing
// each choice, and returns the chosen nodes and metrics.
func selectAll(t *testing.T, state sdk.State, job *sdk.Job) ([]string, []*sdk.AllocMetric) {
	t.Helper()
	return selectEach(t, state, job, true)
}

// selectEach is selectAll; indexed false drops the group's caches before
// each selection.
func selectEach(t *testing.T, state sdk.State, job *sdk.Job, indexed bool) ([]string, []*sdk.AllocMetric) {
	t.Helper()
	tg := job.TaskGroups[0]
	eval := &sdk.Evaluation{ID: "e1", Namespace: "default", JobID: job.ID, Priority: job.Priority}
	ctx := sdk.NewContext(state, nil, nil, time.Unix(0, 0), nil, eval.ID)
	plan := NewPlan(state, eval, job)
	s := New(ctx, plan, job, ConfigFor(job.Type, state.SchedulerConfig()))
	nodes, _, byDC := ReadyNodes(state, job)
	Shuffle(nodes, ctx.Rand())
	s.SetNodes(nodes, byDC)
	s.Expect(tg.Count)
	var chosen []string
	var metrics []*sdk.AllocMetric
	for i := range tg.Count {
		if !indexed {
			delete(s.groups, tg)
			s.lastGroup = nil
		}
		o, m := s.Select(tg, Options{})
		metrics = append(metrics, m)
		if o == nil {
			chosen = append(chosen, "")
			continue
		}
		chosen = append(chosen, o.Node.ID)
		plan.Place(&sdk.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: job.ID, TaskGroup: tg.Name,
			NodeID: o.Node.ID, AllocatedResources: o.Resources, DesiredStatus: sdk.AllocDesiredStatusRun})
	}
	return chosen, metrics
}
