package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// drainInterval is how often the drainer looks at draining nodes.
const drainInterval = 500 * time.Millisecond

// DrainSpec is how to drain a node, as Nomad's drain request has it.
type DrainSpec struct {
	// Deadline bounds the drain: when it passes, everything left is
	// migrated at once. 0 means no deadline; negative means at once.
	Deadline time.Duration
	// IgnoreSystemJobs leaves system and sysbatch allocations running.
	IgnoreSystemJobs bool
}

// UpdateNodeDrain starts or updates a node's drain (spec set) or cancels
// it (nil; a no-op on a node that does not drain). A draining node takes
// no new allocations; the leader's drainer then marks its allocations for
// migration, at most migrate.max_parallel per task group at a time across
// all the draining nodes, batch allocations only at the deadline, system
// ones last. MarkEligible makes the node eligible
// again when a drain is canceled, with node-update evals, as an
// eligibility change has: the system jobs the drain moved off come back.
//
// meta is the operator's metadata of the drain, kept in the node's
// LastDrain (none keeps what it has), as Nomad's drain request Meta.
func (s *Server) UpdateNodeDrain(nodeID string, spec *DrainSpec, markEligible bool, meta map[string]string) (NodeWrite, error) {
	snap := s.store.Snapshot()
	n := snap.Node(nodeID)
	if n == nil {
		return NodeWrite{}, fmt.Errorf("%w: node %q", ErrNotFound, nodeID)
	}
	now := s.now()
	req := &fsm.NodeUpdateDrainRequest{NodeID: nodeID, MarkEligible: markEligible, UpdatedAt: now.UnixNano(), Meta: meta}
	if spec != nil {
		// As Nomad's Node.UpdateDrain: an update keeps the drain's start,
		// and a negative deadline (at once) stores no ForceDeadline.
		ds := &sdk.DrainStrategy{Deadline: spec.Deadline, IgnoreSystemJobs: spec.IgnoreSystemJobs, StartedAt: now}
		if n.DrainStrategy != nil {
			ds.StartedAt = n.DrainStrategy.StartedAt
		}
		if spec.Deadline > 0 {
			ds.ForceDeadline = now.Add(spec.Deadline)
		}
		req.DrainStrategy = ds
	}
	event := func(msg string) *sdk.NodeEvent {
		return &sdk.NodeEvent{Message: msg, Subsystem: "Drain", Timestamp: now}
	}
	switch {
	case n.DrainStrategy == nil && spec != nil:
		req.Event = event("Node drain strategy set")
	case n.DrainStrategy != nil && spec != nil:
		req.Event = event("Node drain strategy updated")
	case n.DrainStrategy != nil:
		req.Event = event("Node drain disabled")
	}
	// Canceling a drain of a node that does not drain is no error, as in
	// Nomad: MarkEligible still makes it eligible.
	if spec == nil && markEligible && n.SchedulingEligibility != sdk.NodeSchedulingEligible {
		req.Evals = s.nodeEvals(snap, n, sdk.EvalTriggerNodeUpdate)
	}
	return s.applyNodeWrite(fsm.NodeUpdateDrainRequestType, req, req.Evals)
}

// drainer marks the allocations of draining nodes for migration and ends
// drains that have nothing left to migrate. It runs on the leader.
func (s *Server) drainer(ctx context.Context) {
	t := time.NewTicker(drainInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// One decision for all the draining nodes, from one snapshot: a
		// group's migration budget is shared by every node it runs on.
		snap := s.store.Snapshot()
		now := s.now()
		if err := s.drainStep(snap, decideDrains(snap, now), now); err != nil && ctx.Err() == nil {
			s.log.Error().Err(err).Msg("drain step failed")
		}
	}
}

// drainStep applies the drain decisions of one round: the marks of every
// node in one write, with one node-drain eval per job (not per node: the
// eval is the job's, as Nomad's drainer batches them, without a NodeID),
// then the end of the drains that are done, in the same round as Nomad's
// drainer (handleMigratedAllocs marks a drained node's system allocations
// and completes its drain at once). A drain whose marks failed is not
// ended.
func (s *Server) drainStep(snap *state.Snapshot, ds []drainDecision, now time.Time) error {
	yes := true
	req := &fsm.AllocUpdateDesiredTransitionRequest{Allocs: map[string]*sdk.DesiredTransition{}}
	for _, d := range ds {
		for _, id := range d.migrate {
			req.Allocs[id] = &sdk.DesiredTransition{Migrate: &yes}
		}
	}
	if len(req.Allocs) > 0 {
		for _, jk := range drainJobs(snap, ds) {
			job := snap.Job(jk.Namespace, jk.ID)
			if job == nil {
				continue
			}
			e := s.newEval(job, sdk.EvalTriggerNodeDrain)
			e.JobModifyIndex = job.JobModifyIndex
			req.Evals = append(req.Evals, e)
		}
		if _, err := s.Apply(fsm.AllocUpdateDesiredTransitionRequestType, req); err != nil {
			return fmt.Errorf("marking allocations for migration: %w", err)
		}
	}
	var errs []error
	for _, d := range ds {
		if !d.done {
			continue
		}
		ev := &sdk.NodeEvent{Message: "Node drain complete", Subsystem: "Drain", Timestamp: now}
		if d.deadlineReached {
			ev.Details = map[string]string{"deadline_reached": "true"}
		}
		_, err := s.Apply(fsm.NodeUpdateDrainRequestType, &fsm.NodeUpdateDrainRequest{
			NodeID: d.node.ID, Complete: true, UpdatedAt: now.UnixNano(), Event: ev})
		if err != nil {
			errs = append(errs, fmt.Errorf("completing the drain of node %s: %w", d.node.ID, err))
		}
	}
	return errors.Join(errs...)
}

