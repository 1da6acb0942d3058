// Package goplugintest builds plugin main packages into native go-plugin
// executables for tests.
package goplugintest

import (
	"os/exec"
	"testing"

	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
)

// Build compiles the plugin main package pkg (an import path or a path
// relative to the module root, such as "./plugins/service") to a native
// executable, once per test binary, and returns its path (kept as
// wasmtest.BuildOnce says).
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	return wasmtest.BuildOnce(tb, "goplugin", pkg, "", "", func(out string) *exec.Cmd {
		return exec.Command("go", "build", "-o", out, pkg)
	})
}
