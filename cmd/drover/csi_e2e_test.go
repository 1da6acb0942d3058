package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// examples/csi end to end, with the drover binary and a dev agent, in the
// order its README gives and the other way round: the job that mounts
// the volume waits (blocked) until the volume is registered and its
// plugin runs, is placed where the plugin runs and claims the volume; a
// second job wanting the single-writer volume waits until the first
// stops; a volume in use is not deregistered.
func TestE2E_CSIExample(t *testing.T) {
	bin := droverBin(t)
	addr := startDevAgent(t, bin, 4)
	must := func(want int, args ...string) string {
		t.Helper()
		code, out := drover(t, bin, addr, args...)
		if code != want {
			t.Fatalf("drover %v exited %d, want %d:\n%s", args, code, want, out)
		}
		return out
	}
	eventually := func(what string, args []string, wants ...string) string {
		t.Helper()
		var out string
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			_, out = drover(t, bin, addr, args...)
			ok := true
			for _, w := range wants {
				ok = ok && strings.Contains(out, w)
			}
			if ok {
				return out
			}
		}
		t.Fatalf("%s: drover %v never showed %q:\n%s", what, args, wants, out)
		return ""
	}

	// The job first: nothing to mount yet.
	out := must(0, "job", "run", "-detach", "examples/csi/app.hcl")
	if !strings.Contains(out, "Job registration successful") {
		t.Fatalf("job run:\n%s", out)
	}
	eventually("the job waits for its volume", []string{"job", "status", "app"}, `missing CSI Volume data`)
	must(0, "job", "run", "-detach", "examples/csi/plugin.hcl")
	eventually("the plugin runs on every node", []string{"plugin", "status", "-type", "csi"}, "hostpath", "4/4")
	must(0, "volume", "register", "examples/csi/volume.hcl")
	out = eventually("the registration unblocks the job", []string{"volume", "status", "data"}, "app.db[0]", "running")
	for _, kv := range []string{"Schedulable          = true", "Access Mode          = single-node-writer"} {
		if !strings.Contains(out, kv) {
			t.Fatalf("volume status lacks %q:\n%s", kv, out)
		}
	}

	// A second writer waits for the first.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "csi", "app.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	app2 := filepath.Join(dir, "app2.hcl")
	if err := os.WriteFile(app2, []byte(strings.Replace(string(src), `job "app"`, `job "app2"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	must(0, "job", "run", "-detach", app2)
	eventually("a second writer waits", []string{"job", "status", "app2"}, "CSI volume data has exhausted its available writer claims")
	if out := must(1, "volume", "deregister", "data"); !strings.Contains(out, "volume in use: data") {
		t.Fatalf("deregister of a volume in use:\n%s", out)
	}
	must(0, "job", "stop", "-detach", "app")
	eventually("the second writer takes the volume once the first stops", []string{"volume", "status", "data"}, "app2.db[0]", "running")
	if out := must(0, "volume", "status", "data"); strings.Contains(out, "app.db[0]") {
		t.Fatalf("the stopped job still holds the volume:\n%s", out)
	}
}
