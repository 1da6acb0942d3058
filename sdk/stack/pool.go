package stack

import "sync"

// The stack's per-node buffers (one entry per node, per stack and per task
// group) are reused across evaluations: at 5,000 nodes they were most of
// a small evaluation's garbage, and in a wasm plugin garbage is what makes
// the single-threaded collector stop the scheduler to scan the whole state
// mirror (docs/benchmarks.md, "Schedulers vs Nomad").
var (
	infoPool   slicePool[nodeInfo]
	checkPool  slicePool[nodeCheck]
	fitPool    slicePool[fitCache]
	spreadPool slicePool[[]int32]
)

// slicePool hands out zeroed slices of T, reusing released ones.
type slicePool[T any] struct{ p sync.Pool }

// get returns a zeroed slice of length n.
func (sp *slicePool[T]) get(n int) []T {
	if v, ok := sp.p.Get().(*[]T); ok {
		if cap(*v) >= n {
			s := (*v)[:n]
			clear(s)
			return s
		}
	}
	return make([]T, n)
}

// put releases s; the caller must not use it again.
func (sp *slicePool[T]) put(s []T) {
	if cap(s) == 0 {
		return
	}
	sp.p.Put(&s)
}

// Release hands the stack's per-node buffers back for the next stack to
// reuse. Call it once the stack has made its last selection (its
// Eligibility stays valid); a stack that is never released is simply
// garbage collected.
func (s *Stack) Release() {
	infoPool.put(s.info)
	s.info = nil
	for _, g := range s.groups {
		g.release()
	}
}

func (g *group) release() {
	checkPool.put(g.feasible)
	fitPool.put(g.fits)
	spreadPool.put(g.spreadIDs)
	g.feasible, g.fits, g.spreadIDs = nil, nil, nil
	g.known, g.index, g.ranked = 0, nil, nil
}
