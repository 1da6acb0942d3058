package main

import (
	"bytes"
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

// TestE2E_CustomGoPluginFromConfigSchedulesAJob runs the real binary with
// a plugin directory holding the built-in service scheduler (wasm) and the
// zones example as a go-plugin executable, configured by a plugin block
// of the agent's configuration file, and schedules a job that names it.
func TestE2E_CustomGoPluginFromConfigSchedulesAJob(t *testing.T) {
	bin := droverBin(t)
	dir := t.TempDir()
	pluginDir := filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, wasmtest.Build(t, "./plugins/service"), filepath.Join(pluginDir, "service.wasm"), 0o644)
	copyFile(t, goplugintest.Build(t, "./examples/plugins/zones"), filepath.Join(pluginDir, "zones"), 0o755)
	cfg := filepath.Join(dir, "agent.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
plugin_dir = %q
plugin "zones" {
  config = { zone_attribute = "meta.rack" }
  limits {
    timeout = "20s"
  }
}
`, pluginDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "agent", "-dev", "-dev-nodes", "8", "-http-addr", addr, "-config", cfg, "-log-level", "warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("agent output:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		var nodes []*httpapi.NodeListStub
		if resp, err := http.Get(base + "/v1/nodes"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&nodes)
			resp.Body.Close()
		}
		if len(nodes) == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("agent did not come up")
		}
		time.Sleep(50 * time.Millisecond)
	}

	code, out := drover(t, bin, base, "plugin", "inspect", "zones")
	if code != 0 || !strings.Contains(out, "goplugin") || !strings.Contains(out, "meta.rack") {
		t.Fatalf("plugin inspect: exit %d:\n%s", code, out)
	}
	job := filepath.Join(dir, "web.hcl")
	if err := os.WriteFile(job, []byte(`
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
`), 0o644); err != nil {
		t.Fatal(err)
	}
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
	if p.Runtime != "goplugin" || p.Stats.Evals == 0 || p.Stats.Failures != 0 {
		t.Fatalf("plugin = %+v", p)
	}
}
