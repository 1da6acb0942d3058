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

// FailedQueue is the queue of evals that exceeded the delivery limit. The
// leader's reaper dequeues from it like a worker does.
const FailedQueue = "_failed"

// Errors the broker returns.
var (
	// ErrNotOutstanding: the eval is not delivered to anyone (it was acked,
	// nacked, or its nack timeout fired).
	ErrNotOutstanding = errors.New("broker: evaluation is not outstanding")
	// ErrTokenMismatch: the eval is outstanding under another delivery.
	ErrTokenMismatch = errors.New("broker: token does not match")
	// ErrNackTimeout: the delivery's nack timeout passed; the eval was
	// nacked and will be redelivered.
	ErrNackTimeout = errors.New("broker: nack timeout reached")
	// ErrDisabled: the broker is off (this server does not lead).
	ErrDisabled = errors.New("broker: disabled")
)

// Config sets the broker's limits. Defaults are Nomad's.
type Config struct {
	// NackTimeout is how long a dequeued eval may stay unacknowledged.
	NackTimeout time.Duration
	// DeliveryLimit is how many times an eval is delivered before it goes
	// to the failed queue.
	DeliveryLimit int
	// InitialNackDelay is the wait before the redelivery that follows the
	// first nack; after the n-th (n >= 2), (n-1) x SubsequentNackDelay, a
	// delay that grows as Nomad's does.
	InitialNackDelay    time.Duration
	SubsequentNackDelay time.Duration
}

// DefaultConfig returns Nomad's defaults: a 60 s nack timeout, 3
// deliveries, redelivery after 1 s then 20 s.
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
		return fmt.Errorf("broker: nack re-enqueue delays must not be negative, got %s and %s",
			c.InitialNackDelay, c.SubsequentNackDelay)
	}
	return nil
}

// Clock tells the time. The broker reads it for every decision that
// depends on time, so tests drive it with a fake one.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Observer hears the quasi-status an eval enters in the broker:
// sdk.EvalPhaseQueued (ready for a worker), sdk.EvalPhaseDelayed (waiting
// for its time) or sdk.EvalPhaseScheduling (delivered). It is called with
// the broker's lock held and must not call back into the broker.
type Observer interface {
	EvalPhase(evalID, phase string)
}

type unackEval struct {
	eval     *sdk.Evaluation
	token    string
	queue    string
	deadline time.Time
	// paused suspends the nack timeout (the eval's plan is in the plan
	// queue, which may take unboundedly long).
	paused bool
}

// Broker is the evaluation broker. It is safe for concurrent use.
type Broker struct {
	cfg   Config
	clock Clock
	obs   Observer

	mu      sync.Mutex
	enabled bool
	// paused stops deliveries (scheduler configuration PauseEvalBroker);
	// queues keep filling meanwhile.
	paused bool
	// ready holds deliverable evals per queue (scheduler type).
	ready map[string]*evalHeap
	// unack holds outstanding evals by ID.
	unack map[string]*unackEval
	// inflight maps a job to its eval that is ready, outstanding, waiting
	// out a nack delay or in the failed queue.
	inflight map[sdk.NamespacedID]string
	// pending holds the job's further evals, waiting for the inflight one.
	pending map[sdk.NamespacedID]*pendingHeap
	// cancelable are superseded evals waiting to be canceled through raft.
	cancelable []*sdk.Evaluation
	// delayed holds evals that are not due yet (WaitUntil, Wait, nack delay).
	delayed *delayHeap
	// evals holds the delivery count of every eval the broker holds, in
	// whatever place; an eval is held at most once.
	evals map[string]int
	// requeue holds reblocked evals to enqueue when the delivery with the
	// token (the key) is acked.
	requeue map[string]*sdk.Evaluation
	// waiters are woken when something becomes ready.
	waiters map[chan struct{}]struct{}
	// wake nudges the timer goroutine when a new deadline appears.
	wake chan struct{}
	// cancelWake signals the reaper that cancelable evals wait.
	cancelWake chan struct{}

	stats Stats
}

// New returns a disabled broker; enable it on gaining leadership. clock may
// be nil (the system clock), obs may be nil.
func New(cfg Config, clock Clock, obs Observer) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		clock = SystemClock{}
	}
	b := &Broker{cfg: cfg, clock: clock, obs: obs, wake: make(chan struct{}, 1),
		cancelWake: make(chan struct{}, 1), waiters: map[chan struct{}]struct{}{}}
	b.flush()
	return b, nil
}

