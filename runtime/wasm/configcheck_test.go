package wasm

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk/abi"
)

// TestModule_CheckConfig: a module that declares ABI 1.7 is asked at load
// whether it accepts its configuration (drover_check_config), and its
// refusal says why; one declaring 1.6 is never asked, even when it
// exports the check; one without the export accepts anything.
func TestModule_CheckConfig(t *testing.T) {
	checker := wasmtest.Build(t, "./runtime/containment/testdata/configcheck")
	noExport := wasmtest.Build(t, "./runtime/wasm/testdata/staletake") // written without the SDK
	tests := []struct {
		name   string
		path   string
		abi    abi.Version // 0: as the module declares
		config map[string]string
		want   string // "" when accepted
	}{
		{"accepted", checker, 0, map[string]string{"check": "accept"}, ""},
		{"no configuration", checker, 0, nil, ""},
		{"unknown key", checker, 0, map[string]string{"chek": "accept"},
			`runtime: plugin refused its configuration: plugin[configcheck]: unknown configuration key "chek" (it takes "check")`},
		{"bad value", checker, 0, map[string]string{"check": "maybe"},
			`plugin[configcheck]: check = "maybe": want accept, panic, loop, alloc or exit`},
		{"ABI 1.6 is not asked", checker, abi.MakeVersion(1, 6), map[string]string{"chek": "accept"}, ""},
		{"no export", noExport, 0, map[string]string{"anything": "x"}, ""},
	}
	ctx := context.Background()
	modules := map[string]*Module{} // compiled once each: compiling takes seconds
	defer func() {
		for _, m := range modules {
			_ = m.Close(ctx)
		}
	}()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := modules[tt.path]
			if m == nil {
				var err error
				if m, err = LoadFile(ctx, tt.path, DefaultConfig()); err != nil {
					t.Fatal(err)
				}
				modules[tt.path] = m
			}
			if abi.Version(m.info.ABI) != abi.Current {
				t.Fatalf("module declares %s, want %s", abi.Version(m.info.ABI), abi.Current)
			}
			if tt.abi != 0 {
				m.info.ABI = uint32(tt.abi)
				defer func() { m.info.ABI = uint32(abi.Current) }()
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := runtime.CheckConfig(cctx, m, tt.config)
			runtimetest.WantConfig(t, err, tt.want)
		})
	}
}
