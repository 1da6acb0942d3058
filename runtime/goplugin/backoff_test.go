package goplugin

import (
	"testing"
	"time"
)

func TestFactory_RestartBackoffGrowsAndResets(t *testing.T) {
	f := &Factory{cfg: Config{RestartBackoff: 100 * time.Millisecond, MaxRestartBackoff: time.Second}}
	now := time.Now()
	cases := []struct {
		name    string
		crashes int
		since   time.Duration
		want    time.Duration
	}{
		{"no crash", 0, 0, 0},
		{"first crash", 1, 0, 100 * time.Millisecond},
		{"second crash", 2, 0, 200 * time.Millisecond},
		{"third crash, partly waited", 3, 150 * time.Millisecond, 250 * time.Millisecond},
		{"capped", 10, 0, time.Second},
		{"waited out", 2, time.Second, -800 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.crashes, f.lastCrash = tc.crashes, now.Add(-tc.since)
			if got := f.backoff(now); got != tc.want {
				t.Fatalf("backoff = %v, want %v", got, tc.want)
			}
		})
	}
	f.noteSuccess()
	if got := f.backoff(now); got != 0 {
		t.Fatalf("backoff after a success = %v, want 0", got)
	}
}
