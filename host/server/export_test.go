package server

import (
	"time"

	"github.com/drover-sched/drover/host/fsm"
)

// SetApplies makes s tell the other servers that it applies entry types
// up to t only, as an older version would (gate.go).
func SetApplies(s *Server, t fsm.MessageType) { s.applies.Store(uint32(t)) }

// ForgetUpToDatePeers makes s ask every other server again which entry
// types it applies, as it does once upToDateFor has passed.
func ForgetUpToDatePeers(s *Server) {
	s.upToDate.mu.Lock()
	defer s.upToDate.mu.Unlock()
	s.upToDate.until = nil
}

// SetVariableLockClock makes now the clock of s's variable lock leases.
func SetVariableLockClock(s *Server, now func() time.Time) {
	s.varLocks.mu.Lock()
	defer s.varLocks.mu.Unlock()
	s.varLocks.now = now
}

// ExpireVariableLocks takes off the variable locks whose lease has ended,
// as the leader's loop does each second.
func ExpireVariableLocks(s *Server) error { return s.expireVariableLocksOnce() }

// PeriodicPasses is how many leaderships of s have made up their missed
// periodic launches: a job registered after that is scheduled, not
// launched as missed.
func PeriodicPasses(s *Server) uint64 { return s.periodic.passes.Load() }
