package stack

import (
	"math"
	"math/rand/v2"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
)

// ReadyNodes returns the nodes a job may be placed on: ready, eligible, not
// draining, in one of the job's datacenters and in its node pool, in the
// state's order (by ID). byDC counts them per datacenter
// (AllocMetric.NodesAvailable). notReady holds the nodes in the job's
// datacenters and pool that are not ready (down, draining, ineligible).
func ReadyNodes(state sdk.State, job *sdk.Job) (ready []*sdk.Node, notReady map[string]*sdk.Node, byDC map[string]int) {
	all := state.Nodes()
	ready = make([]*sdk.Node, 0, len(all))
	notReady = map[string]*sdk.Node{}
	byDC = map[string]int{}
	for _, n := range all {
		if !feasible.DatacenterMatches(job.Datacenters, n.Datacenter) || !feasible.PoolMatches(job.NodePool, n.NodePool) {
			continue
		}
		if !n.Ready() {
			notReady[n.ID] = n
			continue
		}
		ready = append(ready, n)
		byDC[n.Datacenter]++
	}
	return ready, notReady, byDC
}

// Shuffle shuffles nodes in place with rng. Schedulers shuffle with the
// context's random source, seeded from the eval ID, so that concurrent
// schedulers rarely pick the same nodes and any decision replays.
func Shuffle(nodes []*sdk.Node, rng *rand.Rand) {
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
}

// RankLimit is how many feasible nodes Nomad ranks before it picks the best:
// max(2, ceil(log2 n)) for service jobs and 2 for batch jobs ("the power of
// two choices"); when the group has affinities or spreads, max(count, 100),
// since those scores need a wider view to converge.
func RankLimit(n int, batch bool, count int, affinityOrSpread bool) int {
	if affinityOrSpread {
		return max(count, 100)
	}
	limit := 2
	if !batch && n > 0 {
		limit = max(limit, int(math.Ceil(math.Log2(float64(n)))))
	}
	return limit
}
