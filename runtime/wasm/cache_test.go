package wasm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime/wasm"
)

// PruneCompilationCache removes the oldest entries, across wazero versions,
// until the cache fits its bound, and leaves a cache within it alone.
func TestPruneCompilationCache(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(version, name string, size int, age time.Duration) {
		d := filepath.Join(dir, "wazero-"+version+"-amd64-linux")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	write("dev", "a", 300, 5*time.Hour) // oldest, of another wazero version
	write("v1.12.0", "b", 300, 4*time.Hour)
	write("v1.12.0", "c", 300, 3*time.Hour)
	write("v1.12.0", "d", 300, time.Hour)
	left := func() []string {
		files, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
		var names []string
		for _, f := range files {
			names = append(names, filepath.Base(f))
		}
		slices.Sort(names)
		return names
	}
	for _, tc := range []struct {
		max  int64
		want []string
	}{
		{1200, []string{"a", "b", "c", "d"}},
		{1000, []string{"b", "c", "d"}},
		{600, []string{"c", "d"}},
		{0, nil},
	} {
		if err := wasm.PruneCompilationCache(dir, tc.max); err != nil {
			t.Fatal(err)
		}
		if got := left(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Fatalf("pruned to %d bytes: %v left, want %v", tc.max, got, tc.want)
		}
	}
	if err := wasm.PruneCompilationCache(filepath.Join(dir, "missing"), 0); err != nil {
		t.Fatalf("a cache not yet made: %v", err)
	}
}
