package plan

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/internal/testlog"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/verify"
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// fakeRaft commits entries straight into a store, one at a time. With a
// gate, each apply waits for a value on it; entered is told when an apply
// starts.
type fakeRaft struct {
	mu      sync.Mutex
	store   *state.Store
	gate    chan struct{}
	entered chan struct{}
	fail    atomic.Int32 // fail this many applies
	calls   atomic.Int32
	jitter  bool
}

func (f *fakeRaft) ApplyEntry(data []byte) (uint64, error) {
	f.calls.Add(1)
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.gate != nil {
		<-f.gate
	}
	if f.jitter {
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail.Load() > 0 {
		f.fail.Add(-1)
		return 0, errors.New("raft: leadership lost")
	}
	idx := f.store.LatestIndex() + 1
	if resp := fsm.New(f.store, nil, zerolog.Nop()).Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data}); resp != nil {
		return 0, resp.(error)
	}
	return idx, nil
}

// allOutstanding says every eval is outstanding under token "t".
type allOutstanding struct{}

func (allOutstanding) Outstanding(string) (string, bool) { return "t", true }

func startApplier(t *testing.T, s *state.Store, r *fakeRaft) *Applier {
	t.Helper()
	return startLoggingApplier(t, s, r, zerolog.Nop())
}

// startLoggingApplier is startApplier with the applier logging to log.
func startLoggingApplier(t *testing.T, s *state.Store, r *fakeRaft, log zerolog.Logger) *Applier {
	t.Helper()
	q := NewQueue()
	q.SetEnabled(true)
	a := NewApplier(q, s, r, allOutstanding{}, verify.DefaultLimits(), nil, nil, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() {
		if r.gate != nil {
			close(r.gate)
		}
		cancel()
		<-done
	})
	return a
}

type verdict struct {
	res *sdk.PlanResult
	err error
}

func submitAsync(a *Applier, p *sdk.Plan) <-chan verdict {
	ch := make(chan verdict, 1)
	go func() {
		res, err := a.Submit(context.Background(), p)
		ch <- verdict{res, err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan verdict) verdict {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no verdict")
		return verdict{}
	}
}

func TestApplier_PipelinedPlanSeesPreviousPlan(t *testing.T) {
	s, job := fixture(t)
	r := &fakeRaft{store: s, gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	a := startApplier(t, s, r)
	first := submitAsync(a, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 600)}}})
	<-r.entered // the first plan is committing
	second := submitAsync(a, &sdk.Plan{EvalID: "hi", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("b", "n0", 600)}}})
	select {
	case v := <-second:
		t.Fatalf("the second plan was answered before the first committed: %+v", v)
	case <-time.After(50 * time.Millisecond):
	}
	r.gate <- struct{}{}
	v1, v2 := await(t, first), await(t, second)
	if v1.err != nil || len(v1.res.NodeAllocation["n0"]) != 1 {
		t.Fatalf("first plan: %+v %v", v1.res, v1.err)
	}
	if v2.err != nil || len(v2.res.RejectedNodes) != 1 || v2.res.RefreshIndex < v1.res.AllocIndex {
		t.Fatalf("second plan should be rejected with a refresh past the first commit: %+v %v", v2.res, v2.err)
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("%d raft applies, want 1", n)
	}
}

func TestApplier_PipelinedPlanCommitsAfterPrevious(t *testing.T) {
	s, job := fixture(t)
	r := &fakeRaft{store: s, gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	a := startApplier(t, s, r)
	first := submitAsync(a, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 500)}}})
	<-r.entered
	second := submitAsync(a, &sdk.Plan{EvalID: "hi", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("b", "n0", 500)}}})
	time.Sleep(20 * time.Millisecond)
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("the second plan went to raft before the first committed (%d applies)", n)
	}
	r.gate <- struct{}{}
	<-r.entered
	r.gate <- struct{}{}
	v1, v2 := await(t, first), await(t, second)
	if v1.err != nil || v2.err != nil || v2.res.AllocIndex <= v1.res.AllocIndex || len(v2.res.RejectedNodes) != 0 {
		t.Fatalf("verdicts %+v %v / %+v %v", v1.res, v1.err, v2.res, v2.err)
	}
}

