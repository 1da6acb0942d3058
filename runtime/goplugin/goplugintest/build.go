// Package goplugintest builds plugin main packages into native go-plugin
// executables for tests.
package goplugintest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Build compiles the plugin main package pkg (an import path or a path
// relative to the module root, such as "./plugins/service") to a native
// executable, once per test binary, and returns its path.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[pkg]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "drover-goplugintest-")
		if err != nil {
			tb.Fatalf("goplugintest: %v", err)
		}
		dir = d
	}
	out := filepath.Join(dir, strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_"))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = wasmtest.ModuleRoot(tb)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("goplugintest: build %s: %v\n%s", pkg, err, b)
	}
	built[pkg] = out
	return out
}
