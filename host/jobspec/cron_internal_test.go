package jobspec

import "testing"

func TestBackwardRange(t *testing.T) {
	for spec, want := range map[string]string{"10-5 * * * * * *": "10-5", "0 0 1-5 * *": "", "*/5 * * * *": "", "0 0 * DEC-JAN *": "", "0 0 L * *": "", "0 23-1 * * *": "23-1", "0 0 * * 1-5,6-2": "6-2", "@hourly": ""} {
		if got := backwardRange(spec); got != want {
			t.Errorf("backwardRange(%q) = %q, want %q", spec, got, want)
		}
	}
}
