//go:build foreignabi

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
)

// TestE2E_ForeignABI_RustPluginSchedulesAJob runs the Rust example plugin
// (examples/plugins/firstfit-rust, written from docs/abi.md alone) in a
// dev agent, dropped in its plugin directory, and drives a job that names
// it through placement, scaling and stop. Run by make foreign-abi.
func TestE2E_ForeignABI_RustPluginSchedulesAJob(t *testing.T) {
	bin := droverBin(t)
	module := wasmtest.BuildRust(t, "./examples/plugins/firstfit-rust")

	code, out := drover(t, bin, "", "plugin", "validate", "-json", module)
	var v PluginValidation
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("plugin validate: exit %d, %v:\n%s", code, err, out)
	}
	slices.Sort(v.Exports)
	if !v.Valid || v.Name != "firstfit-rust" || v.ABIVersion != "1.3" || v.Runtime != "wasm" ||
		strings.Join(v.Exports, ",") != "drover_abi_version,drover_buffer,drover_info,drover_process" {
		t.Fatalf("plugin validate = %+v", v)
	}

	pluginDir := filepath.Join(t.TempDir(), "plugins")
	if err := os.Mkdir(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, wasmtest.Build(t, "./plugins/service"), filepath.Join(pluginDir, "service.wasm"), 0o644)
	copyFile(t, module, filepath.Join(pluginDir, "firstfit-rust.wasm"), 0o644)
	base := startDevAgent(t, bin, 6, "-plugin-dir", pluginDir)

	job := writeFile(t, t.TempDir(), "web.hcl", `
job "web" {
  datacenters = ["*"]
  type        = "service"
  scheduler   = "firstfit-rust"
  group "web" {
    count = 6
    task "app" {
      driver = "docker"
      config {
        image = "nginx:1.27"
      }
      resources {
        cpu    = 1500
        memory = 256
      }
    }
  }
}
`)
	if code, out := drover(t, bin, base, "job", "run", job); code != 0 || !strings.Contains(out, `finished with status "complete"`) {
		t.Fatalf("job run: exit %d:\n%s", code, out)
	}
	checkFirstFit(t, base, 6)
	if code, out := drover(t, bin, base, "job", "scale", "web", "web", "11"); code != 0 || !strings.Contains(out, `finished with status "complete"`) {
		t.Fatalf("job scale: exit %d:\n%s", code, out)
	}
	checkFirstFit(t, base, 11)
	if code, out := drover(t, bin, base, "job", "stop", "web"); code != 0 || !strings.Contains(out, `finished with status "complete"`) {
		t.Fatalf("job stop: exit %d:\n%s", code, out)
	}
	checkFirstFit(t, base, 0)

	var p httpapi.PluginStub
	getJSON(t, base+"/v1/plugin/scheduler/firstfit-rust", &p)
	if p.Runtime != "wasm" || p.ABIVersion != "1.3" || p.Stats.Evals < 3 || p.Stats.Failures != 0 || p.Stats.DeltaSyncs == 0 {
		t.Fatalf("plugin = %+v", p)
	}
	var evals []*sdk.Evaluation
	getJSON(t, base+"/v1/job/web/evaluations", &evals)
	for _, e := range evals {
		if e.Status != sdk.EvalStatusComplete {
			t.Fatalf("eval %s (%s) is %s: %s", e.ID, e.TriggeredBy, e.Status, e.StatusDescription)
		}
	}
}

// checkFirstFit checks that job web has want live allocations, that no
// node holds more than it offers, and that they are placed first fit: a
// node (by ID) holds one only when every node before it has no room left.
func checkFirstFit(t *testing.T, base string, want int) {
	t.Helper()
	var stubs []*sdk.AllocationListStub
	getJSON(t, base+"/v1/job/web/allocations", &stubs)
	var nodes []*httpapi.NodeListStub
	getJSON(t, base+"/v1/nodes", &nodes)
	used := map[string]sdk.Usage{}
	placed := map[string]int{}
	live := 0
	// Every allocation on the cluster counts against its node.
	for _, n := range nodes {
		var allocs []*sdk.Allocation
		getJSON(t, base+"/v1/node/"+n.ID+"/allocations", &allocs)
		for _, a := range allocs {
			if a.TerminalStatus() {
				continue
			}
			u := used[n.ID]
			u.Add(a.Usage())
			used[n.ID] = u
			if a.JobID == "web" {
				placed[n.ID]++
				live++
			}
		}
	}
	if live != want {
		t.Fatalf("job web has %d live allocations, want %d", live, want)
	}
	slices.SortFunc(nodes, func(a, b *httpapi.NodeListStub) int { return strings.Compare(a.ID, b.ID) })
	need := sdk.Usage{CPU: 1500, MemoryMB: 256}
	full := true // every node so far has no room for one more
	for _, stub := range nodes {
		var n sdk.Node
		getJSON(t, base+"/v1/node/"+stub.ID, &n)
		free := n.Capacity()
		free.Sub(used[n.ID])
		if free.CPU < 0 || free.MemoryMB < 0 || free.DiskMB < 0 {
			t.Fatalf("node %s is over-committed: %+v free", n.ID, free)
		}
		if placed[n.ID] > 0 && !full {
			t.Fatalf("node %s holds %d allocations while an earlier node had room (placed %v)", n.ID, placed[n.ID], placed)
		}
		if ok, _ := need.Fits(free); ok {
			full = false
		}
	}
}