// flush empties every queue and wakes every waiting Dequeue.
func (b *Broker) flush() {
	b.ready = map[string]*evalHeap{}
	b.unack = map[string]*unackEval{}
	b.inflight = map[sdk.NamespacedID]string{}
	b.pending = map[sdk.NamespacedID]*pendingHeap{}
	b.cancelable = nil
	b.delayed = &delayHeap{}
	b.evals = map[string]int{}
	b.requeue = map[string]*sdk.Evaluation{}
	b.wakeWaiters()
	b.stats = Stats{ByScheduler: map[string]*SchedulerStats{}}
}

// SetEnabled turns the broker on or off. Turning it off drops everything:
// a new leader rebuilds the queues from the state store.
func (b *Broker) SetEnabled(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled && !on {
		b.flush()
	}
	b.enabled = on
}

// Enabled reports whether the broker is on.
func (b *Broker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// SetPaused pauses or resumes deliveries; enqueues, acks, nacks and timers
// go on while paused.
func (b *Broker) SetPaused(paused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.paused = paused
	if !paused {
		b.wakeWaiters()
	}
}

// Paused reports whether deliveries are paused.
func (b *Broker) Paused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.paused
}

func (b *Broker) wakeWaiters() {
	for ch := range b.waiters {
		close(ch)
		delete(b.waiters, ch)
	}
}

func (b *Broker) observe(evalID, phase string) {
	if b.obs != nil {
		b.obs.EvalPhase(evalID, phase)
	}
}

// Enqueue adds a pending eval. An eval with a WaitUntil in the future, or a
// Wait, goes to the delay heap first. Enqueuing an eval the broker already
// holds is a no-op.
func (b *Broker) Enqueue(e *sdk.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.enqueueNewLocked(e)
}

// EnqueueAll enqueues evals, each with the token of the delivery that
// reblocked it ("" if none). An eval still outstanding under its token is
// enqueued when that delivery is acked, not now: its worker has not let go
// of it yet (a reblocked eval unblocked before its worker acked).
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
		b.enqueueNewLocked(e)
	}
}

func (b *Broker) enqueueNewLocked(e *sdk.Evaluation) {
	if !b.enabled {
		return
	}
	if _, held := b.evals[e.ID]; held {
		return
	}
	b.evals[e.ID] = 0
	b.enqueueLocked(e, b.dueTime(e))
}

// dueTime is when an eval may first be delivered (zero: now).
func (b *Broker) dueTime(e *sdk.Evaluation) time.Time {
	if !e.WaitUntil.IsZero() {
		return e.WaitUntil
	}
	if e.Wait > 0 {
		return b.clock.Now().Add(e.Wait)
	}
	return time.Time{}
}

