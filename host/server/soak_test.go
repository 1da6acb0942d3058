package server_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/core"
)

// TestSoak_RandomOperationsKeepTheClusterConsistent drives a real server
// (built-in schedulers, native) through seeded random operations, as
// users, nodes and their clients would: jobs registered, updated, scaled
// and stopped; nodes added, lost, disconnected (groups tolerating it at
// times), brought back, drained and made ineligible; allocations started,
// failed, finished and stopped. After each operation, once every eval has
// settled, it checks what must always hold: no eval failed (but for the
// lifecycle's max-plan-attempts: an eval whose plans lost every race for
// the nodes fails and leaves a blocked eval behind), no node over its
// capacity, no two live allocations of a job under one name (nor two of a
// system job on one node), no group over its count, nothing live for a
// stopped job or on a down node, no deployment under way but of the job's
// current version, at most one blocked eval per job, and a service job
// that lost nothing to injected failures at its count unless an eval
// waits for capacity. DROVER_SOAK_SEEDS and DROVER_SOAK_STEPS make it
// longer, DROVER_SOAK_FIRST starts at another seed (seeds FIRST to
// FIRST+SEEDS-1); DROVER_SOAK_SEED replays one seed's operations (the workers'
// timing, and so some decisions, may differ from run to run). A failed
// check reports the job's evals and how its allocations and the nodes
// changed from step to step.
func TestSoak_RandomOperationsKeepTheClusterConsistent(t *testing.T) {
	first, seeds, steps := envInt("DROVER_SOAK_FIRST", 1), envInt("DROVER_SOAK_SEEDS", 4), envInt("DROVER_SOAK_STEPS", 60)
	if one := envInt("DROVER_SOAK_SEED", 0); one > 0 {
		first, seeds = one, 1 // replays one seed
	}
	for seed := first; seed < first+seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			s := servertest.New(t, soakRegistry(t), func(c *server.Config) {
				c.MinHeartbeatTTL = time.Hour // nodes go down when the test says
			})
			newSoak(t, s, seed).run(steps, nil)
		})
	}
}

func newSoak(t *testing.T, s *server.Server, seed int) *soak {
	return &soak{t: t, s: s, r: rand.New(rand.NewPCG(uint64(seed), 3)), dirty: map[string]bool{},
		seen: map[string]string{}, trail: map[string][]string{}, maxPlans: map[string]bool{}}
}

// soakRegistry returns the built-in schedulers and the core scheduler,
// native.
func soakRegistry(t *testing.T) *runtime.Registry {
	reg := servertest.NativeBuiltins(t, 2)
	servertest.AddNative(t, reg, plugin.Info{Name: "core", Types: []string{sdk.JobTypeCore}, MirrorEvals: true}, 1,
		func() sdk.Scheduler { return &core.Scheduler{} })
	return reg
}

// run adds four nodes and takes steps random operations, settling and
// checking after each; between, if set, runs before each step and may
// change the server the soak drives (a new leader).
func (w *soak) run(steps int, between func(step int)) {
	for i := 0; i < 4; i++ {
		w.addNode()
	}
	for step := 0; step < steps; step++ {
		if between != nil {
			between(step)
		}
		op := w.step()
		w.settle(op)
		w.record(fmt.Sprintf("step %d (%s)", step, op))
		w.client()
		w.settle(op + ", then the clients' reports")
		w.record(fmt.Sprintf("step %d, clients", step))
		w.check(fmt.Sprintf("step %d (%s)", step, op))
	}
}

