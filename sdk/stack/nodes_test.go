package stack

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/mirror"
)

// TestReadyCache_EqualsReadyNodes checks that the cache answers as
// ReadyNodes does across node changes, jobs in other datacenters and pools,
// and callers that change what they were given; each job is asked twice in
// a row, the second time from the cache.
func TestReadyCache_EqualsReadyNodes(t *testing.T) {
	node := func(i int, status string) *sdk.Node {
		n := &sdk.Node{ID: fmt.Sprintf("n-%03d", i), Datacenter: fmt.Sprintf("dc%d", i%3), NodePool: "default",
			Status: status, SchedulingEligibility: sdk.NodeSchedulingEligible}
		if i%7 == 0 {
			n.NodePool = "gpu"
		}
		return n
	}
	full := &abi.StateSync{Full: true, Index: 1}
	for i := 0; i < 50; i++ {
		status := sdk.NodeStatusReady
		if i%5 == 0 {
			status = sdk.NodeStatusDown
		}
		full.Nodes = append(full.Nodes, node(i, status))
	}
	m := mirror.New()
	if err := m.Apply(full); err != nil {
		t.Fatal(err)
	}
	syncs := []struct {
		name string
		sync *abi.StateSync
	}{
		{"unchanged", nil},
		{"node down", &abi.StateSync{FromIndex: 1, Index: 2, Nodes: []*sdk.Node{node(3, sdk.NodeStatusDown)}}},
		{"node back", &abi.StateSync{FromIndex: 2, Index: 3, Nodes: []*sdk.Node{node(3, sdk.NodeStatusReady)}}},
		{"node deleted", &abi.StateSync{FromIndex: 3, Index: 4, DeletedNodes: []string{"n-004"}}},
		{"node added", &abi.StateSync{FromIndex: 4, Index: 5, Nodes: []*sdk.Node{node(60, sdk.NodeStatusReady)}}},
		{"full sync", &abi.StateSync{Full: true, Index: 6, Nodes: full.Nodes[:20]}},
	}
	jobs := []*sdk.Job{
		{ID: "all"},
		{ID: "dc1", Datacenters: []string{"dc1"}},
		{ID: "dc1-2", Datacenters: []string{"dc1", "dc2"}},
		{ID: "glob", Datacenters: []string{"dc*"}},
		{ID: "gpu", NodePool: "gpu"},
		{ID: "any pool", NodePool: sdk.AllNodePool},
	}
	var c ReadyCache
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range syncs {
		t.Run(s.name, func(t *testing.T) {
			if err := m.Apply(s.sync); err != nil {
				t.Fatal(err)
			}
			// The job asked for last before the sync comes first, so that
			// the cache is asked again for what it holds.
			for _, job := range append(jobs[len(jobs)-1:], jobs...) {
				for round := 0; round < 2; round++ {
					wantReady, wantNotReady, wantByDC := ReadyNodes(m, job)
					ready, notReady, byDC := c.ReadyNodes(m, job)
					if !reflect.DeepEqual(ready, wantReady) || !reflect.DeepEqual(notReady, wantNotReady) ||
						!reflect.DeepEqual(byDC, wantByDC) {
						t.Fatalf("job %s, round %d: cache differs from ReadyNodes", job.ID, round)
					}
					// What a caller does with its copies must not reach the cache.
					Shuffle(ready, rng)
					notReady["x"] = nil
					byDC["x"]++
				}
			}
		})
	}
}