// An eval created while a plan commits is not in the view that plan's
// commit is laid over (taken before the eval was): a plan for it is judged
// on the state once the commit is done, not refused for an eval that
// "does not exist"; nor is it logged as rejected, since it is not.
func TestApplier_PlanOfAnEvalNewerThanTheViewIsJudgedOnTheState(t *testing.T) {
	s, job := fixture(t)
	r := &fakeRaft{store: s, gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	var logs testlog.Buffer
	a := startLoggingApplier(t, s, r, zerolog.New(&logs))
	first := submitAsync(a, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 100)}}})
	<-r.entered // the first plan is committing, its view taken
	r.mu.Lock()
	err := s.Write(s.LatestIndex()+1, func(tx *state.Txn) error {
		return tx.UpsertEval(&sdk.Evaluation{ID: "late", Namespace: "default", JobID: "web", Type: "service",
			Priority: 50, Status: sdk.EvalStatusPending, TriggeredBy: sdk.EvalTriggerDeploymentWatcher})
	})
	r.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	second := submitAsync(a, &sdk.Plan{EvalID: "late", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("b", "n0", 100)}}})
	r.gate <- struct{}{}
	if v1 := await(t, first); v1.err != nil {
		t.Fatalf("first plan: %v", v1.err)
	}
	select {
	case <-r.entered: // the second plan is committing
		r.gate <- struct{}{}
	case v2 := <-second:
		t.Fatalf("the plan was answered without a commit: %+v %v", v2.res, v2.err)
	case <-time.After(10 * time.Second):
		t.Fatal("no commit and no verdict for the second plan")
	}
	if v2 := await(t, second); v2.err != nil || len(v2.res.NodeAllocation["n0"]) != 1 {
		t.Fatalf("second plan: %+v %v", v2.res, v2.err)
	}
	if out := logs.String(); strings.Contains(out, "plan rejected") {
		t.Fatalf("a plan the state accepted was logged as rejected:\n%s", out)
	}
}

func TestApplier_FailedCommitMakesNextPlanJudgedAgain(t *testing.T) {
	s, job := fixture(t)
	r := &fakeRaft{store: s, gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	r.fail.Store(1)
	a := startApplier(t, s, r)
	first := submitAsync(a, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 600)}}})
	<-r.entered
	second := submitAsync(a, &sdk.Plan{EvalID: "hi", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("b", "n0", 600)}}})
	time.Sleep(20 * time.Millisecond)
	r.gate <- struct{}{} // the first fails
	if v := await(t, first); v.err == nil {
		t.Fatal("the failed commit was not reported")
	}
	<-r.entered
	r.gate <- struct{}{}
	v2 := await(t, second)
	if v2.err != nil || len(v2.res.NodeAllocation["n0"]) != 1 {
		t.Fatalf("the second plan, judged again, should fit: %+v %v", v2.res, v2.err)
	}
}

func TestApplier_NodeChangeDuringCommitMakesNextPlanJudgedAgain(t *testing.T) {
	s, job := fixture(t)
	r := &fakeRaft{store: s, gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	a := startApplier(t, s, r)
	first := submitAsync(a, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 100)}}})
	<-r.entered
	second := submitAsync(a, &sdk.Plan{EvalID: "hi", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n1": {place("b", "n1", 100)}}})
	time.Sleep(20 * time.Millisecond)
	// n1 goes down while the first plan commits.
	r.mu.Lock()
	err := s.Write(s.LatestIndex()+1, func(tx *state.Txn) error {
		n := *tx.Node("n1")
		n.Status = sdk.NodeStatusDown
		return tx.UpsertNode(&n)
	})
	r.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	r.gate <- struct{}{}
	await(t, first)
	v2 := await(t, second)
	if v2.err != nil || len(v2.res.RejectedNodes) != 1 {
		t.Fatalf("a placement on a node that went down was committed: %+v %v", v2.res, v2.err)
	}
}

type noneOutstanding struct{}

func (noneOutstanding) Outstanding(string) (string, bool) { return "", false }

func TestApplier_StaleTokenRejected(t *testing.T) {
	s, job := fixture(t)
	q := NewQueue()
	q.SetEnabled(true)
	a := NewApplier(q, s, &fakeRaft{store: s}, noneOutstanding{}, verify.DefaultLimits(), nil, nil, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	_, err := a.Submit(ctx, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: job,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 1)}}})
	if !errors.Is(err, ErrStaleToken) {
		t.Fatalf("err = %v", err)
	}
}

