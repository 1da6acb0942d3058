package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// simBatchRuntime is how long a simulated batch allocation runs.
const simBatchRuntime = 5 * time.Second

// simulator plays the node agents of a dev cluster: it registers ready
// nodes, heartbeats for them, and reports their allocations as a node
// would (pending -> running; stopped -> complete; batch -> complete;
// mock_driver tasks fail or finish as their config says, see
// simBehaviour).
type simulator struct {
	srv *server.Server
	n   int
	// httpAddr is the agent's HTTP address, which every dev node gives as
	// its own, as a Nomad dev agent's client does.
	httpAddr string
	// https: the agent's API is HTTPS, and its nodes say so
	// (TLSEnabled), as a Nomad client with the tls block's http on does.
	https bool
	log   zerolog.Logger
	nodes map[string]int // node ID: its number, for devNode
	wg    sync.WaitGroup

	// mu orders the nodes' registrations after the first, so that a
	// node's last registration carries its latest CSI plugins, and
	// guards csi.
	mu sync.Mutex
	// csi is what each node last registered of its CSI plugins
	// (simCSIPlugins), by node ID.
	csi map[string]simCSI
}

func newSimulator(srv *server.Server, n int, httpAddr string, https bool, log zerolog.Logger) *simulator {
	return &simulator{srv: srv, n: n, httpAddr: httpAddr, https: https, log: log, nodes: map[string]int{},
		csi: map[string]simCSI{}}
}

// node is dev node i as this simulator registers it, with the CSI plugins
// csi says it runs.
func (s *simulator) node(i int, csi simCSI) *sdk.Node {
	n := devNode(i, s.httpAddr)
	n.TLSEnabled = s.https
	n.CSIControllerPlugins, n.CSINodePlugins = csi.controllers, csi.nodes
	return n
}

// register registers node id (dev node i) again, as it is now: with its
// CSI plugins as they were last registered, or as csi says when it is not
// nil (recorded once the registration succeeds). s.mu is held.
func (s *simulator) register(id string, i int, csi *simCSI) error {
	report := s.csi[id]
	if csi != nil {
		report = *csi
	}
	if _, _, err := s.srv.RegisterNode(s.node(i, report)); err != nil {
		return err
	}
	s.csi[id] = report
	return nil
}

// devNode returns simulated node i: varied sizes, two datacenters, four
// racks, the attributes and drivers ordinary jobspecs expect. Its
// HTTPAddr is httpAddr, the agent's: Nomad's clients (nomad alloc logs,
// fs, exec) dial a node's address first, and find there the agent that
// answers for the node, not an address where nothing listens.
func devNode(i int, httpAddr string) *sdk.Node {
	cpus := []int64{4000, 8000, 16000}
	mems := []int64{8192, 16384, 32768}
	arch := "amd64"
	if i%5 == 4 {
		arch = "arm64"
	}
	drivers := map[string]*sdk.DriverInfo{}
	attrs := map[string]string{
		"kernel.name": "linux", "kernel.version": "6.1.0", "os.name": "debian", "os.version": "12",
		"cpu.arch": arch, "cpu.numcores": fmt.Sprint(cpus[i%3] / 1000), "nomad.version": Version,
		"unique.hostname": fmt.Sprintf("dev-%02d", i), "unique.network.ip-address": fmt.Sprintf("10.0.0.%d", i+10),
	}
	// As a Nomad client's fingerprint, each driver says when its health
	// was last checked (nomad node status -verbose shows it).
	now := time.Now().UTC()
	for _, d := range []string{"raw_exec", "exec", "docker", "mock_driver"} {
		drivers[d] = &sdk.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: now}
		attrs["driver."+d] = "1"
	}
	return &sdk.Node{
		ID:         devNodeID(i),
		Name:       fmt.Sprintf("dev-%02d", i),
		Datacenter: fmt.Sprintf("dc%d", i%2+1),
		NodePool:   sdk.DefaultNodePool,
		NodeClass:  "dev",
		HTTPAddr:   httpAddr,
		Attributes: attrs,
		Meta:       map[string]string{"rack": fmt.Sprintf("r%d", i%4)},
		NodeResources: &sdk.NodeResources{
			Cpu:    sdk.NodeCpuResources{CpuShares: cpus[i%3], TotalCpuCores: uint16(cpus[i%3] / 1000)},
			Memory: sdk.NodeMemoryResources{MemoryMB: mems[(i/3)%3]},
			Disk:   sdk.NodeDiskResources{DiskMB: 100 * 1024},
			// Nomad's client default range of dynamic ports.
			MinDynamicPort: 20000, MaxDynamicPort: 32000,
		},
		ReservedResources:     &sdk.NodeReservedResources{},
		Drivers:               drivers,
		Status:                sdk.NodeStatusReady,
		SchedulingEligibility: sdk.NodeSchedulingEligible,
	}
}

