package broker

import (
	"context"
	"errors"
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

func newTestBroker(t *testing.T) (*Broker, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	b, err := New(DefaultConfig(), clock)
	if err != nil {
		t.Fatal(err)
	}
	b.SetEnabled(true)
	return b, clock
}

func eval(id, job string, prio int, index uint64) *sdk.Evaluation {
	return &sdk.Evaluation{ID: id, Namespace: "default", JobID: job, Type: "service", Priority: prio,
		Status: sdk.EvalStatusPending, CreateIndex: index}
}

// dequeueNow dequeues without blocking.
func dequeueNow(t *testing.T, b *Broker) (*sdk.Evaluation, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	e, tok, err := b.Dequeue(ctx, []string{"service"})
	if err != nil {
		return nil, ""
	}
	return e, tok
}

func TestBroker_PriorityThenAge(t *testing.T) {
	b, _ := newTestBroker(t)
	b.Enqueue(eval("low", "j1", 10, 1))
	b.Enqueue(eval("high-old", "j2", 90, 2))
	b.Enqueue(eval("high-new", "j3", 90, 3))
	for _, want := range []string{"high-old", "high-new", "low"} {
		e, tok := dequeueNow(t, b)
		if e == nil || e.ID != want {
			t.Fatalf("dequeued %v, want %s", e, want)
		}
		if err := b.Ack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBroker_OneEvalPerJobInFlight_NewestSupersedes(t *testing.T) {
	b, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	b.Enqueue(eval("e2", "web", 50, 2))
	b.Enqueue(eval("e3", "web", 50, 3))
	e, tok := dequeueNow(t, b)
	if e.ID != "e1" {
		t.Fatalf("got %s, want e1", e.ID)
	}
	if e2, _ := dequeueNow(t, b); e2 != nil {
		t.Fatalf("a second eval of the job was delivered while e1 is in flight: %s", e2.ID)
	}
	if err := b.Ack("e1", tok); err != nil {
		t.Fatal(err)
	}
	e, _ = dequeueNow(t, b)
	if e == nil || e.ID != "e3" {
		t.Fatalf("after ack got %v, want the newest e3", e)
	}
	c := b.Cancelable(10)
	if len(c) != 1 || c[0].ID != "e2" {
		t.Fatalf("cancelable = %v, want [e2]", c)
	}
}

func TestBroker_Nack_DeliveryLimit(t *testing.T) {
	b, clock := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	for i := 0; i < b.cfg.DeliveryLimit; i++ {
		e, tok := dequeueNow(t, b)
		if e == nil {
			t.Fatalf("delivery %d: nothing ready", i+1)
		}
		if err := b.Nack(e.ID, tok); err != nil {
			t.Fatal(err)
		}
		// Redelivery waits for the nack delay.
		if e, _ := dequeueNow(t, b); e != nil && i+1 < b.cfg.DeliveryLimit {
			t.Fatalf("redelivered before the nack delay")
		}
		clock.advance(b.cfg.SubsequentNackDelay)
		b.Tick()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	e, _, err := b.Dequeue(ctx, []string{FailedQueue})
	if err != nil || e.ID != "e1" {
		t.Fatalf("eval not in the failed queue after %d deliveries: %v %v", b.cfg.DeliveryLimit, e, err)
	}
}

func TestBroker_NackTimeout(t *testing.T) {
	b, clock := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	_, tok := dequeueNow(t, b)
	clock.advance(b.cfg.NackTimeout + time.Second)
	b.Tick()
	if err := b.Ack("e1", tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("ack after nack timeout: %v, want ErrNotOutstanding", err)
	}
}

func TestBroker_WaitUntilDelays(t *testing.T) {
	b, clock := newTestBroker(t)
	e := eval("later", "web", 50, 1)
	e.WaitUntil = clock.Now().Add(time.Minute)
	b.Enqueue(e)
	if got, _ := dequeueNow(t, b); got != nil {
		t.Fatal("delayed eval delivered early")
	}
	clock.advance(time.Minute)
	b.Tick()
	if got, _ := dequeueNow(t, b); got == nil || got.ID != "later" {
		t.Fatalf("delayed eval not delivered when due: %v", got)
	}
}

func TestBroker_TokenMismatch(t *testing.T) {
	b, _ := newTestBroker(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	dequeueNow(t, b)
	if err := b.Ack("e1", "bogus"); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("err = %v, want ErrTokenMismatch", err)
	}
}
