package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/internal/testlog"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

var (
	binMu   sync.Mutex
	binPath string
)

// droverBin returns the drover binary (DROVER_BIN, set by make test, or
// built once for this test binary, with the built-in plugins beside it).
// The build is kept as wasmtest.BuildOnce keeps outputs, in a directory
// shared by test runs of this module: the plugins are replaced whole, once
// per test binary, so that none is left from another run.
func droverBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DROVER_BIN"); p != "" {
		return p
	}
	binMu.Lock()
	defer binMu.Unlock()
	if binPath != "" {
		return binPath
	}
	bin := wasmtest.BuildOnce(t, "e2e", "drover", "", "", func(out string) *exec.Cmd {
		return exec.Command("go", "build", "-o", out, "./cmd/drover")
	})
	dir := filepath.Join(filepath.Dir(bin), "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Every built-in, as make build leaves them: the end-to-end tests run
	// system jobs and force garbage collections.
	for _, p := range []string{"service", "batch", "system", "core"} {
		b, err := os.ReadFile(wasmtest.Build(t, "./plugins/"+p))
		if err != nil {
			t.Fatal(err)
		}
		tmp, err := os.CreateTemp(dir, ".copying-*")
		if err != nil {
			t.Fatal(err)
		}
		_, werr := tmp.Write(b)
		if err := errors.Join(werr, tmp.Close(), os.Rename(tmp.Name(), filepath.Join(dir, p+".wasm"))); err != nil {
			os.Remove(tmp.Name())
			t.Fatal(err)
		}
	}
	binPath = bin
	return binPath
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDevAgent runs `drover agent -dev` (with extra arguments, if any)
// and returns its API address.
func startDevAgent(t *testing.T, bin string, want int, extra ...string) string {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"agent", "-dev", "-dev-nodes", fmt.Sprint(want), "-http-addr", addr, "-log-level", "warn"}, extra...)
	_, exited := runAgent(t, bin, nil, args...)
	base := "http://" + addr
	// Coming up means compiling the plugins when the compilation cache is
	// cold: a few seconds on a quiet machine, over 30 on one at load 10
	// (helpers saw it). An agent that exits stops the wait at once.
	deadline := time.Now().Add(90 * time.Second)
	probe := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatal("agent exited before it came up") // Cleanup prints its output
		default:
		}
		if resp, err := probe.Get(base + "/v1/nodes"); err == nil {
			var nodes []*httpapi.NodeListStub
			_ = json.NewDecoder(resp.Body).Decode(&nodes)
			resp.Body.Close()
			if len(nodes) == want {
				return base
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("agent did not come up at %s", base) // Cleanup prints its output
	return ""
}

// runAgent starts `drover ARGS` (an agent) with env (nil: this process's),
// its output in logs, and stops it when the test ends, printing its
// output if the test failed. exited closes when the process ends.
func runAgent(t *testing.T, bin string, env []string, args ...string) (logs *testlog.Buffer, exited <-chan struct{}) {
	t.Helper()
	_, logs, exited = runAgentProcess(t, bin, env, args...)
	return logs, exited
}

// runAgentProcess is runAgent, also returning the agent's process (to
// send it signals).
func runAgentProcess(t *testing.T, bin string, env []string, args ...string) (cmd *exec.Cmd, logs *testlog.Buffer, exited <-chan struct{}) {
	t.Helper()
	cmd = exec.Command(bin, args...)
	cmd.Env = env
	logs = &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", logs.String())
		}
	})
	return cmd, logs, done
}

// drover runs the CLI against addr and returns its exit code and output.
func drover(t *testing.T, bin, addr string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DROVER_ADDR="+addr)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !asExit(err, &ee) {
			t.Fatalf("drover %v: %v", args, err)
		}
		return ee.ExitCode(), string(out)
	}
	return 0, string(out)
}

func asExit(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError)
	if ok {
		*target = ee
	}
	return ok
}

func TestE2E_JobRunPlacesWebOnDevAgent(t *testing.T) {
	bin := droverBin(t)
	addr := startDevAgent(t, bin, 10)

	code, out := drover(t, bin, addr, "job", "run", "examples/jobs/web.hcl")
	if code != 0 {
		t.Fatalf("job run exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, `finished with status "complete": 3 placed, 0 queued`) {
		t.Fatalf("job run did not report 3 placements:\n%s", out)
	}

	code, out = drover(t, bin, addr, "job", "status", "-json", "web")
	if code != 0 {
		t.Fatalf("job status exited %d:\n%s", code, out)
	}
	var st JobStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("job status -json: %v\n%s", err, out)
	}
	if len(st.Allocations) != 3 {
		t.Fatalf("want 3 allocations, got %d", len(st.Allocations))
	}
	names := map[string]bool{}
	for _, a := range st.Allocations {
		if a.DesiredStatus != sdk.AllocDesiredStatusRun {
			t.Errorf("alloc %s desired status %q", a.Name, a.DesiredStatus)
		}
		names[a.Name] = true
	}
	for i := 0; i < 3; i++ {
		if n := sdk.AllocName("web", "frontend", i); !names[n] {
			t.Errorf("missing allocation %s", n)
		}
	}

	// The web service is registered once each allocation runs, at a dev
	// node's address and the allocation's http port.
	var regs []struct {
		ServiceName, AllocID, Address string
		Port                          int
		Tags                          []string
	}
	waitUntil(t, 20*time.Second, "three web instances registered", func() bool {
		code, out = drover(t, bin, addr, "service", "info", "-json", "web")
		return code == 0 && json.Unmarshal([]byte(out), &regs) == nil && len(regs) == 3
	})
	for _, r := range regs {
		if !strings.HasPrefix(r.Address, "10.0.0.") || r.Port < 20000 || len(r.Tags) != 2 || r.Tags[0] != "frontend" ||
			!strings.HasPrefix(r.Tags[1], "dc") {
			t.Errorf("registration %+v", r)
		}
	}

	code, out = drover(t, bin, addr, "plugin", "list", "-json")
	if code != 0 {
		t.Fatalf("plugin list exited %d:\n%s", code, out)
	}
	var plugins []*httpapi.PluginStub
	if err := json.Unmarshal([]byte(out), &plugins); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range plugins {
		if p.Name == "service" && p.Runtime == "wasm" && p.ABIVersion == abi.Current.String() && len(p.Types) == 1 && p.Types[0] == "service" {
			found = true
		}
	}
	if !found {
		t.Fatalf("service plugin with runtime wasm not listed: %s", out)
	}

	// The agent's statistics in Nomad's sections and lower-case keys
	// (scripts read .stats.nomad.leader).
	var self struct {
		Stats map[string]map[string]string `json:"stats"`
	}
	getJSON(t, addr+"/v1/agent/self", &self)
	if st := self.Stats; st["nomad"]["leader"] != "true" || st["nomad"]["server"] != "true" || st["raft"]["state"] != "Leader" ||
		st["runtime"]["arch"] == "" || st["broker"]["total_ready"] == "" {
		t.Fatalf("agent self stats %v", st)
	}
}

