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

// exp2Sixteenths[j] is 2^(j/16), correctly rounded (written out rather
// than computed with math.Exp2, which is an ulp off for some j and has
// assembly versions on some platforms).
var exp2Sixteenths = [17]float64{
	0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
	0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
	0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
	0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0,
	0x1.0000000000000p+1,
}

// pow10 is 10^x, within 2e-15 of math.Exp(x*math.Ln10) over [-1, 1],
// where free fractions live (TestPow10 bounds it further out). Every node a
// placement ranks is scored with two of them. In a wasm guest math.Exp is
// a chain of calls (exp, expmulti, ldexp) costing 66 to 93 ns; this is
// straight-line arithmetic, 29 to 36 ns there and as fast as math.Exp
// natively. Within the range it computes itself it gives the same bits on
// every platform and in every runtime: the conversions to float64 round
// each product, which keeps a compiler that fuses multiply and add
// (arm64, amd64 v3) from doing so.
func pow10(x float64) float64 {
	t := float64(x * (math.Log2E * math.Ln10)) // 10^x = 2^t
	if !(t > -1000 && t < 1000) {
		return math.Exp(x * math.Ln10) // overflow, underflow, NaN
	}
	k := math.Floor(t)
	j := int(float64((t - k) * 16))
	// 2^t = 2^k * 2^(j/16) * e^r, with r in [0, ln2/16): Taylor's series
	// to r^8 leaves less than 2e-18.
	r := float64((t - k - float64(j)/16) * math.Ln2) // j/16 is exact
	e := float64(r*(1.0/40320)) + 1.0/5040
	e = float64(e*r) + 1.0/720
	e = float64(e*r) + 1.0/120
	e = float64(e*r) + 1.0/24
	e = float64(e*r) + 1.0/6
	e = float64(e*r) + 1.0/2
	e = float64(e*r) + 1
	e = float64(e*r) + 1
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
