package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// gate is a scheduler whose first eval waits to be released; every eval
// says which version of the plugin ran it.
type gate struct {
	version string
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	if g.entered != nil && g.first.CompareAndSwap(false, true) {
		g.entered <- struct{}{}
		<-g.release
	}
	e := eval.Copy()
	e.Status = sdk.EvalStatusComplete
	e.StatusDescription = g.version
	return ctx.Planner.UpdateEval(e)
}

func TestPlugin_RetireFinishesInFlightAndForwards(t *testing.T) {
	oldGate := &gate{version: "v1", entered: make(chan struct{}), release: make(chan struct{})}
	old := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return oldGate }),
		runtime.DefaultPoolConfig(2), zerolog.Nop())
	next := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{version: "v2"} }),
		runtime.DefaultPoolConfig(2), zerolog.Nop())
	defer next.Close(context.Background())

	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	var wg sync.WaitGroup
	var inflightErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		inflightErr = runtimetest.Process(old, h, h.RegisterEval(job), 10*time.Second)
	}()
	<-oldGate.entered // an eval is in flight on the old plugin

	retired := make(chan error, 1)
	go func() { retired <- old.Retire(context.Background(), next) }()
	// A call through the stale handle, after Retire, runs on the successor.
	deadline := time.Now().Add(5 * time.Second)
	for {
		h2 := sdktest.New()
		h2.UpsertJob(job)
		if err := runtimetest.Process(old, h2, h2.RegisterEval(job), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if h2.Updated[0].StatusDescription == "v2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("calls were not forwarded to the successor")
		}
		// Retire had not run yet; this call went to v1's free instance.
	}
	select {
	case err := <-retired:
		t.Fatalf("Retire returned (%v) while an eval was in flight", err)
	default:
	}
	close(oldGate.release)
	wg.Wait()
	if inflightErr != nil || h.Updated[0].StatusDescription != "v1" {
		t.Fatalf("in-flight eval: err %v, updates %+v", inflightErr, h.Updated)
	}
	if err := <-retired; err != nil {
		t.Fatal(err)
	}
}

func TestPlugin_ClosedRefusesCalls(t *testing.T) {
	p := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{} }),
		runtime.DefaultPoolConfig(1), zerolog.Nop())
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	if err := runtimetest.Process(p, h, h.RegisterEval(job), time.Second); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// sized reports a fixed memory size for every instance of its factory.
type sized struct {
	runtime.Factory
	bytes uint64
}

type sizedInstance struct {
	runtime.Instance
	bytes uint64
}

func (s sizedInstance) MemoryBytes() uint64 { return s.bytes }

func (s sized) NewInstance(ctx context.Context) (runtime.Instance, error) {
	inst, err := s.Factory.NewInstance(ctx)
	return sizedInstance{inst, s.bytes}, err
}

// ending is an instance that reports itself gone once end is set.
type ending struct {
	runtime.Instance
	end *atomic.Bool
}

func (e ending) Alive() bool { return !e.end.Load() }

type endingFactory struct {
	runtime.Factory
	end     *atomic.Bool
	started atomic.Int64
}

func (f *endingFactory) NewInstance(ctx context.Context) (runtime.Instance, error) {
	f.started.Add(1)
	inst, err := f.Factory.NewInstance(ctx)
	return ending{inst, f.end}, err
}

// An instance that ended between evals (a plugin process killed while
// idle) is replaced before the next eval, which runs on the new one
// instead of failing on the old.
func TestPlugin_InstanceEndedBetweenEvalsIsReplaced(t *testing.T) {
	var end atomic.Bool
	f := &endingFactory{Factory: native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{} }), end: &end}
	p := runtime.NewPlugin(f, runtime.PoolConfig{Instances: 1}, zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	for i, gone := range []bool{false, true, false} {
		end.Store(gone)
		if err := runtimetest.Process(p, h, h.RegisterEval(job), time.Second); err != nil {
			t.Fatalf("eval %d: %v", i, err)
		}
		end.Store(false) // the replacement lives
	}
	if got := f.started.Load(); got != 2 {
		t.Fatalf("%d instances started, want 2 (one replacing the ended one)", got)
	}
	if got := p.Stats().Recycled.Load(); got != 1 {
		t.Fatalf("recycled %d, want 1", got)
	}
}