// TestReadyNodes_AsNodeByNode: ReadyNodes, which matches each datacenter
// once and counts into a tally it looks up when the datacenter changes,
// answers as matching and counting node by node does, over random
// clusters whose datacenters come in runs of every length, interleaved,
// with nodes that are not ready or in another pool between them.
func TestReadyNodes_AsNodeByNode(t *testing.T) {
	nodeByNode := func(state sdk.State, job *sdk.Job) ([]*sdk.Node, map[string]*sdk.Node, map[string]int) {
		ready, notReady, byDC := []*sdk.Node{}, map[string]*sdk.Node{}, map[string]int{}
		for _, n := range state.Nodes() {
			switch {
			case !feasible.PoolMatches(job.NodePool, n.NodePool):
			case !n.Ready():
				notReady[n.ID] = n
			case feasible.DatacenterMatches(job.Datacenters, n.Datacenter):
				ready = append(ready, n)
				byDC[n.Datacenter]++
			}
		}
		return ready, notReady, byDC
	}
	jobs := []*sdk.Job{
		{ID: "all"},
		{ID: "dc1", Datacenters: []string{"dc1"}},
		{ID: "dc0-2", Datacenters: []string{"dc0", "dc2"}},
		{ID: "glob", Datacenters: []string{"dc*"}},
		{ID: "none", Datacenters: []string{"elsewhere"}},
		{ID: "gpu", NodePool: "gpu", Datacenters: []string{"dc1", "edge-*"}},
		{ID: "any pool", NodePool: sdk.AllNodePool},
	}
	dcs := []string{"dc0", "dc1", "dc2", "edge-1", ""}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		sync := &abi.StateSync{Full: true, Index: 1}
		dc := dcs[0]
		for i := range rng.IntN(60) {
			if rng.IntN(4) == 0 {
				dc = dcs[rng.IntN(len(dcs))] // a new run
			}
			n := &sdk.Node{ID: fmt.Sprintf("n-%03d", i), Datacenter: dc, NodePool: "default",
				Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible}
			switch rng.IntN(8) {
			case 0:
				n.Status = sdk.NodeStatusDown
			case 1:
				n.SchedulingEligibility = sdk.NodeSchedulingIneligible
			case 2:
				n.NodePool = "gpu"
			}
			sync.Nodes = append(sync.Nodes, n)
		}
		m := mirror.New()
		if err := m.Apply(sync); err != nil {
			t.Fatal(err)
		}
		for _, job := range jobs {
			ready, notReady, byDC := ReadyNodes(m, job)
			wantReady, wantNotReady, wantByDC := nodeByNode(m, job)
			if !reflect.DeepEqual(ready, wantReady) || !reflect.DeepEqual(notReady, wantNotReady) ||
				!reflect.DeepEqual(byDC, wantByDC) {
				t.Fatalf("round %d, job %s: ReadyNodes = %d ready, %v, %v; node by node %d ready, %v, %v", round, job.ID,
					len(ready), notReady, byDC, len(wantReady), wantNotReady, wantByDC)
			}
		}
	}
}

// TestShuffle_AsRandShuffle: Shuffle orders nodes exactly as
// rand.Rand.Shuffle does from the same source, so that decisions made
// before it replay, over list lengths of every size class (powers of two
// take another draw) and many seeds, half of them through the draw's
// rejection path (rejecting).
func TestShuffle_AsRandShuffle(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 100, 255, 256, 257, 1000, 4096, 5000} {
		nodes := make([]*sdk.Node, n)
		for i := range nodes {
			nodes[i] = &sdk.Node{ID: strconv.Itoa(i)}
		}
		for seed := uint64(0); seed < 50; seed++ {
			got, want := slices.Clone(nodes), slices.Clone(nodes)
			a, b := rand.New(rand.NewPCG(seed, ^seed)), rand.New(rand.NewPCG(seed, ^seed))
			if seed%2 == 1 {
				a, b = rand.New(&rejecting{pcg: rand.NewPCG(seed, ^seed)}), rand.New(&rejecting{pcg: rand.NewPCG(seed, ^seed)})
			}
			Shuffle(got, a)
			b.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
			if !slices.Equal(got, want) {
				t.Fatalf("%d nodes, seed %d: order differs from rand.Shuffle's", n, seed)
			}
			if a.Uint64() != b.Uint64() {
				t.Fatalf("%d nodes, seed %d: Shuffle took a different number of draws", n, seed)
			}
		}
	}
}

// rejecting is a random source whose every third value is 0, which
// math/rand/v2's bounded draw rejects for any bound that is not a power of
// two (0·n leaves a low word of 0, under 2^64 mod n): the rejection path
// runs about once a draw instead of once in 2^32.
type rejecting struct {
	pcg *rand.PCG
	i   int
}

func (r *rejecting) Uint64() uint64 {
	r.i++
	if r.i%3 == 0 {
		return 0
	}
	return r.pcg.Uint64()
}

// TestBoundedDraw_AsRand: the draw in [0, n) is math/rand/v2's, with the
// same number of values taken from the source, for bounds of every kind
// up to 2^32-1, through its rejection path too.
func TestBoundedDraw_AsRand(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 6, 1 << 20, 1<<31 + 1, 3 << 30, math.MaxUint32 - 1, math.MaxUint32} {
		for _, source := range []func() rand.Source{
			func() rand.Source { return rand.NewPCG(n, 7) },
			func() rand.Source { return &rejecting{pcg: rand.NewPCG(n, 7)} },
		} {
			a, b := rand.New(source()), rand.New(source())
			for i := 0; i < 2000; i++ {
				if got, want := boundedDraw(a, n), b.Uint64N(n); got != want {
					t.Fatalf("bound %d, draw %d (%T): %d, want %d", n, i, a, got, want)
				}
			}
			if a.Uint64() != b.Uint64() {
				t.Fatalf("bound %d: a different number of values taken", n)
			}
		}
	}
}