// devNodeID is a stable, UUID-shaped ID for dev node i, distinct in its
// first eight characters so short IDs stay readable.
func devNodeID(i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("drover-dev-node-%d", i)))
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32]
}

func (s *simulator) start(ctx context.Context) error {
	var ttl time.Duration
	for i := 0; i < s.n; i++ {
		n := s.node(i, simCSI{})
		if _, _, err := s.srv.RegisterNode(n); err != nil {
			return fmt.Errorf("agent: register dev node %s: %w", n.Name, err)
		}
		// As Nomad's client: registration keeps the status a node already
		// has (down, say, in a state kept across a restart), and the first
		// heartbeat makes it ready.
		t, _, err := s.srv.NodeHeartbeat(n.ID)
		if err != nil {
			return fmt.Errorf("agent: heartbeat dev node %s: %w", n.Name, err)
		}
		s.nodes[n.ID] = i
		ttl = t
	}
	s.wg.Add(2)
	go s.heartbeat(ctx, ttl)
	go s.runAllocs(ctx)
	return nil
}

func (s *simulator) wait() { s.wg.Wait() }

func (s *simulator) heartbeat(ctx context.Context, ttl time.Duration) {
	defer s.wg.Done()
	every := max(ttl/3, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for id, i := range s.nodes {
			_, _, err := s.srv.NodeHeartbeat(id)
			if errors.Is(err, server.ErrNotFound) {
				// Purged: a running node agent registers again, as
				// Nomad's client does.
				s.mu.Lock()
				err = s.register(id, i, nil)
				s.mu.Unlock()
				if err == nil {
					_, _, err = s.srv.NodeHeartbeat(id)
				}
			}
			if err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Str("node_id", id).Msg("dev node heartbeat failed")
			}
		}
	}
}

// runAllocs reports allocation progress whenever the state changes, and at
// least every second (batch allocations finish by the clock).
func (s *simulator) runAllocs(ctx context.Context) {
	defer s.wg.Done()
	var index uint64
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		snap, err := s.srv.Store().WaitForIndex(wctx, index+1)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			snap = s.srv.Store().Snapshot()
		}
		index = snap.Index()
		now := time.Now()
		// Each node reports its own allocations, as Nomad's clients do:
		// the servers refuse the report of a node they hold down or
		// disconnected until it heartbeats again, and that must not hold
		// the other nodes' reports.
		for id, i := range s.nodes {
			allocs := snap.AllocsByNode(id)
			// The CSI plugins the node runs, as the allocations' last
			// reported states say: a plugin comes up once its allocation
			// runs (after the report that made it run) and turns
			// unhealthy once it stopped.
			if err := s.reportCSI(id, i, allocs, now); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Str("node_id", id).Msg("dev node CSI plugin update failed")
			}
			var updates []server.AllocUpdate
			for _, a := range allocs {
				if u, ok := simNext(a, now); ok {
					updates = append(updates, u)
				}
			}
			if len(updates) == 0 {
				continue
			}
			if _, err := s.srv.UpdateAllocsFromClient(updates); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Str("node_id", id).Msg("dev node allocation update failed")
			}
		}
	}
}

// reportCSI registers node id (dev node i) again when the CSI plugins
// its allocations run changed since it last registered.
func (s *simulator) reportCSI(id string, i int, allocs []*sdk.Allocation, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.csi[id]
	next := simCSIPlugins(id, allocs, prev, now)
	if next.equal(prev) {
		return nil
	}
	return s.register(id, i, &next)
}

// simNext is what a simulated node reports next about an allocation: its
// client status, its tasks' states as they change with it, and its
// deployment health.
func simNext(a *sdk.Allocation, now time.Time) (server.AllocUpdate, bool) {
	u, ok := simStatus(a, now)
	if ok {
		u.TaskStates = simTaskStates(a, u, now)
	}
	return u, ok
}

