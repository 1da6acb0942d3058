package server

import "github.com/drover-sched/drover/host/fsm"

// SetApplies makes s tell the other servers that it applies entry types
// up to t only, as an older version would (gate.go).
func SetApplies(s *Server, t fsm.MessageType) { s.applies.Store(uint32(t)) }
