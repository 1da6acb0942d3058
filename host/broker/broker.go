// Package broker is the evaluation broker: priority queues of pending
// evaluations per scheduler type, delivered at least once to workers.
//
// A dequeued eval is outstanding under a token until the worker acks it
// (done) or nacks it (retry). An eval not acked within the nack timeout is
// nacked for the worker. After DeliveryLimit deliveries an eval goes to the
// failed queue, which the leader's reaper drains (the eval becomes failed
// and gets a failed-follow-up eval). Only one eval per job is in flight:
// later ones wait in the job's pending heap, and all but the newest of those
// are superseded ("cancelable") and canceled in batches by the leader.
// Evals with Wait or WaitUntil sit in a delay heap until due.
//
// The broker's decisions take the time from an injected clock, and its
// timers are deadlines it checks in Tick, so tests drive it without sleeping.
package broker

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// FailedQueue is the queue of evals that exceeded the delivery limit.
const FailedQueue = "_failed"

// Errors.
var (
	ErrNotOutstanding = errors.New("broker: evaluation is not outstanding")
	ErrTokenMismatch  = errors.New("broker: token does not match")
	ErrNackTimeout    = errors.New("broker: nack timeout reached")
	ErrDisabled       = errors.New("broker: disabled")
)

// Config sets the broker's limits. Defaults are Nomad's.
type Config struct {
	// NackTimeout is how long a dequeued eval may stay unacknowledged.
	NackTimeout time.Duration
	// DeliveryLimit is how many times an eval is delivered before it goes
	// to the failed queue.
	DeliveryLimit int
	// InitialNackDelay is the wait before the first redelivery after a
	// nack; SubsequentNackDelay before later ones.
	InitialNackDelay    time.Duration
	SubsequentNackDelay time.Duration
}

// DefaultConfig returns Nomad's defaults.
func DefaultConfig() Config {
	return Config{NackTimeout: 60 * time.Second, DeliveryLimit: 3,
		InitialNackDelay: time.Second, SubsequentNackDelay: 20 * time.Second}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.NackTimeout <= 0:
		return fmt.Errorf("broker: nack timeout must be positive, got %s", c.NackTimeout)
	case c.DeliveryLimit < 1:
		return fmt.Errorf("broker: delivery limit must be at least 1, got %d", c.DeliveryLimit)
	case c.InitialNackDelay < 0 || c.SubsequentNackDelay < 0:
		return fmt.Errorf("broker: nack delays must not be negative")
	}
	return nil
}

// Clock tells the time.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

type unackEval struct {
	eval     *sdk.Evaluation
	token    string
	deadline time.Time
}

// Broker is the evaluation broker. It is safe for concurrent use.
type Broker struct {
	cfg   Config
	clock Clock

	mu      sync.Mutex
	enabled bool
	// paused stops deliveries (scheduler configuration PauseEvalBroker).
	paused bool
	// ready holds deliverable evals per scheduler type.
	ready map[string]*evalHeap
	// unack holds outstanding evals by ID.
	unack map[string]*unackEval
	// inflight marks jobs with an eval ready or outstanding.
	inflight map[sdk.NamespacedID]string
	// pending holds further evals per job, waiting for the inflight one.
	pending map[sdk.NamespacedID]*pendingHeap
	// cancelable are superseded evals waiting to be canceled.
	cancelable []*sdk.Evaluation
	// delayed holds evals that are not due yet (Wait, WaitUntil, nack delay).
	delayed *delayHeap
	// deliveries counts dequeues per eval ID.
	deliveries map[string]int
	// requeue holds reblocked evals to enqueue when the outstanding one with
	// the same ID is acked (keyed by token).
	requeue map[string]*sdk.Evaluation
	// waiters are woken when something becomes ready.
	waiters map[chan struct{}]struct{}
	// wake nudges the timer goroutine when a new deadline appears.
	wake chan struct{}

	stats Stats
}

// New returns a disabled broker; enable it on gaining leadership.
func New(cfg Config, clock Clock) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		clock = SystemClock{}
	}
	b := &Broker{cfg: cfg, clock: clock, wake: make(chan struct{}, 1)}
	b.flush()
	return b, nil
}

func (b *Broker) flush() {
	b.ready = map[string]*evalHeap{}
	b.unack = map[string]*unackEval{}
	b.inflight = map[sdk.NamespacedID]string{}
	b.pending = map[sdk.NamespacedID]*pendingHeap{}
	b.cancelable = nil
	b.delayed = &delayHeap{}
	b.deliveries = map[string]int{}
	b.requeue = map[string]*sdk.Evaluation{}
	if b.waiters == nil {
		b.waiters = map[chan struct{}]struct{}{}
	}
	b.wakeWaiters()
	b.stats = Stats{ByScheduler: map[string]*SchedulerStats{}}
}

// SetEnabled turns the broker on or off. Turning it off drops everything:
// the new leader rebuilds the queues from the state store.
func (b *Broker) SetEnabled(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled && !on {
		b.flush()
	}
	b.enabled = on
}

// SetPaused pauses or resumes deliveries; queues keep filling meanwhile.
func (b *Broker) SetPaused(paused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.paused = paused
	if !paused {
		b.wakeWaiters()
	}
}

