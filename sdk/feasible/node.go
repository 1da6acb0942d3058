package feasible

import (
	"path"

	"github.com/drover-sched/drover/sdk"
)

// DatacenterMatches reports whether dc is one of the job's datacenters;
// entries may be globs ("dc*", "*"). No datacenters means any.
func DatacenterMatches(datacenters []string, dc string) bool {
	if len(datacenters) == 0 {
		return true
	}
	for _, want := range datacenters {
		if want == dc {
			return true
		}
		if ok, err := path.Match(want, dc); err == nil && ok {
			return true
		}
	}
	return false
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
