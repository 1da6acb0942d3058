package httpapi

import (
	"testing"
	"time"
)

// A blocking query waits at most 5 minutes, as Nomad 1.6's
// (MaxBlockingRPCQueryTime), and 5 minutes when it asks for none.
func TestParseWait(t *testing.T) {
	cases := []struct {
		raw  string
		want time.Duration
	}{
		{"30s", 30 * time.Second},
		{"1500", 1500 * time.Millisecond},
		{"0", 5 * time.Minute},
		{"-5s", 5 * time.Minute},
		{"5m", 5 * time.Minute},
		{"6m", 5 * time.Minute},
		{"1h", 5 * time.Minute},
		{"600000", 5 * time.Minute},
		{"99999999999999999", 5 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := parseWait(tc.raw)
			if err != nil || got != tc.want {
				t.Fatalf("parseWait(%q) = %s, %v; want %s", tc.raw, got, err, tc.want)
			}
		})
	}
}
