package server

import (
	"github.com/drover-sched/drover/internal/hclogzero"
	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// raftLogger is the logger raft and its stores write to: their lines in
// the agent's log at their own level and with their fields, so raft's
// elections, lost leaderships and configuration changes read like the
// rest of the log. A server alone (clustered false) shows raft's errors
// only: its election at start is no news.
func raftLogger(log zerolog.Logger, clustered bool) hclog.Logger {
	level := hclog.Error
	if clustered {
		level = hclogzero.Level(log)
	}
	return hclogzero.New(log, "raft", level)
}