func simStatus(a *sdk.Allocation, now time.Time) (server.AllocUpdate, bool) {
	if a.ClientTerminalStatus() {
		return server.AllocUpdate{}, false
	}
	if a.DesiredStatus != sdk.AllocDesiredStatusRun {
		return server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete, ClientDescription: "stopped by the server"}, true
	}
	b := simBehaviourOf(a)
	switch a.ClientStatus {
	case sdk.AllocClientStatusPending, "":
		if b.startError != "" {
			return simFailed(a, "Failed to start tasks: "+b.startError, now), true
		}
		return server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning, ClientDescription: "Tasks are running"}, true
	case sdk.AllocClientStatusRunning:
		if _, ended := b.ended(now.Sub(time.Unix(0, a.CreateTime))); ended {
			if b.exitCode != 0 {
				return simFailed(a, fmt.Sprintf("Task exited with exit code %d", b.exitCode), now), true
			}
			return server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete, ClientDescription: "All tasks have completed",
				DeploymentStatus: simEndedUnhealthy(a, now)}, true
		}
		batch := a.Job != nil && (a.Job.Type == sdk.JobTypeBatch || a.Job.Type == sdk.JobTypeSysBatch)
		if batch && b.runFor == 0 && now.Sub(time.Unix(0, a.ModifyTime)) >= simBatchRuntime {
			return server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete, ClientDescription: "All tasks have completed"}, true
		}
		if u, ok := simHealth(a, b, now); ok {
			return u, true
		}
	}
	return server.AllocUpdate{}, false
}

// simFailed reports an allocation failed; in a deployment that had not yet
// judged it, it is unhealthy too (simEndedUnhealthy).
func simFailed(a *sdk.Allocation, why string, now time.Time) server.AllocUpdate {
	return server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusFailed, ClientDescription: why,
		DeploymentStatus: simEndedUnhealthy(a, now)}
}

// simEndedUnhealthy is the health a node reports of a service allocation
// whose tasks ended (failed, or finished) before it was judged:
// unhealthy, as Nomad's health tracker reports a task that finished before
// min_healthy_time. Nil when there is nothing to report.
func simEndedUnhealthy(a *sdk.Allocation, now time.Time) *sdk.AllocDeploymentStatus {
	if _, ok := awaitsHealth(a); !ok {
		return nil
	}
	healthy := false
	return &sdk.AllocDeploymentStatus{Healthy: &healthy, Timestamp: now}
}

// simBehaviour is what a dev node's mock_driver does with an allocation's
// tasks, from Nomad's mock_driver options in their config: start_error
// fails the allocation as it starts; run_for (a duration) is how long the
// tasks run before they exit with exit_code (0: complete, otherwise
// failed). A task that fails is restarted as its restart block says
// (restarts attempts after delay each, in mode "fail"; for as long as it
// runs in mode "delay"), and fails the allocation once none is left.
// Across tasks, the first start_error counts, and the first non-zero exit
// code (with that task's restarts) at that task's run_for; otherwise the
// tasks end at the longest run_for of the main tasks (those without a
// lifecycle hook: a prestart, poststart or poststop task does not end the
// allocation). Without run_for a service allocation runs until stopped
// and a batch one for simBatchRuntime. Other drivers' tasks always run
// fine.
type simBehaviour struct {
	startError string
	runFor     time.Duration
	exitCode   int
	// restarts is how many restarts a failing task gets (-1: no end),
	// each after delay.
	restarts int
	delay    time.Duration
}

// ended reports, elapsed after the allocation started, how often its
// failing task restarted so far and whether its tasks have ended for
// good: run_for passed, and the exit is a success or one with no restart
// left.
func (b simBehaviour) ended(elapsed time.Duration) (restarts int, ended bool) {
	if b.runFor <= 0 || elapsed < b.runFor {
		return 0, false
	}
	if b.exitCode == 0 || b.restarts == 0 {
		return 0, true
	}
	exits := int((elapsed-b.runFor)/(b.runFor+b.delay)) + 1
	if b.restarts < 0 || exits <= b.restarts {
		return exits, false
	}
	return b.restarts, true
}

func simBehaviourOf(a *sdk.Allocation) simBehaviour {
	var b simBehaviour
	if a.Job == nil {
		return b
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return b
	}
	tbs := make([]simBehaviour, len(tg.Tasks))
	for i, t := range tg.Tasks {
		tb := taskBehaviour(tg, t)
		tbs[i] = tb
		b.startError = cmp.Or(b.startError, tb.startError)
		// The tasks end with the main ones, as on Nomad's clients: a
		// prestart or poststart task that exits leaves them running, and
		// a sidecar is stopped with them.
		if mainTask(t) {
			b.runFor = max(b.runFor, tb.runFor)
		}
	}
	// The allocation fails with the failing task that exits first: a main
	// task, or a lifecycle task whose last exit (after its restarts) comes
	// no later than the main tasks' end.
	var failing simBehaviour
	first := time.Duration(-1)
	for i, t := range tg.Tasks {
		tb := tbs[i]
		if tb.exitCode == 0 {
			continue
		}
		if !mainTask(t) {
			last := tb.lastExit()
			if last == 0 || (b.runFor > 0 && last > b.runFor) {
				continue
			}
		}
		at := cmp.Or(tb.runFor, b.runFor)
		if first < 0 || at < first {
			failing, first = tb, at
		}
	}
	if failing.exitCode != 0 {
		b.exitCode, b.restarts, b.delay = failing.exitCode, failing.restarts, failing.delay
		if failing.runFor > 0 {
			b.runFor = failing.runFor
		}
	}
	return b
}

