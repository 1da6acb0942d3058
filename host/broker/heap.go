package broker

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// evalHeap orders evals by priority (highest first), then by create index
// (oldest first).
type evalHeap []*sdk.Evaluation

func (h evalHeap) less(a, b *sdk.Evaluation) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.CreateIndex != b.CreateIndex {
		return a.CreateIndex < b.CreateIndex
	}
	return a.ID < b.ID
}

func (h evalHeap) Len() int           { return len(h) }
func (h evalHeap) Less(i, j int) bool { return h.less(h[i], h[j]) }
func (h evalHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evalHeap) Push(x any)        { *h = append(*h, x.(*sdk.Evaluation)) }
func (h *evalHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// pendingHeap orders a job's waiting evals by priority, highest first,
// then newest first (by modify index, then create index), as Nomad's: the
// first supersedes the rest, so a later eval of default priority does not
// throw away the urgency an operator asked for (EvalPriority).
type pendingHeap []*sdk.Evaluation

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.ModifyIndex != b.ModifyIndex {
		return a.ModifyIndex > b.ModifyIndex
	}
	if a.CreateIndex != b.CreateIndex {
		return a.CreateIndex > b.CreateIndex
	}
	return a.ID > b.ID
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(*sdk.Evaluation)) }
func (h *pendingHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type delayedEval struct {
	eval       *sdk.Evaluation
	due        time.Time
	redelivery bool
}

type delayHeap []*delayedEval

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].eval.ID < h[j].eval.ID
}
func (h delayHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)   { *h = append(*h, x.(*delayedEval)) }
func (h *delayHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func sortDelayed(ds []DelayedEval) {
	slices.SortFunc(ds, func(a, b DelayedEval) int {
		if c := a.Due.Compare(b.Due); c != 0 {
			return c
		}
		return strings.Compare(a.Eval.ID, b.Eval.ID)
	})
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
