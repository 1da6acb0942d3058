package feasible

import (
	"github.com/drover-sched/drover/sdk"
)

// DatacenterMatches reports whether dc is one of the job's datacenters;
// entries may be globs in which '*' matches any run of characters and
// every other character only itself ("dc*", "*", "eu-*-1"), as Nomad
// matches them: "*" matches every datacenter, "/" and "?" included. No
// datacenters means any.
func DatacenterMatches(datacenters []string, dc string) bool {
	if len(datacenters) == 0 {
		return true
	}
	for _, want := range datacenters {
		if Glob(want, dc) {
			return true
		}
	}
	return false
}

// Glob reports whether s matches pattern, in which '*' matches any run of
// characters (none included) and every other character only itself.
func Glob(pattern, s string) bool {
	// The classic two cursors: on a mismatch, go back to the last '*'
	// and let it take one more character of s.
	p, i := 0, 0
	star, from := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, from = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			from++
			p, i = star+1, from
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// PoolMatches reports whether a node in pool nodePool may run a job of
// jobPool. "all" matches every pool; empty means the default pool.
func PoolMatches(jobPool, nodePool string) bool {
	if jobPool == sdk.AllNodePool {
		return true
	}
	if jobPool == "" {
		jobPool = sdk.DefaultNodePool
	}
	if nodePool == "" {
		nodePool = sdk.DefaultNodePool
	}
	return jobPool == nodePool
}
