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
	return max(0, min(maxFitScore, score)) / maxFitScore
}

// exp2Sixteenths[j] is 2^(j/16).
var exp2Sixteenths = func() (t [17]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 16)
	}
	return t
}()

// pow10 is 10^x, within 2e-15 of math.Exp(x*math.Ln10) over [-1, 1],
// where free fractions live (TestPow10 bounds it further out). Every node a
// placement ranks is scored with two of them. In a wasm guest math.Exp is
// a chain of calls (exp, expmulti, ldexp) costing about 66 ns; this is
// straight-line arithmetic, about 29 ns there and as fast as math.Exp
// natively. It is pure Go arithmetic, so it gives the same bits in every
// runtime.
func pow10(x float64) float64 {
	t := x * (math.Log2E * math.Ln10) // 10^x = 2^t
	if !(t > -1000 && t < 1000) {
		return math.Exp(x * math.Ln10) // overflow, underflow, NaN
	}
	k := math.Floor(t)
	j := int((t - k) * 16)
	// 2^t = 2^k * 2^(j/16) * e^r, with r in [0, ln2/16): Taylor's series
	// to r^7 leaves less than 4e-16.
	r := (t - k - float64(j)/16) * math.Ln2
	e := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	return exp2Sixteenths[j] * e * math.Float64frombits(uint64(int64(k)+1023)<<52)
}

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
