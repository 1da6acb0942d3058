// Package servertest starts in-memory servers for tests, with the built-in
// schedulers run natively (in-process, through the same ABI messages).
package servertest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/system"
	"github.com/rs/zerolog"
)

// NativeBuiltins returns a registry with the built-in schedulers running
// in-process.
func NativeBuiltins(t testing.TB, instances int) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	add := func(name string, s func() sdk.Scheduler, types ...string) {
		if len(types) == 0 {
			types = []string{name}
		}
		f := native.New(plugin.Info{Name: name, Types: types}, s)
		p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(instances), zerolog.Nop())
		if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: "native"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(context.Background()) })
	}
	add(sdk.JobTypeService, func() sdk.Scheduler { return &generic.Scheduler{} })
	add(sdk.JobTypeBatch, func() sdk.Scheduler { return &generic.Scheduler{Batch: true} })
	add(sdk.JobTypeSystem, func() sdk.Scheduler { return &system.Scheduler{} }, sdk.JobTypeSystem, sdk.JobTypeSysBatch)
	return reg
}

// AddNative registers a native plugin described by info, with instances
// pooled instances, each running a scheduler from newSched.
func AddNative(t testing.TB, reg *runtime.Registry, info plugin.Info, instances int, newSched func() sdk.Scheduler) {
	t.Helper()
	f := native.New(info, newSched)
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(instances), zerolog.Nop())
	if err := reg.Register(&runtime.Entry{Plugin: p, Runtime: "native"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
}

// Func returns a registry in which fn schedules service and batch jobs.
func Func(t testing.TB, instances int, fn sdk.SchedulerFunc) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	AddNative(t, reg, plugin.Info{Name: "test", Types: []string{sdk.JobTypeService, sdk.JobTypeBatch}}, instances,
		func() sdk.Scheduler { return fn })
	return reg
}

// Config returns the configuration New starts from: dev mode, two workers.
func Config() server.Config {
	cfg := server.DefaultConfig()
	cfg.Dev = true
	cfg.NumWorkers = 2
	return cfg
}

// New starts a dev server whose plugins come from reg (NativeBuiltins when
// nil) and waits until it leads. It is shut down when the test ends.
func New(t testing.TB, reg *runtime.Registry, modify func(*server.Config)) *server.Server {
	t.Helper()
	cfg := Config()
	if modify != nil {
		modify(&cfg)
	}
	s, err := Start(t, cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Start starts a server with cfg (plugins from reg, NativeBuiltins when
// nil), waits until it leads and shuts it down when the test ends. It
// returns the error of server.New, for tests of bad data dirs.
func Start(t testing.TB, cfg server.Config, reg *runtime.Registry) (*server.Server, error) {
	t.Helper()
	if reg == nil {
		reg = NativeBuiltins(t, max(cfg.NumWorkers, 1))
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := server.New(cfg, reg, log)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return s, nil
}

// WaitFor polls cond until it holds, failing the test after 15 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Phases returns the phases of an eval's history, oldest first.
func Phases(s *server.Server, evalID string) []string {
	var out []string
	for _, p := range s.EvalHistory(evalID) {
		out = append(out, p.Phase)
	}
	return out
}

// WaitForPhase waits until the eval's history has reached phase.
func WaitForPhase(t testing.TB, s *server.Server, evalID, phase string) {
	t.Helper()
	WaitFor(t, "eval "+evalID+" to reach phase "+phase, func() bool {
		return slices.Contains(Phases(s, evalID), phase)
	})
}

// Node returns a ready node with the given CPU (MHz) and memory (MB).
func Node(i int, cpu, mem int64) *sdk.Node {
	return &sdk.Node{
		ID: fmt.Sprintf("node-%04d", i), Name: fmt.Sprintf("node-%04d", i), Datacenter: "dc1",
		Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible,
		Attributes: map[string]string{"kernel.name": "linux", "driver.docker": "1", "driver.raw_exec": "1"},
		Meta:       map[string]string{"rack": fmt.Sprintf("r%d", i%4)},
		NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: cpu},
			Memory: sdk.NodeMemoryResources{MemoryMB: mem}, Disk: sdk.NodeDiskResources{DiskMB: 100_000}},
	}
}

// Job returns a job with one group of count tasks of cpu MHz and mem MB.
func Job(id, typ string, count int, cpu, mem int) *sdk.Job {
	return &sdk.Job{ID: id, Type: typ, Datacenters: []string{"dc1"},
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: count, Tasks: []*sdk.Task{{Name: "t", Driver: "docker",
			Resources: &sdk.Resources{CPU: cpu, MemoryMB: mem}}}}}}
}

