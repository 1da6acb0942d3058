package server

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// raftLogger is the logger raft and its stores write to: hclog's JSON
// lines turned into the agent's log entries, at their own level and with
// their fields, so raft's elections, lost leaderships and configuration
// changes read like the rest of the log (and -log-level and -log-json
// apply to them). A server alone (clustered false) shows raft's errors
// only: its election at start is no news.
func raftLogger(log zerolog.Logger, clustered bool) hclog.Logger {
	level := hclog.Error
	if clustered {
		level = hclogLevel(log)
	}
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, JSONFormat: true, Output: raftLog{log: log}})
}

// hclogLevel is the hclog level that passes what log passes.
func hclogLevel(log zerolog.Logger) hclog.Level {
	switch max(log.GetLevel(), zerolog.GlobalLevel()) {
	case zerolog.TraceLevel:
		return hclog.Trace
	case zerolog.DebugLevel:
		return hclog.Debug
	case zerolog.InfoLevel:
		return hclog.Info
	case zerolog.WarnLevel:
		return hclog.Warn
	default:
		return hclog.Error
	}
}

// raftLog writes hclog's JSON lines to a zerolog logger.
type raftLog struct{ log zerolog.Logger }

func (w raftLog) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(p, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) > 0 {
			w.entry(line)
		}
	}
	return len(p), nil
}

func (w raftLog) entry(line []byte) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		w.log.Info().Str("module", "raft").Msg(strings.TrimSpace(string(line)))
		return
	}
	level := zerolog.InfoLevel
	switch m["@level"] {
	case "trace":
		level = zerolog.TraceLevel
	case "debug":
		level = zerolog.DebugLevel
	case "warn":
		level = zerolog.WarnLevel
	case "error":
		level = zerolog.ErrorLevel
	}
	module, _ := m["@module"].(string)
	msg, _ := m["@message"].(string)
	ev := w.log.WithLevel(level).Str("module", module)
	keys := make([]string, 0, len(m))
	for k := range m {
		if !strings.HasPrefix(k, "@") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v, ok := m[k].(map[string]any); ok && len(v) == 0 {
			continue // a value hclog cannot show (raft's own state, "{}")
		}
		ev = ev.Interface(k, m[k])
	}
	ev.Msg(msg)
}