func TestQueue_PriorityOrderAndDisable(t *testing.T) {
	q := NewQueue()
	if _, err := q.Enqueue(&sdk.Plan{}); !errors.Is(err, ErrQueueDisabled) {
		t.Fatalf("enqueue on a disabled queue: %v", err)
	}
	q.SetEnabled(true)
	var replies []<-chan Response
	for _, prio := range []int{10, 90, 50, 90} {
		ch, err := q.Enqueue(&sdk.Plan{EvalID: fmt.Sprint(prio), Priority: prio})
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, ch)
	}
	var got []int
	for i := 0; i < 3; i++ {
		p, _ := q.dequeue(context.Background())
		got = append(got, p.plan.Priority)
	}
	if fmt.Sprint(got) != "[90 90 50]" {
		t.Fatalf("order %v", got)
	}
	q.SetEnabled(false)
	if r := <-replies[0]; !errors.Is(r.Err, ErrQueueDisabled) {
		t.Fatalf("a queued plan was not failed on disable: %v", r.Err)
	}
}

// TestApplier_Property_NoNodeOvercommitted has many schedulers submit
// plans concurrently, built from stale views, to a pipelined applier whose
// raft commits with jitter, and checks that no node ever holds more than
// its capacity.
func TestApplier_Property_NoNodeOvercommitted(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s, _ := state.NewStore()
			const nodes, jobs = 6, 8
			err := s.Write(1, func(tx *state.Txn) error {
				for i := 0; i < nodes; i++ {
					if err := tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("n%d", i), Status: "ready", SchedulingEligibility: "eligible",
						NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 1000}, Memory: sdk.NodeMemoryResources{MemoryMB: 1000}}}); err != nil {
						return err
					}
				}
				for j := 0; j < jobs; j++ {
					if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: fmt.Sprintf("j%d", j), Type: "service", Priority: 50,
						TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}); err != nil {
						return err
					}
					if err := tx.UpsertEval(&sdk.Evaluation{ID: fmt.Sprintf("e%d", j), Namespace: "default", JobID: fmt.Sprintf("j%d", j),
						Priority: 50, Status: sdk.EvalStatusPending}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			r := &fakeRaft{store: s, jitter: true}
			a := startApplier(t, s, r)
			var wg sync.WaitGroup
			for j := 0; j < jobs; j++ {
				wg.Add(1)
				go func(j int) {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, uint64(j)))
					for k := 0; k < 25; k++ {
						snap := s.Snapshot()
						job := snap.Job("default", fmt.Sprintf("j%d", j))
						p := &sdk.Plan{EvalID: fmt.Sprintf("e%d", j), EvalToken: "t", Job: job, AllAtOnce: rng.IntN(4) == 0}
						// Stop a random live allocation of this job now and then.
						for _, al := range snap.AllocsByJob("default", job.ID) {
							if !al.TerminalStatus() && rng.IntN(4) == 0 {
								p.AppendStoppedAlloc(al, "", "")
								break
							}
						}
						for n := 0; n < 1+rng.IntN(3); n++ {
							node := fmt.Sprintf("n%d", rng.IntN(nodes))
							p.AppendAlloc(&sdk.Allocation{ID: fmt.Sprintf("a-%d-%d-%d", j, k, n), Namespace: "default", JobID: job.ID,
								TaskGroup: "g", NodeID: node, AllocatedResources: res(int64(100 + rng.IntN(400)))})
						}
						if _, err := a.Submit(context.Background(), p); err != nil {
							t.Error(err)
							return
						}
					}
				}(j)
			}
			wg.Wait()
			snap := s.Snapshot()
			placed := 0
			for _, n := range snap.Nodes() {
				allocs := snap.AllocsByNode(n.ID)
				// The applier counts stopped allocations free (as
				// Nomad's): the live ones must fit.
				live := slices.DeleteFunc(slices.Clone(allocs), (*sdk.Allocation).TerminalStatus)
				if ok, dim := feasible.AllocsFit(n, live); !ok {
					t.Fatalf("node %s over-committed on %s", n.ID, dim)
				}
				for _, al := range allocs {
					if !al.TerminalStatus() {
						placed++
					}
				}
			}
			if placed == 0 {
				t.Fatal("nothing was placed: the test proves nothing")
			}
		})
	}
}

