// Package usage sums allocations' resources for the SDK's plan and
// mirror.
package usage

import "github.com/drover-sched/drover/sdk"

// Cache gives allocations' usage, summing an AllocatedResources once while
// the allocations asked about in a row share it, as a plan's placements of
// one group do; summing a map of tasks for each costs most inside wasm. It
// relies on what the SDK assumes of every allocation: the resources it
// holds are not changed in place (sdk.Allocation.AllocatedResources). The
// zero value is ready to use.
type Cache struct {
	res *sdk.AllocatedResources
	u   sdk.Usage
}

// Of returns a.Usage().
func (c *Cache) Of(a *sdk.Allocation) sdk.Usage {
	if r := a.AllocatedResources; r != c.res || r == nil {
		c.res, c.u = r, r.Usage()
	}
	return c.u
}
