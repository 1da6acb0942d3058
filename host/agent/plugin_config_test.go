package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclparse"
)

func decodePlugins(t *testing.T, src string) ([]PluginConfig, string) {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "agent.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out, diags := DecodePluginBlocks(f.Body)
	if diags.HasErrors() {
		return out, diags.Error()
	}
	return out, ""
}

func TestDecodePluginBlocks(t *testing.T) {
	cases := []struct {
		name, src, err string
		check          func(t *testing.T, c []PluginConfig)
	}{
		{name: "full block", src: `
data_dir = "/x"
plugin "zones" {
  runtime = "wasm"
  path    = "/opt/zones.wasm"
  config  = { zone_attribute = "meta.zone" }
  env     = { TZ = "UTC" }
  real_clock = true
  limits {
    memory_mb        = 256
    timeout          = "5s"
    enforce_deadline = false
  }
}
plugin "service" {}
`, check: func(t *testing.T, c []PluginConfig) {
			if len(c) != 2 {
				t.Fatalf("got %d plugins", len(c))
			}
			z := c[0]
			if z.Name != "zones" || z.Runtime != RuntimeWasm || z.Path != "/opt/zones.wasm" || z.Config["zone_attribute"] != "meta.zone" ||
				z.Env["TZ"] != "UTC" || !z.RealClock || z.Limits.MemoryMB != 256 || z.Limits.Timeout != 5*time.Second || z.Limits.EnforceDeadline == nil || *z.Limits.EnforceDeadline {
				t.Fatalf("zones = %+v", z)
			}
			if c[1].Name != "service" || c[1].Path != "" || c[1].Limits.EnforceDeadline != nil {
				t.Fatalf("service = %+v", c[1])
			}
		}},
		{name: "unknown runtime", src: `plugin "x" { runtime = "docker" }`, err: `runtime must be "wasm" or "goplugin"`},
		{name: "bad timeout", src: "plugin \"x\" {\n limits { timeout = \"soon\" }\n}", err: `limits.timeout = "soon"`},
		{name: "memory too large", src: "plugin \"x\" {\n limits { memory_mb = 9000 }\n}", err: "limits.memory_mb must be 1 to 4096"},
		{name: "twice", src: "plugin \"x\" {}\nplugin \"x\" {}", err: `plugin "x" is configured twice`},
		{name: "unknown setting", src: `plugin "x" { color = "red" }`, err: `Unsupported argument`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodePlugins(t, tc.src)
			if tc.err != "" {
				if !strings.Contains(err, tc.err) {
					t.Fatalf("error %q does not contain %q", err, tc.err)
				}
				return
			}
			if err != "" {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}

func TestParseConfig_PluginBlocks(t *testing.T) {
	f, err := ParseConfig("agent.hcl", []byte(`
plugin_dir = "/opt/drover/plugins"
plugin "zones" {
  path   = "/opt/drover/zones.wasm"
  config = { zone_attribute = "meta.zone" }
}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := f.Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Plugins) != 1 || cfg.Plugins[0].Name != "zones" || cfg.Plugins[0].Config["zone_attribute"] != "meta.zone" {
		t.Fatalf("plugins = %+v", cfg.Plugins)
	}
	if _, err := ParseConfig("agent.hcl", []byte(`plugin "x" { runtime = "lua" }`)); err == nil || !strings.Contains(err.Error(), "runtime must be") {
		t.Fatalf("err = %v", err)
	}
}