// drainJobs are the jobs of the allocations the decisions mark, sorted:
// each gets one node-drain eval.
func drainJobs(snap *state.Snapshot, ds []drainDecision) []sdk.NamespacedID {
	var out []sdk.NamespacedID
	for _, d := range ds {
		for _, id := range d.migrate {
			a := snap.Alloc(id) // the decisions' snapshot: there
			if a == nil {
				continue
			}
			if jk := (sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}); !slices.Contains(out, jk) {
				out = append(out, jk)
			}
		}
	}
	slices.SortFunc(out, func(a, b sdk.NamespacedID) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// drainDecision is what the drainer does next on one node.
type drainDecision struct {
	node *sdk.Node
	// migrate are the allocations to mark for migration now.
	migrate []string
	// done ends the drain, once the marks are applied: the node has
	// stopped every allocation but its system ones (nodeVacated), or its
	// deadline passed (deadlineReached).
	done            bool
	deadlineReached bool
}

// mark marks a for migration.
func (d *drainDecision) mark(a *sdk.Allocation) { d.migrate = append(d.migrate, a.ID) }

// decideDrains decides, from the state alone, the next step of the drain
// of every draining node at time now, in node order.
//
// Service allocations move within their task group's budget, which, as in
// Nomad's drainer, is shared by all the draining nodes: a group may have
// migrate.max_parallel of its allocations unhealthy, so as many of its
// allocations may be marked as it has healthy ones beyond count -
// max_parallel (migrationBudget). A node whose deadline passed marks
// everything left at once, and its drain ends in that step, as in Nomad's
// (handleDeadlinedNodes), however its moves are doing; those marks count
// against the budget of the other nodes as well. Batch allocations run
// until they finish, or until the deadline.
//
// A drain ends, as in Nomad's (draining_node.go IsDone), once the node
// has reported every allocation but its system ones stopped
// (nodeVacated): whether the replacements are healthy yet only bounds how
// many allocations move at a time, not when the node is drained. The
// node's system allocations (unless ignored) are marked in that same step,
// and the drain does not wait for them to stop.
func decideDrains(snap *state.Snapshot, now time.Time) []drainDecision {
	var out []drainDecision
	// waiting are the service allocations of nodes still within their
	// deadline, node by node, and at is the index in out of each one's
	// node.
	var waiting []*sdk.Allocation
	at := map[string]int{}
	marked := map[string]bool{}
	for _, n := range snap.Nodes() {
		ds := n.DrainStrategy
		if ds == nil {
			continue
		}
		d := drainDecision{node: n}
		forced := deadlineReached(ds, now)
		service, batch, system := drainable(snap, n)
		switch {
		case forced:
			// As Nomad's handleDeadlinedNodes: whatever is still moving,
			// the deadline ends the drain.
			for _, set := range [][]*sdk.Allocation{service, batch, system} {
				for _, a := range set {
					d.mark(a)
					marked[a.ID] = true
				}
			}
			d.done, d.deadlineReached = true, true
		case nodeVacated(snap, n):
			for _, a := range system {
				d.mark(a)
			}
			d.done = true
		default:
			// Service allocations wait for the budget, batch ones for
			// completion, system ones for the rest.
			for _, a := range service {
				at[a.ID] = len(out)
			}
			waiting = append(waiting, service...)
		}
		out = append(out, d)
	}
	budget := map[groupKey]int{}
	for _, a := range waiting {
		k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
		if _, ok := budget[k]; !ok {
			budget[k] = migrationBudget(snap, a, marked)
		}
		if budget[k] > 0 {
			budget[k]--
			out[at[a.ID]].mark(a)
		}
	}
	return out
}

// deadlineReached reports whether a drain's deadline has passed at now:
// at once for a negative Deadline, as Nomad's DrainStrategy.DeadlineTime,
// never without a ForceDeadline otherwise.
func deadlineReached(ds *sdk.DrainStrategy, now time.Time) bool {
	if ds.Deadline < 0 {
		return true
	}
	return !ds.ForceDeadline.IsZero() && !now.Before(ds.ForceDeadline)
}

// drainable returns the allocations of a draining node that are left to
// mark, by kind: service, batch and system (none when the drain ignores
// system jobs).
func drainable(snap *state.Snapshot, n *sdk.Node) (service, batch, system []*sdk.Allocation) {
	for _, a := range snap.AllocsByNode(n.ID) {
		if a.TerminalStatus() || a.DesiredTransition.ShouldMigrate() {
			continue
		}
		switch {
		case systemKind(a):
			if !n.DrainStrategy.IgnoreSystemJobs {
				system = append(system, a)
			}
		case jobType(a) == sdk.JobTypeBatch:
			batch = append(batch, a)
		default:
			service = append(service, a)
		}
	}
	return service, batch, system
}

// nodeVacated reports whether a draining node has stopped all its
// allocations but its system ones: its node reported each stopped
// (ClientTerminalStatus), not only the server told it to stop, as
// Nomad's draining_node.go IsDone. Anyone who shuts a node down once its
// drain completes can rely on that.
func nodeVacated(snap *state.Snapshot, n *sdk.Node) bool {
	for _, a := range snap.AllocsByNode(n.ID) {
		if !systemKind(a) && !a.ClientTerminalStatus() {
			return false
		}
	}
	return true
}

// systemKind reports whether a runs on every node, to be stopped last:
// system and, unlike in Nomad's drainer, sysbatch allocations (Nomad's
// waits for a sysbatch allocation to finish before it completes a drain,
// which a sysbatch job that never finishes holds up for ever, and marks it
// at the deadline even when the drain ignores system jobs).
func systemKind(a *sdk.Allocation) bool {
	t := jobType(a)
	return t == sdk.JobTypeSystem || t == sdk.JobTypeSysBatch
}

type groupKey struct{ ns, job, group string }

func jobType(a *sdk.Allocation) string {
	if a.Job != nil {
		return a.Job.Type
	}
	return sdk.JobTypeService
}

// migrateGroup is the task group whose migrate block governs a's moves:
// the group in the job's current version, as Nomad's drainer reads it, or
// in the version a runs when the job or the group is gone.
func migrateGroup(snap *state.Snapshot, a *sdk.Allocation) *sdk.TaskGroup {
	if j := snap.Job(a.Namespace, a.JobID); j != nil {
		if tg := j.LookupTaskGroup(a.TaskGroup); tg != nil {
			return tg
		}
	}
	if a.Job != nil {
		return a.Job.LookupTaskGroup(a.TaskGroup)
	}
	return nil
}

// maxParallel is the migrate block's max_parallel of a group, as written:
// 0 is valid, as in Nomad, and moves nothing before the deadline. A group
// without a migrate block (canonicalisation gives every service group
// one) has the default block's.
func maxParallel(tg *sdk.TaskGroup) int {
	if tg != nil && tg.Migrate != nil {
		return tg.Migrate.MaxParallel
	}
	return jobspec.DefaultMigrate().MaxParallel
}

// migrationBudget is how many more allocations of a's task group may be
// marked for migration now, whatever node they are on: as in Nomad's
// drainer (handleTaskGroup), the group's healthy allocations beyond
// count - max_parallel. Unlike Nomad's, an allocation already marked
// (before, or in this step: marked) is not counted healthy even before
// its scheduler stopped it, so two drain steps in a row cannot both spend
// the same allowance. A move thus holds one unit of the budget until its
// replacement is healthy (migrationHealthy); a group short of healthy
// allocations, for whatever reason, waits (until the drain's deadline).
// Only the job's current instance counts: a purged instance's allocations
// still running do not make up for the new instance's.
func migrationBudget(snap *state.Snapshot, a *sdk.Allocation, marked map[string]bool) int {
	tg := migrateGroup(snap, a)
	count := 0
	if tg != nil {
		count = tg.Count
	}
	healthy := 0
	for _, o := range snap.AllocsByJobInstance(a.Namespace, a.JobID) {
		if o.TaskGroup != a.TaskGroup || o.DesiredTransition.ShouldMigrate() || marked[o.ID] {
			continue
		}
		if migrationHealthy(o) {
			healthy++
		}
	}
	return healthy - (count - maxParallel(tg))
}

// migrationHealthy reports whether an allocation counts as healthy for a
// drain, as in Nomad's drainer: it is not terminal and its node reported
// its health, healthy or not (a replacement that never gets healthy does
// not hold a drain up for ever). Nodes judge a service allocation's health
// within a deployment by its group's update block, outside one by its
// migrate block (health_check, min_healthy_time, healthy_deadline).
func migrationHealthy(a *sdk.Allocation) bool {
	return !a.TerminalStatus() && a.DeploymentStatus.HasHealth()
}
