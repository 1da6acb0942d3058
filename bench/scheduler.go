// Package bench measures Drover's built-in schedulers on the scenarios of
// the Nomad peer benchmark (../shared/peers/nomad), so that the two can be
// compared side by side on one machine.
//
// Each run builds a fresh state (go-memdb, the host's state store) with N
// nodes written through the host's FSM, starts the job type's plugin (wasm,
// go-plugin or native), warms its instance (a first eval brings its state
// mirror up to the nodes, as a long-running server's would be), then
// registers the scenario's jobs one after another and times each eval:
// from handing it to the plugin runtime (state delta, scheduler, plan
// submission; waiting for the instance if its collection between evals
// is still running) to the plugin's return, with the plan applied to the
// store through the FSM. Like the Nomad harness, plans are applied without
// the applier's re-check unless Config.Verify is set, and no raft or
// broker is involved.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/plan"
	"github.com/drover-sched/drover/host/state"
	rt "github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// Scenario is one benchmark scenario, named as in the Nomad peer.
type Scenario struct {
	Name string
	// Type is the job type: service, batch, system or sysbatch.
	Type string
	// Jobs are registered and evaluated one after another.
	Jobs int
	// Count is the group count (service and batch).
	Count int
	// Spread adds a rack constraint and a spread over racks.
	Spread bool
}

// Scenarios are the Nomad peer's scenarios.
var Scenarios = []Scenario{
	{Name: "service-10x100", Type: sdk.JobTypeService, Jobs: 10, Count: 100},
	{Name: "service-1x1000", Type: sdk.JobTypeService, Jobs: 1, Count: 1000},
	{Name: "service-1x1000-spread", Type: sdk.JobTypeService, Jobs: 1, Count: 1000, Spread: true},
	{Name: "batch-10x100", Type: sdk.JobTypeBatch, Jobs: 10, Count: 100},
	{Name: "batch-1x1000", Type: sdk.JobTypeBatch, Jobs: 1, Count: 1000},
	{Name: "system-1", Type: sdk.JobTypeSystem, Jobs: 1},
	{Name: "system-5", Type: sdk.JobTypeSystem, Jobs: 5},
	{Name: "sysbatch-1", Type: sdk.JobTypeSysBatch, Jobs: 1},
}

// Errors.
var (
	// ErrUnknownScenario: a scenario name is not one of Scenarios.
	ErrUnknownScenario = errors.New("bench: unknown scenario")
	// ErrInvalidConfig: the configuration is inconsistent.
	ErrInvalidConfig = errors.New("bench: invalid configuration")
)

// Config configures a benchmark.
type Config struct {
	// Nodes are the cluster sizes.
	Nodes []int
	// Runs per (scenario, size); medians are reported.
	Runs int
	// Scenarios to run (names); empty means all.
	Scenarios []string
	// NodeCPU (MHz), NodeMem (MB), TaskCPU, TaskMem shape nodes and tasks.
	NodeCPU, NodeMem, TaskCPU, TaskMem int
	// Racks is the number of distinct meta.rack values.
	Racks int
	// Ports gives each group one dynamic port.
	Ports bool
	// Verify re-checks each plan as the host's applier does before
	// applying it (the Nomad harness does not).
	Verify bool
	// Plugins returns the plugin that schedules a job type; its owner
	// closes it. Each run begins with a full sync of its own cluster
	// (Resync, then a warm-up eval), whether the plugin is new or not.
	Plugins func(jobType string) (*rt.Plugin, error)
	// Runtime names the runtime in the report header.
	Runtime string
	// Log receives the plugins' logs.
	Log zerolog.Logger
}

// DefaultConfig is the Nomad peer's default shape.
func DefaultConfig() Config {
	return Config{Nodes: []int{1000, 5000}, Runs: 5, NodeCPU: 4000, NodeMem: 8192, TaskCPU: 100, TaskMem: 128, Racks: 25,
		Runtime: "native", Log: zerolog.Nop()}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case len(c.Nodes) == 0:
		return fmt.Errorf("%w: no cluster sizes", ErrInvalidConfig)
	case c.Runs <= 0:
		return fmt.Errorf("%w: runs must be positive", ErrInvalidConfig)
	case c.NodeCPU <= 0 || c.NodeMem <= 0 || c.TaskCPU <= 0 || c.TaskMem <= 0:
		return fmt.Errorf("%w: node and task resources must be positive", ErrInvalidConfig)
	case c.Racks <= 0:
		return fmt.Errorf("%w: racks must be positive", ErrInvalidConfig)
	case c.Plugins == nil:
		return fmt.Errorf("%w: no plugins", ErrInvalidConfig)
	}
	for _, n := range c.Nodes {
		if n <= 0 {
			return fmt.Errorf("%w: cluster size %d", ErrInvalidConfig, n)
		}
	}
	_, err := c.scenarios()
	return err
}

