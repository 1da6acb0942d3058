// Package hclogzero writes what HashiCorp libraries log through hclog
// (raft, go-plugin) to a zerolog logger: each line at its own level, with
// its fields, so it reads like the rest of the agent's log and the
// agent's -log-level and -log-json apply to it.
package hclogzero

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// New returns an hclog logger named name that writes to log, passing
// level and above.
func New(log zerolog.Logger, name string, level hclog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: level, JSONFormat: true, Output: writer{log: log, name: name}})
}

// Level is the hclog level that passes what log passes.
func Level(log zerolog.Logger) hclog.Level {
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

// writer writes hclog's JSON lines to a zerolog logger; name is the
// module of a line that is not hclog's JSON.
type writer struct {
	log  zerolog.Logger
	name string
}

func (w writer) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(p, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) > 0 {
			w.entry(line)
		}
	}
	return len(p), nil
}

func (w writer) entry(line []byte) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		w.log.Info().Str("module", w.name).Msg(strings.TrimSpace(string(line)))
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
