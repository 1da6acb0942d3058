package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/host/server/servertest"
	rt "github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// install copies a built plugin into dir as name, atomically (write, then
// rename), as an operator replacing a plugin should.
func install(t *testing.T, src, dir, name string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, ".install-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(tmp, in); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		t.Fatal(err)
	}
	_ = tmp.Close()
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func startAgent(t *testing.T, dir string, plugins []agent.PluginConfig) *agent.Agent {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.Dev, cfg.DevNodes, cfg.HTTPAddr, cfg.PluginDir = true, 3, "127.0.0.1:0", dir
	cfg.Plugins = plugins
	cfg.PluginReloadInterval = 50 * time.Millisecond
	cfg.Server.NumWorkers = 2
	a, err := agent.New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a
}

func TestAgent_ReplacedPluginFileIsPickedUpWithoutDroppingEvals(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	install(t, wasmtest.Build(t, "./host/agent/testdata/reload/v1"), dir, "reload.wasm")
	v2 := wasmtest.Build(t, "./host/agent/testdata/reload/v2")
	a := startAgent(t, dir, nil)
	s := a.Server()

	var evals []string
	for i := 0; i < 16; i++ {
		job := servertest.Job(fmt.Sprintf("j%d", i), sdk.JobTypeService, 1, 100, 64)
		job.Scheduler = "reload"
		id, _, err := s.RegisterJob(job)
		if err != nil {
			t.Fatal(err)
		}
		evals = append(evals, id)
		if i == 3 {
			install(t, v2, dir, "reload.wasm")
		}
	}
	for _, id := range evals {
		if e := servertest.WaitForEval(t, s, id); e.Status != sdk.EvalStatusComplete {
			t.Fatalf("eval %s: %s (%s)", id, e.Status, e.StatusDescription)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, ok := s.Plugins().Lookup("reload")
		if ok && e.Plugin.Info().PluginVersion == "2" {
			if e.Plugin.Stats().Evals.Load() == 0 {
				// Every eval ran before the swap; run one more on v2.
				job := servertest.Job("late", sdk.JobTypeService, 1, 100, 64)
				job.Scheduler = "reload"
				id, _, err := s.RegisterJob(job)
				if err != nil {
					t.Fatal(err)
				}
				if e := servertest.WaitForEval(t, s, id); e.Status != sdk.EvalStatusComplete {
					t.Fatalf("eval on v2: %s", e.Status)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replaced plugin file was not picked up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// No eval was ever nacked: each went scheduling -> complete once.
	for _, id := range evals {
		n := 0
		for _, ph := range s.EvalHistory(id) {
			if ph.Phase == sdk.EvalPhaseScheduling {
				n++
			}
		}
		if n > 2 { // scheduling, applying, scheduling again after the plan
			t.Fatalf("eval %s was scheduled %d times: %+v", id, n, s.EvalHistory(id))
		}
	}
}

// Deadlines are enforced for every wasm plugin unless its block says
// otherwise: the interrupt checks cost the guest little.
func TestAgent_DeadlinesAreEnforcedByDefault(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	install(t, wasmtest.Build(t, "./plugins/batch"), dir, "batch.wasm")
	off := false
	a := startAgent(t, dir, []agent.PluginConfig{{Name: "batch", Limits: agent.PluginLimits{EnforceDeadline: &off}}})
	reg := a.Server().Plugins()
	if svc, ok := reg.Lookup("service"); !ok || !svc.EnforceDeadline {
		t.Fatalf("service entry = %+v, want deadlines enforced", svc)
	}
	if b, ok := reg.Lookup("batch"); !ok || b.EnforceDeadline {
		t.Fatalf("batch entry = %+v, want enforce_deadline = false honoured", b)
	}
}

func TestAgent_PluginBlocksConfigureAndLoadGoPlugins(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	gp := goplugintest.Build(t, "./host/agent/testdata/reload/v1")
	enforce := true
	a := startAgent(t, dir, []agent.PluginConfig{
		{Name: "service", Limits: agent.PluginLimits{MemoryMB: 128, Timeout: 3 * time.Second, EnforceDeadline: &enforce}},
		{Name: "reload", Path: gp, Config: map[string]string{"k": "v"}},
	})
	reg := a.Server().Plugins()
	svc, ok := reg.Lookup("service")
	if !ok || svc.Runtime != agent.RuntimeWasm || svc.MemoryMB != 128 || svc.Timeout != 3*time.Second || !svc.EnforceDeadline {
		t.Fatalf("service entry = %+v", svc)
	}
	rl, ok := reg.Lookup("reload")
	if !ok || rl.Runtime != agent.RuntimeGoPlugin || rl.Config["k"] != "v" {
		t.Fatalf("reload entry = %+v", rl)
	}
	job := servertest.Job("gp", sdk.JobTypeService, 2, 100, 64)
	job.Scheduler = "reload"
	id, _, err := a.Server().RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if e := servertest.WaitForEval(t, a.Server(), id); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval through the go-plugin: %s (%s)", e.Status, e.StatusDescription)
	}
}

func TestAgent_PluginBlockNameMustMatchThePlugin(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	cfg := agent.DefaultConfig()
	cfg.Dev, cfg.HTTPAddr, cfg.PluginDir = true, "127.0.0.1:0", dir
	cfg.Plugins = []agent.PluginConfig{{Name: "zones", Path: filepath.Join(dir, "service.wasm")}}
	_, err := agent.New(cfg, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), `plugin block "zones" loads`) {
		t.Fatalf("err = %v", err)
	}
}

// A plugin's eval timeout, its own or the default (30 s), must be shorter
// than the broker's nack timeout: an eval still running past it would be
// handed out again while it runs, and every attempt would fail to ack.
func TestAgent_PluginTimeoutMustBeShorterThanTheNackTimeout(t *testing.T) {
	module := wasmtest.Build(t, "./plugins/service")
	for _, tc := range []struct {
		timeout, nack time.Duration // 0: no limits.timeout; the default nack timeout (60 s)
		block         bool
		refused       bool
	}{
		{90 * time.Second, 0, true, true}, {60 * time.Second, 0, true, true}, {59 * time.Second, 0, true, false},
		{10 * time.Second, time.Second, true, true}, {10 * time.Second, 20 * time.Second, true, false},
		{0, 20 * time.Second, true, true},  // the default 30 s
		{0, 20 * time.Second, false, true}, // a plugin without a block has the default too
		{0, 0, false, false},
	} {
		dir := t.TempDir()
		install(t, module, dir, "service.wasm")
		cfg := agent.DefaultConfig()
		cfg.Dev, cfg.HTTPAddr, cfg.PluginDir = true, "127.0.0.1:0", dir
		if tc.nack > 0 {
			cfg.Server.Broker.NackTimeout = tc.nack
		}
		if tc.block {
			cfg.Plugins = []agent.PluginConfig{{Name: "service", Path: filepath.Join(dir, "service.wasm"),
				Limits: agent.PluginLimits{Timeout: tc.timeout}}}
		}
		a, err := agent.New(cfg, zerolog.Nop())
		if err == nil {
			a.Shutdown(context.Background())
		}
		if refused := err != nil && strings.Contains(err.Error(), "must be shorter than the server's eval_nack_timeout"); refused != tc.refused {
			t.Errorf("timeout %s (block %v), nack %s: err = %v", tc.timeout, tc.block, tc.nack, err)
		}
	}
}

// An open event stream does not hold the agent up when it stops: the
// stream ends and Shutdown returns.
func TestAgent_ShutdownEndsEventStreams(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	a := startAgent(t, dir, nil)
	resp, err := http.Get(a.Addr() + "/v1/event/stream?topic=Node")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an open event stream: %v", err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream is still open after shutdown")
	}
}

// A second file declaring a plugin's name is refused while the first
// exists (the next start would refuse the pair); a plugin file renamed in
// the directory takes over from its old name.
func TestAgent_SecondFileForAPluginNameIsRefused(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	install(t, wasmtest.Build(t, "./host/agent/testdata/reload/v1"), dir, "reload.wasm")
	a := startAgent(t, dir, nil)
	reg := a.Server().Plugins()
	servedFrom := func() string {
		e, ok := reg.Lookup("reload")
		if !ok {
			t.Fatal("reload is not registered")
		}
		return filepath.Base(e.Path)
	}
	install(t, wasmtest.Build(t, "./host/agent/testdata/reload/v2"), dir, "reload-copy.wasm")
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got := servedFrom(); got != "reload.wasm" {
			t.Fatalf("reload served from %s, want reload.wasm kept", got)
		}
	}
	if err := os.Remove(filepath.Join(dir, "reload-copy.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "reload.wasm"), filepath.Join(dir, "reload-renamed.wasm")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); servedFrom() != "reload-renamed.wasm"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the renamed file did not take over: served from %s", servedFrom())
		}
	}
}

