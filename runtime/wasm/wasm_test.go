package wasm_test

import (
	"context"
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