// TestSoak_ClusterOfServers runs the soak's random operations against a
// cluster of three servers whose followers schedule, handing the lead on
// every ten steps (to the server without workers first, so that for a
// while only the followers schedule), with the same checks after each
// step; at the end every replica must hold the leader's state.
// DROVER_SOAK_CLUSTER_SEEDS and DROVER_SOAK_STEPS make it longer.
func TestSoak_ClusterOfServers(t *testing.T) {
	seeds, steps := envInt("DROVER_SOAK_CLUSTER_SEEDS", 2), envInt("DROVER_SOAK_STEPS", 60)
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			cfgs := servertest.ClusterConfigs(t, 3)
			servers := make([]*server.Server, len(cfgs))
			for i, cfg := range cfgs {
				cfg.MinHeartbeatTTL = time.Hour // nodes go down when the test says
				if i == 0 {
					cfg.NumWorkers = 0
				}
				servers[i] = servertest.StartMember(t, cfg, soakRegistry(t))
			}
			w := newSoak(t, servertest.WaitForClusterLeader(t, servers), seed)
			next := 0
			w.run(steps, func(step int) {
				if step%10 != 0 {
					return
				}
				w.s = handLead(t, servers, next%len(servers))
				next++
				w.settle("the lead handed to " + w.s.Config().NodeName)
			})
			// The leader's timers may still write: compare states taken
			// at one index.
			servertest.WaitFor(t, "every replica at the leader's index", func() bool {
				index := w.s.Store().LatestIndex()
				for _, s := range servers {
					if s.Store().LatestIndex() != index {
						return false
					}
				}
				snaps := make([]*state.Snapshot, len(servers))
				for i, s := range servers {
					if snaps[i] = s.Store().Snapshot(); snaps[i].Index() != index {
						return false
					}
				}
				want := dump(t, snaps[0])
				for _, snap := range snaps[1:] {
					sameState(t, want, dump(t, snap))
				}
				return true
			})
		})
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

type soak struct {
	t     *testing.T
	s     *server.Server
	r     *rand.Rand
	nodes int
	// dirty marks the jobs that lost allocations to injected failures
	// since they were last registered.
	dirty map[string]bool
	// seen and trail record how each allocation and node changed from one
	// settled state to the next, per job, for the report of a failed check.
	seen  map[string]string
	trail map[string][]string
	// maxPlans holds the max-plan-attempts blocked evals any check saw:
	// garbage collection may take one once it is over, and the failed
	// eval that left it behind may stay.
	maxPlans map[string]bool
	// settledAt is when settle last looked and found nothing due.
	settledAt time.Time
}

var soakJobs = []string{"web", "api", "cache", "etl", "agent", "logs"}