// The applier reports how long plans take to verify, commit and answer,
// and counts the nodes it refuses, by node.
func TestApplier_Metrics(t *testing.T) {
	s, job := fixture(t)
	q := NewQueue()
	q.SetEnabled(true)
	a := NewApplier(q, s, &fakeRaft{store: s}, allOutstanding{}, verify.DefaultLimits(), nil, nil, zerolog.Nop())
	inm := metrics.NewInmemSink(time.Minute, time.Minute)
	conf := metrics.DefaultConfig("drover")
	conf.EnableHostname, conf.EnableRuntimeMetrics = false, false
	a.Metrics, _ = metrics.New(conf, inm)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	for _, id := range []string{"a", "b"} { // the second does not fit beside the first
		if _, err := a.Submit(ctx, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: job,
			NodeAllocation: map[string][]*sdk.Allocation{"n0": {place(id, "n0", 600)}}}); err != nil {
			t.Fatal(err)
		}
	}
	data := inm.Data()[0]
	data.RLock()
	defer data.RUnlock()
	want := map[string]int{"drover.plan.submit": 2, "drover.plan.evaluate": 2, "drover.plan.apply": 1}
	for name, n := range want {
		if got := data.Samples[name]; got.AggregateSample == nil || got.Count != n {
			t.Errorf("%s: %+v, want %d samples", name, got.AggregateSample, n)
		}
	}
	if got := data.Counters["drover.plan.node_rejected;node_id=n0"]; got.AggregateSample == nil || got.Sum != 1 {
		t.Errorf("node_rejected for n0: %+v, want 1; counters: %v", got.AggregateSample, data.Counters)
	}
}

// An applier starts no goroutine of its own until Run (go-metrics starts a
// runtime sampler that never stops unless told not to).
func TestApplier_NewStartsNoGoroutine(t *testing.T) {
	s, _ := fixture(t)
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		NewApplier(NewQueue(), s, &fakeRaft{store: s}, allOutstanding{}, verify.DefaultLimits(), nil, nil, zerolog.Nop())
	}
	if n := runtime.NumGoroutine() - before; n >= 50 {
		t.Fatalf("50 appliers left %d more goroutines", n)
	}
}

// TestApplier_PlacementsMustHoldTheirDevices: the applier refuses, as
// invalid, a plan placing a group whose task asks for two nvidia GPUs
// without them, with one, or with the node's FPGA named as a GPU; it
// commits one holding two of the node's GPUs, and an in-place update of an
// allocation placed before the host checked devices (holding none) that
// keeps what it holds.
func TestApplier_PlacementsMustHoldTheirDevices(t *testing.T) {
	s, _ := fixture(t)
	tg := &sdk.TaskGroup{Name: "train", Count: 2, Tasks: []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 100, MemoryMB: 10,
		Devices: []*sdk.RequestedDevice{{Name: "nvidia/gpu", Count: 2}}}}}}
	ml := &sdk.Job{Namespace: "default", ID: "ml", Type: "service", Priority: 50, TaskGroups: []*sdk.TaskGroup{tg}}
	gpuNode := &sdk.Node{ID: "gpu", Status: "ready", SchedulingEligibility: "eligible",
		NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 1000}, Memory: sdk.NodeMemoryResources{MemoryMB: 1000},
			Disk: sdk.NodeDiskResources{DiskMB: 1000}, Devices: []*sdk.NodeDeviceResource{
				{Vendor: "nvidia", Type: "gpu", Name: "1080ti", Instances: []*sdk.NodeDevice{{ID: "g0", Healthy: true}, {ID: "g1", Healthy: true}, {ID: "g2", Healthy: true}}},
				{Vendor: "xilinx", Type: "fpga", Name: "u250", Instances: []*sdk.NodeDevice{{ID: "f0", Healthy: true}}}}}}
	holding := func(ids ...string) *sdk.AllocatedResources {
		r := sdk.RequestedResources(tg)
		if len(ids) > 0 {
			r.Tasks["t"].Devices = []*sdk.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "1080ti", DeviceIDs: ids}}
		}
		return r
	}
	alloc := func(id string, r *sdk.AllocatedResources) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: "ml", TaskGroup: "train", NodeID: "gpu", DesiredStatus: "run", AllocatedResources: r}
	}
	err := s.Write(2, func(tx *state.Txn) error {
		if err := tx.UpsertNode(gpuNode); err != nil {
			return err
		}
		if err := tx.UpsertJob(ml); err != nil {
			return err
		}
		if err := tx.UpsertEval(&sdk.Evaluation{ID: "m1", Namespace: "default", JobID: "ml", Type: "service", Priority: 50, Status: sdk.EvalStatusPending}); err != nil {
			return err
		}
		old := alloc("old", holding()) // placed before the host checked devices
		old.Job = ml
		return tx.UpsertAlloc(old)
	})
	if err != nil {
		t.Fatal(err)
	}
	job := s.Snapshot().Job("default", "ml")
	var logs testlog.Buffer
	a := startLoggingApplier(t, s, &fakeRaft{store: s}, zerolog.New(&logs))
	submit := func(allocs ...*sdk.Allocation) (*sdk.PlanResult, error) {
		return a.Submit(context.Background(), &sdk.Plan{EvalID: "m1", EvalToken: "t", Job: job,
			NodeAllocation: map[string][]*sdk.Allocation{"gpu": allocs}})
	}
	for name, r := range map[string]*sdk.AllocatedResources{
		"none":             holding(),
		"one":              holding("g0"),
		"an fpga as a gpu": holding("g0", "f0"),
	} {
		if _, err := submit(alloc("new", r)); !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), "device nvidia/gpu") {
			t.Errorf("placement holding %s: err = %v, want ErrPlanInvalid naming the device", name, err)
		}
	}
	if n := strings.Count(logs.String(), `"plan rejected"`); n != 3 {
		t.Errorf("%d plans logged as rejected, want the 3 refused:\n%s", n, logs.String())
	}
	res, err := submit(alloc("new", holding("g0", "g1")), alloc("old", holding()))
	if err != nil || len(res.NodeAllocation["gpu"]) != 2 {
		t.Fatalf("a placement holding its GPUs and an update keeping what it holds: %+v, %v; want both committed", res, err)
	}
	if got := s.Snapshot().Alloc("new").AllocatedResources.Tasks["t"].Devices[0].DeviceIDs; !slices.Equal(got, []string{"g0", "g1"}) {
		t.Fatalf("new holds %v, want g0 and g1", got)
	}
}