// enqueueLocked routes an eval that is not in flight: to the delay heap if
// not due, behind its job's in-flight eval, or to its ready queue.
func (b *Broker) enqueueLocked(e *sdk.Evaluation, due time.Time) {
	if !due.IsZero() && due.After(b.clock.Now()) {
		b.delay(e, due, false)
		return
	}
	if e.JobID != "" {
		jk := jobKey(e)
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
	b.pushReady(b.queueFor(e), e)
}

// queueFor is the eval's scheduler queue, or the failed queue once it used
// up its deliveries.
func (b *Broker) queueFor(e *sdk.Evaluation) string {
	if b.evals[e.ID] >= b.cfg.DeliveryLimit {
		return FailedQueue
	}
	return e.Type
}

func (b *Broker) delay(e *sdk.Evaluation, due time.Time, redelivery bool) {
	heap.Push(b.delayed, &delayedEval{eval: e, due: due, redelivery: redelivery})
	b.stats.TotalWaiting++
	b.observe(e.ID, sdk.EvalPhaseDelayed)
	b.nudge()
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
	if queue == FailedQueue {
		b.stats.TotalFailed++
	} else {
		b.observe(e.ID, sdk.EvalPhaseQueued)
	}
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

// Dequeue returns the highest-priority ready eval of the given queues
// (ties: oldest first), with its delivery token. It waits until one is
// ready or ctx ends.
func (b *Broker) Dequeue(ctx context.Context, queues []string) (*sdk.Evaluation, string, error) {
	for {
		b.mu.Lock()
		if !b.enabled {
			b.mu.Unlock()
			return nil, "", ErrDisabled
		}
		if e, token := b.dequeueLocked(queues); e != nil {
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

func (b *Broker) dequeueLocked(queues []string) (*sdk.Evaluation, string) {
	var best *evalHeap
	var bestQueue string
	for _, q := range queues {
		// Pausing stops the schedulers; the leader still reaps failed evals.
		if b.paused && q != FailedQueue {
			continue
		}
		h := b.ready[q]
		if h == nil || h.Len() == 0 {
			continue
		}
		if best == nil || h.less((*h)[0], (*best)[0]) {
			best, bestQueue = h, q
		}
	}
	if best == nil {
		return nil, ""
	}
	e := heap.Pop(best).(*sdk.Evaluation)
	b.stats.TotalReady--
	b.schedStats(bestQueue).Ready--
	if bestQueue == FailedQueue {
		b.stats.TotalFailed--
	}
	token := newToken()
	b.evals[e.ID]++
	u := &unackEval{eval: e, token: token, queue: bestQueue, deadline: b.clock.Now().Add(b.cfg.NackTimeout)}
	// Tell the timer of the new deadline. Waking it only for the first
	// outstanding eval is not enough: if every other one had its timer
	// paused at the last tick, the timer sleeps until its idle horizon.
	b.nudge()
	b.unack[e.ID] = u
	b.stats.TotalUnacked++
	b.schedStats(bestQueue).Unacked++
	if bestQueue != FailedQueue {
		b.observe(e.ID, sdk.EvalPhaseScheduling)
	}
	return e, token
}

// lookup returns the outstanding delivery of evalID under token. A delivery
// whose nack timeout passed (and is not paused) is nacked here, even if
// Tick has not yet run, and reported as ErrNackTimeout.
func (b *Broker) lookup(evalID, token string) (*unackEval, error) {
	u, ok := b.unack[evalID]
	if !ok {
		return nil, fmt.Errorf("%w: eval %s", ErrNotOutstanding, evalID)
	}
	if u.token != token {
		return nil, fmt.Errorf("%w: eval %s", ErrTokenMismatch, evalID)
	}
	if !u.paused && !u.deadline.After(b.clock.Now()) {
		b.nackLocked(u)
		return nil, fmt.Errorf("%w: eval %s", ErrNackTimeout, evalID)
	}
	return u, nil
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

// OutstandingReset restarts an outstanding eval's nack timer: its worker is
// still making progress.
func (b *Broker) OutstandingReset(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.lookup(evalID, token)
	if err != nil {
		return err
	}
	if !u.paused {
		u.deadline = b.clock.Now().Add(b.cfg.NackTimeout)
	}
	return nil
}

// PauseNackTimeout suspends an outstanding eval's nack timer while its plan
// waits in the plan queue, which may take unboundedly long.
func (b *Broker) PauseNackTimeout(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.lookup(evalID, token)
	if err != nil {
		return err
	}
	u.paused = true
	return nil
}

// ResumeNackTimeout restarts a paused nack timer with a full timeout.
func (b *Broker) ResumeNackTimeout(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return fmt.Errorf("%w: eval %s", ErrNotOutstanding, evalID)
	}
	if u.token != token {
		return fmt.Errorf("%w: eval %s", ErrTokenMismatch, evalID)
	}
	u.paused = false
	u.deadline = b.clock.Now().Add(b.cfg.NackTimeout)
	b.nudge()
	return nil
}

// Ack acknowledges a delivery: the eval is done. Of the job's evals that
// waited behind it, the one of highest priority (the newest among equals)
// is enqueued and the others become cancelable; a reblocked eval
// unblocked during the delivery is enqueued.
func (b *Broker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.lookup(evalID, token)
	if err != nil {
		return err
	}
	b.removeUnack(u)
	delete(b.evals, evalID)
	jk := jobKey(u.eval)
	if b.inflight[jk] == evalID {
		delete(b.inflight, jk)
	}
	if ph := b.pending[jk]; ph != nil {
		delete(b.pending, jk)
		next := heap.Pop(ph).(*sdk.Evaluation)
		b.stats.TotalPending -= 1 + ph.Len()
		if ph.Len() > 0 {
			for _, old := range *ph {
				delete(b.evals, old.ID)
			}
			b.cancelable = append(b.cancelable, *ph...)
			b.stats.TotalCancelable = len(b.cancelable)
			select {
			case b.cancelWake <- struct{}{}:
			default:
			}
		}
		b.enqueueLocked(next, time.Time{})
	}
	if re, ok := b.requeue[token]; ok {
		delete(b.requeue, token)
		b.enqueueNewLocked(re)
	}
	return nil
}

// Nack returns a delivery: the eval is redelivered after the nack delay,
// or goes to the failed queue once it reached the delivery limit.
func (b *Broker) Nack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return fmt.Errorf("%w: eval %s", ErrNotOutstanding, evalID)
	}
	if u.token != token {
		return fmt.Errorf("%w: eval %s", ErrTokenMismatch, evalID)
	}
	b.nackLocked(u)
	return nil
}

func (b *Broker) nackLocked(u *unackEval) {
	b.removeUnack(u)
	// The eval comes back as it is; a reblock its worker did is moot.
	delete(b.requeue, u.token)
	if u.queue == FailedQueue {
		// The reaper failed to mark it: it stays in the failed queue.
		b.pushReady(FailedQueue, u.eval)
		return
	}
	n := b.evals[u.eval.ID]
	if n < b.cfg.DeliveryLimit {
		delay := time.Duration(n-1) * b.cfg.SubsequentNackDelay
		if n <= 1 {
			delay = b.cfg.InitialNackDelay
		}
		if delay > 0 {
			// The job stays in flight while the eval waits.
			b.delay(u.eval, b.clock.Now().Add(delay), true)
			return
		}
	}
	b.pushReady(b.queueFor(u.eval), u.eval)
}

func (b *Broker) removeUnack(u *unackEval) {
	delete(b.unack, u.eval.ID)
	b.stats.TotalUnacked--
	b.schedStats(u.queue).Unacked--
}

// Cancelable returns up to max superseded evals and forgets them; the
// caller marks them canceled through raft.
func (b *Broker) Cancelable(max int) []*sdk.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(max, len(b.cancelable))
	out := append([]*sdk.Evaluation(nil), b.cancelable[:n]...)
	b.cancelable = b.cancelable[n:]
	b.stats.TotalCancelable = len(b.cancelable)
	return out
}

// CancelableWake is signalled when evals become cancelable.
func (b *Broker) CancelableWake() <-chan struct{} { return b.cancelWake }

// Tick does what is due at the clock's time: moves due delayed evals to
// their queues and nacks outstanding evals past their nack timeout. It
// returns the next deadline (zero if none).
func (b *Broker) Tick() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return time.Time{}
	}
	now := b.clock.Now()
	for b.delayed.Len() > 0 && !(*b.delayed)[0].due.After(now) {
		d := heap.Pop(b.delayed).(*delayedEval)
		b.stats.TotalWaiting--
		if d.redelivery {
			// Its job is still in flight with it.
			b.pushReady(b.queueFor(d.eval), d.eval)
		} else {
			b.enqueueLocked(d.eval, time.Time{})
		}
	}
	var next time.Time
	for _, u := range b.unack {
		if u.paused {
			continue
		}
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
			wait = max(next.Sub(b.clock.Now()), time.Millisecond)
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
	// TotalReady evals wait for a worker (failed queue included).
	TotalReady int
	// TotalUnacked evals are delivered and not yet acked.
	TotalUnacked int
	// TotalPending evals wait behind another eval of their job.
	TotalPending int
	// TotalWaiting evals wait for their time (WaitUntil, Wait, nack delay).
	TotalWaiting int
	// TotalCancelable evals were superseded and wait to be canceled.
	TotalCancelable int
	// TotalFailed evals used up their deliveries and wait for the reaper.
	TotalFailed int
	// ByScheduler counts ready and unacked evals per queue.
	ByScheduler map[string]*SchedulerStats
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
	s.ByScheduler = make(map[string]*SchedulerStats, len(b.stats.ByScheduler))
	for k, v := range b.stats.ByScheduler {
		c := *v
		s.ByScheduler[k] = &c
	}
	return s
}

// DelayedEvals returns the evals waiting for their time, soonest first,
// with when each is due.
func (b *Broker) DelayedEvals() []DelayedEval {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]DelayedEval, 0, b.delayed.Len())
	for _, d := range *b.delayed {
		out = append(out, DelayedEval{Eval: d.eval, Due: d.due})
	}
	sortDelayed(out)
	return out
}

// DelayedEval is an eval on the delay heap.
type DelayedEval struct {
	Eval *sdk.Evaluation
	Due  time.Time
}

func jobKey(e *sdk.Evaluation) sdk.NamespacedID {
	return sdk.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
}