func (c Config) scenarios() ([]Scenario, error) {
	if len(c.Scenarios) == 0 {
		return Scenarios, nil
	}
	var out []Scenario
	for _, name := range c.Scenarios {
		i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: %q", ErrUnknownScenario, name)
		}
		out = append(out, Scenarios[i])
	}
	return out, nil
}

// EvalResult is one timed eval.
type EvalResult struct {
	Wall   time.Duration
	Placed int
	Failed int
	Status string
}

// RunResult is one run of a scenario.
type RunResult struct {
	Scenario string
	Nodes    int
	Setup    time.Duration
	Evals    []EvalResult
	Total    time.Duration
	Placed   int
}

// Row is a scenario's line in the report: medians over runs.
type Row struct {
	Scenario                      string
	Nodes, Evals, Placed, Failed  int
	EvalMedMS, EvalMaxMS, TotalMS float64
	PlacementsPerSec              float64
	SetupMS                       float64
	Status                        string
}

// Run runs every (size, scenario) pair and returns the rows; header and
// rows are also written to out as they complete (out may be nil).
func Run(ctx context.Context, cfg Config, out io.Writer) ([]Row, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if out == nil {
		out = io.Discard
	}
	scens, _ := cfg.scenarios()
	writeHeader(out, cfg)
	fmt.Fprintf(out, "%-22s %6s %5s %7s %7s %10s %10s %10s %12s %9s %s\n",
		"scenario", "nodes", "evals", "placed", "failed", "eval_med", "eval_max", "total_ms", "placements/s", "setup_ms", "status")
	var rows []Row
	for _, n := range cfg.Nodes {
		for _, sc := range scens {
			var runs []RunResult
			for r := 0; r < cfg.Runs; r++ {
				rr, err := runOne(ctx, cfg, sc, n)
				if err != nil {
					return rows, fmt.Errorf("bench: %s at %d nodes: %w", sc.Name, n, err)
				}
				runs = append(runs, rr)
			}
			row := summarize(sc, n, runs)
			rows = append(rows, row)
			fmt.Fprintf(out, "%-22s %6d %5d %7d %7d %10.2f %10.2f %10.1f %12.0f %9.0f %s\n",
				row.Scenario, row.Nodes, row.Evals, row.Placed, row.Failed, row.EvalMedMS, row.EvalMaxMS, row.TotalMS,
				row.PlacementsPerSec, row.SetupMS, row.Status)
		}
	}
	return rows, nil
}

// writeHeader writes the report's first line: what ran, where, and how.
func writeHeader(out io.Writer, cfg Config) {
	fmt.Fprintf(out, "# drover %s schedulers (%s) | go %s GOMAXPROCS=%d | node %dMHz/%dMB | task %dMHz/%dMB | ports=%v verify=%v | runs=%d\n",
		"built-in", cfg.Runtime, runtime.Version(), runtime.GOMAXPROCS(0), cfg.NodeCPU, cfg.NodeMem, cfg.TaskCPU, cfg.TaskMem,
		cfg.Ports, cfg.Verify, cfg.Runs)
}