func TestPlugin_Recycles(t *testing.T) {
	cases := []struct {
		name         string
		cfg          runtime.PoolConfig
		bytes        uint64
		evals        int
		wantRecycled int64
		// wantFull counts full syncs: the first eval of every instance.
		wantFull int64
	}{
		{"after N evals", runtime.PoolConfig{Instances: 1, MaxEvals: 3}, 0, 7, 2, 3},
		{"past the memory high-water mark", runtime.PoolConfig{Instances: 1, MaxMemoryBytes: 1 << 20}, 2 << 20, 3, 3, 3},
		{"under both limits", runtime.PoolConfig{Instances: 1, MaxEvals: 100, MaxMemoryBytes: 4 << 20}, 1 << 20, 5, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := sized{native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{} }), tc.bytes}
			p := runtime.NewPlugin(f, tc.cfg, zerolog.Nop())
			defer p.Close(context.Background())
			h := sdktest.New()
			job := sdktest.Job("web", 1)
			h.UpsertJob(job)
			for i := 0; i < tc.evals; i++ {
				if err := runtimetest.Process(p, h, h.RegisterEval(job), time.Second); err != nil {
					t.Fatal(err)
				}
			}
			st := p.Stats()
			if got := st.Recycled.Load(); got != tc.wantRecycled {
				t.Fatalf("recycled %d, want %d", got, tc.wantRecycled)
			}
			// A recycled instance's successor starts with a full sync.
			if got := st.FullSyncs.Load(); got != tc.wantFull {
				t.Fatalf("full syncs %d, want %d", got, tc.wantFull)
			}
		})
	}
}

// closeCounter records when its factory is closed.
type closeCounter struct {
	runtime.Factory
	closed chan struct{}
}

func (c *closeCounter) Close(ctx context.Context) error {
	close(c.closed)
	return c.Factory.Close(ctx)
}

// A Retire that gives up waiting still closes the old instances (for
// go-plugin: processes) once the evals in flight end.
func TestPlugin_RetireTimeoutClosesAfterInFlightEnds(t *testing.T) {
	g := &gate{version: "v1", entered: make(chan struct{}), release: make(chan struct{})}
	f := &closeCounter{Factory: native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return g }), closed: make(chan struct{})}
	old := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	next := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{version: "v2"} }),
		runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer next.Close(context.Background())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	done := make(chan error, 1)
	go func() { done <- runtimetest.Process(old, h, h.RegisterEval(job), 10*time.Second) }()
	<-g.entered

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := old.Retire(ctx, next); err == nil {
		t.Fatal("Retire returned without error while an eval was in flight past its deadline")
	}
	select {
	case <-f.closed:
		t.Fatal("the factory was closed while an eval was in flight")
	default:
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the retired plugin was never closed after its last eval ended")
	}
}

// failingUpdates is a harness host whose eval updates fail.
type failingUpdates struct {
	runtimetest.Host
	calls int
}

var errUpdate = errors.New("update refused")

func (f *failingUpdates) UpdateEval(context.Context, *sdk.Evaluation) error {
	f.calls++
	return errUpdate
}

// TestPlugin_DeferredEvalUpdate: the SDK's plugins defer their last eval
// update to the response (ABI 1.4); the pool applies it once, and its
// failure fails the call as the update's own call would have.
func TestPlugin_DeferredEvalUpdate(t *testing.T) {
	p := runtime.NewPlugin(native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{version: "v1"} }),
		runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	if err := runtimetest.Process(p, h, h.RegisterEval(job), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(h.Updated) != 1 || h.Updated[0].Status != sdk.EvalStatusComplete {
		t.Fatalf("updates %+v, want the one deferred update applied", h.Updated)
	}

	call := runtimetest.Call(h, h.RegisterEval(job))
	failing := &failingUpdates{Host: runtimetest.Host{H: h}}
	call.Planner = failing
	if err := p.Process(context.Background(), call); !errors.Is(err, errUpdate) || failing.calls != 1 {
		t.Fatalf("err %v after %d update calls, want the update's failure after one", err, failing.calls)
	}
}

// idling wraps a factory's instances with idle work that the test holds
// until it releases it, and records the order of calls.
type idling struct {
	runtime.Factory
	mu      sync.Mutex
	calls   []string
	hold    chan struct{} // each idle call takes one value
	fail    atomic.Bool
	created atomic.Int32
}

func (f *idling) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *idling) NewInstance(ctx context.Context) (runtime.Instance, error) {
	inst, err := f.Factory.NewInstance(ctx)
	f.created.Add(1)
	return &idlingInstance{Instance: inst, f: f}, err
}

type idlingInstance struct {
	runtime.Instance
	f *idling
}

func (i *idlingInstance) Process(ctx context.Context, req []byte, host plugin.HostFunc) ([]byte, error) {
	i.f.record("process")
	return i.Instance.Process(ctx, req, host)
}

