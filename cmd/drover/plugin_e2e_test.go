package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
)

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// TestE2E_CustomPluginFromConfigSchedulesAJob runs the real binary with a
// plugin directory holding the built-in service scheduler (wasm) and the
// zones example, built as a go-plugin executable and as a wasm module,
// configured by a plugin block of the agent's configuration file, and
// schedules a job that names it.
func TestE2E_CustomPluginFromConfigSchedulesAJob(t *testing.T) {
	for _, rt := range []string{"goplugin", "wasm"} {
		t.Run(rt, func(t *testing.T) { customPluginSchedulesAJob(t, rt) })
	}
}

func customPluginSchedulesAJob(t *testing.T, rt string) {
	bin := droverBin(t)
	dir, pluginDir, zones := zonesPluginDir(t)
	path := zones
	if rt == "wasm" {
		// The same example as a module, in place of the executable.
		path = zones + ".wasm"
		if err := os.Remove(zones); err != nil {
			t.Fatal(err)
		}
		copyFile(t, wasmtest.Build(t, "./examples/plugins/zones"), path, 0o644)
	}
	cfg := writeFile(t, dir, "agent.hcl", fmt.Sprintf(`
plugin_dir = %q
plugin "zones" {
  runtime = %q
  path    = %q
  config  = { zone_attribute = "meta.rack" }
  limits {
    timeout = "20s"
  }
}
`, pluginDir, rt, path))
	base := startDevAgent(t, bin, 8, "-config", cfg)

	code, out := drover(t, bin, base, "plugin", "inspect", "zones")
	if code != 0 || !strings.Contains(out, rt) || !strings.Contains(out, "meta.rack") {
		t.Fatalf("plugin inspect: exit %d:\n%s", code, out)
	}
	job := writeFile(t, dir, "web.hcl", `
job "web" {
  datacenters = ["dc1", "dc2"]
  type        = "service"
  scheduler   = "zones"
  group "web" {
    count = 8
    task "app" {
      driver = "docker"
      config {
        image = "nginx:1.27"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`)
	if code, out := drover(t, bin, base, "job", "run", job); code != 0 {
		t.Fatalf("job run: exit %d:\n%s", code, out)
	}
	var allocs []*sdk.AllocationListStub
	getJSON(t, base+"/v1/job/web/allocations", &allocs)
	racks := map[string]int{}
	for _, a := range allocs {
		var n sdk.Node
		getJSON(t, base+"/v1/node/"+a.NodeID, &n)
		racks[n.Meta["rack"]]++
	}
	// Eight allocations over the dev cluster's four racks: two in each.
	if len(racks) != 4 || racks["r0"] != 2 || racks["r1"] != 2 || racks["r2"] != 2 || racks["r3"] != 2 {
		t.Fatalf("allocations per rack = %v", racks)
	}
	var p httpapi.PluginStub
	getJSON(t, base+"/v1/plugin/scheduler/zones", &p)
	if p.Runtime != rt || p.Stats.Evals == 0 || p.Stats.Failures != 0 {
		t.Fatalf("plugin = %+v", p)
	}
}

// TestE2E_ZonesRefusesABadConfiguration runs the real binary with the
// zones example as a go-plugin whose plugin block sets an empty
// zone_attribute: the agent does not start, and says which file, which
// plugin and what is wrong, in the plugin's words, as it does for a file
// that does not load. plugin validate -config says the same before an
// agent is started, and accepts a good configuration.
func TestE2E_ZonesRefusesABadConfiguration(t *testing.T) {
	bin := droverBin(t)
	dir, pluginDir, zones := zonesPluginDir(t)
	cfg := writeFile(t, dir, "agent.hcl", fmt.Sprintf(`
plugin_dir = %q
plugin "zones" {
  config = { zone_attribute = "" }
}
`, pluginDir))
	const reason = `runtime: plugin refused its configuration: plugin[zones]: zone_attribute = "": empty: ` +
		`name a node attribute ("attr.X" or "X") or meta key ("meta.X"), or leave it out for "meta.zone"`

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "agent", "-dev", "-config", cfg, "-http-addr", freeAddr(t), "-log-level", "warn").CombinedOutput()
	var ee *exec.ExitError
	if !asExit(err, &ee) || ee.ExitCode() != exitError ||
		!strings.Contains(string(out), "Error: agent: load plugin: "+zones+": "+reason) {
		t.Fatalf("agent: %v, output:\n%s\nwant exit 1 saying %q", err, out, reason)
	}

	if code, out := drover(t, bin, "", "plugin", "validate", "-config", "zone_attribute=", zones); code != exitError ||
		!strings.Contains(out, zones+" refuses this configuration:\n  "+reason) {
		t.Fatalf("plugin validate: exit %d:\n%s", code, out)
	}
	if code, out := drover(t, bin, "", "plugin", "validate", "-config", "zone_attribute=meta.rack", zones); code != exitOK ||
		!strings.Contains(out, "accepted") || !strings.Contains(out, "meta.rack") {
		t.Fatalf("plugin validate: exit %d:\n%s", code, out)
	}
}

// zonesPluginDir returns a temporary directory holding a plugin directory
// with the built-in service scheduler (wasm) and the zones example as a
// go-plugin executable, whose path it also returns.
func zonesPluginDir(t *testing.T) (dir, pluginDir, zones string) {
	t.Helper()
	dir = t.TempDir()
	pluginDir = filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, wasmtest.Build(t, "./plugins/service"), filepath.Join(pluginDir, "service.wasm"), 0o644)
	zones = filepath.Join(pluginDir, "zones")
	copyFile(t, goplugintest.Build(t, "./examples/plugins/zones"), zones, 0o755)
	return dir, pluginDir, zones
}