// A CSI volume registered again while a plan commits makes the plan
// pipelined behind it judged again on the state: judged against its view,
// a second writer of a volume that has just stopped offering a
// multi-writer mode would be committed.
func TestApplier_CSIVolumeChangeDuringCommitMakesNextPlanJudgedAgain(t *testing.T) {
	s, job := fixture(t)
	mode := func(m string) []*sdk.CSIVolumeCapability {
		return []*sdk.CSIVolumeCapability{{AccessMode: m, AttachmentMode: sdk.CSIAttachmentModeFilesystem}}
	}
	csiJob := *job
	csiJob.TaskGroups = []*sdk.TaskGroup{{Name: "g", Count: 3, Volumes: map[string]sdk.Opaque{"data": {"Type": "csi", "Source": "data",
		"AccessMode": sdk.CSIAccessModeMultiNodeMultiWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}}}
	err := s.Write(s.LatestIndex()+1, func(tx *state.Txn) error {
		for _, id := range []string{"n0", "n1"} {
			n := *tx.Node(id)
			n.CSINodePlugins = map[string]*sdk.CSIInfo{"ebs": {PluginID: "ebs", Healthy: true, NodeInfo: &sdk.CSINodeInfo{ID: id}}}
			if err := tx.UpsertNode(&n); err != nil {
				return err
			}
		}
		if err := tx.UpsertJob(&csiJob); err != nil {
			return err
		}
		return tx.RegisterCSIVolumes([]*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs",
			RequestedCapabilities: mode(sdk.CSIAccessModeMultiNodeMultiWriter)}})
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := s.Snapshot().Job("default", "web")
	r := &fakeRaft{store: s, gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	a := startApplier(t, s, r)
	first := submitAsync(a, &sdk.Plan{EvalID: "e1", EvalToken: "t", Job: stored,
		NodeAllocation: map[string][]*sdk.Allocation{"n0": {place("a", "n0", 100)}}})
	<-r.entered
	second := submitAsync(a, &sdk.Plan{EvalID: "hi", EvalToken: "t", Job: stored,
		NodeAllocation: map[string][]*sdk.Allocation{"n1": {place("b", "n1", 100)}}})
	time.Sleep(20 * time.Millisecond)
	// The volume now offers a single writer only.
	r.mu.Lock()
	err = s.Write(s.LatestIndex()+1, func(tx *state.Txn) error {
		return tx.RegisterCSIVolumes([]*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs",
			RequestedCapabilities: mode(sdk.CSIAccessModeSingleNodeWriter)}})
	})
	r.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	r.gate <- struct{}{}
	if v := await(t, first); v.err != nil || len(v.res.NodeAllocation["n0"]) != 1 {
		t.Fatalf("first plan: %+v %v", v.res, v.err)
	}
	go func() { // let a commit of the second plan through, should it come
		<-r.entered
		r.gate <- struct{}{}
	}()
	v2 := await(t, second)
	if v2.err != nil || len(v2.res.RejectedNodes) != 1 {
		t.Fatalf("a second writer was committed after the volume stopped offering several: %+v %v", v2.res, v2.err)
	}
}
