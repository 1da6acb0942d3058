// Package plan is the plan queue and the plan applier: the only place
// where scheduler decisions become state. Plans from all workers queue by
// priority; the applier verifies each one against the latest state (node
// by node: everything must fit, as seen now, not as the scheduler saw it),
// commits the part that fits through raft, and answers each scheduler with
// what was committed.
package plan

import (
	"container/heap"
	"context"
	"errors"
	"sync"

	"github.com/drover-sched/drover/sdk"
)

// ErrQueueDisabled is returned when the plan queue is off (not leader).
var ErrQueueDisabled = errors.New("plan: queue disabled")

// Response is the applier's verdict on one plan.
type Response struct {
	Result *sdk.PlanResult
	Err    error
}

// pending is a queued plan and where to send its verdict.
type pending struct {
	plan  *sdk.Plan
	seq   uint64
	reply chan Response
}

// Queue is the priority plan queue. It is safe for concurrent use.
type Queue struct {
	mu      sync.Mutex
	enabled bool
	heap    planHeap
	seq     uint64
	ready   chan struct{}
}

// NewQueue returns a disabled queue.
func NewQueue() *Queue { return &Queue{ready: make(chan struct{}, 1)} }

// SetEnabled turns the queue on or off; off fails every queued plan.
func (q *Queue) SetEnabled(on bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.enabled = on
	if !on {
		for _, p := range q.heap {
			p.reply <- Response{Err: ErrQueueDisabled}
		}
		q.heap = nil
	}
}

// Enqueue adds a plan and returns the channel its verdict arrives on.
func (q *Queue) Enqueue(p *sdk.Plan) (<-chan Response, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.enabled {
		return nil, ErrQueueDisabled
	}
	q.seq++
	pp := &pending{plan: p, seq: q.seq, reply: make(chan Response, 1)}
	heap.Push(&q.heap, pp)
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return pp.reply, nil
}

// dequeue waits for the highest-priority plan.
func (q *Queue) dequeue(ctx context.Context) (*pending, error) {
	for {
		q.mu.Lock()
		if q.heap.Len() > 0 {
			p := heap.Pop(&q.heap).(*pending)
			q.mu.Unlock()
			return p, nil
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Len is the number of queued plans.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heap.Len()
}

type planHeap []*pending

func (h planHeap) Len() int { return len(h) }
func (h planHeap) Less(i, j int) bool {
	if h[i].plan.Priority != h[j].plan.Priority {
		return h[i].plan.Priority > h[j].plan.Priority
	}
	return h[i].seq < h[j].seq
}
func (h planHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *planHeap) Push(x any)   { *h = append(*h, x.(*pending)) }
func (h *planHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}
