package main

import (
	"strings"
	"testing"
	"time"
)

// version prints what --version prints, as Nomad's: the version, then the
// build's commit time and revision when the binary has them.
func TestVersionCommand(t *testing.T) {
	stamp := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, tc := range []struct {
		name string
		b    buildStamp
		want string
	}{
		{"no VCS stamp", buildStamp{}, "Drover v" + version},
		{"a clean checkout", buildStamp{revision: "abc123", time: stamp},
			"Drover v" + version + "\nBuildDate 2024-05-06T07:08:09Z\nRevision abc123"},
		{"a modified checkout", buildStamp{revision: "abc123", time: stamp, modified: true},
			"Drover v" + version + "\nBuildDate 2024-05-06T07:08:09Z\nRevision abc123+CHANGES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fullVersion(tc.b); got != tc.want {
				t.Errorf("fullVersion = %q, want %q", got, tc.want)
			}
		})
	}
	var out, errOut strings.Builder
	if code := run([]string{"version"}, &out, &errOut); code != 0 || out.String() != fullVersion(readBuildInfo())+"\n" {
		t.Errorf("drover version: exit %d, %q (%s)", code, out.String(), errOut.String())
	}
	var flagOut strings.Builder
	if code := run([]string{"--version"}, &flagOut, &errOut); code != 0 || flagOut.String() != out.String() {
		t.Errorf("drover --version: exit %d, %q; drover version printed %q", code, flagOut.String(), out.String())
	}
}
