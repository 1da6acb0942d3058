// Package wasmtest builds plugin main packages into wasm modules for tests.
package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Build compiles the plugin main package pkg (an import path or a path
// relative to the module root, such as "./plugins/service") to a wasm
// reactor, once per test binary, and returns the module's path. When
// DROVER_PLUGIN_DIR holds a module of the package's base name (make build
// puts them in bin/plugins), that one is used.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	name := filepath.Base(pkg)
	if d := os.Getenv("DROVER_PLUGIN_DIR"); d != "" {
		if p := filepath.Join(d, name+".wasm"); fileExists(p) {
			return p
		}
	}
	return buildOnce(tb, pkg, func(dir string) string {
		out := filepath.Join(dir, strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_")+".wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, pkg)
		cmd.Dir = ModuleRoot(tb)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if b, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("wasmtest: build %s: %v\n%s", pkg, err, b)
		}
		return out
	})
}

// buildOnce returns the module built for key, which build makes in the
// test binary's temporary directory on the first call.
func buildOnce(tb testing.TB, key string, build func(dir string) string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[key]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "drover-wasmtest-")
		if err != nil {
			tb.Fatalf("wasmtest: %v", err)
		}
		dir = d
	}
	out := build(dir)
	built[key] = out
	return out
}

// ModuleRoot returns the directory of the enclosing go.mod.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		tb.Fatalf("wasmtest: go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		tb.Fatalf("wasmtest: not inside a Go module")
	}
	return filepath.Dir(mod)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
