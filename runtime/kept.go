package runtime

import (
	"bytes"
	"reflect"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

// keptPlan is what an instance that keeps its plans (ABI 1.2) holds of its
// last wholly committed plan: the new allocations as it sent them. The
// host keeps the same, so that the next sync can leave them out
// (abi.StateSync.Kept) once it has checked that the plugin derives exactly
// what the store holds.
type keptPlan struct {
	job    *sdk.Job
	allocs []sdk.Allocation
}

// newKeptPlan copies the plan's allocations (shallowly: the fields that
// storing an allocation sets are all at the top level). A plan with a null
// allocation, which the planner refuses, is not kept.
func newKeptPlan(plan *sdk.Plan) *keptPlan {
	n := 0
	for _, as := range plan.NodeAllocation {
		n += len(as)
	}
	// One array of the plan's size: an allocation is hundreds of bytes and
	// a plan can hold thousands.
	k := &keptPlan{job: plan.Job, allocs: make([]sdk.Allocation, 0, n)}
	for _, as := range plan.NodeAllocation {
		for _, a := range as {
			if a == nil {
				return nil
			}
			k.allocs = append(k.allocs, *a)
		}
	}
	if plan.Job != nil {
		j := *plan.Job
		k.job = &j
	}
	return k
}

// markKept consumes *kept: when sync is a delta that holds every kept
// allocation exactly as abi.KeptAlloc derives it from the plugin's copy,
// it leaves them out of sync.Allocs and sets sync.Kept instead. Otherwise
// sync goes as it is and the plugin forgets its kept plan, as the host
// does here. It reports whether it set sync.Kept.
func markKept(sync *abi.StateSync, kept **keptPlan) bool {
	k := *kept
	*kept = nil
	if k == nil || sync == nil || sync.Full || len(k.allocs) == 0 {
		return false
	}
	at := make(map[string]int, len(sync.Allocs))
	for i, a := range sync.Allocs {
		at[a.ID] = i
	}
	drop := make([]bool, len(sync.Allocs))
	var stamp *abi.Kept
	var want, got []byte
	for i := range k.allocs {
		a := &k.allocs[i]
		j, ok := at[a.ID]
		if !ok || drop[j] {
			return false
		}
		stored := sync.Allocs[j]
		if stamp == nil {
			stamp = &abi.Kept{Index: stored.CreateIndex, Time: stored.CreateTime}
		}
		// The copy is the host's own and consumed here: derived in place,
		// as abi.KeptAlloc derives it.
		abi.StampKept(a, k.job, stamp)
		if !sameAlloc(a, stored, &want, &got) {
			return false
		}
		drop[j] = true
	}
	rest := make([]*sdk.Allocation, 0, len(sync.Allocs)-len(k.allocs))
	for i, a := range sync.Allocs {
		if !drop[i] {
			rest = append(rest, a)
		}
	}
	sync.Allocs, sync.Kept = rest, stamp
	return true
}

// sameAlloc reports whether a and b would reach a plugin as the same
// allocation. Equal encodings are the fast answer; maps of more than one
// key encode in any order, so unequal ones are compared deeply.
func sameAlloc(a, b *sdk.Allocation, bufA, bufB *[]byte) bool {
	var errA, errB error
	*bufA, errA = a.MarshalMsg((*bufA)[:0])
	*bufB, errB = b.MarshalMsg((*bufB)[:0])
	if errA != nil || errB != nil {
		return false
	}
	return bytes.Equal(*bufA, *bufB) || reflect.DeepEqual(a, b)
}
