package httpapi

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// A jobspec parse is the costliest thing a client can ask of the API:
// within the jobspec package's limits (host/jobspec/size.go) one costs
// up to some 800 MiB allocated and a second of a core (a dense MiB of
// HCL, refused after lexing; 320 MiB and 0.3 s for a dense 256 KiB,
// parsed). So the API runs at most GOMAXPROCS of them at once: more
// would not finish sooner, only hold more memory. A request waits for a
// slot while its client waits, up to parseSlotWait; past it, it is a 503.

// parseSlotWait is how long a parse waits for a slot by default: a slot
// frees in about a second at worst.
const parseSlotWait = 10 * time.Second

// parseSlots bounds the parses the API runs at once.
type parseSlots struct {
	slots chan struct{}
	wait  time.Duration
	// waiting counts the requests waiting for a slot.
	waiting atomic.Int64
}

func newParseSlots(n int, wait time.Duration) *parseSlots {
	return &parseSlots{slots: make(chan struct{}, max(n, 1)), wait: wait}
}

// acquire takes a slot for a parse, waiting while ctx lives, up to
// s.wait; it returns what gives the slot back. Refused, it sets
// Retry-After on w.
func (s *parseSlots) acquire(ctx context.Context, w http.ResponseWriter) (func(), error) {
	release := func() { <-s.slots }
	select {
	case s.slots <- struct{}{}:
		return release, nil
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	select {
	case s.slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, errorf(http.StatusServiceUnavailable, "gave up waiting to parse the jobspec: %v", ctx.Err())
	case <-timer.C:
		w.Header().Set("Retry-After", strconv.Itoa(max(int(s.wait/time.Second), 1)))
		return nil, errorf(http.StatusServiceUnavailable, "too many jobspecs are being parsed: all %d parse slots "+
			"stayed busy for %s; retry later", cap(s.slots), s.wait)
	}
}

// LimitParses sets how many jobspec parses the API runs at once (by
// default GOMAXPROCS) and how long a request waits for one to end
// before it is refused with a 503 (by default 10 s). Call it before
// serving.
func (a *API) LimitParses(n int, wait time.Duration) {
	a.parses = newParseSlots(n, wait)
}

func defaultParseSlots() *parseSlots { return newParseSlots(runtime.GOMAXPROCS(0), parseSlotWait) }
