package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// TestE2E_DrainWaitsForMigrateHealth: as in Nomad, a drain moves a group's
// allocations migrate.max_parallel at a time, and a move is over once the
// node has reported the replacement's health, which it judges by the
// migrate block outside a deployment: the second allocation leaves the
// drained node only after the first one's replacement has run for the
// block's min_healthy_time.
func TestE2E_DrainWaitsForMigrateHealth(t *testing.T) {
	bin := droverBin(t)
	addr := startDevAgent(t, bin, 2)
	var nodes []*sdk.Node
	getJSON(t, addr+"/v1/nodes", &nodes)
	byName := map[string]string{}
	for _, n := range nodes {
		byName[n.Name] = n.ID
	}
	drained, spare := byName["dev-00"], byName["dev-01"]
	// Both allocations go to dev-00 while dev-01 takes none.
	if code, out := drover(t, bin, addr, "node", "eligibility", "-disable", spare); code != 0 {
		t.Fatalf("node eligibility -disable exited %d:\n%s", code, out)
	}
	const minHealthy = 3 * time.Second
	spec := filepath.Join(t.TempDir(), "mig.hcl")
	if err := os.WriteFile(spec, []byte(`job "mig" {
  datacenters = ["*"]
  update {
    min_healthy_time = "1s"
    healthy_deadline = "1m"
  }
  group "g" {
    count = 2
    migrate {
      max_parallel     = 1
      min_healthy_time = "3s"
      healthy_deadline = "1m"
    }
    task "t" {
      driver = "exec"
      config { command = "/bin/app" }
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
	if code, out := drover(t, bin, addr, "job", "run", spec); code != 0 || !strings.Contains(out, "2 placed") {
		t.Fatalf("job run exited %d, want two placements:\n%s", code, out)
	}
	waitUntil(t, 30*time.Second, "the deployment to succeed", func() bool {
		var d sdk.Deployment
		getJSON(t, addr+"/v1/job/mig/deployment", &d)
		return d.Status == sdk.DeploymentStatusSuccessful
	})
	if code, out := drover(t, bin, addr, "node", "eligibility", "-enable", spare); code != 0 {
		t.Fatalf("node eligibility -enable exited %d:\n%s", code, out)
	}
	if code, out := drover(t, bin, addr, "node", "drain", "-enable", "-no-deadline", "-yes", "-detach", drained); code != 0 {
		t.Fatalf("node drain exited %d:\n%s", code, out)
	}
	waitUntil(t, 60*time.Second, "the drain to complete", func() bool {
		var n sdk.Node
		getJSON(t, addr+"/v1/node/"+drained, &n)
		return n.DrainStrategy == nil && n.LastDrain["Status"] == "complete"
	})

	var stubs []*sdk.AllocationListStub
	getJSON(t, addr+"/v1/job/mig/allocations", &stubs)
	var moved []*sdk.Allocation // the replacements, in the order they were placed
	for _, s := range stubs {
		var a sdk.Allocation
		getJSON(t, addr+"/v1/allocation/"+s.ID, &a)
		if a.NodeID == spare {
			moved = append(moved, &a)
		}
	}
	if len(moved) != 2 {
		t.Fatalf("%d allocations on %s after the drain, want 2", len(moved), spare)
	}
	slices.SortFunc(moved, func(a, b *sdk.Allocation) int { return int(a.CreateTime - b.CreateTime) })
	first, second := moved[0], moved[1]
	if first.DeploymentID != "" || !first.DeploymentStatus.IsHealthy() {
		t.Fatalf("first replacement: deployment %q, health %+v; want no deployment and healthy", first.DeploymentID, first.DeploymentStatus)
	}
	healthyAt := first.DeploymentStatus.Timestamp
	if ran := healthyAt.Sub(time.Unix(0, first.CreateTime)); ran < minHealthy {
		t.Errorf("first replacement reported healthy %s after it was placed, before the migrate block's min_healthy_time (%s)", ran, minHealthy)
	}
	if placed := time.Unix(0, second.CreateTime); placed.Before(healthyAt) {
		t.Errorf("second replacement placed at %s, before the first one's health was reported (%s): max_parallel 1 not waited for",
			placed.Format(time.RFC3339Nano), healthyAt.Format(time.RFC3339Nano))
	}
}

// waitUntil polls cond until it holds, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
