package goplugin

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk/abi"
)

// TestFactory_CheckConfig: a plugin process that declares ABI 1.7 is asked
// at load whether it accepts its configuration (its CheckConfig method),
// and its refusal says why; one declaring 1.6 (here the same binary, its
// declaration lowered) is never asked.
func TestFactory_CheckConfig(t *testing.T) {
	ctx := context.Background()
	f, err := Load(ctx, goplugintest.Build(t, "./runtime/containment/testdata/configcheck"), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if abi.Version(f.info.ABI) != abi.Current {
		t.Fatalf("plugin declares %s, want %s", abi.Version(f.info.ABI), abi.Current)
	}
	tests := []struct {
		name   string
		abi    abi.Version // 0: as the plugin declares
		config map[string]string
		want   string // "" when accepted
	}{
		{"accepted", 0, map[string]string{"check": "accept"}, ""},
		{"no configuration", 0, nil, ""},
		{"unknown key", 0, map[string]string{"chek": "accept"},
			`runtime: plugin refused its configuration: plugin[configcheck]: unknown configuration key "chek" (it takes "check")`},
		{"bad value", 0, map[string]string{"check": "maybe"},
			`plugin[configcheck]: check = "maybe": want accept, panic, loop, alloc or exit`},
		{"ABI 1.6 is not asked", abi.MakeVersion(1, 6), map[string]string{"chek": "accept"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.abi != 0 {
				f.info.ABI = uint32(tt.abi)
				defer func() { f.info.ABI = uint32(abi.Current) }()
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := runtime.CheckConfig(cctx, f, tt.config)
			runtimetest.WantConfig(t, err, tt.want)
		})
	}
}

// TestFactory_CheckConfigNotServed: a plugin that declares ABI 1.7 but
// does not serve CheckConfig (a plugin written without the Go SDK need
// not) accepts any configuration, as a wasm module without
// drover_check_config does.
func TestFactory_CheckConfigNotServed(t *testing.T) {
	ctx := context.Background()
	f, err := Load(ctx, goplugintest.Build(t, "./runtime/goplugin/testdata/unchecked"), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !abi.Version(f.info.ABI).ChecksConfig() {
		t.Fatalf("plugin declares %s, want a version that is asked", abi.Version(f.info.ABI))
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if asked, err := runtime.CheckConfig(cctx, f, map[string]string{"k": "v"}); asked || err != nil {
		t.Fatalf("asked %v, err %v; want not asked, accepted", asked, err)
	}
}
