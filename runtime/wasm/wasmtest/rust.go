package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildRust compiles the Rust plugin crate whose root is crate/lib.rs (a
// path relative to the module root, such as
// "./examples/plugins/firstfit-rust") to a wasm32-wasi cdylib with std
// only, once per test binary, and returns the module's path. The
// compiler is $RUSTC, or rustc on the PATH; it needs the wasm32-wasi
// standard library (Debian: rustc and libstd-rust-dev-wasm32). A missing
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
	hint := "(needs " + rustc + " with the wasm32-wasi std: apt-get install rustc libstd-rust-dev-wasm32)"
	return BuildOnce(tb, "rust", crate, ".wasm", hint, func(out string) *exec.Cmd {
		return exec.Command(rustc, "--edition", "2021", "--target", "wasm32-wasi", "--crate-type", "cdylib",
			"-O", "-C", "strip=debuginfo", "-o", out, src)
	})
}