func summarize(sc Scenario, nodes int, runs []RunResult) Row {
	var totals, meds, maxs, pps, setups []float64
	status := map[string]int{}
	row := Row{Scenario: sc.Name, Nodes: nodes, Evals: sc.Jobs}
	for _, rr := range runs {
		var ev []float64
		mx := 0.0
		failed := 0
		for _, e := range rr.Evals {
			ev = append(ev, ms(e.Wall))
			mx = math.Max(mx, ms(e.Wall))
			failed += e.Failed
			status[e.Status]++
		}
		totals = append(totals, ms(rr.Total))
		meds = append(meds, median(ev))
		maxs = append(maxs, mx)
		pps = append(pps, float64(rr.Placed)/rr.Total.Seconds())
		setups = append(setups, ms(rr.Setup))
		row.Placed, row.Failed = rr.Placed, failed
	}
	row.EvalMedMS, row.EvalMaxMS, row.TotalMS = median(meds), median(maxs), median(totals)
	row.PlacementsPerSec, row.SetupMS = median(pps), median(setups)
	var st []string
	for k, v := range status {
		st = append(st, fmt.Sprintf("%s:%d", k, v))
	}
	slices.Sort(st)
	row.Status = strings.Join(st, ",")
	return row
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cluster is one run's state: a store written through the FSM.
type cluster struct {
	store *state.Store
	fsm   *fsm.FSM
	index uint64
	seq   int
}

func newCluster(log zerolog.Logger) (*cluster, error) {
	store, err := state.NewStore()
	if err != nil {
		return nil, err
	}
	return &cluster{store: store, fsm: fsm.New(store, nil, log)}, nil
}

// apply writes one log entry through the FSM, as raft would deliver it.
func (c *cluster) apply(t fsm.MessageType, msg msgp.Marshaler) error {
	data, err := fsm.Encode(t, msg)
	if err != nil {
		return err
	}
	c.index++
	if res := c.fsm.Apply(&raft.Log{Index: c.index, Type: raft.LogCommand, Data: data}); res != nil {
		if err, ok := res.(error); ok {
			return err
		}
	}
	return nil
}

// id returns a deterministic UUID-shaped ID.
func (c *cluster) id(kind byte) string {
	c.seq++
	return fmt.Sprintf("%08x-0000-4000-8%03x-%012x", uint32(kind), c.seq>>48, c.seq)
}

func runOne(ctx context.Context, cfg Config, sc Scenario, nodes int) (RunResult, error) {
	rr := RunResult{Scenario: sc.Name, Nodes: nodes}
	c, err := newCluster(cfg.Log)
	if err != nil {
		return rr, err
	}
	start := time.Now()
	for i := 0; i < nodes; i++ {
		if err := c.apply(fsm.NodeRegisterRequestType, &fsm.NodeRegisterRequest{Node: makeNode(cfg, c, i)}); err != nil {
			return rr, err
		}
	}
	rr.Setup = time.Since(start)

	pl, err := cfg.Plugins(sc.Type)
	if err != nil {
		return rr, err
	}
	// Warm the instance: start it if new, and bring its mirror up to this
	// cluster's nodes with a full sync (its sync point, if any, is the
	// previous run's cluster).
	if err := pl.Resync(ctx); err != nil {
		return rr, err
	}
	warm := &sdk.Evaluation{ID: c.id('w'), Namespace: sdk.DefaultNamespace, Priority: 50, Type: sc.Type,
		TriggeredBy: sdk.EvalTriggerJobRegister, JobID: "bench-warmup", Status: sdk.EvalStatusPending}
	if err := c.apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{warm}}); err != nil {
		return rr, err
	}
	if _, err := c.process(ctx, cfg, pl, warm.ID); err != nil {
		return rr, fmt.Errorf("warm-up: %w", err)
	}
	// The instance collects the full sync's garbage once the warm-up is
	// answered (ABI 1.5, drover_idle): that is setup too.
	if err := pl.Settle(ctx); err != nil {
		return rr, fmt.Errorf("warm-up: %w", err)
	}

	for j := 0; j < sc.Jobs; j++ {
		job := makeJob(cfg, sc, c.id('j'))
		eval := &sdk.Evaluation{ID: c.id('e'), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
			TriggeredBy: sdk.EvalTriggerJobRegister, JobID: job.ID, Status: sdk.EvalStatusPending}
		if err := c.apply(fsm.JobRegisterRequestType, &fsm.JobRegisterRequest{Job: job, Eval: eval}); err != nil {
			return rr, err
		}
		runtime.GC() // keep setup's garbage out of the timed section
		var er EvalResult
		// The labels let a profile focus on timed evals (-tagfocus
		// phase=eval) and split them by scenario (-tags).
		perr := sampled(func() {
			pprof.Do(ctx, pprof.Labels("phase", "eval", "scenario", fmt.Sprintf("%s/%d", sc.Name, nodes)), func(ctx context.Context) {
				er, err = c.process(ctx, cfg, pl, eval.ID)
			})
		})
		if err = errors.Join(err, perr); err != nil {
			return rr, err
		}
		rr.Evals = append(rr.Evals, er)
		rr.Total += er.Wall
		rr.Placed += er.Placed
	}
	return rr, nil
}

