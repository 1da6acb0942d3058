package server

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/drover-sched/drover/internal/hclogzero"
	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// Raft's lines reach the agent's log at their level, with their fields,
// and only down to the agent's level.
func TestRaftLogger(t *testing.T) {
	var buf bytes.Buffer
	log := raftLogger(zerolog.New(&buf).Level(zerolog.InfoLevel), true)
	log.Debug("not shown")
	log.Info("entering follower state", "follower", "server-1", "leader-id", "", "node", struct{ x int }{1})
	log.Error("failed to heartbeat to", "peer", "10.0.0.2:4647", "backoff time", 10)
	log.Named("snapshot").Warn("retained")
	var got []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte{'\n'}) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("entries %v", got)
	}
	want := []struct{ level, module, msg, key string }{
		{"info", "raft", "entering follower state", "follower"},
		{"error", "raft", "failed to heartbeat to", "peer"},
		{"warn", "raft.snapshot", "retained", ""},
	}
	for i, w := range want {
		g := got[i]
		if g["level"] != w.level || g["module"] != w.module || g["message"] != w.msg || (w.key != "" && g[w.key] == nil) ||
			g["node"] != nil {
			t.Errorf("entry %d: %v, want %+v", i, g, w)
		}
	}
	if hclogzero.Level(zerolog.New(nil).Level(zerolog.WarnLevel)) != hclog.Warn {
		t.Error("level not mapped")
	}
	buf.Reset()
	alone := raftLogger(zerolog.New(&buf).Level(zerolog.InfoLevel), false)
	alone.Warn("heartbeat timeout reached, starting election")
	alone.Error("failed to take snapshot")
	if bytes.Count(buf.Bytes(), []byte{'\n'}) != 1 {
		t.Errorf("a server alone shows raft's errors only: %s", buf.Bytes())
	}
}