// step applies one random operation and names it.
func (w *soak) step() string {
	t, s, r := w.t, w.s, w.r
	snap := s.Store().Snapshot()
	switch n := r.IntN(110); {
	case n < 30:
		job := w.randomJob()
		if _, _, err := s.RegisterJob(job); err != nil {
			t.Fatalf("register %s: %v", job.ID, err)
		}
		delete(w.dirty, job.ID)
		return fmt.Sprintf("register %s %s count %d cpu %d", job.Type, job.ID, job.TaskGroups[0].Count, job.TaskGroups[0].Tasks[0].Resources.CPU)
	case n < 38:
		job := w.pickJob(snap, func(j *sdk.Job) bool {
			d := snap.LatestDeployment(j.Namespace, j.ID)
			return !j.Stop && (j.Type == sdk.JobTypeService || j.Type == sdk.JobTypeBatch) && (d == nil || !d.Active())
		})
		if job == nil {
			return "no job to scale"
		}
		count := int64(r.IntN(12))
		if _, err := s.ScaleJob(server.ScaleRequest{Namespace: job.Namespace, JobID: job.ID, Group: "g", Count: &count}); err != nil {
			t.Fatalf("scale %s: %v", job.ID, err)
		}
		return fmt.Sprintf("scale %s to %d", job.ID, count)
	case n < 44:
		job := w.pickJob(snap, func(j *sdk.Job) bool { return !j.Stop })
		if job == nil {
			return "no job to stop"
		}
		purge := r.IntN(2) == 0
		if _, _, err := s.DeregisterJob(job.Namespace, job.ID, purge); err != nil {
			t.Fatalf("stop %s: %v", job.ID, err)
		}
		return fmt.Sprintf("stop %s (purge %v)", job.ID, purge)
	case n < 50:
		if w.nodes >= 10 {
			return "no room for another node"
		}
		return "add " + w.addNode()
	case n < 60:
		node := w.pickNode(snap, func(n *sdk.Node) bool { return n.Status == sdk.NodeStatusReady })
		if node == nil {
			return "no node to lose"
		}
		if _, err := s.UpdateNodeStatus(node.ID, sdk.NodeStatusDown, "soak"); err != nil {
			t.Fatalf("down %s: %v", node.ID, err)
		}
		return "lose " + node.ID
	case n < 68:
		node := w.pickNode(snap, func(n *sdk.Node) bool {
			return n.Status == sdk.NodeStatusDown || n.Status == sdk.NodeStatusDisconnected
		})
		if node == nil {
			return "no node to bring back"
		}
		if _, _, err := s.NodeHeartbeat(node.ID); err != nil {
			t.Fatalf("heartbeat %s: %v", node.ID, err)
		}
		return "bring back " + node.ID
	case n < 74:
		node := w.pickNode(snap, func(n *sdk.Node) bool { return n.Status == sdk.NodeStatusReady })
		if node == nil {
			return "no node to drain"
		}
		if node.DrainStrategy != nil {
			if _, err := s.UpdateNodeDrain(node.ID, nil, true, nil); err != nil {
				t.Fatalf("undrain %s: %v", node.ID, err)
			}
			return "cancel the drain of " + node.ID
		}
		if _, err := s.UpdateNodeDrain(node.ID, &server.DrainSpec{Deadline: -1}, false, nil); err != nil {
			t.Fatalf("drain %s: %v", node.ID, err)
		}
		return "drain " + node.ID
	case n < 80:
		node := w.pickNode(snap, func(n *sdk.Node) bool { return n.DrainStrategy == nil })
		if node == nil {
			return "no node to toggle"
		}
		elig := sdk.NodeSchedulingIneligible
		if node.SchedulingEligibility == sdk.NodeSchedulingIneligible {
			elig = sdk.NodeSchedulingEligible
		}
		if _, err := s.UpdateNodeEligibility(node.ID, elig); err != nil {
			t.Fatalf("eligibility %s: %v", node.ID, err)
		}
		return "make " + node.ID + " " + elig
	case n < 90:
		// Only a ready node reports: the servers refuse the reports of a
		// down or disconnected one until it heartbeats, as Nomad's.
		a := w.pickAlloc(snap, func(a *sdk.Allocation) bool {
			n := snap.Node(a.NodeID)
			return n != nil && n.Status == sdk.NodeStatusReady
		})
		if a == nil {
			return "no allocation to fail"
		}
		w.dirty[a.JobID] = true
		if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: a.ID, ClientStatus: sdk.AllocClientStatusFailed}}); err != nil {
			t.Fatalf("fail %s: %v", a.ID, err)
		}
		return "fail " + a.Name
	case n < 94:
		a := w.pickAlloc(snap, nil)
		if a == nil {
			return "no allocation to stop"
		}
		if _, _, err := s.StopAlloc(a.ID); err != nil {
			t.Fatalf("stop alloc %s: %v", a.ID, err)
		}
		return "stop and replace " + a.Name
	case n < 96:
		if _, _, err := s.ForceGC(); err != nil {
			t.Fatalf("gc: %v", err)
		}
		return "collect garbage"
	case n < 98:
		c := sdk.DefaultSchedulerConfiguration()
		c.PreemptionConfig.ServiceSchedulerEnabled = r.IntN(2) == 0
		c.PreemptionConfig.BatchSchedulerEnabled = r.IntN(2) == 0
		if r.IntN(2) == 0 {
			c.SchedulerAlgorithm = sdk.SchedulerAlgorithmSpread
		}
		if _, err := s.SetSchedulerConfig(c); err != nil {
			t.Fatalf("scheduler config: %v", err)
		}
		return fmt.Sprintf("scheduler config %s, preemption service %v batch %v", c.SchedulerAlgorithm,
			c.PreemptionConfig.ServiceSchedulerEnabled, c.PreemptionConfig.BatchSchedulerEnabled)
	case n < 100:
		for _, d := range snap.Deployments() {
			if d.Status == sdk.DeploymentStatusRunning && d.TaskGroups["g"] != nil && d.TaskGroups["g"].DesiredCanaries > 0 &&
				!d.TaskGroups["g"].Promoted {
				if _, _, err := s.PromoteDeployment(d.ID, nil); errors.Is(err, server.ErrInvalid) {
					return "promotion refused: " + err.Error() // canaries not all healthy yet
				} else if err != nil {
					t.Fatalf("promote %s: %v", d.ID, err)
				}
				return "promote the canaries of " + d.JobID
			}
		}
		return "no canaries to promote"
	case n < 105:
		job := w.pickJob(snap, func(j *sdk.Job) bool { return j.Version > 0 })
		if job == nil {
			return "no job to revert"
		}
		v := uint64(r.IntN(int(job.Version)))
		if snap.JobVersion(job.Namespace, job.ID, v) == nil {
			return "no version to revert to"
		}
		if _, _, err := s.RevertJob(job.Namespace, job.ID, v, nil); err != nil {
			t.Fatalf("revert %s to %d: %v", job.ID, v, err)
		}
		return fmt.Sprintf("revert %s to version %d", job.ID, v)
	default:
		node := w.pickNode(snap, func(n *sdk.Node) bool { return n.Status == sdk.NodeStatusReady })
		if node == nil {
			return "no node to disconnect"
		}
		if _, err := s.UpdateNodeStatus(node.ID, sdk.NodeStatusDisconnected, "soak"); err != nil {
			t.Fatalf("disconnect %s: %v", node.ID, err)
		}
		return "disconnect " + node.ID
	}
}