// TestAgent_RefusedReplacementIsReported: a replacement that does not load
// leaves the running version in place, and says so where an operator
// looks (the plugin's ReloadError, the refused files), not only in the
// log; a good file clears it.
func TestAgent_RefusedReplacementIsReported(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	install(t, wasmtest.Build(t, "./host/agent/testdata/reload/v1"), dir, "reload.wasm")
	a := startAgent(t, dir, nil)
	reg := a.Server().Plugins()
	path := filepath.Join(dir, "reload.wasm")

	broken := filepath.Join(t.TempDir(), "broken.wasm")
	if err := os.WriteFile(broken, []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	install(t, broken, dir, "reload.wasm")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, ok := reg.Refusal(path); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broken replacement was never reported")
		}
	}
	if e, ok := reg.Lookup("reload"); !ok || e.Plugin.Info().PluginVersion != "1" {
		t.Fatalf("reload after a broken replacement: %+v, want version 1 still registered", e)
	}
	var refused []struct{ Path, Error string }
	getJSON(t, a.Addr()+"/v1/plugins/refused", &refused)
	if len(refused) != 1 || refused[0].Path != path || !strings.Contains(refused[0].Error, "not a valid Drover plugin module") {
		t.Fatalf("refused = %+v", refused)
	}
	var stub struct{ PluginVersion, ReloadError string }
	getJSON(t, a.Addr()+"/v1/plugin/scheduler/reload", &stub)
	if stub.PluginVersion != "1" || stub.ReloadError == "" {
		t.Fatalf("plugin = %+v, want version 1 with its reload error", stub)
	}

	install(t, wasmtest.Build(t, "./host/agent/testdata/reload/v2"), dir, "reload.wasm")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, refusedStill := reg.Refusal(path)
		if e, ok := reg.Lookup("reload"); ok && e.Plugin.Info().PluginVersion == "2" && !refusedStill {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a good replacement did not clear the refusal")
		}
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

