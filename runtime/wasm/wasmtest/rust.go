package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// BuildRust compiles the Rust plugin crate whose root is crate/lib.rs (a
// path relative to the module root, such as
// "./examples/plugins/firstfit-rust") to a WASI preview 1 cdylib with std
// only, once per test binary, and returns the module's path. The
// compiler is $RUSTC, or rustc on the PATH; it needs the standard library
// of that target, which rustc calls wasm32-wasip1 since 1.78 and
// wasm32-wasi before (Debian: rustc and libstd-rust-dev-wasm32). A missing
// toolchain fails the test: callers are selected by a build tag that only
// a target which installs it sets (make foreign-abi).
func BuildRust(tb testing.TB, crate string) string {
	tb.Helper()
	rustc := os.Getenv("RUSTC")
	if rustc == "" {
		rustc = "rustc"
	}
	src := filepath.Join(ModuleRoot(tb), crate, "lib.rs")
	// go test caches a result against the files the test process opens,
	// and rustc opens the sources in another process: they are read here
	// so that editing them invalidates the cached result.
	sources, err := filepath.Glob(filepath.Join(filepath.Dir(src), "*.rs"))
	if err != nil || len(sources) == 0 {
		tb.Fatalf("wasmtest: no Rust sources in %s", filepath.Dir(src))
	}
	for _, f := range sources {
		if _, err := os.ReadFile(f); err != nil {
			tb.Fatalf("wasmtest: %v", err)
		}
	}
	target := wasiTarget(rustc)
	hint := "(needs " + rustc + " with the " + target + " std: apt-get install rustc libstd-rust-dev-wasm32, or rustup target add " + target + ")"
	return BuildOnce(tb, "rust", crate, ".wasm", hint, func(out string) *exec.Cmd {
		return exec.Command(rustc, "--edition", "2021", "--target", target, "--crate-type", "cdylib",
			"-O", "-C", "strip=debuginfo", "-o", out, src)
	})
}

// wasiTarget is rustc's name for WASI preview 1: wasm32-wasip1 when it
// knows that name, else wasm32-wasi (its name until rustc 1.78; later
// compilers dropped it).
func wasiTarget(rustc string) string {
	out, err := exec.Command(rustc, "--print", "target-list").Output()
	if err == nil && slices.Contains(strings.Fields(string(out)), "wasm32-wasip1") {
		return "wasm32-wasip1"
	}
	return "wasm32-wasi"
}
