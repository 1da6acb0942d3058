// Package containment_test proves that a misbehaving plugin fails only its
// own evaluation: each plugin under testdata misbehaves one way, runs in a
// real in-memory server beside the built-in schedulers, and must end its
// eval failed with a clear reason while the server keeps serving and other
// jobs keep scheduling.
package containment_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/rs/zerolog"
)

const testdata = "./runtime/containment/testdata/"

// load loads a testdata plugin in the named runtime.
func load(t *testing.T, rt, name string, limitMB int) runtime.Factory {
	t.Helper()
	ctx := context.Background()
	switch rt {
	case "wasm":
		cfg := wasm.DefaultConfig()
		if limitMB > 0 {
			cfg.MemoryLimitPages = wasm.PagesForMB(limitMB)
		}
		m, err := wasm.LoadFile(ctx, wasmtest.Build(t, testdata+name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m
	case "goplugin":
		cfg := goplugin.DefaultConfig()
		cfg.MemoryLimitBytes = uint64(limitMB) << 20
		f, err := goplugin.Load(ctx, goplugintest.Build(t, testdata+name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	t.Fatalf("unknown runtime %s", rt)
	return nil
}

func TestContainment_MisbehavingPluginsFailOnlyTheirEval(t *testing.T) {
	cases := []struct {
		plugin   string
		runtimes []string
		limitMB  int
		// reason is what the failed eval's description must say.
		reason string
		// timeout is the plugin's per-eval deadline: short only where the
		// deadline is what is tested, so a loaded machine cannot turn
		// another failure into a deadline.
		timeout time.Duration
	}{
		{plugin: "panic", runtimes: []string{"wasm", "goplugin"}, reason: "panic: assignment to entry in nil map"},
		{plugin: "crash", runtimes: []string{"wasm", "goplugin"}, reason: "exit_code(7)|process failed"},
		{plugin: "loop", runtimes: []string{"wasm", "goplugin"}, reason: "deadline", timeout: 2 * time.Second},
		{plugin: "alloc", runtimes: []string{"wasm", "goplugin"}, limitMB: 64,
			reason: "memory limit of 64 MiB exceeded|exit_code(2)"},
		{plugin: "ghostnode", runtimes: []string{"wasm", "goplugin"}, reason: "unknown node ghost-node"},
		{plugin: "otherjob", runtimes: []string{"wasm", "goplugin"}, reason: "of another job"},
		{plugin: "overcommit", runtimes: []string{"wasm", "goplugin"}, reason: "every plan was rejected"},
		{plugin: "giantplan", runtimes: []string{"wasm", "goplugin"}, reason: "over the limit of 10000"},
		{plugin: "badtake", runtimes: []string{"wasm"}, reason: "at 4294967280 are outside memory"},
	}
	for _, tc := range cases {
		for _, rt := range tc.runtimes {
			t.Run(tc.plugin+"/"+rt, func(t *testing.T) {
				f := load(t, rt, tc.plugin, tc.limitMB)
				reg := servertest.NativeBuiltins(t, 2)
				p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(2), zerolog.Nop())
				t.Cleanup(func() { _ = p.Close(context.Background()) })
				timeout := tc.timeout
				if timeout == 0 {
					timeout = time.Minute
				}
				if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: rt, Timeout: timeout}); err != nil {
					t.Fatal(err)
				}
				s := servertest.New(t, reg, func(c *server.Config) {
					c.Broker.InitialNackDelay, c.Broker.SubsequentNackDelay = 10*time.Millisecond, 10*time.Millisecond
					c.PlanLimits.MaxAllocs = 10_000
				})
				for i := 0; i < 2; i++ {
					if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
						t.Fatal(err)
					}
				}
				// A job that runs before, so rogue plugins have another
				// job's allocations to go after.
				placeAndCheck(t, s, "before", 2)

				bad := servertest.Job("bad", sdk.JobTypeService, 3, 500, 256)
				bad.Scheduler = tc.plugin
				evalID, _, err := s.RegisterJob(bad)
				if err != nil {
					t.Fatal(err)
				}
				e := waitFailed(t, s, evalID)
				if !matchesAny(e.StatusDescription, tc.reason) {
					t.Fatalf("failed eval's reason %q does not say %q", e.StatusDescription, tc.reason)
				}
				t.Logf("reason: %s", e.StatusDescription)

				// The host is intact: no node over-committed, the other
				// job untouched, and new jobs still schedule.
				snap := s.Store().Snapshot()
				for _, n := range snap.Nodes() {
					live := slices.DeleteFunc(slices.Clone(snap.AllocsByNode(n.ID)), (*sdk.Allocation).TerminalStatus)
					if ok, dim := feasible.AllocsFit(n, live); !ok {
						t.Fatalf("node %s over-committed (%s)", n.ID, dim)
					}
				}
				for _, a := range snap.AllocsByJob("default", "before") {
					if a.TerminalStatus() {
						t.Fatalf("allocation %s of another job was stopped", a.ID)
					}
				}
				if n := len(snap.AllocsByJob("default", "bad")); n != 0 {
					t.Fatalf("the rogue plugin placed %d allocations", n)
				}
				placeAndCheck(t, s, "after", 2)
			})
		}
	}
}

func matchesAny(s, alternatives string) bool {
	for _, a := range strings.Split(alternatives, "|") {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}

func placeAndCheck(t *testing.T, s *server.Server, id string, count int) {
	t.Helper()
	evalID, _, err := s.RegisterJob(servertest.Job(id, sdk.JobTypeService, count, 500, 256))
	if err != nil {
		t.Fatal(err)
	}
	if e := servertest.WaitForEval(t, s, evalID); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("job %s: eval %s: %s", id, e.Status, e.StatusDescription)
	}
	if n := len(s.Store().Snapshot().AllocsByJob("default", id)); n != count {
		t.Fatalf("job %s: %d allocations, want %d", id, n, count)
	}
}

func TestContainment_UnknownABIMajorIsRefusedAtLoad(t *testing.T) {
	ctx := context.Background()
	_, err := wasm.LoadFile(ctx, wasmtest.Build(t, testdata+"abi2wasm"), wasm.DefaultConfig())
	if !errors.Is(err, wasm.ErrInvalidModule) || !strings.Contains(err.Error(), "plugin declares ABI 2.0; this host supports major version(s) [1]") {
		t.Fatalf("wasm: err = %v", err)
	}
	_, err = goplugin.Load(ctx, goplugintest.Build(t, testdata+"abi2goplugin"), goplugin.DefaultConfig())
	if !errors.Is(err, goplugin.ErrInvalidPlugin) || !strings.Contains(err.Error(), "incompatible API version with plugin. Plugin version: 2, Client versions: [1]") {
		t.Fatalf("goplugin: err = %v", err)
	}
}

func TestContainment_StdoutBeforeHandshakeIsRefusedAtLoad(t *testing.T) {
	_, err := goplugin.Load(context.Background(), goplugintest.Build(t, testdata+"stdoutnoise"), goplugin.DefaultConfig())
	if !errors.Is(err, goplugin.ErrInvalidPlugin) || !strings.Contains(err.Error(), "Unrecognized remote plugin message: hello from a chatty plugin") ||
		!strings.Contains(err.Error(), "write nothing to stdout before plugin.Serve") {
		t.Fatalf("err = %v", err)
	}
}

// waitFailed waits, longer than servertest.WaitForEval, for an eval to
// fail: a giant plan built inside wasm three times takes a while on a busy
// machine.
func waitFailed(t *testing.T, s *server.Server, evalID string) *sdk.Evaluation {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if e := s.Store().Snapshot().Eval(evalID); e != nil && e.Status == sdk.EvalStatusFailed {
			return e
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("eval %s did not fail: %+v", evalID, s.Store().Snapshot().Eval(evalID))
	return nil
}

// TestContainment_IdleWorkThatNeverEndsIsStopped: a plugin's drover_idle
// (ABI 1.5, called between evals) that never returns is stopped at the
// pool's idle timeout and its instance replaced: its evals still complete,
// one after another, and the built-in schedulers keep scheduling.
func TestContainment_IdleWorkThatNeverEndsIsStopped(t *testing.T) {
	f := load(t, "wasm", "idleloop", 0)
	reg := servertest.NativeBuiltins(t, 2)
	cfg := runtime.DefaultPoolConfig(1)
	cfg.IdleTimeout = 200 * time.Millisecond
	p := runtime.NewPlugin(f, cfg, zerolog.Nop())
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: "wasm", Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	s := servertest.New(t, reg, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 4000, 8192)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		job := servertest.Job(fmt.Sprintf("idle-%d", i), sdk.JobTypeService, 1, 500, 256)
		job.Scheduler = "idleloop"
		evalID, _, err := s.RegisterJob(job)
		if err != nil {
			t.Fatal(err)
		}
		// Each eval after the first waits for the one instance to be
		// stopped in its idle loop and replaced.
		if e := servertest.WaitForEval(t, s, evalID); e.Status != sdk.EvalStatusComplete {
			t.Fatalf("eval %d: %s: %s", i, e.Status, e.StatusDescription)
		}
	}
	if got := p.Stats().Recycled.Load(); got < 2 {
		t.Fatalf("%d instances recycled, want the two whose idle work ran before another eval", got)
	}
	placeAndCheck(t, s, "after", 1)
}

// TestContainment_MisbehavingConfigCheckFailsTheLoad: a plugin whose
// configuration check (ABI 1.7, run as the host loads it) panics, never
// returns, allocates without bound or exits fails the check with a clear
// reason, bounded by the check's deadline and the plugin's memory limit,
// and not as a refusal of its configuration. The host and the plugin's
// module or binary stay usable: a check that accepts passes after each,
// and an eval runs.
func TestContainment_MisbehavingConfigCheckFailsTheLoad(t *testing.T) {
	cases := []struct {
		check   string
		reason  string
		timeout time.Duration // the check's deadline: short only where it is what is tested
	}{
		{check: "panic", reason: "panic in CheckConfig: assignment to entry in nil map"},
		{check: "loop", reason: "stopped at the deadline|context deadline exceeded; process killed", timeout: 2 * time.Second},
		{check: "alloc", reason: "memory limit of 64 MiB exceeded|exit_code(2)"},
		{check: "exit", reason: "exit_code(7)|config check: process failed"},
	}
	for _, rt := range []string{"wasm", "goplugin"} {
		t.Run(rt, func(t *testing.T) {
			f := load(t, rt, "configcheck", 64)
			// Closing the pool closes f, once its instances' idle work (a
			// wasm guest's collection after an eval) is done.
			p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
			t.Cleanup(func() { _ = p.Close(context.Background()) })
			check := func(config map[string]string, timeout time.Duration) error {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				_, err := runtime.CheckConfig(ctx, f, config)
				return err
			}
			for _, tc := range cases {
				t.Run(tc.check, func(t *testing.T) {
					timeout := tc.timeout
					if timeout == 0 {
						timeout = time.Minute
					}
					start := time.Now()
					err := check(map[string]string{"check": tc.check}, timeout)
					if !errors.Is(err, runtime.ErrPluginFailed) || errors.Is(err, runtime.ErrConfigRefused) ||
						!strings.Contains(err.Error(), "plugin[configcheck]: checking its configuration") || !matchesAny(err.Error(), tc.reason) {
						t.Fatalf("err = %v, want ErrPluginFailed saying %q", err, tc.reason)
					}
					t.Logf("reason (after %v): %v", time.Since(start).Round(time.Millisecond), err)
					if err := check(map[string]string{"check": "accept"}, time.Minute); err != nil {
						t.Fatalf("a check after the failed one: %v", err)
					}
				})
			}
			reg := servertest.NativeBuiltins(t, 1)
			if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: rt, Timeout: time.Minute}); err != nil {
				t.Fatal(err)
			}
			s := servertest.New(t, reg, nil)
			job := servertest.Job("checked", sdk.JobTypeService, 1, 500, 256)
			job.Scheduler = "configcheck"
			evalID, _, err := s.RegisterJob(job)
			if err != nil {
				t.Fatal(err)
			}
			if e := servertest.WaitForEval(t, s, evalID); e.Status != sdk.EvalStatusComplete {
				t.Fatalf("eval after the failed checks: %s (%s)", e.Status, e.StatusDescription)
			}
		})
	}
}