// mainTask reports whether t is one of its group's main tasks (no
// lifecycle hook), whose end ends the allocation.
func mainTask(t *sdk.Task) bool { return t.Lifecycle == nil || t.Lifecycle.Hook == "" }

// lastExit is, after the allocation started, when a task that runs for
// runFor and gets restarts restarts exits for the last time (0: never).
func (b simBehaviour) lastExit() time.Duration {
	if b.runFor <= 0 || b.restarts < 0 {
		return 0
	}
	return b.runFor + time.Duration(b.restarts)*(b.runFor+b.delay)
}

// taskBehaviour is what a dev node's mock_driver does with task t of
// group tg.
func taskBehaviour(tg *sdk.TaskGroup, t *sdk.Task) simBehaviour {
	var b simBehaviour
	if t.Driver != "mock_driver" {
		return b
	}
	if p := cmp.Or(t.RestartPolicy, tg.RestartPolicy); p != nil {
		b.restarts, b.delay = p.Attempts, p.Delay
		if p.Mode == "delay" {
			b.restarts = -1
		}
	}
	if v, ok := t.Config["start_error"]; ok {
		b.startError = fmt.Sprint(v)
	}
	if v, ok := t.Config["run_for"]; ok {
		if d, err := time.ParseDuration(fmt.Sprint(v)); err == nil {
			b.runFor = d
		}
	}
	if v, ok := t.Config["exit_code"]; ok {
		if n, err := strconv.Atoi(fmt.Sprint(v)); err == nil {
			b.exitCode = n
		}
	}
	return b
}

// simHealth reports a running service allocation healthy once it has run
// for min_healthy_time, as a node's health watcher does (simulated tasks
// have no checks that could fail), or, when a task restarts sooner than
// that and so never runs long enough, unhealthy once healthy_deadline
// passed.
func simHealth(a *sdk.Allocation, b simBehaviour, now time.Time) (server.AllocUpdate, bool) {
	hp, ok := awaitsHealth(a)
	if !ok {
		return server.AllocUpdate{}, false
	}
	var healthy bool
	switch {
	case b.restartsTooSoon(hp):
		// Never healthy: unhealthy at the deadline, counted from its
		// creation (a node's tracker counts from when it started
		// watching, which an update in place restarts; the simulation
		// keeps no such time, and such a task fails in any version).
		if hp.deadline <= 0 || now.Sub(time.Unix(0, a.CreateTime)) < hp.deadline {
			return server.AllocUpdate{}, false
		}
	case now.Sub(time.Unix(0, a.ModifyTime)) >= hp.minHealthy:
		// Tasks that run: healthy min_healthy_time after the
		// allocation's last change (an update in place restarts the
		// count), always within healthy_deadline, which must be longer.
		healthy = true
	default:
		return server.AllocUpdate{}, false
	}
	return server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning, ClientDescription: "Tasks are running",
		DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy, Timestamp: now}}, true
}

// restartsTooSoon reports whether a failing task restarts sooner than
// min_healthy_time, so it never runs long enough to be healthy.
func (b simBehaviour) restartsTooSoon(hp healthParams) bool {
	return b.exitCode != 0 && b.runFor > 0 && b.runFor < hp.minHealthy
}

// healthParams are how a node judges an allocation's health.
type healthParams struct {
	minHealthy, deadline time.Duration
}

