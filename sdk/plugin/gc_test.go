package plugin

import "testing"

func TestGCDue(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name       string
		live, heap uint64
		want       bool
	}{
		{"nothing allocated", 0, 0, false},
		{"a small heap within the slack", 1 * mib, 2*mib + gcSlack, false},
		{"a small heap past the slack", 1 * mib, 2*mib + gcSlack + 1, true},
		{"a large mirror, garbage under its size", 200 * mib, 390 * mib, false},
		{"a large mirror, garbage over its size and the slack", 200 * mib, 400*mib + gcSlack + 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcDue(tc.live, tc.heap); got != tc.want {
				t.Errorf("gcDue(%d, %d) = %v, want %v", tc.live, tc.heap, got, tc.want)
			}
		})
	}
}
