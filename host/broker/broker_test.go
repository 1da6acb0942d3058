package broker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// phases records what the broker tells its observer.
type phases struct {
	mu sync.Mutex
	m  map[string][]string
}

func (p *phases) EvalPhase(id, phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[id] = append(p.m[id], phase)
}

func (p *phases) of(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.m[id]...)
}

func newTestBroker(t *testing.T) (*Broker, *fakeClock, *phases) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	obs := &phases{m: map[string][]string{}}
	b, err := New(DefaultConfig(), clock, obs)
	if err != nil {
		t.Fatal(err)
	}
	b.SetEnabled(true)
	return b, clock, obs
}

func eval(id, job string, prio int, index uint64) *sdk.Evaluation {
	return &sdk.Evaluation{ID: id, Namespace: "default", JobID: job, Type: "service", Priority: prio,
		Status: sdk.EvalStatusPending, CreateIndex: index, ModifyIndex: index}
}

// dequeueNow dequeues from the given queues (service by default) without
// waiting.
func dequeueNow(t *testing.T, b *Broker, queues ...string) (*sdk.Evaluation, string) {
	t.Helper()
	if len(queues) == 0 {
		queues = []string{"service"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dequeueLocked(queues)
}

func mustDequeue(t *testing.T, b *Broker, want string, queues ...string) string {
	t.Helper()
	e, tok := dequeueNow(t, b, queues...)
	if e == nil || e.ID != want {
		t.Fatalf("dequeued %v, want %s", e, want)
	}
	return tok
}

func TestConfig_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"zero nack timeout", func(c *Config) { c.NackTimeout = 0 }, false},
		{"zero delivery limit", func(c *Config) { c.DeliveryLimit = 0 }, false},
		{"negative delay", func(c *Config) { c.InitialNackDelay = -time.Second }, false},
		{"zero delays", func(c *Config) { c.InitialNackDelay, c.SubsequentNackDelay = 0, 0 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if _, err := New(c, nil, nil); (err == nil) != tc.ok {
				t.Fatalf("New() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestBroker_DefaultsAreNomads(t *testing.T) {
	c := DefaultConfig()
	if c.NackTimeout != time.Minute || c.DeliveryLimit != 3 || c.InitialNackDelay != time.Second || c.SubsequentNackDelay != 20*time.Second {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestBroker_PriorityThenAge(t *testing.T) {
	b, _, _ := newTestBroker(t)
	b.Enqueue(eval("low", "j1", 10, 1))
	b.Enqueue(eval("high-new", "j3", 90, 3))
	b.Enqueue(eval("high-old", "j2", 90, 2))
	for _, want := range []string{"high-old", "high-new", "low"} {
		tok := mustDequeue(t, b, want)
		if err := b.Ack(want, tok); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBroker_Dequeue_AcrossQueuesByPriority(t *testing.T) {
	b, _, _ := newTestBroker(t)
	svc := eval("svc", "a", 50, 1)
	bat := eval("bat", "b", 70, 2)
	bat.Type = "batch"
	b.Enqueue(svc)
	b.Enqueue(bat)
	mustDequeue(t, b, "bat", "service", "batch")
	mustDequeue(t, b, "svc", "service", "batch")
	other := eval("other", "c", 99, 3)
	other.Type = "system"
	b.Enqueue(other)
	if e, _ := dequeueNow(t, b, "service", "batch"); e != nil {
		t.Fatalf("dequeued %s from a queue not asked for", e.ID)
	}
}

func TestBroker_Dequeue_WaitsUntilReady(t *testing.T) {
	b, _, _ := newTestBroker(t)
	got := make(chan string, 1)
	go func() {
		e, _, err := b.Dequeue(context.Background(), []string{"service"})
		if err != nil {
			got <- err.Error()
			return
		}
		got <- e.ID
	}()
	b.Enqueue(eval("e1", "web", 50, 1))
	select {
	case id := <-got:
		if id != "e1" {
			t.Fatalf("got %s", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Dequeue was not woken by Enqueue")
	}
}

func TestBroker_Dequeue_ContextEnds(t *testing.T) {
	b, _, _ := newTestBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := b.Dequeue(ctx, []string{"service"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestBroker_Enqueue_DuplicateIsNoOp(t *testing.T) {
	b, _, _ := newTestBroker(t)
	e := eval("e1", "web", 50, 1)
	b.Enqueue(e)
	b.Enqueue(e)
	mustDequeue(t, b, "e1")
	b.Enqueue(e) // outstanding: still held
	if s := b.Stats(); s.TotalReady != 0 || s.TotalUnacked != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestBroker_OneEvalPerJobInFlight_NewestSupersedes(t *testing.T) {
	b, _, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	b.Enqueue(eval("e3", "web", 50, 3))
	b.Enqueue(eval("e2", "web", 50, 2))
	b.Enqueue(eval("x1", "other", 50, 4))
	tok := mustDequeue(t, b, "e1")
	mustDequeue(t, b, "x1") // another job is not held back
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatalf("a second eval of the job was delivered while e1 is in flight: %s", e.ID)
	}
	if s := b.Stats(); s.TotalPending != 2 {
		t.Fatalf("pending = %d, want 2", s.TotalPending)
	}
	if err := b.Ack("e1", tok); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.CancelableWake():
	default:
		t.Fatal("the reaper was not woken")
	}
	mustDequeue(t, b, "e3")
	if s := b.Stats(); s.TotalPending != 0 || s.TotalCancelable != 1 {
		t.Fatalf("stats = %+v, want 0 pending, 1 cancelable", s)
	}
	c := b.Cancelable(10)
	if len(c) != 1 || c[0].ID != "e2" {
		t.Fatalf("cancelable = %v, want [e2]", c)
	}
	if len(b.Cancelable(10)) != 0 || b.Stats().TotalCancelable != 0 {
		t.Fatal("cancelable evals are handed out once")
	}
	// A canceled eval is no longer held: it could be enqueued again.
	b.mu.Lock()
	_, held := b.evals["e2"]
	b.mu.Unlock()
	if held {
		t.Fatal("a cancelable eval is still held")
	}
}

// Of a job's waiting evals the one of highest priority runs, the newest
// among equals, as Nomad's PendingEvaluations orders them: an operator's
// EvalPriority is not thrown away by a later eval of default priority.
func TestBroker_OneEvalPerJobInFlight_HighestPriorityFirst(t *testing.T) {
	b, _, _ := newTestBroker(t)
	b.Enqueue(eval("a", "web", 50, 1))
	tok := mustDequeue(t, b, "a")
	b.Enqueue(eval("hi", "web", 90, 5))
	b.Enqueue(eval("lo", "web", 50, 7))
	if err := b.Ack("a", tok); err != nil {
		t.Fatal(err)
	}
	mustDequeue(t, b, "hi")
	if c := b.Cancelable(10); len(c) != 1 || c[0].ID != "lo" {
		t.Fatalf("cancelable = %v, want [lo]", c)
	}
}

func TestBroker_Cancelable_Batches(t *testing.T) {
	b, _, _ := newTestBroker(t)
	b.Enqueue(eval("first", "web", 50, 1))
	for i := 0; i < 7; i++ {
		b.Enqueue(eval(fmt.Sprintf("p%d", i), "web", 50, uint64(10+i)))
	}
	tok := mustDequeue(t, b, "first")
	_ = b.Ack("first", tok)
	if got := len(b.Cancelable(4)); got != 4 {
		t.Fatalf("first batch %d, want 4", got)
	}
	if got := len(b.Cancelable(4)); got != 2 {
		t.Fatalf("second batch %d, want 2", got)
	}
	mustDequeue(t, b, "p6")
}

func TestBroker_Nack_Delays(t *testing.T) {
	b, clock, obs := newTestBroker(t)
	b.cfg.DeliveryLimit = 5 // room for a third nack that is not the last
	b.Enqueue(eval("e1", "web", 50, 1))
	b.Enqueue(eval("e2", "web", 50, 2)) // waits behind e1 throughout
	tok := mustDequeue(t, b, "e1")
	if err := b.Nack("e1", tok); err != nil {
		t.Fatal(err)
	}
	// First redelivery after the initial delay.
	clock.advance(b.cfg.InitialNackDelay - time.Millisecond)
	b.Tick()
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatalf("redelivered %s before the initial nack delay", e.ID)
	}
	clock.advance(time.Millisecond)
	b.Tick()
	tok = mustDequeue(t, b, "e1")
	if err := b.Nack("e1", tok); err != nil {
		t.Fatal(err)
	}
	// Later redeliveries after the subsequent delay, compounding as
	// Nomad's: after the n-th nack, (n-1) times it.
	clock.advance(b.cfg.SubsequentNackDelay - time.Millisecond)
	b.Tick()
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatalf("redelivered %s before the subsequent nack delay", e.ID)
	}
	clock.advance(time.Millisecond)
	b.Tick()
	tok = mustDequeue(t, b, "e1")
	if err := b.Nack("e1", tok); err != nil {
		t.Fatal(err)
	}
	clock.advance(2*b.cfg.SubsequentNackDelay - time.Millisecond)
	b.Tick()
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatalf("redelivered %s before twice the subsequent nack delay, after the third nack", e.ID)
	}
	clock.advance(time.Millisecond)
	b.Tick()
	mustDequeue(t, b, "e1")
	want := []string{sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling, sdk.EvalPhaseDelayed, sdk.EvalPhaseQueued,
		sdk.EvalPhaseScheduling, sdk.EvalPhaseDelayed, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling,
		sdk.EvalPhaseDelayed, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling}
	if got := obs.of("e1"); !slices.Equal(got, want) {
		t.Fatalf("phases = %v, want %v", got, want)
	}
}

func TestBroker_Nack_ZeroDelayRedeliversAtOnce(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	cfg := DefaultConfig()
	cfg.InitialNackDelay, cfg.SubsequentNackDelay = 0, 0
	b, _ := New(cfg, clock, nil)
	b.SetEnabled(true)
	b.Enqueue(eval("e1", "web", 50, 1))
	tok := mustDequeue(t, b, "e1")
	_ = b.Nack("e1", tok)
	mustDequeue(t, b, "e1")
}

func TestBroker_Nack_DeliveryLimit(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	b.Enqueue(eval("e2", "web", 50, 2))
	for i := 0; i < b.cfg.DeliveryLimit; i++ {
		tok := mustDequeue(t, b, "e1")
		if err := b.Nack("e1", tok); err != nil {
			t.Fatal(err)
		}
		clock.advance(b.cfg.SubsequentNackDelay)
		b.Tick()
	}
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatalf("delivered %s to a worker after the delivery limit", e.ID)
	}
	if s := b.Stats(); s.TotalFailed != 1 {
		t.Fatalf("failed = %d, want 1", s.TotalFailed)
	}
	// The failed queue holds the job: e2 waits until the reaper acks.
	tok := mustDequeue(t, b, "e1", FailedQueue)
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatalf("delivered %s while its job's eval is being reaped", e.ID)
	}
	if err := b.Ack("e1", tok); err != nil {
		t.Fatal(err)
	}
	mustDequeue(t, b, "e2")
}

func TestBroker_Nack_FailedQueueDeliveryStaysFailed(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	cfg := DefaultConfig()
	cfg.DeliveryLimit = 1
	b, _ := New(cfg, clock, nil)
	b.SetEnabled(true)
	b.Enqueue(eval("e1", "web", 50, 1))
	tok := mustDequeue(t, b, "e1")
	_ = b.Nack("e1", tok)
	tok = mustDequeue(t, b, "e1", FailedQueue)
	// The reaper could not write the failure: the eval goes back to the
	// failed queue, at once, not to the workers.
	_ = b.Nack("e1", tok)
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatal("a failed eval went back to the workers")
	}
	mustDequeue(t, b, "e1", FailedQueue)
}

func TestBroker_NackTimeout(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	tok := mustDequeue(t, b, "e1")
	clock.advance(b.cfg.NackTimeout)
	if next := b.Tick(); next.IsZero() {
		t.Fatal("no next deadline after a nack: the redelivery delay is pending")
	}
	if err := b.Ack("e1", tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("ack after nack timeout: %v, want ErrNotOutstanding", err)
	}
	clock.advance(b.cfg.InitialNackDelay)
	b.Tick()
	mustDequeue(t, b, "e1")
}

func TestBroker_NackTimeout_CheckedOnAckBeforeTick(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	tok := mustDequeue(t, b, "e1")
	clock.advance(b.cfg.NackTimeout)
	if err := b.Ack("e1", tok); !errors.Is(err, ErrNackTimeout) {
		t.Fatalf("ack past the deadline: %v, want ErrNackTimeout", err)
	}
	if err := b.OutstandingReset("e1", tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("reset after timeout: %v", err)
	}
}

func TestBroker_OutstandingReset_ExtendsDeadline(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	tok := mustDequeue(t, b, "e1")
	clock.advance(b.cfg.NackTimeout - time.Second)
	if err := b.OutstandingReset("e1", tok); err != nil {
		t.Fatal(err)
	}
	clock.advance(b.cfg.NackTimeout - time.Second)
	b.Tick()
	if err := b.Ack("e1", tok); err != nil {
		t.Fatalf("ack within the reset deadline: %v", err)
	}
	if err := b.OutstandingReset("e1", tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("reset after ack: %v", err)
	}
}

func TestBroker_PauseNackTimeout(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	tok := mustDequeue(t, b, "e1")
	if err := b.PauseNackTimeout("e1", "bogus"); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("pause with a wrong token: %v", err)
	}
	if err := b.PauseNackTimeout("e1", tok); err != nil {
		t.Fatal(err)
	}
	clock.advance(10 * b.cfg.NackTimeout)
	b.Tick()
	if _, ok := b.Outstanding("e1"); !ok {
		t.Fatal("a paused eval was nacked")
	}
	if err := b.ResumeNackTimeout("e1", tok); err != nil {
		t.Fatal(err)
	}
	clock.advance(b.cfg.NackTimeout - time.Second)
	b.Tick()
	if _, ok := b.Outstanding("e1"); !ok {
		t.Fatal("resume did not restart the timeout in full")
	}
	clock.advance(time.Second)
	b.Tick()
	if _, ok := b.Outstanding("e1"); ok {
		t.Fatal("a resumed eval was not nacked at its deadline")
	}
}

func TestBroker_TokenMismatch(t *testing.T) {
	b, _, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	mustDequeue(t, b, "e1")
	for name, f := range map[string]func() error{
		"ack":   func() error { return b.Ack("e1", "bogus") },
		"nack":  func() error { return b.Nack("e1", "bogus") },
		"reset": func() error { return b.OutstandingReset("e1", "bogus") },
	} {
		if err := f(); !errors.Is(err, ErrTokenMismatch) {
			t.Errorf("%s: err = %v, want ErrTokenMismatch", name, err)
		}
	}
	if err := b.Ack("nope", "x"); !errors.Is(err, ErrNotOutstanding) {
		t.Errorf("ack of unknown eval: %v", err)
	}
}

func TestBroker_Delay_WaitUntilAndWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(e *sdk.Evaluation, now time.Time)
	}{
		{"WaitUntil", func(e *sdk.Evaluation, now time.Time) { e.WaitUntil = now.Add(time.Minute) }},
		{"Wait", func(e *sdk.Evaluation, _ time.Time) { e.Wait = time.Minute }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clock, obs := newTestBroker(t)
			e := eval("later", "web", 50, 1)
			tc.set(e, clock.Now())
			b.Enqueue(e)
			if got, _ := dequeueNow(t, b); got != nil {
				t.Fatal("delayed eval delivered early")
			}
			if d := b.DelayedEvals(); len(d) != 1 || !d[0].Due.Equal(clock.Now().Add(time.Minute)) {
				t.Fatalf("delayed = %+v", d)
			}
			if s := b.Stats(); s.TotalWaiting != 1 {
				t.Fatalf("waiting = %d", s.TotalWaiting)
			}
			if next := b.Tick(); !next.Equal(clock.Now().Add(time.Minute)) {
				t.Fatalf("next deadline %v", next)
			}
			clock.advance(time.Minute)
			b.Tick()
			mustDequeue(t, b, "later")
			if got := obs.of("later"); !slices.Equal(got, []string{sdk.EvalPhaseDelayed, sdk.EvalPhaseQueued, sdk.EvalPhaseScheduling}) {
				t.Fatalf("phases %v", got)
			}
		})
	}
}

func TestBroker_Delay_PastWaitUntilIsReadyNow(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	e := eval("late", "web", 50, 1)
	e.WaitUntil = clock.Now().Add(-time.Hour)
	b.Enqueue(e)
	mustDequeue(t, b, "late")
}

func TestBroker_Delay_DueEvalOfBusyJobWaitsBehind(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	b.Enqueue(eval("now", "web", 50, 1))
	later := eval("later", "web", 50, 2)
	later.WaitUntil = clock.Now().Add(time.Second)
	b.Enqueue(later)
	tok := mustDequeue(t, b, "now")
	clock.advance(time.Second)
	b.Tick()
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatalf("%s delivered while its job is in flight", e.ID)
	}
	_ = b.Ack("now", tok)
	mustDequeue(t, b, "later")
}

func TestBroker_RequeueOnAck(t *testing.T) {
	b, _, _ := newTestBroker(t)
	e := eval("blk", "web", 50, 1)
	b.Enqueue(e)
	tok := mustDequeue(t, b, "blk")
	// The worker reblocked it and it was unblocked before the worker acked.
	b.EnqueueAll(map[*sdk.Evaluation]string{e: tok})
	if got, _ := dequeueNow(t, b); got != nil {
		t.Fatal("a reblocked eval was delivered while its worker holds it")
	}
	if err := b.Ack("blk", tok); err != nil {
		t.Fatal(err)
	}
	mustDequeue(t, b, "blk")
}

func TestBroker_RequeueDroppedOnNack(t *testing.T) {
	b, clock, _ := newTestBroker(t)
	e := eval("blk", "web", 50, 1)
	b.Enqueue(e)
	tok := mustDequeue(t, b, "blk")
	b.EnqueueAll(map[*sdk.Evaluation]string{e: tok})
	_ = b.Nack("blk", tok)
	clock.advance(b.cfg.InitialNackDelay)
	b.Tick()
	tok = mustDequeue(t, b, "blk")
	_ = b.Ack("blk", tok)
	if got, _ := dequeueNow(t, b); got != nil {
		t.Fatal("a nacked reblock was requeued on the next ack")
	}
}

func TestBroker_EnqueueAll_UnknownTokenEnqueuesNow(t *testing.T) {
	b, _, _ := newTestBroker(t)
	b.EnqueueAll(map[*sdk.Evaluation]string{eval("blk", "web", 50, 1): "stale"})
	mustDequeue(t, b, "blk")
}

func TestBroker_PauseResume(t *testing.T) {
	b, _, _ := newTestBroker(t)
	b.SetPaused(true)
	if !b.Paused() {
		t.Fatal("not paused")
	}
	b.Enqueue(eval("e1", "web", 50, 1))
	failed := eval("f1", "gone", 50, 2)
	b.mu.Lock()
	b.evals[failed.ID] = b.cfg.DeliveryLimit
	b.enqueueLocked(failed, time.Time{})
	b.mu.Unlock()
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatal("delivered while paused")
	}
	mustDequeue(t, b, "f1", FailedQueue) // the reaper is not paused
	got := make(chan string, 1)
	go func() {
		e, _, err := b.Dequeue(context.Background(), []string{"service"})
		if err == nil {
			got <- e.ID
		}
	}()
	time.Sleep(10 * time.Millisecond)
	b.SetPaused(false)
	select {
	case id := <-got:
		if id != "e1" {
			t.Fatalf("got %s", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("resume did not wake the waiting worker")
	}
}

func TestBroker_Disable_FlushesAndWakes(t *testing.T) {
	b, _, _ := newTestBroker(t)
	errc := make(chan error, 1)
	go func() {
		_, _, err := b.Dequeue(context.Background(), []string{"service"})
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	b.Enqueue(eval("e1", "web", 50, 1))
	<-errc // it got e1
	b.Enqueue(eval("e2", "other", 50, 2))
	go func() {
		_, _, err := b.Dequeue(context.Background(), []string{"batch"})
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	b.SetEnabled(false)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrDisabled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("disable did not wake a waiting Dequeue")
	}
	if s := b.Stats(); s.TotalReady+s.TotalUnacked != 0 {
		t.Fatalf("stats after disable %+v", s)
	}
	b.Enqueue(eval("e3", "x", 50, 3))
	b.SetEnabled(true)
	if e, _ := dequeueNow(t, b); e != nil {
		t.Fatal("an eval enqueued while disabled was kept")
	}
}

// TestBroker_Property_RandomOperations drives random operations and checks
// the broker's invariants after each: at most one eval per job is ready,
// outstanding or waiting out a redelivery; every eval enqueued is in exactly
// one place or was released (acked or handed out as cancelable); the
// counters match a recount.
func TestBroker_Property_RandomOperations(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			b, clock, _ := newTestBroker(t)
			type out struct{ id, tok string }
			var outstanding []out
			released := map[string]bool{}
			enqueued := map[string]bool{}
			next := 0
			for step := 0; step < 400; step++ {
				switch op := r.IntN(10); {
				case op < 3:
					next++
					e := eval(fmt.Sprintf("e%d", next), fmt.Sprintf("j%d", r.IntN(4)), 10*r.IntN(5), uint64(next))
					if r.IntN(5) == 0 {
						e.WaitUntil = clock.Now().Add(time.Duration(r.IntN(30)) * time.Second)
					}
					b.Enqueue(e)
					enqueued[e.ID] = true
				case op < 5:
					if e, tok := dequeueNow(t, b, "service", FailedQueue); e != nil {
						outstanding = append(outstanding, out{e.ID, tok})
					}
				case op < 7 && len(outstanding) > 0:
					i := r.IntN(len(outstanding))
					o := outstanding[i]
					outstanding = slices.Delete(outstanding, i, i+1)
					if b.Ack(o.id, o.tok) == nil {
						released[o.id] = true
					}
				case op < 8 && len(outstanding) > 0:
					i := r.IntN(len(outstanding))
					o := outstanding[i]
					outstanding = slices.Delete(outstanding, i, i+1)
					_ = b.Nack(o.id, o.tok)
				case op < 9:
					clock.advance(time.Duration(r.IntN(40)) * time.Second)
					b.Tick()
				default:
					for _, e := range b.Cancelable(r.IntN(3) + 1) {
						released[e.ID] = true
					}
				}
				checkInvariants(t, b, enqueued, released)
			}
		})
	}
}

