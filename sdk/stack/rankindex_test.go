package stack

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
)

// rankCase is a random cluster and job: few node shapes and rack counts so
// that scores tie, spreads on one or two attributes (some nodes lack one),
// with and without percentage targets, affinities, other jobs' and the
// job's own allocations already placed, and more placements than fit.
type rankCase struct {
	state sdk.State
	job   *sdk.Job
	algo  string
	// placements lists the groups to place, interleaved.
	placements []*sdk.TaskGroup
	// penalty marks placements made as reschedules (penalty nodes).
	penalty map[int]map[string]bool
}

func randomRankCase(t *testing.T, seed uint64) rankCase {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	pick := func(xs ...int) int { return xs[r.IntN(len(xs))] }
	nNodes := pick(5, 12, 30, 60, 150, 320)
	racks := 1 + r.IntN(9)
	zones := 1 + r.IntN(3)
	sync := &abi.StateSync{Full: true, Index: 1, SchedulerConfig: sdk.DefaultSchedulerConfiguration()}
	for i := 0; i < nNodes; i++ {
		kernel := "linux"
		if r.IntN(4) == 0 {
			kernel = "windows"
		}
		meta := map[string]string{"rack": fmt.Sprintf("r%d", r.IntN(racks))}
		if r.IntN(6) != 0 {
			meta["zone"] = fmt.Sprintf("z%d", r.IntN(zones))
		}
		node := &sdk.Node{ID: fmt.Sprintf("n-%03d", i), Datacenter: "dc1", NodePool: "default", NodeClass: fmt.Sprintf("c%d", r.IntN(2)),
			Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible,
			Attributes: map[string]string{"kernel.name": kernel, "driver.exec": "1"}, Meta: meta,
			NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: int64(pick(1000, 2000, 2000, 4000))},
				Memory: sdk.NodeMemoryResources{MemoryMB: int64(pick(1024, 2048, 2048))}, Disk: sdk.NodeDiskResources{DiskMB: 100000}}}
		node.ComputeClass()
		sync.Nodes = append(sync.Nodes, node)
	}

	job := &sdk.Job{Namespace: "default", ID: "web", Name: "web", Type: sdk.JobTypeService, Priority: 50, Datacenters: []string{"dc1"}}
	if r.IntN(2) == 0 {
		job.Constraints = []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}}
	}
	spreads := func() []*sdk.Spread {
		var out []*sdk.Spread
		for _, attr := range []string{"${meta.rack}", "${meta.zone}", "${node.unique.id}"} {
			if r.IntN(2) == 0 || (attr == "${node.unique.id}" && r.IntN(4) != 0) {
				continue // a unique attribute makes a class per node
			}
			sp := &sdk.Spread{Attribute: attr, Weight: int8(1 + r.IntN(100))}
			if r.IntN(2) == 0 && attr != "${node.unique.id}" {
				left := 100
				if r.IntN(2) == 0 {
					left = 1 + r.IntN(99) // the rest is "*"
				}
				values := racks
				prefix := "r"
				if attr == "${meta.zone}" {
					values, prefix = zones, "z"
				}
				for v := 0; v < values && left > 0; v++ {
					if r.IntN(3) == 0 {
						continue
					}
					pct := 1 + r.IntN(left)
					if r.IntN(25) == 0 {
						pct = 0 // impure: the walk, not the index
					}
					left -= pct
					sp.SpreadTarget = append(sp.SpreadTarget, &sdk.SpreadTarget{Value: fmt.Sprintf("%s%d", prefix, v), Percent: uint8(pct)})
				}
			}
			out = append(out, sp)
		}
		return out
	}
	affinities := func() []*sdk.Affinity {
		var out []*sdk.Affinity
		for i := r.IntN(3); i > 0; i-- {
			w := int8(r.IntN(201) - 100)
			if r.IntN(2) == 0 {
				out = append(out, &sdk.Affinity{LTarget: "${meta.rack}", RTarget: fmt.Sprintf("r%d", r.IntN(racks)), Operand: "=", Weight: w})
			} else {
				out = append(out, &sdk.Affinity{LTarget: "${node.class}", RTarget: "c1", Operand: "=", Weight: w})
			}
		}
		return out
	}
	if r.IntN(3) == 0 {
		job.Spreads = spreads()
	}
	if r.IntN(4) == 0 {
		job.Affinities = affinities()
	}
	for gi := 1 + r.IntN(3); gi > 0; gi-- {
		tg := &sdk.TaskGroup{Name: fmt.Sprintf("g%d", gi), Count: pick(1, 3, 10, nNodes, 3*nNodes, 200),
			Spreads: spreads(), Affinities: affinities(),
			Tasks: []*sdk.Task{{Name: "t", Driver: "exec",
				Resources: &sdk.Resources{CPU: pick(100, 250, 500, 900), MemoryMB: pick(64, 128, 256, 700)}}}}
		if r.IntN(8) == 0 {
			// Nothing to fit: every node scores a fit of exactly zero, so
			// scores tie at and below zero (set-aside options).
			tg.Tasks[0].Resources = &sdk.Resources{}
		}
		if r.IntN(20) == 0 {
			tg.Constraints = []*sdk.Constraint{{Operand: sdk.ConstraintDistinctHosts, RTarget: "true"}}
		}
		job.TaskGroups = append(job.TaskGroups, tg)
	}
	sync.Jobs = []*sdk.Job{job}

	// Allocations already running: other jobs' (capacity) and the job's
	// own (spread counts, anti-affinity).
	for i := r.IntN(nNodes * 2); i > 0; i-- {
		node := sync.Nodes[r.IntN(nNodes)]
		a := &sdk.Allocation{ID: fmt.Sprintf("old-%d", i), Namespace: "default", JobID: "other", TaskGroup: "x",
			NodeID: node.ID, DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
			AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {
				Cpu: sdk.AllocatedCpuResources{CpuShares: int64(pick(100, 300, 500))}, Memory: sdk.AllocatedMemoryResources{MemoryMB: 128}}}}}
		if r.IntN(2) == 0 {
			tg := job.TaskGroups[r.IntN(len(job.TaskGroups))]
			a.JobID, a.TaskGroup, a.JobVersion = job.ID, tg.Name, job.Version
		}
		sync.Allocs = append(sync.Allocs, a)
	}
	m := mirror.New()
	if err := m.Apply(sync); err != nil {
		t.Fatal(err)
	}

	c := rankCase{state: m, job: job, algo: sdk.SchedulerAlgorithmBinpack, penalty: map[int]map[string]bool{}}
	if r.IntN(2) == 0 {
		c.algo = sdk.SchedulerAlgorithmSpread
	}
	left := map[*sdk.TaskGroup]int{}
	for _, tg := range job.TaskGroups {
		left[tg] = min(tg.Count, 400)
	}
	for len(left) > 0 {
		for _, tg := range job.TaskGroups {
			if left[tg] == 0 {
				delete(left, tg)
				continue
			}
			if r.IntN(30) == 0 {
				c.penalty[len(c.placements)] = map[string]bool{sync.Nodes[r.IntN(nNodes)].ID: true}
			}
			c.placements = append(c.placements, tg)
			left[tg]--
		}
	}
	return c
}

