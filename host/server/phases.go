package server

import (
	"sync"
	"time"

	"github.com/drover-sched/drover/host/broker"
)

// PhaseEvent is one step of an eval's life: a status the state store holds
// (pending, blocked, complete, failed, canceled) or one of seed 002's
// quasi-statuses it does not (queued, delayed, scheduling, applying).
type PhaseEvent struct {
	Phase string
	Time  time.Time
}

// maxTrackedEvals bounds the phase histories kept in memory; the oldest
// history is dropped first.
const maxTrackedEvals = 50_000

// maxPhasesPerEval bounds one eval's history; an eval that keeps being
// retried keeps its first and latest phases.
const maxPhasesPerEval = 64

// phaseTracker keeps, per eval, the phases it went through on this server,
// in order. Consecutive repeats are kept once.
type phaseTracker struct {
	mu    sync.Mutex
	m     map[string][]PhaseEvent
	order []string
	// failures holds the reason of each eval's last nack, so that the
	// eval that runs out of deliveries says why.
	failures map[string]string
}

func newPhaseTracker() *phaseTracker {
	return &phaseTracker{m: map[string][]PhaseEvent{}, failures: map[string]string{}}
}

// fail records why an eval was nacked.
func (p *phaseTracker) fail(evalID, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[evalID]; ok {
		p.failures[evalID] = reason
	}
}

// lastFailure returns the reason of the eval's last nack, or "".
func (p *phaseTracker) lastFailure(evalID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures[evalID]
}

func (p *phaseTracker) set(evalID, phase string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.m[evalID]
	if !ok {
		p.order = append(p.order, evalID)
		for len(p.order) > maxTrackedEvals {
			delete(p.m, p.order[0])
			delete(p.failures, p.order[0])
			p.order = p.order[1:]
		}
	}
	if n := len(h); n > 0 && h[n-1].Phase == phase {
		return
	}
	if len(h) >= maxPhasesPerEval {
		h = append(h[:1], h[len(h)-maxPhasesPerEval+2:]...)
	}
	p.m[evalID] = append(h, PhaseEvent{Phase: phase, Time: now})
}

// forget drops the history of an eval that was deleted.
func (p *phaseTracker) forget(evalID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, evalID)
	delete(p.failures, evalID)
}

// history returns an eval's phases, oldest first.
func (p *phaseTracker) history(evalID string) []PhaseEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PhaseEvent(nil), p.m[evalID]...)
}

// phaseObserver records the quasi-statuses the broker reports.
type phaseObserver struct{ s *Server }

var _ broker.Observer = phaseObserver{}

func (o phaseObserver) EvalPhase(evalID, phase string) { o.s.phases.set(evalID, phase, o.s.now()) }

// EvalHistory returns the phases an eval went through on this server, oldest
// first: its statuses as they were committed and, while this server led,
// its quasi-statuses.
func (s *Server) EvalHistory(evalID string) []PhaseEvent { return s.phases.history(evalID) }