// WaitForEval waits until the eval is terminal (or blocked when that is
// what want says) and returns it.
func WaitForEval(t testing.TB, s *server.Server, evalID string, want ...string) *sdk.Evaluation {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		e := s.Store().Snapshot().Eval(evalID)
		if e != nil {
			for _, w := range want {
				if e.Status == w {
					return e
				}
			}
			if len(want) == 0 && e.TerminalStatus() {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("eval %s did not reach %v: %+v", evalID, want, s.Store().Snapshot().Eval(evalID))
	return nil
}

// ForceGC asks s for a forced garbage collection, as the API's
// /v1/system/gc does, and waits for its core eval to end as want says
// (WaitForEval).
func ForceGC(t testing.TB, s *server.Server, want ...string) *sdk.Evaluation {
	t.Helper()
	id, _, err := s.ForceGC()
	if err != nil {
		t.Fatal(err)
	}
	return WaitForEval(t, s, id, want...)
}

// FreeAddrs returns n loopback addresses whose ports were free a moment
// ago.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var lns []net.Listener
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return out
}

// ClusterConfigs returns the configurations of n servers that form one
// cluster: durable (each in its own temporary data dir), on loopback RPC
// addresses, each told of all the others (one alone is told of none).
func ClusterConfigs(t testing.TB, n int) []server.Config {
	t.Helper()
	addrs := FreeAddrs(t, n)
	cfgs := make([]server.Config, n)
	for i := range cfgs {
		cfg := Config()
		cfg.Dev, cfg.DataDir = false, t.TempDir()
		cfg.NodeName = fmt.Sprintf("server-%d", i+1)
		cfg.RPCAddr, cfg.BootstrapExpect = addrs[i], n
		if n > 1 {
			cfg.RetryJoin = addrs
		}
		cfg.RetryInterval = 50 * time.Millisecond
		cfgs[i] = cfg
	}
	return cfgs
}

// StartMember starts a server of a cluster (plugins from reg,
// NativeBuiltins when nil) without waiting for leadership; it is shut
// down when the test ends.
func StartMember(t testing.TB, cfg server.Config, reg *runtime.Registry) *server.Server {
	t.Helper()
	if reg == nil {
		reg = NativeBuiltins(t, max(cfg.NumWorkers, 1))
	}
	s, err := server.New(cfg, reg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("server", cfg.NodeName).Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}

// WaitForClusterLeader waits until one of servers (nil entries are
// skipped) leads with its duties running and every other running one
// follows it, and returns it.
func WaitForClusterLeader(t testing.TB, servers []*server.Server) *server.Server {
	t.Helper()
	var leader *server.Server
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		leader = nil
		agreed := true
		for _, s := range servers {
			if s == nil {
				continue
			}
			if s.IsLeader() {
				leader = s
			}
		}
		if leader != nil {
			for _, s := range servers {
				if s != nil && s.Leader() != leader.RPCAddr() {
					agreed = false
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			err := leader.WaitForLeader(ctx)
			cancel()
			if agreed && err == nil {
				return leader
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no cluster leader")
	return nil
}

// Namespaces creates namespaces, with nothing but their names.
func Namespaces(t testing.TB, s *server.Server, names ...string) {
	t.Helper()
	nss := make([]*state.Namespace, len(names))
	for i, n := range names {
		nss[i] = &state.Namespace{Name: n}
	}
	if _, err := s.UpsertNamespaces(nss); err != nil {
		t.Fatal(err)
	}
}

// NodePools creates node pools, with nothing but their names.
func NodePools(t testing.TB, s *server.Server, names ...string) {
	t.Helper()
	ps := make([]*state.NodePool, len(names))
	for i, n := range names {
		ps[i] = &state.NodePool{Name: n}
	}
	if _, err := s.UpsertNodePools(ps); err != nil {
		t.Fatal(err)
	}
}