// selection is one Select's outcome, as the scheduler would use it.
type selection struct {
	node      string
	score     float64
	resources *sdk.AllocatedResources
	metric    *sdk.AllocMetric
}

// run makes c's placements through one stack, placing each choice, and
// reports whether the rank index served any selection.
func (c rankCase) run(seed uint64, walkOnly bool) (out []selection, indexed bool) {
	eval := &sdk.Evaluation{ID: fmt.Sprintf("eval-%d", seed), Namespace: "default", JobID: c.job.ID, Priority: 50}
	ctx := sdk.NewContext(c.state, nil, nil, time.Unix(0, 0), nil, eval.ID)
	plan := NewPlan(c.state, eval, c.job)
	cfg := ConfigFor(c.job.Type, c.state.SchedulerConfig())
	cfg.Algorithm = c.algo
	s := New(ctx, plan, c.job, cfg)
	s.walkOnly = walkOnly
	nodes, _, byDC := ReadyNodes(c.state, c.job)
	Shuffle(nodes, ctx.Rand())
	s.SetNodes(nodes, byDC)
	s.Expect(len(c.placements))
	for i, tg := range c.placements {
		o, m := s.Select(tg, Options{PenaltyNodes: c.penalty[i]})
		sel := selection{metric: m}
		if o != nil {
			sel.node, sel.score, sel.resources = o.Node.ID, o.Score, o.Resources
			plan.Place(&sdk.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: c.job.ID, TaskGroup: tg.Name,
				NodeID: o.Node.ID, AllocatedResources: o.Resources, DesiredStatus: sdk.AllocDesiredStatusRun})
		}
		out = append(out, sel)
		indexed = indexed || s.groups[tg].ranked != nil
	}
	return out, indexed
}

// TestRankIndex_EqualsWalk checks that the rank index makes exactly the
// walk's decisions on random clusters and jobs: the same node, score and
// resources for every placement, and the same metric (counts and the best
// five's scores), until nodes run out.
func TestRankIndex_EqualsWalk(t *testing.T) {
	seeds := uint64(2000)
	if testing.Short() {
		seeds = 200
	}
	indexed := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		c := randomRankCase(t, seed)
		got, used := c.run(seed, false)
		want, _ := c.run(seed, true)
		if used {
			indexed++
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("seed %d, placement %d of %d (group %s): index and walk differ\nindex %+v\n      %+v\nwalk  %+v\n      %+v",
					seed, i, len(want), c.placements[i].Name, got[i], *got[i].metric, want[i], *want[i].metric)
			}
		}
	}
	if indexed < int(seeds)/4 {
		t.Fatalf("the rank index served only %d of %d cases", indexed, seeds)
	}
	t.Logf("the rank index served %d of %d cases", indexed, seeds)
}
