package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
)

// zoneChecker takes one configuration key, zone, which must not be empty.
type zoneChecker struct{ gate }

func (*zoneChecker) CheckConfig(c map[string]string) error {
	if err := sdk.CheckConfigKeys(c, "zone"); err != nil {
		return err
	}
	if v, ok := c["zone"]; ok && v == "" {
		return fmt.Errorf("zone is empty")
	}
	return nil
}

// panicky's configuration check panics.
type panicky struct{ gate }

func (*panicky) CheckConfig(map[string]string) error { panic("no config for you") }

// declaring is a factory that declares another ABI than it speaks.
type declaring struct {
	*native.Factory
	abi abi.Version
}

func (d declaring) Info() abi.Info {
	info := d.Factory.Info()
	info.ABI = uint32(d.abi)
	return info
}

// opaque hides its factory's ConfigChecker.
type opaque struct{ runtime.Factory }

// TestCheckConfig_Native: an in-process plugin that declares ABI 1.7 is
// asked whether it accepts its configuration, and its refusal names it
// and says why; a panicking check fails without taking the host along;
// a plugin declaring 1.6, and a factory that cannot ask, are not asked.
func TestCheckConfig_Native(t *testing.T) {
	checker := native.New(plugin.Info{Name: "zoned"}, func() sdk.Scheduler { return &zoneChecker{} })
	tests := []struct {
		name    string
		f       runtime.Factory
		config  map[string]string
		want    error // nil when accepted
		message string
		unasked bool // accepted without being asked
	}{
		{"accepted", checker, map[string]string{"zone": "a"}, nil, "", false},
		{"no configuration", checker, nil, nil, "", false},
		{"unknown key", checker, map[string]string{"zon": "a"}, runtime.ErrConfigRefused,
			`runtime: plugin refused its configuration: plugin[zoned]: unknown configuration key "zon" (it takes "zone")`, false},
		{"bad value", checker, map[string]string{"zone": ""}, runtime.ErrConfigRefused, "plugin[zoned]: zone is empty", false},
		{"panic", native.New(plugin.Info{Name: "panicky"}, func() sdk.Scheduler { return &panicky{} }), nil,
			runtime.ErrPluginFailed, "plugin[panicky]: checking its configuration: plugin panicky: panic in CheckConfig: no config for you", false},
		{"no check", native.New(plugin.Info{Name: "plain"}, func() sdk.Scheduler { return &gate{} }),
			map[string]string{"anything": "x"}, nil, "", false},
		{"ABI 1.6 is not asked", declaring{checker, abi.MakeVersion(1, 6)}, map[string]string{"zon": "a"}, nil, "", true},
		{"a factory that cannot ask", opaque{checker}, map[string]string{"zon": "a"}, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked, err := runtime.CheckConfig(context.Background(), tt.f, tt.config)
			if asked == tt.unasked {
				t.Errorf("asked = %v, want %v", asked, !tt.unasked)
			}
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("err = %v, want %v saying %q", err, tt.want, tt.message)
			}
		})
	}
}
