// Package logmon streams the agent's log to monitors (drover monitor,
// Nomad's /v1/agent/monitor): the agent's zerolog logger writes through a
// Hub, which hands each line to every subscriber that wants its level.
//
// Logging never waits for a monitor: a subscriber that does not keep up
// loses lines (it is told how many).
package logmon

import (
	"bytes"
	"sync"

	"github.com/rs/zerolog"
)

// Hub is a zerolog.LevelWriter that fans lines out to subscribers.
type Hub struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// NewHub returns a hub without subscribers.
func NewHub() *Hub { return &Hub{subs: map[*Subscription]struct{}{}} }

var _ zerolog.LevelWriter = (*Hub)(nil)

// Write implements io.Writer for lines without a level.
func (h *Hub) Write(p []byte) (int, error) { return h.WriteLevel(zerolog.NoLevel, p) }

// WriteLevel hands the line (zerolog's JSON) to the subscribers that want
// its level.
func (h *Hub) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if l < s.level && l != zerolog.NoLevel {
			continue
		}
		select {
		case s.lines <- bytes.Clone(p):
		default:
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
		}
	}
	return len(p), nil
}

// Subscription receives lines at or above its level.
type Subscription struct {
	h       *Hub
	level   zerolog.Level
	lines   chan []byte
	mu      sync.Mutex
	dropped int
}

// Subscribe starts a subscription to lines at level or above, buffering
// up to buf lines.
func (h *Hub) Subscribe(level zerolog.Level, buf int) *Subscription {
	s := &Subscription{h: h, level: level, lines: make(chan []byte, buf)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Lines delivers the lines, as zerolog wrote them (JSON).
func (s *Subscription) Lines() <-chan []byte { return s.lines }

// Dropped returns how many lines were lost since the last call, and
// resets the count.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.dropped
	s.dropped = 0
	return n
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	delete(s.h.subs, s)
	s.h.mu.Unlock()
}
