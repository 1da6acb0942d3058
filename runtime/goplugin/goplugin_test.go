package goplugin_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-sched/drover/internal/testlog"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

func load(t *testing.T, pkg string) *goplugin.Factory {
	t.Helper()
	f, err := goplugin.Load(context.Background(), goplugintest.Build(t, pkg), goplugin.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGoPlugin_ServiceSchedulesThroughTheBroker(t *testing.T) {
	f := load(t, "./plugins/service")
	if info := f.Info(); info.Name != "service" || info.ABI>>16 != 1 {
		t.Fatalf("info = %+v", info)
	}
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192), sdktest.Node("n2", 4000, 8192))
	for i, id := range []string{"web", "api"} {
		job := sdktest.Job(id, 3)
		h.UpsertJob(job)
		if err := runtimetest.Process(p, h, h.RegisterEval(job), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if len(h.Updated) != i+1 || h.Updated[i].Status != sdk.EvalStatusComplete {
			t.Fatalf("eval updates = %+v", h.Updated)
		}
	}
	if st := p.Stats(); st.FullSyncs.Load() != 1 || st.DeltaSyncs.Load() != 1 {
		t.Fatalf("syncs: full %d delta %d, want 1 and 1", st.FullSyncs.Load(), st.DeltaSyncs.Load())
	}
}

// started records the instances its factory starts.
type started struct {
	runtime.Factory
	insts chan runtime.Instance
}

func (s started) NewInstance(ctx context.Context) (runtime.Instance, error) {
	inst, err := s.Factory.NewInstance(ctx)
	if err == nil {
		s.insts <- inst
	}
	return inst, err
}

// A plugin process killed while idle is replaced before the next eval,
// which succeeds on a new process instead of failing on the dead one.
func TestGoPlugin_ProcessKilledBetweenEvalsIsReplaced(t *testing.T) {
	logs := &testlog.Buffer{}
	cfg := goplugin.DefaultConfig()
	cfg.Log = zerolog.New(logs)
	gp, err := goplugin.Load(context.Background(), goplugintest.Build(t, "./plugins/service"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := started{gp, make(chan runtime.Instance, 4)}
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192))
	eval := func(id string) error {
		job := sdktest.Job(id, 1)
		h.UpsertJob(job)
		return runtimetest.Process(p, h, h.RegisterEval(job), 30*time.Second)
	}
	if err := eval("web"); err != nil {
		t.Fatal(err)
	}
	first := <-f.insts
	pid := goplugin.PID(first)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); first.(runtime.Prober).Alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("killed process %d still taken for alive", pid)
		}
	}
	if err := eval("api"); err != nil {
		t.Fatalf("eval after the process was killed: %v", err)
	}
	if second := <-f.insts; goplugin.PID(second) == pid {
		t.Fatal("the eval ran on the killed process's PID")
	}
	if got := p.Stats().Failures.Load(); got != 0 {
		t.Fatalf("%d evals failed", got)
	}
	// go-plugin's own report, at its level and tagged with the plugin.
	exited := logs.Entries(t, "plugin process exited")
	if len(exited) == 0 || exited[0]["level"] != "error" || !strings.HasSuffix(fmt.Sprint(exited[0]["plugin"]), "plugins_service") || exited[0]["module"] != "go-plugin" {
		t.Fatalf("go-plugin's report of the killed process: %v", exited)
	}
}

// A plugin whose process crashes during evals is started again for each
// next eval, after a backoff that doubles with each crash in a row: the
// eval after two crashes waits at least the initial backoff twice over.
func TestGoPlugin_CrashedProcessIsRestartedWithBackoff(t *testing.T) {
	cfg := goplugin.DefaultConfig()
	cfg.RestartBackoff, cfg.MaxRestartBackoff = 200*time.Millisecond, time.Second
	lf, err := goplugin.Load(context.Background(), goplugintest.Build(t, "./runtime/containment/testdata/crash"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := started{lf, make(chan runtime.Instance, 8)}
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	h.UpsertNode(sdktest.Node("n1", 4000, 8192))
	var pids []int
	var waits []time.Duration
	for i := range 3 {
		job := sdktest.Job(fmt.Sprintf("job-%d", i), 1)
		h.UpsertJob(job)
		start := time.Now()
		err := runtimetest.Process(p, h, h.RegisterEval(job), 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), "process failed") {
			t.Fatalf("eval %d: err = %v, want the crash", i, err)
		}
		waits = append(waits, time.Since(start))
		pids = append(pids, goplugin.PID(<-f.insts))
	}
	if pids[0] == pids[1] || pids[1] == pids[2] {
		t.Fatalf("processes %v: each eval should start a new one", pids)
	}
	// Lower bounds only: a start waits at least its backoff.
	if waits[1] < 200*time.Millisecond || waits[2] < 400*time.Millisecond {
		t.Fatalf("evals took %v, want the second to wait >= 200ms and the third >= 400ms", waits)
	}
	if got := p.Stats().Failures.Load(); got != 3 {
		t.Fatalf("%d failures, want 3", got)
	}
}

// A process's memory limit holds between evals too: a goroutine a plugin
// leaves allocating after its eval returned grew the process without
// bound (2 GiB in seconds under a 256 MiB limit on a dev agent), as the
// limit was checked only during an eval. The process is killed, said in
// the log, and replaced before the next eval.
func TestGoPlugin_MemoryLimitHoldsBetweenEvals(t *testing.T) {
	logs := &testlog.Buffer{}
	cfg := goplugin.DefaultConfig()
	cfg.MemoryLimitBytes = 128 << 20
	cfg.Log = zerolog.New(logs)
	f, err := goplugin.Load(context.Background(), goplugintest.Build(t, "./runtime/goplugin/testdata/idleleak"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := f.NewInstance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close(context.Background())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	call := runtimetest.Call(h, h.RegisterEval(job))
	p := runtime.NewPlugin(singleInstance{f, inst}, runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	if err := p.Process(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	prober := inst.(runtime.Prober)
	for deadline := time.Now().Add(10 * time.Second); prober.Alive(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the process is alive with %d MiB resident, over its limit of 128 MiB",
				inst.(runtime.Sizer).MemoryBytes()>>20)
		}
	}
	if n := len(logs.Entries(t, "plugin process over its memory limit between evals; killed")); n != 1 {
		t.Fatalf("%d log entries for the kill, want 1", n)
	}
}

// singleInstance is a factory whose one instance is inst.
type singleInstance struct {
	runtime.Factory
	inst runtime.Instance
}

func (s singleInstance) NewInstance(context.Context) (runtime.Instance, error) { return s.inst, nil }
