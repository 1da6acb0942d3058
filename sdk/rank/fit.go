package rank

import (
	"math"

	"github.com/drover-sched/drover/sdk"
)

// Scorer names, as they appear in AllocMetric score metadata.
const (
	ScorerBinpack           = "binpack"
	ScorerJobAntiAffinity   = "job-anti-affinity"
	ScorerReschedulePenalty = "node-reschedule-penalty"
	ScorerAffinity          = "node-affinity"
	ScorerSpread            = "allocation-spread"
	ScorerPreemption        = "preemption"
	ScorerDevices           = "devices"
	ScorerNormalized        = "normalized-score"
)

// maxFitScore is the best raw fit score (a perfectly full node).
const maxFitScore = 18.0

// Fit scores how well used (what the node would hold after the placement)
// fits capacity, in [0, 1]. With the binpack algorithm fuller nodes score
// higher; with spread emptier ones do. Both use Nomad's curve: 10^freeCPU +
// 10^freeMemory, which rewards filling the scarcer dimension.
func Fit(algorithm string, used, capacity sdk.Usage) float64 {
	if capacity.CPU <= 0 || capacity.MemoryMB <= 0 {
		return 0
	}
	freeCPU := 1 - float64(used.CPU)/float64(capacity.CPU)
	freeMem := 1 - float64(used.MemoryMB)/float64(capacity.MemoryMB)
	total := pow10(freeCPU) + pow10(freeMem)
	var score float64
	if algorithm == sdk.SchedulerAlgorithmSpread {
		score = total - 2
	} else {
		score = 20 - total
	}
	return math.Max(0, math.Min(maxFitScore, score)) / maxFitScore
}

// pow10 is 10^x for x in about [0, 1], the range free fractions live in.
func pow10(x float64) float64 { return math.Exp(x * math.Ln10) }

// JobAntiAffinity is the penalty for placing on a node that already holds
// collisions allocations of the same job and group, out of desired: 0 with
// no collision, else -(collisions+1)/desired.
func JobAntiAffinity(collisions, desired int) float64 {
	if collisions == 0 {
		return 0
	}
	if desired <= 0 {
		desired = 1
	}
	return -float64(collisions+1) / float64(desired)
}