// process hands one stored eval to the plugin and times it.
func (c *cluster) process(ctx context.Context, cfg Config, pl *rt.Plugin, evalID string) (EvalResult, error) {
	snap := c.store.Snapshot()
	eval := snap.Eval(evalID)
	p := &planner{c: c, verify: cfg.Verify}
	start := time.Now()
	err := pl.Process(ctx, &rt.Call{Eval: eval, Token: "bench", Now: time.Unix(1_700_000_000, 0), State: snap, Planner: p, Log: cfg.Log})
	wall := time.Since(start)
	if err != nil {
		return EvalResult{}, err
	}
	if p.final == nil {
		return EvalResult{}, fmt.Errorf("bench: eval %s was not concluded", evalID)
	}
	er := EvalResult{Wall: wall, Placed: p.placed, Status: p.final.Status}
	for _, m := range p.final.FailedTGAllocs {
		er.Failed += m.CoalescedFailures + 1
	}
	return er, nil
}

// planner applies plans and evals to the cluster as the Nomad harness
// does: straight to the store, in the FSM's transactions but without
// encoding log entries (no raft), no plan queue.
type planner struct {
	c      *cluster
	verify bool
	placed int
	final  *sdk.Evaluation
}

var _ rt.Planner = (*planner)(nil)

func (p *planner) SubmitPlan(_ context.Context, pl *sdk.Plan) (*sdk.PlanResult, rt.StateSource, error) {
	snap := p.c.store.Snapshot()
	if p.verify {
		if err := verify.Plan(snap, pl, verify.DefaultLimits()); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", sdk.ErrPlanInvalid, err)
		}
		res, req := plan.Evaluate(snap, pl, 0, func() string { return p.c.id('p') })
		if req != nil {
			if err := p.c.apply(fsm.ApplyPlanResultsRequestType, req); err != nil {
				return nil, nil, err
			}
		}
		res.AllocIndex = p.c.index
		for _, as := range res.NodeAllocation {
			p.placed += len(as)
		}
		if res.RefreshIndex != 0 {
			res.RefreshIndex = p.c.index
			return res, p.c.store.Snapshot(), nil
		}
		return res, nil, nil
	}
	req := &fsm.ApplyPlanResultsRequest{Job: pl.Job, EvalID: pl.EvalID, Deployment: pl.Deployment,
		DeploymentUpdates: pl.DeploymentUpdates}
	res := &sdk.PlanResult{NodeUpdate: pl.NodeUpdate, NodeAllocation: pl.NodeAllocation, NodePreemptions: pl.NodePreemptions,
		Deployment: pl.Deployment, DeploymentUpdates: pl.DeploymentUpdates}
	for _, n := range sortedKeys(pl.NodeUpdate) {
		req.AllocsStopped = append(req.AllocsStopped, pl.NodeUpdate[n]...)
	}
	for _, n := range sortedKeys(pl.NodeAllocation) {
		req.AllocsUpdated = append(req.AllocsUpdated, pl.NodeAllocation[n]...)
		p.placed += len(pl.NodeAllocation[n])
	}
	for _, n := range sortedKeys(pl.NodePreemptions) {
		req.AllocsPreempted = append(req.AllocsPreempted, pl.NodePreemptions[n]...)
	}
	p.c.index++
	if err := p.c.fsm.ApplyDecoded(p.c.index, req); err != nil {
		return nil, nil, err
	}
	res.AllocIndex = p.c.index
	return res, nil, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (p *planner) evals(e *sdk.Evaluation) error {
	p.c.index++
	return p.c.fsm.ApplyDecoded(p.c.index, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{e}})
}

func (p *planner) UpdateEval(_ context.Context, e *sdk.Evaluation) error {
	p.final = e
	return p.evals(e)
}

func (p *planner) CreateEval(_ context.Context, e *sdk.Evaluation) error { return p.evals(e) }

func (p *planner) ReblockEval(_ context.Context, e *sdk.Evaluation) error {
	p.final = e
	return p.evals(e)
}

