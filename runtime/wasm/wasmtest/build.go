// Package wasmtest builds plugin main packages into wasm modules for tests.
package wasmtest

import (
	"crypto/sha256"
	"encoding/hex"
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
	return BuildOnce(tb, "wasm", pkg, ".wasm", "", func(out string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		return cmd
	})
}

// BuildOnce runs the command build returns, once per test binary for kind
// and name (the package built, or what names its output), in the module
// root, to write the output at the path it is given, and returns where
// the output is kept. A failed build fails the
// test with the command's output, then hint.
//
// Outputs are kept in one directory per module root under the user's
// cache directory, each replaced whole (written beside it, then renamed)
// by every test binary that builds it: test binaries running at once may
// build the same package, and one may run an output while another
// replaces it. A temporary directory per test binary, as before, was
// never removed, and a few hundred test runs filled a disk with them.
func BuildOnce(tb testing.TB, kind, name, ext, hint string, build func(out string) *exec.Cmd) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := kind + " " + name
	if p, ok := built[key]; ok {
		return p
	}
	root := ModuleRoot(tb)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(base, "drover-test", kind, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("wasmtest: %v", err)
	}
	out := filepath.Join(dir, strings.ReplaceAll(strings.Trim(name, "./"), "/", "_")+ext)
	tmp, err := os.CreateTemp(dir, ".building-*")
	if err != nil {
		tb.Fatalf("wasmtest: %v", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // if the build fails
	cmd := build(tmp.Name())
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("%s: build %s: %v\n%s%s", kind, name, err, b, hint)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		tb.Fatalf("%s: %v", kind, err)
	}
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