// TestAgent_PluginThatRefusesItsConfigurationDoesNotStart: a plugin that
// refuses the configuration of its block (ABI 1.7) stops the agent's
// start, as a file that does not load does, with the file, the plugin and
// the plugin's own reason.
func TestAgent_PluginThatRefusesItsConfigurationDoesNotStart(t *testing.T) {
	for _, tc := range []struct {
		runtime string
		build   func(testing.TB, string) string
	}{
		{agent.RuntimeWasm, wasmtest.Build},
		{agent.RuntimeGoPlugin, goplugintest.Build},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			dir := t.TempDir()
			install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
			strict := tc.build(t, "./host/agent/testdata/reload/strict")
			cfg := agent.DefaultConfig()
			cfg.Dev, cfg.HTTPAddr, cfg.PluginDir = true, "127.0.0.1:0", dir
			cfg.Plugins = []agent.PluginConfig{{Name: "reload", Runtime: tc.runtime, Path: strict, Config: map[string]string{"k": "v"}}}
			a, err := agent.New(cfg, zerolog.Nop())
			if err == nil {
				_ = a.Shutdown(context.Background())
				t.Fatal("the agent started with a plugin that refuses its configuration")
			}
			want := "agent: load plugin: " + strict + `: runtime: plugin refused its configuration: plugin[reload]: unknown configuration key "k" (it takes none)`
			if !errors.Is(err, rt.ErrConfigRefused) || err.Error() != want {
				t.Fatalf("err = %v\nwant  %s", err, want)
			}
		})
	}
}

