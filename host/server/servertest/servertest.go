// Package servertest starts in-memory servers for tests, with the built-in
// schedulers run natively (in-process, through the same ABI messages).
package servertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
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

// New starts a dev server whose plugins come from reg (NativeBuiltins when
// nil) and waits until it leads. It is shut down when the test ends.
func New(t testing.TB, reg *runtime.Registry, modify func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Dev = true
	cfg.NumWorkers = 2
	if modify != nil {
		modify(&cfg)
	}
	if reg == nil {
		reg = NativeBuiltins(t, cfg.NumWorkers)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := server.New(cfg, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return s
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