// makeNode is the Nomad peer's node: Nomad's mock node with the given CPU
// and memory, no reserved resources, meta.rack = r(i mod racks).
func makeNode(cfg Config, c *cluster, i int) *sdk.Node {
	name := fmt.Sprintf("node-%05d", i)
	return &sdk.Node{
		ID: c.id('n'), Name: name, Datacenter: "dc1", NodePool: sdk.DefaultNodePool, NodeClass: "linux-medium-pci",
		Attributes: map[string]string{"kernel.name": "linux", "arch": "x86", "nomad.version": "0.5.0",
			"driver.exec": "1", "driver.mock_driver": "1", "consul.version": "1.11.4", "unique.hostname": name},
		Meta: map[string]string{"pci-dss": "true", "database": "mysql", "version": "5.6",
			"rack": fmt.Sprintf("r%d", i%cfg.Racks)},
		Drivers: map[string]*sdk.DriverInfo{"exec": {Detected: true, Healthy: true}, "mock_driver": {Detected: true, Healthy: true}},
		NodeResources: &sdk.NodeResources{
			Cpu:      sdk.NodeCpuResources{CpuShares: int64(cfg.NodeCPU)},
			Memory:   sdk.NodeMemoryResources{MemoryMB: int64(cfg.NodeMem)},
			Disk:     sdk.NodeDiskResources{DiskMB: 100 * 1024},
			Networks: []*sdk.NetworkResource{{Mode: "host", Device: "eth0", CIDR: "192.168.0.100/32", IP: "192.168.0.100", MBits: 1000}},
		},
		ReservedResources:     &sdk.NodeReservedResources{},
		Links:                 map[string]string{"consul": "foobar.dc1"},
		Status:                sdk.NodeStatusReady,
		SchedulingEligibility: sdk.NodeSchedulingEligible,
	}
}

// makeJob is the Nomad peer's job: Nomad's mock job of the type with one
// job constraint (${attr.kernel.name} = linux), one group of one task
// (TaskCPU / TaskMem, 150 MB disk), and for the spread scenario a rack
// constraint (r0..r12) and a spread over meta.rack.
func makeJob(cfg Config, sc Scenario, id string) *sdk.Job {
	job := &sdk.Job{
		Region: "global", Namespace: sdk.DefaultNamespace, ID: sc.Type + "-" + id[len(id)-8:], Type: sc.Type,
		Priority: sdk.JobDefaultPriority, Datacenters: []string{"dc1"}, NodePool: sdk.DefaultNodePool,
		Constraints: []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		Meta:        map[string]string{"owner": "armon"},
	}
	job.Name = job.ID
	group, driver := "web", "exec"
	count := sc.Count
	switch sc.Type {
	case sdk.JobTypeBatch:
		driver = "mock_driver"
	case sdk.JobTypeSystem:
		job.Priority = sdk.JobMaxPriority
		count = 1
	case sdk.JobTypeSysBatch:
		job.Priority = 10
		count = 1
	}
	if sc.Spread {
		var racks []string
		for i := 0; i < cfg.Racks/2+1; i++ {
			racks = append(racks, fmt.Sprintf("r%d", i))
		}
		job.Constraints = append(job.Constraints, &sdk.Constraint{LTarget: "${meta.rack}", RTarget: strings.Join(racks, ","),
			Operand: sdk.ConstraintSetContainsAny})
		job.Spreads = []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 100}}
	}
	tg := &sdk.TaskGroup{
		Name: group, Count: count, EphemeralDisk: &sdk.EphemeralDisk{SizeMB: 150},
		RestartPolicy:    &sdk.RestartPolicy{Attempts: 3, Interval: 10 * time.Minute, Delay: time.Minute, Mode: "delay"},
		ReschedulePolicy: &sdk.ReschedulePolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 5 * time.Second, DelayFunction: "constant"},
		Migrate:          &sdk.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute},
		Tasks: []*sdk.Task{{Name: group, Driver: driver, Config: sdk.Opaque{"command": "/bin/date"},
			Env: map[string]string{"FOO": "bar"}, Meta: map[string]string{"foo": "bar"},
			Resources: &sdk.Resources{CPU: cfg.TaskCPU, MemoryMB: cfg.TaskMem}}},
	}
	if cfg.Ports {
		tg.Networks = []*sdk.NetworkResource{{Mode: "host", DynamicPorts: []sdk.Port{{Label: "http"}}}}
	}
	job.TaskGroups = []*sdk.TaskGroup{tg}
	return job
}