func checkInvariants(t *testing.T, b *Broker, enqueued, released map[string]bool) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	where := map[string]string{}
	place := func(id, p string) {
		if prev, ok := where[id]; ok {
			t.Fatalf("eval %s is both %s and %s", id, prev, p)
		}
		where[id] = p
	}
	active := map[sdk.NamespacedID]int{}
	ready, failed := 0, 0
	for q, h := range b.ready {
		for _, e := range *h {
			place(e.ID, "ready")
			active[jobKey(e)]++
			ready++
			if q == FailedQueue {
				failed++
			}
		}
	}
	for _, u := range b.unack {
		place(u.eval.ID, "unacked")
		active[jobKey(u.eval)]++
	}
	waiting := 0
	for _, d := range *b.delayed {
		place(d.eval.ID, "delayed")
		waiting++
		if d.redelivery {
			active[jobKey(d.eval)]++
		}
	}
	pending := 0
	for _, ph := range b.pending {
		for _, e := range *ph {
			place(e.ID, "pending")
			pending++
		}
	}
	for _, e := range b.cancelable {
		place(e.ID, "cancelable")
	}
	for jk, n := range active {
		if n > 1 {
			t.Fatalf("job %s has %d evals in flight", jk, n)
		}
		if n == 1 && b.inflight[jk] == "" {
			t.Fatalf("job %s has an active eval but is not marked in flight", jk)
		}
	}
	for id := range enqueued {
		_, held := where[id]
		if held == released[id] {
			t.Fatalf("eval %s: held=%v released=%v", id, held, released[id])
		}
	}
	s := b.stats
	if s.TotalReady != ready || s.TotalUnacked != len(b.unack) || s.TotalWaiting != waiting ||
		s.TotalPending != pending || s.TotalFailed != failed || s.TotalCancelable != len(b.cancelable) {
		t.Fatalf("stats %+v disagree with recount ready=%d unacked=%d waiting=%d pending=%d failed=%d cancelable=%d",
			s, ready, len(b.unack), waiting, pending, failed, len(b.cancelable))
	}
}
