package jobspec

import (
	"strings"
	"testing"
)

// BenchmarkParse_WhatHCLCosts is what a parse costs within the limits of
// size.go: a large legitimate jobspec, and the costliest refusals (a
// dense MiB, lexed before it is refused; a quoted string of "$${", which
// hcl would join quadratically). B/op is the memory each takes, the
// figures size.go gives.
func BenchmarkParse_WhatHCLCosts(b *testing.B) {
	for _, c := range []struct {
		name   string
		src    []byte
		refuse bool
	}{
		{"thousand-tasks", thousandTasks(), false},
		{"dense-1MiB", []byte("x = [" + strings.Repeat("1,", maxSourceBytes/2-4) + "]\n"), true},
		{"escapes-256KiB", []byte(`x = "` + strings.Repeat("$${", 256<<10/3) + "\"\n"), true},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, diags := Parse(Config{Path: c.name + ".hcl", Body: c.src})
				if diags.HasErrors() != c.refuse {
					b.Fatalf("refused: %v, want %v: %s", diags.HasErrors(), c.refuse, diags.Error()[:min(200, len(diags.Error()))])
				}
			}
		})
	}
}
