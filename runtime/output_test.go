package runtime_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/runtime"
	"github.com/rs/zerolog"
)

func TestOutputLog_OneEntryPerLineTagged(t *testing.T) {
	var buf bytes.Buffer
	w := runtime.OutputLog(zerolog.New(&buf), "zones", "stderr")
	_, _ = w.Write([]byte("first li"))
	_, _ = w.Write([]byte("ne\nsecond line\r\npartial"))
	_, _ = w.Write([]byte(strings.Repeat("x", 20<<10)))
	var got []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if len(got) != 3 || got[0]["message"] != "first line" || got[1]["message"] != "second line" {
		t.Fatalf("entries = %v", got)
	}
	if got[0]["plugin"] != "zones" || got[0]["stream"] != "stderr" {
		t.Fatalf("not tagged: %v", got[0])
	}
	// A line that never ends is cut at 16 KiB rather than buffered forever.
	if n := len(got[2]["message"]); n != 16<<10 {
		t.Fatalf("long line logged as %d bytes", n)
	}
}

// A trap's error runs over several lines (wazero's stack trace), and an
// eval's description keeps only the first: the plugin's own words, what
// it wrote to stderr, go on that first line, not after the stack trace.
func TestCapture_ExplainQuotesStderrOnTheFirstLine(t *testing.T) {
	c := runtime.NewCapture(4 << 10)
	_, _ = c.Write([]byte("panic: boom\n\ngoroutine 7 [running]:\nmain.f()\n"))
	trap := errors.New("wasm: drover_process: wasm error: unreachable\nwasm stack trace:\n\t.runtime.abort(i32) i32")
	err := c.Explain(trap)
	first, rest, _ := strings.Cut(err.Error(), "\n")
	if want := "wasm: drover_process: wasm error: unreachable (plugin stderr: panic: boom"; first != want {
		t.Fatalf("first line %q, want %q", first, want)
	}
	if !strings.Contains(rest, "goroutine 7 [running]") || !strings.HasSuffix(rest, "wasm stack trace:\n\t.runtime.abort(i32) i32") {
		t.Fatalf("the rest %q, want the plugin's stack, then the trap's", rest)
	}
	if !errors.Is(err, trap) {
		t.Fatal("the trap is no longer wrapped")
	}
	// A one-line error reads as before.
	if got := c.Explain(errors.New("goplugin: p: process failed: EOF")).Error(); got != "goplugin: p: process failed: EOF (plugin stderr: panic: boom\n\ngoroutine 7 [running]:\nmain.f())" {
		t.Fatalf("one-line error explained as %q", got)
	}
}