func (w *soak) addNode() string {
	sizes := []int64{2000, 4000, 8000}
	n := servertest.Node(w.nodes, sizes[w.r.IntN(len(sizes))], 4096+int64(w.r.IntN(3))*4096)
	w.nodes++
	if _, _, err := w.s.RegisterNode(n); err != nil {
		w.t.Fatalf("register node: %v", err)
	}
	return n.ID
}

func (w *soak) randomJob() *sdk.Job {
	r := w.r
	id := soakJobs[r.IntN(len(soakJobs))]
	typ := []string{sdk.JobTypeService, sdk.JobTypeService, sdk.JobTypeService, sdk.JobTypeBatch, sdk.JobTypeSystem,
		sdk.JobTypeSysBatch}[r.IntN(6)]
	if old := w.s.Store().Snapshot().Job(sdk.DefaultNamespace, id); old != nil {
		typ = old.Type // a job keeps its type until it is purged
	}
	job := servertest.Job(id, typ, 1+r.IntN(10), 100*(1+r.IntN(15)), 64*(1+r.IntN(16)))
	tg := job.TaskGroups[0]
	system := typ == sdk.JobTypeSystem || typ == sdk.JobTypeSysBatch
	if system {
		tg.Count = 1
	} else {
		tg.ReschedulePolicy = &sdk.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second, DelayFunction: sdk.DelayFunctionConstant}
	}
	if !system && r.IntN(3) == 0 {
		// Allocations on a disconnected node wait for it, replaced
		// meanwhile, for an hour or, at times, so short a while that they
		// are lost a few steps later.
		d := time.Hour
		if r.IntN(3) == 0 {
			d = 300 * time.Millisecond
		}
		tg.MaxClientDisconnect = &d
	}
	if typ == sdk.JobTypeService && r.IntN(2) == 0 {
		// A rolling update, with canaries at times; the clients report
		// allocations healthy once they run.
		canary := r.IntN(2) * (1 + r.IntN(2))
		tg.Update = &sdk.UpdateStrategy{Stagger: 30 * time.Second, MaxParallel: 1 + r.IntN(3), HealthCheck: "task_states",
			MinHealthyTime: time.Millisecond, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute,
			Canary: canary, AutoPromote: canary > 0 && r.IntN(2) == 0}
	}
	switch r.IntN(6) {
	case 0:
		tg.Constraints = append(tg.Constraints, &sdk.Constraint{LTarget: "${meta.rack}", RTarget: "r[01]", Operand: sdk.ConstraintRegex})
	case 1:
		if !system {
			tg.Constraints = append(tg.Constraints, &sdk.Constraint{Operand: sdk.ConstraintDistinctHosts, RTarget: "true"})
		}
	case 2:
		if !system {
			tg.Spreads = []*sdk.Spread{{Attribute: "${meta.rack}", Weight: 50}}
		}
	case 3:
		if !system {
			tg.Affinities = []*sdk.Affinity{{LTarget: "${meta.rack}", RTarget: "r2", Operand: "=", Weight: 50}}
		}
	}
	job.Priority = 30 + 10*r.IntN(5)
	return job
}

