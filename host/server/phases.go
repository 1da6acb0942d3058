package server

import (
	"sync"
	"time"
)

// PhaseEvent is one step of an eval's life, including the quasi-statuses
// the state store does not hold (queued, delayed, scheduling, applying).
type PhaseEvent struct {
	Phase string
	Time  time.Time
}

// maxTrackedEvals bounds the phase histories kept in memory.
const maxTrackedEvals = 50_000

// phaseTracker keeps, per eval, its current quasi-status and its history.
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
		if len(p.order) > maxTrackedEvals {
			delete(p.m, p.order[0])
			delete(p.failures, p.order[0])
			p.order = p.order[1:]
		}
	}
	if n := len(h); n > 0 && h[n-1].Phase == phase {
		return
	}
	p.m[evalID] = append(h, PhaseEvent{Phase: phase, Time: now})
}

// History returns an eval's phases, oldest first.
func (p *phaseTracker) history(evalID string) []PhaseEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PhaseEvent(nil), p.m[evalID]...)
}

// EvalHistory returns the phases an eval went through on this leader.
func (s *Server) EvalHistory(evalID string) []PhaseEvent { return s.phases.history(evalID) }
