package runtime_test

import (
	"bytes"
	"encoding/json"
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
