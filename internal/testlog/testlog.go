// Package testlog is a log destination for tests: a buffer that goroutines
// (an applier's, a server's, a child process's output copier) write to
// while the test reads it, and the zerolog entries it holds.
package testlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for concurrent writers and a reader. The
// zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Entries returns the JSON log lines (zerolog's) whose message is msg,
// failing tb on a line that is not JSON.
func (b *Buffer) Entries(tb testing.TB, msg string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			tb.Fatalf("log line %q: %v", line, err)
		}
		if e["message"] == msg {
			out = append(out, e)
		}
	}
	return out
}