func (i *idlingInstance) Idle(ctx context.Context) error {
	<-i.f.hold
	i.f.record("idle")
	if i.f.fail.Load() {
		return errors.New("idle trapped")
	}
	return nil
}

// TestPlugin_IdleWorkRunsBetweenEvalsOffTheirPath: an instance's idle work
// (ABI 1.5, a wasm guest's garbage collection) runs after each eval
// returns and before the instance's next eval; Close waits for it; an
// instance whose idle work fails is replaced.
func TestPlugin_IdleWorkRunsBetweenEvalsOffTheirPath(t *testing.T) {
	f := &idling{Factory: native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{} }), hold: make(chan struct{})}
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)

	// The eval returns while its idle work is still held.
	if err := runtimetest.Process(p, h, h.RegisterEval(job), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// The next eval waits for the one instance's idle work.
	second := make(chan error, 1)
	go func() { second <- runtimetest.Process(p, h, h.RegisterEval(job), 5*time.Second) }()
	select {
	case err := <-second:
		t.Fatalf("the second eval ran (%v) before the instance's idle work", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.hold <- struct{}{}
	if err := <-second; err != nil {
		t.Fatal(err)
	}

	// Close waits for the second eval's idle work.
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while idle work was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	f.hold <- struct{}{}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	got := strings.Join(f.calls, ",")
	f.mu.Unlock()
	if got != "process,idle,process,idle" {
		t.Fatalf("calls %s, want each eval followed by its idle work", got)
	}

	// Failed idle work recycles the instance: the next eval gets a new one.
	close(f.hold)
	f.fail.Store(true)
	p = runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	before := f.created.Load()
	for i := 0; i < 2; i++ {
		if err := runtimetest.Process(p, h, h.RegisterEval(job), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.created.Load() - before; got != 2 || p.Stats().Recycled.Load() < 1 {
		t.Fatalf("%d instances for two evals whose idle work failed (%d recycled), want 2", got, p.Stats().Recycled.Load())
	}
}

// TestPlugin_SettleWaitsForIdleWork: Settle returns once the idle work
// after an eval is done, and gives up at its context's end.
func TestPlugin_SettleWaitsForIdleWork(t *testing.T) {
	f := &idling{Factory: native.New(plugin.Info{Name: "p"}, func() sdk.Scheduler { return &gate{} }), hold: make(chan struct{})}
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(2), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	if err := runtimetest.Process(p, h, h.RegisterEval(job), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Settle(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Settle returned %v while idle work was held", err)
	}
	f.hold <- struct{}{}
	if err := p.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Settle gave every slot back: settling again finds them all free.
	quick, cancelQuick := context.WithTimeout(context.Background(), time.Second)
	defer cancelQuick()
	if err := p.Settle(quick); err != nil {
		t.Fatalf("a second Settle: %v", err)
	}
	close(f.hold)
}

// counted counts the instances its factory starts.
type counted struct {
	runtime.Factory
	created atomic.Int32
}

func (c *counted) NewInstance(ctx context.Context) (runtime.Instance, error) {
	c.created.Add(1)
	return c.Factory.NewInstance(ctx)
}

// TestPlugin_ResyncStartsOverOnAnotherState: after Resync, the same warm
// instance takes a state source whose indexes mean other changes with a
// full sync, and schedules on that state alone.
func TestPlugin_ResyncStartsOverOnAnotherState(t *testing.T) {
	f := &counted{Factory: native.New(plugin.Info{Name: "service", Types: []string{sdk.JobTypeService}},
		func() sdk.Scheduler { return &generic.Scheduler{} })}
	p := runtime.NewPlugin(f, runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())

	place := func(nodeID string) *sdktest.Harness {
		h := sdktest.New()
		h.UpsertNode(sdktest.Node(nodeID, 4000, 8192))
		job := sdktest.Job("web", 2)
		h.UpsertJob(job)
		if err := runtimetest.Process(p, h, h.RegisterEval(job), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		return h
	}
	place("first")
	if err := p.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := place("second")
	allocs := h.AllocsByJob("default", "web")
	if len(allocs) != 2 {
		t.Fatalf("%d allocations on the second state, want 2", len(allocs))
	}
	for _, a := range allocs {
		if a.NodeID != "second" {
			t.Fatalf("allocation %s on node %q, want the second state's node", a.Name, a.NodeID)
		}
	}
	st := p.Stats()
	if got := st.FullSyncs.Load(); got != 2 {
		t.Fatalf("%d full syncs, want 2 (one per state)", got)
	}
	if got := f.created.Load(); got != 1 {
		t.Fatalf("%d instances started, want the one kept warm", got)
	}
}
