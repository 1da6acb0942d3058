package wasm_test

import (
	"context"
	"os"
	"testing"

	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
)

func TestLoad_BuiltinService(t *testing.T) {
	path := wasmtest.Build(t, "./plugins/service")
	ctx := context.Background()
	m, err := wasm.LoadFile(ctx, path, wasm.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	info := m.Info()
	if info.Name != "service" || len(info.Types) != 1 || info.Types[0] != "service" {
		t.Fatalf("info = %+v", info)
	}
}

func TestLoad_CompilationCacheLivesInTheCacheDir(t *testing.T) {
	path := wasmtest.Build(t, "./plugins/service")
	ctx := context.Background()
	cfg := wasm.DefaultConfig()
	cfg.CacheDir = t.TempDir()
	for i := 0; i < 2; i++ {
		m, err := wasm.LoadFile(ctx, path, cfg)
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
		_ = m.Close(ctx)
		entries, err := os.ReadDir(cfg.CacheDir)
		if err != nil || len(entries) == 0 {
			t.Fatalf("load %d: cache dir empty (%v)", i, err)
		}
	}
}
