package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/fsm"
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

// UpdateNodeDrain starts a node's drain (spec set) or cancels it (nil). A
// draining node takes no new allocations; the leader's drainer then marks
// its allocations for migration, at most migrate.max_parallel per task
// group at a time, batch allocations only at the deadline, system ones
// last. MarkEligible makes the node eligible again when a drain is canceled,
// with node-update evals, as an eligibility change has: the system jobs the
// drain moved off come back.
func (s *Server) UpdateNodeDrain(nodeID string, spec *DrainSpec, markEligible bool) (NodeWrite, error) {
	snap := s.store.Snapshot()
	n := snap.Node(nodeID)
	if n == nil {
		return NodeWrite{}, fmt.Errorf("%w: node %q", ErrNotFound, nodeID)
	}
	now := s.now()
	req := &fsm.NodeUpdateDrainRequest{NodeID: nodeID, MarkEligible: markEligible, UpdatedAt: now.UnixNano()}
	if spec != nil {
		ds := &sdk.DrainStrategy{Deadline: spec.Deadline, IgnoreSystemJobs: spec.IgnoreSystemJobs, StartedAt: now}
		switch {
		case spec.Deadline < 0:
			ds.ForceDeadline = now
		case spec.Deadline > 0:
			ds.ForceDeadline = now.Add(spec.Deadline)
		}
		req.DrainStrategy = ds
		req.Event = &sdk.NodeEvent{Message: "Node drain strategy set", Subsystem: "Drain", Timestamp: now}
	} else {
		if n.DrainStrategy == nil && !markEligible {
			return NodeWrite{}, badRequest(fmt.Errorf("node %q is not draining", nodeID))
		}
		req.Event = &sdk.NodeEvent{Message: "Node drain strategy removed", Subsystem: "Drain", Timestamp: now}
		if markEligible && n.SchedulingEligibility != sdk.NodeSchedulingEligible {
			req.Evals = s.nodeEvals(snap, n, sdk.EvalTriggerNodeUpdate)
		}
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
		snap := s.store.Snapshot()
		for _, n := range snap.Nodes() {
			if n.DrainStrategy == nil {
				continue
			}
			if err := s.drainStep(snap, n); err != nil && ctx.Err() == nil {
				s.log.Error().Err(err).Str("node_id", n.ID).Msg("drain step failed")
			}
		}
	}
}

// drainStep applies one drain decision for node.
func (s *Server) drainStep(snap *state.Snapshot, n *sdk.Node) error {
	now := s.now()
	d := decideDrain(snap, n, now)
	if d.done {
		_, err := s.Apply(fsm.NodeUpdateDrainRequestType, &fsm.NodeUpdateDrainRequest{
			NodeID: n.ID, Complete: true, UpdatedAt: now.UnixNano(),
			Event: &sdk.NodeEvent{Message: "Node drain complete", Subsystem: "Drain", Timestamp: now}})
		return err
	}
	if len(d.migrate) == 0 {
		return nil
	}
	yes := true
	req := &fsm.AllocUpdateDesiredTransitionRequest{Allocs: map[string]*sdk.DesiredTransition{}}
	for _, id := range d.migrate {
		req.Allocs[id] = &sdk.DesiredTransition{Migrate: &yes}
	}
	for _, jk := range d.jobs {
		job := snap.Job(jk.Namespace, jk.ID)
		if job == nil {
			continue
		}
		e := s.newEval(job, sdk.EvalTriggerNodeDrain)
		e.NodeID, e.NodeModifyIndex, e.JobModifyIndex = n.ID, n.ModifyIndex, job.JobModifyIndex
		req.Evals = append(req.Evals, e)
	}
	_, err := s.Apply(fsm.AllocUpdateDesiredTransitionRequestType, req)
	return err
}

// drainDecision is what the drainer does next on one node.
type drainDecision struct {
	// migrate are the allocations to mark for migration now.
	migrate []string
	// jobs get a node-drain eval.
	jobs []sdk.NamespacedID
	// done ends the drain: nothing is left to migrate.
	done bool
}

// decideDrain decides, from the state alone, the next step of a node's
// drain at time now.
func decideDrain(snap *state.Snapshot, n *sdk.Node, now time.Time) drainDecision {
	ds := n.DrainStrategy
	forced := !ds.ForceDeadline.IsZero() && !now.Before(ds.ForceDeadline)
	var service, batch, system []*sdk.Allocation
	for _, a := range snap.AllocsByNode(n.ID) {
		if a.TerminalStatus() || a.DesiredTransition.ShouldMigrate() {
			continue
		}
		switch jobType(a) {
		case sdk.JobTypeSystem, sdk.JobTypeSysBatch:
			if !ds.IgnoreSystemJobs {
				system = append(system, a)
			}
		case sdk.JobTypeBatch:
			batch = append(batch, a)
		default:
			service = append(service, a)
		}
	}
	var d drainDecision
	jobs := map[sdk.NamespacedID]bool{}
	mark := func(a *sdk.Allocation) {
		d.migrate = append(d.migrate, a.ID)
		jobs[sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}] = true
	}
	migrating := liveMigrations(snap, n)
	switch {
	case forced && len(service)+len(batch)+len(system) > 0:
		for _, set := range [][]*sdk.Allocation{service, batch, system} {
			for _, a := range set {
				mark(a)
			}
		}
	case len(service) > 0:
		// Per task group, keep at most max_parallel migrations in flight.
		budget := map[groupKey]int{}
		for _, a := range service {
			k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
			if _, ok := budget[k]; !ok {
				budget[k] = maxParallel(a) - migrating[k]
			}
			if budget[k] > 0 {
				budget[k]--
				mark(a)
			}
		}
	case len(batch) > 0:
		// Batch allocations run to completion (or to the deadline).
	case len(system) > 0 && len(migrating) == 0:
		// System allocations go last, once the rest has moved.
		for _, a := range system {
			mark(a)
		}
	case len(migrating) == 0:
		d.done = true
	}
	for jk := range jobs {
		d.jobs = append(d.jobs, jk)
	}
	slices.SortFunc(d.jobs, func(a, b sdk.NamespacedID) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return d
}

type groupKey struct{ ns, job, group string }

func jobType(a *sdk.Allocation) string {
	if a.Job != nil {
		return a.Job.Type
	}
	return sdk.JobTypeService
}

// maxParallel is the migrate block's max_parallel of the allocation's group
// (1 when unset).
func maxParallel(a *sdk.Allocation) int {
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.Migrate != nil && tg.Migrate.MaxParallel > 0 {
			return tg.Migrate.MaxParallel
		}
	}
	return 1
}

// liveMigrations counts, per task group, the allocations of this node
// that were marked for migration and whose move has not finished: still
// running here, or replaced by an allocation that is not running yet.
func liveMigrations(snap *state.Snapshot, n *sdk.Node) map[groupKey]int {
	out := map[groupKey]int{}
	for _, a := range snap.AllocsByNode(n.ID) {
		if !a.DesiredTransition.ShouldMigrate() {
			continue
		}
		k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
		switch {
		case !a.TerminalStatus():
			out[k]++
		case a.NextAllocation != "":
			next := snap.Alloc(a.NextAllocation)
			if next != nil && !next.TerminalStatus() && next.ClientStatus != sdk.AllocClientStatusRunning {
				out[k]++
			}
		}
	}
	return out
}