func (b *Broker) wakeWaiters() {
	for ch := range b.waiters {
		close(ch)
		delete(b.waiters, ch)
	}
}

// Enabled reports whether the broker is on.
func (b *Broker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// Enqueue adds a pending eval. Evals with a future WaitUntil or a Wait go to
// the delay heap first. Enqueuing an eval the broker already holds is a
// no-op.
func (b *Broker) Enqueue(e *sdk.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	if _, ok := b.deliveries[e.ID]; ok {
		return
	}
	b.deliveries[e.ID] = 0
	b.enqueueLocked(e, b.dueTime(e))
}

// EnqueueAll enqueues evals; an eval whose token is given and is currently
// outstanding under that token is requeued when that delivery is acked
// (a reblocked eval unblocked while its worker still holds it).
func (b *Broker) EnqueueAll(evals map[*sdk.Evaluation]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	for e, token := range evals {
		if token != "" {
			if u, ok := b.unack[e.ID]; ok && u.token == token {
				b.requeue[token] = e
				continue
			}
		}
		if _, ok := b.deliveries[e.ID]; ok {
			continue
		}
		b.deliveries[e.ID] = 0
		b.enqueueLocked(e, b.dueTime(e))
	}
}

func (b *Broker) dueTime(e *sdk.Evaluation) time.Time {
	if !e.WaitUntil.IsZero() {
		return e.WaitUntil
	}
	if e.Wait > 0 {
		return b.clock.Now().Add(e.Wait)
	}
	return time.Time{}
}

// enqueueLocked routes an eval: delayed, pending behind its job, or ready.
func (b *Broker) enqueueLocked(e *sdk.Evaluation, due time.Time) {
	if !due.IsZero() && due.After(b.clock.Now()) {
		heap.Push(b.delayed, &delayedEval{eval: e, due: due})
		b.stats.TotalDelayed++
		b.nudge()
		return
	}
	queue := e.Type
	if b.deliveries[e.ID] >= b.cfg.DeliveryLimit {
		queue = FailedQueue
	} else if e.JobID != "" {
		jk := sdk.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
		if cur, busy := b.inflight[jk]; busy && cur != e.ID {
			ph := b.pending[jk]
			if ph == nil {
				ph = &pendingHeap{}
				b.pending[jk] = ph
			}
			heap.Push(ph, e)
			b.stats.TotalPending++
			return
		}
		b.inflight[jk] = e.ID
	}
	b.pushReady(queue, e)
}

func (b *Broker) pushReady(queue string, e *sdk.Evaluation) {
	h := b.ready[queue]
	if h == nil {
		h = &evalHeap{}
		b.ready[queue] = h
	}
	heap.Push(h, e)
	b.stats.TotalReady++
	b.schedStats(queue).Ready++
	b.wakeWaiters()
}

func (b *Broker) schedStats(queue string) *SchedulerStats {
	s := b.stats.ByScheduler[queue]
	if s == nil {
		s = &SchedulerStats{}
		b.stats.ByScheduler[queue] = s
	}
	return s
}

func (b *Broker) nudge() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Dequeue returns the highest-priority ready eval of the given scheduler
// types (ties: oldest first), with its delivery token. It waits until one
// is ready or ctx ends.
func (b *Broker) Dequeue(ctx context.Context, types []string) (*sdk.Evaluation, string, error) {
	for {
		b.mu.Lock()
		if !b.enabled {
			b.mu.Unlock()
			return nil, "", ErrDisabled
		}
		if e, token := b.dequeueLocked(types); e != nil {
			b.mu.Unlock()
			return e, token, nil
		}
		ch := make(chan struct{})
		b.waiters[ch] = struct{}{}
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			b.mu.Lock()
			delete(b.waiters, ch)
			b.mu.Unlock()
			return nil, "", ctx.Err()
		}
	}
}

func (b *Broker) dequeueLocked(types []string) (*sdk.Evaluation, string) {
	if b.paused {
		return nil, ""
	}
	var best *evalHeap
	var bestQueue string
	for _, t := range types {
		h := b.ready[t]
		if h == nil || h.Len() == 0 {
			continue
		}
		if best == nil || h.less((*h)[0], (*best)[0]) {
			best, bestQueue = h, t
		}
	}
	if best == nil {
		return nil, ""
	}
	e := heap.Pop(best).(*sdk.Evaluation)
	b.stats.TotalReady--
	b.schedStats(bestQueue).Ready--
	token := newToken()
	b.deliveries[e.ID]++
	b.unack[e.ID] = &unackEval{eval: e, token: token, deadline: b.clock.Now().Add(b.cfg.NackTimeout)}
	b.stats.TotalUnacked++
	b.schedStats(bestQueue).Unacked++
	b.nudge()
	return e, token
}

// Outstanding returns the token of an outstanding eval.
func (b *Broker) Outstanding(evalID string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return "", false
	}
	return u.token, true
}