// TestAgent_ReplacementThatRefusesItsConfigurationIsRefused: a new version
// of a plugin file that refuses the configuration the running version
// takes is refused as a file that does not load is: the running version
// keeps serving, and the refusal, in the plugin's words, shows where
// operators look.
func TestAgent_ReplacementThatRefusesItsConfigurationIsRefused(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	install(t, wasmtest.Build(t, "./host/agent/testdata/reload/v1"), dir, "reload.wasm")
	path := filepath.Join(dir, "reload.wasm")
	a := startAgent(t, dir, []agent.PluginConfig{{Name: "reload", Path: path, Config: map[string]string{"k": "v"}}})
	s := a.Server()
	reg := s.Plugins()

	install(t, wasmtest.Build(t, "./host/agent/testdata/reload/strict"), dir, "reload.wasm")
	var refusal rt.Refusal
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var ok bool
		if refusal, ok = reg.Refusal(path); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replacement that refuses its configuration was never reported")
		}
	}
	const reason = `runtime: plugin refused its configuration: plugin[reload]: unknown configuration key "k" (it takes none)`
	if !strings.Contains(refusal.Error, reason) {
		t.Fatalf("refusal = %q, want it to say %q", refusal.Error, reason)
	}
	e, ok := reg.Lookup("reload")
	if !ok || e.Plugin.Info().PluginVersion != "1" || e.Config["k"] != "v" {
		t.Fatalf("reload after the refused replacement: %+v, want version 1 with its configuration", e)
	}
	job := servertest.Job("after", sdk.JobTypeService, 1, 100, 64)
	job.Scheduler = "reload"
	id, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if ev := servertest.WaitForEval(t, s, id); ev.Status != sdk.EvalStatusComplete {
		t.Fatalf("eval on the running version: %s (%s)", ev.Status, ev.StatusDescription)
	}
	if n := e.Plugin.Stats().Evals.Load(); n == 0 {
		t.Fatal("the eval did not run on version 1")
	}
	var refused []struct{ Path, Error string }
	getJSON(t, a.Addr()+"/v1/plugins/refused", &refused)
	if len(refused) != 1 || refused[0].Path != path || !strings.Contains(refused[0].Error, reason) {
		t.Fatalf("refused = %+v", refused)
	}
	var stub struct{ PluginVersion, ReloadError string }
	getJSON(t, a.Addr()+"/v1/plugin/scheduler/reload", &stub)
	if stub.PluginVersion != "1" || !strings.Contains(stub.ReloadError, reason) {
		t.Fatalf("plugin = %+v, want version 1 with the refusal", stub)
	}
}

// What can be refused at once is, before the plugins load (seconds on a
// new build) and before anything is written into the data dir: a server
// configuration that cannot work, an HTTP address in use.
func TestAgent_RefusesBeforeLoadingOrWriting(t *testing.T) {
	empty := t.TempDir() // no plugins: loading them would fail otherwise
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name   string
		modify func(*agent.Config)
		want   string
	}{
		{"bootstrap_expect 1 that also joins", func(c *agent.Config) {
			c.Server.RPCAddr, c.Server.BootstrapExpect, c.Server.RetryJoin = "127.0.0.1:0", 1, []string{"10.0.0.9:4647"}
		}, "bootstrap_expect"},
		{"HTTP address in use", func(c *agent.Config) { c.HTTPAddr = taken.Addr().String() }, "listen on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			cfg := agent.DefaultConfig()
			cfg.HTTPAddr, cfg.PluginDir, cfg.Server.DataDir = "127.0.0.1:0", empty, dataDir
			tc.modify(&cfg)
			_, err := agent.New(cfg, zerolog.Nop())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the data dir was written: %v", err)
			}
		})
	}
}

// TestAgent_DevNodesGiveTheAgentsAddress: every dev node's HTTPAddr is
// the agent's own, as a Nomad dev agent's client gives it: Nomad's
// clients (nomad alloc logs, fs, exec, the Go client's AllocFS) dial a
// node's address first, and must reach the agent there rather than an
// address where nothing answers.
func TestAgent_DevNodesGiveTheAgentsAddress(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	a := startAgent(t, dir, nil)
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(a.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var nodes []struct{ ID string }
	get("/v1/nodes", &nodes)
	if len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes))
	}
	want := strings.TrimPrefix(a.Addr(), "http://")
	for _, n := range nodes {
		var node struct{ HTTPAddr string }
		get("/v1/node/"+n.ID, &node)
		if node.HTTPAddr != want {
			t.Errorf("node %s: HTTPAddr %q, want the agent's %q", n.ID, node.HTTPAddr, want)
		}
	}
}

// A dev agent serves the profiler, as Nomad's dev agent does, unless its
// configuration turns enable_debug off.
func TestAgent_DevEnablesDebug(t *testing.T) {
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	for _, c := range []struct {
		set  *bool
		code int
	}{{nil, http.StatusOK}, {new(bool), http.StatusForbidden}} {
		cfg := agent.DefaultConfig()
		cfg.Dev, cfg.DevNodes, cfg.HTTPAddr, cfg.PluginDir, cfg.EnableDebug = true, 0, "127.0.0.1:0", dir, c.set
		a, err := agent.New(cfg, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(a.Addr() + "/v1/agent/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		_ = a.Shutdown(context.Background())
		if resp.StatusCode != c.code {
			t.Errorf("enable_debug %v: %d, want %d", c.set, resp.StatusCode, c.code)
		}
	}
}
