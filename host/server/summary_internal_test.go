package server

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A failed eval's description carries one line of its last failure.
func TestSummary(t *testing.T) {
	long := strings.Repeat("é", maxSummary) // two bytes each: cut inside a rune
	for _, tc := range []struct{ why, want string }{
		{"plan rejected: node n1 is full", "plan rejected: node n1 is full"},
		{"plugin evil: panic: boom\ngoroutine 1 [running]:\nmain.go:66", "plugin evil: panic: boom (more in the agent's log)"},
		{long, strings.Repeat("é", maxSummary/2) + " (more in the agent's log)"},
	} {
		got := summary(tc.why)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("summary(%.40q...) = %.60q..., want %.60q...", tc.why, got, tc.want)
		}
	}
}