// OutstandingReset restarts an outstanding eval's nack timer (the worker is
// still busy with it).
func (b *Broker) OutstandingReset(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return ErrNotOutstanding
	}
	if u.token != token {
		return ErrTokenMismatch
	}
	u.deadline = b.clock.Now().Add(b.cfg.NackTimeout)
	b.nudge()
	return nil
}

// Ack acknowledges a delivery: the eval is done. The job's next pending
// eval becomes ready; older pending ones become cancelable.
func (b *Broker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotOutstanding, evalID)
	}
	if u.token != token {
		return fmt.Errorf("%w: eval %s", ErrTokenMismatch, evalID)
	}
	b.removeUnack(u)
	delete(b.deliveries, evalID)
	jk := sdk.NamespacedID{Namespace: u.eval.Namespace, ID: u.eval.JobID}
	if b.inflight[jk] == evalID {
		delete(b.inflight, jk)
	}
	if ph := b.pending[jk]; ph != nil && ph.Len() > 0 {
		// The newest pending eval supersedes the others.
		next := heap.Pop(ph).(*sdk.Evaluation)
		b.stats.TotalPending--
		for ph.Len() > 0 {
			old := heap.Pop(ph).(*sdk.Evaluation)
			b.stats.TotalPending--
			delete(b.deliveries, old.ID)
			b.cancelable = append(b.cancelable, old)
		}
		delete(b.pending, jk)
		b.enqueueLocked(next, time.Time{})
	}
	if re, ok := b.requeue[token]; ok {
		delete(b.requeue, token)
		b.deliveries[re.ID] = 0
		b.enqueueLocked(re, time.Time{})
	}
	return nil
}

// Nack returns a delivery: the eval is redelivered after a delay, or goes
// to the failed queue past the delivery limit.
func (b *Broker) Nack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotOutstanding, evalID)
	}
	if u.token != token {
		return fmt.Errorf("%w: eval %s", ErrTokenMismatch, evalID)
	}
	b.nackLocked(u)
	return nil
}

func (b *Broker) nackLocked(u *unackEval) {
	b.removeUnack(u)
	delete(b.requeue, u.token)
	n := b.deliveries[u.eval.ID]
	var due time.Time
	if n < b.cfg.DeliveryLimit {
		delay := b.cfg.SubsequentNackDelay
		if n <= 1 {
			delay = b.cfg.InitialNackDelay
		}
		if delay > 0 {
			due = b.clock.Now().Add(delay)
		}
	}
	// The job stays in flight: the eval comes back to the same place.
	b.requeueLocked(u.eval, due)
}

// requeueLocked puts an eval back whose job is already marked in flight.
func (b *Broker) requeueLocked(e *sdk.Evaluation, due time.Time) {
	if !due.IsZero() && due.After(b.clock.Now()) {
		heap.Push(b.delayed, &delayedEval{eval: e, due: due, redelivery: true})
		b.stats.TotalDelayed++
		b.nudge()
		return
	}
	queue := e.Type
	if b.deliveries[e.ID] >= b.cfg.DeliveryLimit {
		queue = FailedQueue
	}
	b.pushReady(queue, e)
}

func (b *Broker) removeUnack(u *unackEval) {
	delete(b.unack, u.eval.ID)
	b.stats.TotalUnacked--
	b.schedStats(u.eval.Type).Unacked--
}

// Cancelable returns up to max superseded evals and forgets them; the
// caller marks them canceled through raft.
func (b *Broker) Cancelable(max int) []*sdk.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(max, len(b.cancelable))
	out := append([]*sdk.Evaluation(nil), b.cancelable[:n]...)
	b.cancelable = b.cancelable[n:]
	return out
}

// Tick does what is due at the clock's time: moves due delayed evals to
// their queues and nacks outstanding evals past their nack timeout. It
// returns when the next deadline is (zero if none).
func (b *Broker) Tick() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return time.Time{}
	}
	now := b.clock.Now()
	for b.delayed.Len() > 0 && !(*b.delayed)[0].due.After(now) {
		d := heap.Pop(b.delayed).(*delayedEval)
		b.stats.TotalDelayed--
		if d.redelivery {
			b.requeueLocked(d.eval, time.Time{})
		} else {
			b.enqueueLocked(d.eval, time.Time{})
		}
	}
	var next time.Time
	for _, u := range b.unack {
		if !u.deadline.After(now) {
			b.nackLocked(u)
			continue
		}
		if next.IsZero() || u.deadline.Before(next) {
			next = u.deadline
		}
	}
	if b.delayed.Len() > 0 {
		if d := (*b.delayed)[0].due; next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next
}

// Run drives Tick with real timers until ctx ends.
func (b *Broker) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := b.Tick()
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		case <-timer.C:
		}
	}
}

// Stats are the broker's counters.
type Stats struct {
	TotalReady   int
	TotalUnacked int
	TotalPending int
	TotalDelayed int
	ByScheduler  map[string]*SchedulerStats
}

// SchedulerStats are per-queue counters.
type SchedulerStats struct {
	Ready   int
	Unacked int
}

// Stats returns a copy of the counters.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.ByScheduler = map[string]*SchedulerStats{}
	for k, v := range b.stats.ByScheduler {
		c := *v
		s.ByScheduler[k] = &c
	}
	return s
}