func TestE2E_BrokenJobspecExitsWithLocation(t *testing.T) {
	bin := droverBin(t)
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	src := "job \"x\" {\n  group \"g\" {\n    count = \"three\"\n  }\n}\n"
	if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := drover(t, bin, "http://127.0.0.1:1", "job", "run", bad)
	if code == 0 {
		t.Fatalf("broken jobspec exited 0:\n%s", out)
	}
	if !regexp.MustCompile(regexp.QuoteMeta(bad) + `:3:13: error: `).MatchString(out) {
		t.Fatalf("diagnostic lacks file:line:col:\n%s", out)
	}
}

// An init task runs before the group's main task, so the agent places a
// group that needs the larger of the two, not their sum, as Nomad does:
// on the one 4,000 MHz dev node, 500 + max(3,000, 3,000) MHz fits, where
// the sum (6,500) would not. The allocation keeps its tasks' lifecycles,
// which the wasm scheduler sent and the host checked against the job.
func TestE2E_InitTaskFitsBesideItsMainTask(t *testing.T) {
	bin := droverBin(t)
	addr := startDevAgent(t, bin, 1)
	spec := filepath.Join(t.TempDir(), "init.hcl")
	if err := os.WriteFile(spec, []byte(`job "migrate" {
  datacenters = ["dc1"]
  group "app" {
    task "schema" {
      driver = "exec"
      lifecycle {
        hook = "prestart"
      }
      config { command = "/bin/migrate" }
      resources {
        cpu    = 3000
        memory = 256
      }
    }
    task "proxy" {
      driver = "exec"
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      config { command = "/bin/proxy" }
      resources {
        cpu    = 500
        memory = 64
      }
    }
    task "server" {
      driver = "exec"
      config { command = "/bin/server" }
      resources {
        cpu    = 3000
        memory = 256
      }
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := drover(t, bin, addr, "job", "run", spec)
	if code != 0 || !strings.Contains(out, `finished with status "complete": 1 placed, 0 queued`) {
		t.Fatalf("job run exited %d, want one placement:\n%s", code, out)
	}
	var stubs []*sdk.AllocationListStub
	getJSON(t, addr+"/v1/job/migrate/allocations", &stubs)
	if len(stubs) != 1 {
		t.Fatalf("%d allocations, want 1", len(stubs))
	}
	var a sdk.Allocation
	getJSON(t, addr+"/v1/allocation/"+stubs[0].ID, &a)
	lcs := a.AllocatedResources.TaskLifecycles
	if len(lcs) != 2 || lcs["schema"] == nil || *lcs["schema"] != (sdk.TaskLifecycle{Hook: "prestart"}) ||
		lcs["proxy"] == nil || *lcs["proxy"] != (sdk.TaskLifecycle{Hook: "prestart", Sidecar: true}) {
		t.Fatalf("the allocation holds lifecycles %+v", lcs)
	}
	if u := a.AllocatedResources.Usage(); u.CPU != 3500 {
		t.Fatalf("the allocation uses %d MHz, want 3500", u.CPU)
	}
}

// TestE2E_AgentLogToAFileHasNoColours: the console log of an agent whose
// stderr is not a terminal (a file, a pipe, a test's buffer) carries no
// ANSI escape codes, which would litter a log file.
func TestE2E_AgentLogToAFileHasNoColours(t *testing.T) {
	// NO_COLOR, often set in CI, would pass the test whatever the agent
	// does about terminals.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
	logs, exited := runAgent(t, droverBin(t), env, "agent", "-dev", "-dev-nodes", "1", "-http-addr", freeAddr(t), "-log-level", "info")
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(logs.String(), "INF") {
		select {
		case <-exited:
			t.Fatal("agent exited") // Cleanup prints its output
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no info line logged: %q", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := logs.String(); strings.Contains(out, "\x1b[") {
		t.Fatalf("the log holds escape codes: %q", out[:min(len(out), 300)])
	}
}