func (w *soak) pickJob(snap *state.Snapshot, ok func(*sdk.Job) bool) *sdk.Job {
	var jobs []*sdk.Job
	for _, j := range snap.Jobs(sdk.DefaultNamespace) {
		if ok(j) {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return jobs[w.r.IntN(len(jobs))]
}

func (w *soak) pickNode(snap *state.Snapshot, ok func(*sdk.Node) bool) *sdk.Node {
	var nodes []*sdk.Node
	for _, n := range snap.Nodes() {
		if ok(n) {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	return nodes[w.r.IntN(len(nodes))]
}

// pickAlloc picks a running allocation (one ok takes, when ok is set).
func (w *soak) pickAlloc(snap *state.Snapshot, ok func(*sdk.Allocation) bool) *sdk.Allocation {
	var live []*sdk.Allocation
	for _, a := range snap.Allocs() {
		if a.ClientStatus == sdk.AllocClientStatusRunning && !a.TerminalStatus() && (ok == nil || ok(a)) {
			live = append(live, a)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[w.r.IntN(len(live))]
}

// client reports as the nodes' clients would: what the server placed on a
// ready node starts, what it stopped finishes, and some batch work ends.
func (w *soak) client() {
	snap := w.s.Store().Snapshot()
	var ups []server.AllocUpdate
	for _, a := range snap.Allocs() {
		n := snap.Node(a.NodeID)
		if n == nil || n.Status != sdk.NodeStatusReady || a.ClientTerminalStatus() {
			continue
		}
		switch {
		case a.ClientStatus == sdk.AllocClientStatusUnknown:
			// The node is back: it reports what it still runs.
			status := sdk.AllocClientStatusRunning
			if a.DesiredStatus != sdk.AllocDesiredStatusRun {
				status = sdk.AllocClientStatusComplete
			}
			ups = append(ups, server.AllocUpdate{ID: a.ID, ClientStatus: status})
		case a.DesiredStatus != sdk.AllocDesiredStatusRun:
			ups = append(ups, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete})
		case a.ClientStatus == sdk.AllocClientStatusPending:
			ups = append(ups, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning})
		case a.DeploymentID != "" && (a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil):
			healthy := true
			ups = append(ups, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusRunning,
				DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Now()}})
		case a.Job != nil && (a.Job.Type == sdk.JobTypeBatch || a.Job.Type == sdk.JobTypeSysBatch) && w.r.IntN(3) == 0:
			ups = append(ups, server.AllocUpdate{ID: a.ID, ClientStatus: sdk.AllocClientStatusComplete})
		}
	}
	if len(ups) == 0 {
		return
	}
	if _, err := w.s.UpdateAllocsFromClient(ups); err != nil {
		w.t.Fatalf("client updates: %v", err)
	}
}

// settle waits until no eval is ready, in flight or about to be enqueued,
// and the state has not moved for a while.
func (w *soak) settle(after string) {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last uint64
	var dups []string // jobs with more than one blocked eval at the last look
	quiet := 0
	for quiet < 5 {
		if time.Now().After(deadline) {
			w.t.Fatalf("after %s: the cluster did not settle: broker %+v, jobs with blocked duplicates %v",
				after, w.s.Broker().Stats(), dups)
		}
		time.Sleep(3 * time.Millisecond)
		look := time.Now()
		st := w.s.Broker().Stats()
		idx := w.s.Store().LatestIndex()
		busy := st.TotalReady+st.TotalUnacked+st.TotalPending+st.TotalCancelable > 0 || idx != last
		blocked := map[sdk.NamespacedID]int{}
		dups = dups[:0]
		for _, e := range w.s.Store().Snapshot().Evals() {
			if e.Status == sdk.EvalStatusPending && !e.WaitUntil.After(look) && e.Wait == 0 {
				if _, out := w.s.Broker().Outstanding(e.ID); !out {
					busy = true // written, not yet enqueued or acked
				}
			}
			if e.Status == sdk.EvalStatusBlocked {
				// A second blocked eval of a job is a duplicate that the
				// leader's reaper cancels once the tracker has seen it
				// (check requires it gone): its cancellation may still be
				// on its way through raft.
				jk := sdk.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
				if blocked[jk]++; blocked[jk] == 2 {
					busy = true
					dups = append(dups, e.JobID)
				}
			}
		}
		last = idx
		if busy {
			quiet = 0
		} else {
			quiet++
		}
		w.settledAt = look
	}
}

// check asserts the invariants over the settled state.
func (w *soak) check(at string) {
	t := w.t
	t.Helper()
	snap := w.s.Store().Snapshot()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %s: %s", at, fmt.Sprintf(format, args...))
	}
	blocked := map[string][]string{}
	// Jobs with an eval waiting for its time (a delayed reschedule, a
	// disconnect timeout), when settle last looked: it may have come since,
	// and the eval's worker not yet written anything (check reads the state
	// a little later than settle).
	delayed := map[string]bool{}
	for _, e := range snap.Evals() {
		if e.TriggeredBy == sdk.EvalTriggerMaxPlans {
			w.maxPlans[e.ID] = true
		}
	}
	for _, e := range snap.Evals() {
		if e.Status == sdk.EvalStatusPending && (e.WaitUntil.After(w.settledAt) || e.Wait > 0) {
			delayed[e.JobID] = true
		}
		switch e.Status {
		case sdk.EvalStatusFailed:
			if w.maxPlans[e.BlockedEval] && strings.Contains(e.StatusDescription, "maximum attempts reached") {
				// Its plans lost every race for the nodes to other jobs'
				// plans, as many times as its scheduler tries: the eval
				// fails and a blocked eval retries later (the lifecycle's
				// max-plan-attempts). That eval is in this snapshot or was
				// in an earlier one, garbage-collected since.
				continue
			}
			h := ""
			if j := snap.Job(e.Namespace, e.JobID); j != nil {
				h = history(snap, j) + w.changes(j.ID)
			}
			fail("eval %s (%s, job %s) failed: %s%s", e.ID, e.TriggeredBy, e.JobID, e.StatusDescription, h)
		case sdk.EvalStatusBlocked:
			blocked[e.JobID] = append(blocked[e.JobID], e.ID)
		}
	}
	for job, ids := range blocked {
		if len(ids) > 1 {
			fail("job %s has %d blocked evals: %v", job, len(ids), ids)
		}
	}
	for _, n := range snap.Nodes() {
		var used sdk.Usage
		for _, a := range snap.AllocsByNode(n.ID) {
			if a.TerminalStatus() {
				continue
			}
			if n.Status == sdk.NodeStatusDown {
				fail("allocation %s (%s) is live on down node %s", a.ID, a.Name, n.ID)
			}
			used.Add(a.Usage())
		}
		if ok, dim := used.Fits(n.Capacity()); !ok {
			fail("node %s is over its capacity (%s): %+v of %+v", n.ID, dim, used, n.Capacity())
		}
	}
	for _, j := range snap.Jobs(sdk.DefaultNamespace) {
		var live []*sdk.Allocation
		for _, a := range snap.AllocsByJob(j.Namespace, j.ID) {
			// An allocation unknown on a disconnected node is replaced
			// while it waits: it does not count until the node is back.
			if !a.TerminalStatus() && a.ClientStatus != sdk.AllocClientStatusUnknown {
				live = append(live, a)
			}
		}
		// Only the job's current version may be deploying: a new version
		// or a stop cancels the deployment under way.
		for _, d := range snap.DeploymentsByJob(j.Namespace, j.ID) {
			if d.Active() && (j.Stop || d.JobVersion != j.Version || d.JobCreateIndex != j.CreateIndex) {
				var ds string
				for _, d := range snap.DeploymentsByJob(j.Namespace, j.ID) {
					ds += fmt.Sprintf("\n  %.8s v%d job create index %d %s %q index %d/%d", d.ID, d.JobVersion, d.JobCreateIndex,
						d.Status, d.StatusDescription, d.CreateIndex, d.ModifyIndex)
				}
				fail("job %s (v%d, create index %d, stopped %v) has deployment %.8s of v%d still %s; deployments:%s%s", j.ID, j.Version,
					j.CreateIndex, j.Stop, d.ID, d.JobVersion, d.Status, ds, history(snap, j)+w.changes(j.ID))
			}
		}
		if j.Stop {
			if len(live) > 0 {
				fail("stopped job %s has %d live allocations", j.ID, len(live))
			}
			continue
		}
		d := snap.LatestDeployment(j.Namespace, j.ID)
		deploying := d != nil && d.Active()
		key := func(a *sdk.Allocation) string { return a.Name }
		if j.Type == sdk.JobTypeSystem || j.Type == sdk.JobTypeSysBatch {
			key = func(a *sdk.Allocation) string { return a.NodeID + "/" + a.TaskGroup }
		}
		// A canary takes the name of an allocation it may replace, and
		// keeps it once promoted (when, as in Nomad, it is marked a canary
		// no more) while an allocation of an older version holds that name.
		canaries := map[string]bool{}
		if d != nil {
			for _, s := range d.TaskGroups {
				for _, id := range s.PlacedCanaries {
					canaries[id] = true
				}
			}
		}
		older := map[string]bool{}
		for _, a := range live {
			if a.Job != nil && a.Job.Version < j.Version {
				older[a.Name] = true
			}
		}
		seen := map[string]string{}
		for _, a := range live {
			if a.DeploymentStatus != nil && a.DeploymentStatus.Canary || canaries[a.ID] && older[a.Name] {
				continue
			}
			if other, dup := seen[key(a)]; dup {
				fail("job %s: allocations %s and %s are both live as %s%s", j.ID, other, describe(a), key(a), history(snap, j)+w.changes(j.ID))
			}
			seen[key(a)] = describe(a)
			// An older version runs on where its update could not be
			// placed (an eval waits for capacity), or, for a system job,
			// on a node that takes nothing new, as in Nomad.
			if a.Job != nil && a.Job.Version != j.Version && len(blocked[j.ID]) == 0 && !deploying {
				if n := snap.Node(a.NodeID); (j.Type != sdk.JobTypeSystem && j.Type != sdk.JobTypeSysBatch) || n.Ready() {
					fail("job %s: allocation %s runs version %d, the job is at %d, and no eval waits", j.ID, a.Name, a.Job.Version, j.Version)
				}
			}
		}
		if j.Type == sdk.JobTypeSystem || j.Type == sdk.JobTypeSysBatch {
			continue
		}
		count := j.TaskGroups[0].Count
		if tg := j.TaskGroups[0]; deploying && tg.Update != nil {
			count += tg.Update.Canary // canaries run beside the old version
		}
		if len(live) > count {
			var desc []string
			for _, a := range snap.AllocsByJob(j.Namespace, j.ID) {
				desc = append(desc, describe(a))
			}
			ds := ""
			for _, d := range snap.DeploymentsByJob(j.Namespace, j.ID) {
				ds += fmt.Sprintf(" [%.8s v%d %s %+v]", d.ID, d.JobVersion, d.Status, *d.TaskGroups["g"])
			}
			fail("job %s: %d live allocations for a count of %d (v%d, update %+v): %v; deployments%s%s", j.ID, len(live), count, j.Version, j.TaskGroups[0].Update, desc, ds, history(snap, j)+w.changes(j.ID))
		}
		if j.Type == sdk.JobTypeService && len(live) < j.TaskGroups[0].Count && len(blocked[j.ID]) == 0 && !delayed[j.ID] && !w.dirty[j.ID] && !deploying {
			var desc []string
			for _, a := range snap.AllocsByJob(j.Namespace, j.ID) {
				desc = append(desc, describe(a))
			}
			fail("job %s: %d live allocations for a count of %d and no eval waits: %v%s", j.ID, len(live), j.TaskGroups[0].Count, desc, history(snap, j)+w.changes(j.ID))
		}
	}
}

func describe(a *sdk.Allocation) string {
	canary := a.DeploymentStatus != nil && a.DeploymentStatus.Canary
	return fmt.Sprintf("%.8s (%s v%d on %s, %s/%s, deployment %.8s canary %v, eval %.8s, previous %.8s, next %.8s, follow-up %.8s, index %d/%d)", a.ID, a.Name,
		a.JobVersion, a.NodeID, a.DesiredStatus, a.ClientStatus, a.DeploymentID, canary, a.EvalID, a.PreviousAllocation, a.NextAllocation,
		a.FollowupEvalID, a.CreateIndex, a.ModifyIndex)
}

// record notes, under at, every allocation and node that changed since
// the last settled state.
func (w *soak) record(at string) {
	snap := w.s.Store().Snapshot()
	note := func(key, trail, desc string) {
		if w.seen[key] != desc {
			w.seen[key] = desc
			w.trail[trail] = append(w.trail[trail], at+": "+desc)
		}
	}
	for _, n := range snap.Nodes() {
		note(n.ID, "", fmt.Sprintf("%s %s %s drain %v", n.ID, n.Status, n.SchedulingEligibility, n.DrainStrategy != nil))
	}
	for _, a := range snap.Allocs() {
		note(a.ID, a.JobID, describe(a))
	}
}

// changes returns what record noted for a job, and the nodes' changes.
func (w *soak) changes(jobID string) string {
	return "\nnodes:\n  " + strings.Join(w.trail[""], "\n  ") + "\nallocations of " + jobID + ":\n  " +
		strings.Join(w.trail[jobID], "\n  ")
}

// history lists a job's evals in the order they were created, to tell
// which decisions led to a failed check.
func history(snap *state.Snapshot, j *sdk.Job) string {
	evals := snap.EvalsByJob(j.Namespace, j.ID)
	slices.SortFunc(evals, func(a, b *sdk.Evaluation) int { return cmp.Compare(a.CreateIndex, b.CreateIndex) })
	out := fmt.Sprintf("; job v%d modify index %d; evals:", j.Version, j.JobModifyIndex)
	for _, e := range evals {
		out += fmt.Sprintf("\n  %.8s %s %s %q index %d/%d snapshot %d previous %.8s next %.8s blocked %.8s", e.ID, e.TriggeredBy,
			e.Status, e.StatusDescription, e.CreateIndex, e.ModifyIndex, e.SnapshotIndex, e.PreviousEval, e.NextEval, e.BlockedEval)
	}
	return out
}
