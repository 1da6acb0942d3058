package wasm

import (
	"context"
	"os"
	"testing"

	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// BenchmarkLoad measures what loading the built-in service scheduler's
// module costs, stage by stage: what an agent pays at start and when a
// plugin file is replaced (docs/benchmarks.md, "Loading a plugin").
//
//   - rewrite: adding the interrupt checks (every load, cached or not: the
//     cache is keyed by the rewritten module);
//   - compile: wazero compiling the rewritten module, without a cache;
//   - cold: Load with an empty compilation cache (rewrite, compile, the
//     cache written, a first instance initialised for the plugin's info);
//   - cached: Load with the module in the cache.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	path := wasmtest.Build(b, "./plugins/service")
	bin, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	checked, err := addInterruptChecks(bin)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("rewrite", func(b *testing.B) {
		for b.Loop() {
			if _, err := addInterruptChecks(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compile", func(b *testing.B) {
		for b.Loop() {
			r := wazero.NewRuntime(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, r)
			if err := instantiateHost(ctx, r); err != nil {
				b.Fatal(err)
			}
			if _, err := r.CompileModule(ctx, checked); err != nil {
				b.Fatal(err)
			}
			_ = r.Close(ctx)
		}
	})
	load := func(b *testing.B, dir string) {
		cfg := DefaultConfig()
		cfg.CacheDir = dir
		m, err := LoadFile(ctx, path, cfg)
		if err != nil {
			b.Fatal(err)
		}
		_ = m.Close(ctx)
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			load(b, dir)
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		load(b, dir)
		for b.Loop() {
			load(b, dir)
		}
	})
}