// awaitsHealth reports whether a dev node is to judge a's health, and
// how. As Nomad's health watcher, it judges service allocations only,
// once: within a deployment by the group's update block (unless that
// leaves health to an operator, manual, through PUT
// /v1/deployment/allocation-health/:id), outside one by its migrate block,
// whose health a drain waits for.
func awaitsHealth(a *sdk.Allocation) (healthParams, bool) {
	if a.Job == nil || a.Job.Type != sdk.JobTypeService || a.DeploymentStatus.HasHealth() {
		return healthParams{}, false
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return healthParams{}, false
	}
	if a.DeploymentID != "" {
		u := tg.Update
		if u == nil || u.MaxParallel == 0 || u.HealthCheck == "manual" { // Nomad's IsEmpty, or an operator's
			return healthParams{}, false
		}
		return healthParams{u.MinHealthyTime, u.HealthyDeadline}, true
	}
	m := jobspec.DefaultMigrate()
	if tg.Migrate != nil {
		m = *tg.Migrate
	}
	return healthParams{m.MinHealthyTime, m.HealthyDeadline}, true
}

// simMaxEvents is how many events a task state keeps, as Nomad's nodes.
const simMaxEvents = 10

// simTaskStates is what a node reports of a's tasks with update u, in the
// shape of Nomad's TaskState (State, Failed, Restarts, StartedAt,
// FinishedAt, Events), each task's events appended to those reported
// before. A task that ends has its own exit code; when one fails to
// start, the others are killed as its siblings. A report that leaves the
// client status as it was (health) gives none: the tasks stay as they are.
func simTaskStates(a *sdk.Allocation, u server.AllocUpdate, now time.Time) map[string]sdk.Opaque {
	if u.ClientStatus == a.ClientStatus || a.Job == nil {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil
	}
	// Events are plain maps, as the raft log's codec encodes them.
	event := func(typ, msg string, extra map[string]any) map[string]any {
		e := map[string]any{"Type": typ, "Time": now.UnixNano(), "DisplayMessage": msg, "Details": map[string]any{}}
		for k, v := range extra {
			e[k] = v
		}
		return e
	}
	received := []map[string]any{event("Received", "Task received by client", nil),
		event("Task Setup", "Building Task Directory", nil)}
	failedToStart := ""
	for _, t := range tg.Tasks {
		if taskBehaviour(tg, t).startError != "" {
			failedToStart = t.Name
			break
		}
	}
	out := make(map[string]sdk.Opaque, len(tg.Tasks))
	for _, t := range tg.Tasks {
		b := taskBehaviour(tg, t)
		state, failed, restarts := "dead", false, 0
		var events []map[string]any
		switch {
		case u.ClientStatus == sdk.AllocClientStatusRunning:
			state = "running"
			events = append(received, event("Started", "Task started by client", nil))
		case a.DesiredStatus != sdk.AllocDesiredStatusRun:
			events = []map[string]any{event("Killing", "Sent interrupt. Waiting 5s before force killing", nil),
				event("Killed", "Task successfully killed", nil)}
		case a.ClientStatus != sdk.AllocClientStatusRunning && b.startError != "":
			failed = true
			events = append(received, event("Driver Failure", b.startError,
				map[string]any{"DriverError": b.startError, "FailsTask": true}))
		case a.ClientStatus != sdk.AllocClientStatusRunning:
			events = append(received, event("Sibling Task Failed", fmt.Sprintf("Task's sibling %q failed", failedToStart), nil),
				event("Killed", "Task successfully killed", nil))
		default:
			failed = b.exitCode != 0
			terminated := event("Terminated", fmt.Sprintf("Exit Code: %d", b.exitCode), map[string]any{"ExitCode": b.exitCode})
			// The restarts the task had before it ended, as Nomad's task
			// runner reports them.
			restarts, _ = b.ended(now.Sub(time.Unix(0, a.CreateTime)))
			for range restarts {
				events = append(events, terminated, event("Restarting", "Restart within policy",
					map[string]any{"StartDelay": b.delay.Nanoseconds()}))
			}
			events = append(events, terminated)
			if restarts > 0 {
				events = append(events, event("Not Restarting",
					fmt.Sprintf("Exceeded allowed attempts %d in interval and mode is \"fail\"", restarts), nil))
			}
		}
		prev := a.TaskStates[t.Name]
		st := sdk.Opaque{"State": state, "Failed": failed, "Restarts": restarts,
			"StartedAt": time.Time{}, "FinishedAt": time.Time{}, "LastRestart": time.Time{}}
		if at, ok := prev["StartedAt"]; ok {
			st["StartedAt"] = at
		}
		if state == "running" {
			st["StartedAt"] = now.UTC()
		} else {
			st["FinishedAt"] = now.UTC()
		}
		var all []any
		if old, ok := prev["Events"].([]any); ok {
			all = append(all, old...)
		}
		for _, e := range events {
			all = append(all, e)
		}
		st["Events"] = all[max(0, len(all)-simMaxEvents):]
		out[t.Name] = st
	}
	return out
}
