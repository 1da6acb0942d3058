package reconcile

import (
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// SystemInput is what the per-node reconciler of system and sysbatch jobs
// decides from.
type SystemInput struct {
	// Job is the job's current version; nil or stopped stops everything.
	Job *sdk.Job
	// Ready are the nodes the job should run on: ready, eligible, in its
	// datacenters and pool.
	Ready []*sdk.Node
	// NotReady are nodes in the job's datacenters and pool that are not
	// ready (draining, ineligible, down): their allocations are left
	// alone, unless they are down (Tainted) or marked to migrate.
	NotReady map[string]*sdk.Node
	// Tainted are the down, disconnected or draining nodes of Allocs (nil
	// for nodes that no longer exist).
	Tainted map[string]*sdk.Node
	// Allocs are all of the job's allocations.
	Allocs []*sdk.Allocation
	// Now is when the evaluation runs (disconnect windows end by it).
	Now time.Time
}

// SystemTuple is one allocation slot: a name on a node, the group, and
// the existing allocation there (or the last terminal one, for a
// replacement; nil for a new slot).
type SystemTuple struct {
	Name   string
	NodeID string
	// Node is the node when it is one of the ready nodes (always for
	// Place and Update), so that the caller need not look it up.
	Node      *sdk.Node
	TaskGroup *sdk.TaskGroup
	Alloc     *sdk.Allocation
}

// SystemResult is what a system job needs, per node.
type SystemResult struct {
	Place   []SystemTuple
	Update  []SystemTuple
	Migrate []SystemTuple
	Stop    []SystemTuple
	Lost    []SystemTuple
	Ignore  []SystemTuple
	// Disconnect are running allocations on disconnected nodes, in groups
	// that tolerate it: their client status becomes unknown (there is no
	// other node to replace them on).
	Disconnect []SystemTuple
	// Finished are finished sysbatch allocations of an older job version
	// on nodes that are not ready but still run an allocation of the job:
	// they are left alone, and only a dry run counts them (Nomad's
	// diffSystemAllocs finds them there and updates them).
	Finished []SystemTuple
}

// System reconciles a system or sysbatch job node by node, as Nomad's
// diffSystemAllocs: every ready node in the job's datacenters and pool runs
// Count allocations of each group, named JOB.GROUP[0] to [Count-1]
// (materializeSystemTaskGroups; a group of count 0 runs nowhere);
// allocations on nodes that left that set, of groups that no longer exist
// or with an index past the count stop; allocations on down or vanished
// nodes are lost; allocations marked to migrate move; allocations of an
// older job version are updated (in place or destructively, the caller
// decides); sysbatch allocations that finished are not run again for the
// same job version (ignored, on nodes not ready too when they run another
// of the job's allocations, as Nomad diffs those nodes).
//
// On a disconnected node only a running allocation of a group that
// tolerates disconnects is touched (marked unknown); the others, pending
// or of a group that does not tolerate it, are left alone until the node
// comes back or goes down, as in Nomad. An unknown allocation is left
// alone wherever it is until its window ends, then lost; on a down or
// vanished node it is lost at once (see the comment below).
func System(in SystemInput) *SystemResult {
	res := &SystemResult{}
	required := map[string]*sdk.TaskGroup{}
	var order []string
	if !in.Job.Stopped() {
		for _, tg := range in.Job.TaskGroups {
			for i := 0; i < tg.Count; i++ {
				name := sdk.AllocName(in.Job.ID, tg.Name, i)
				required[name] = tg
				order = append(order, name)
			}
		}
	}
	sysbatch := in.Job != nil && in.Job.Type == sdk.JobTypeSysBatch

	live := map[string][]*sdk.Allocation{}
	terminal := map[string]map[string]*sdk.Allocation{}
	for _, a := range in.Allocs {
		if !a.TerminalStatus() {
			live[a.NodeID] = append(live[a.NodeID], a)
			continue
		}
		byName := terminal[a.NodeID]
		if byName == nil {
			byName = map[string]*sdk.Allocation{}
			terminal[a.NodeID] = byName
		}
		if prev, ok := byName[a.Name]; !ok || a.CreateIndex > prev.CreateIndex {
			byName[a.Name] = a
		}
	}
	// The nodes with live allocations that are not ready, sorted, then the
	// ready nodes in their order. The set of ready IDs is only needed when
	// there are live allocations to check against it.
	var gone []string
	if len(live) != 0 {
		ready := make(map[string]bool, len(in.Ready))
		for _, n := range in.Ready {
			ready[n.ID] = true
		}
		for id := range live {
			if !ready[id] {
				gone = append(gone, id)
			}
		}
		slices.Sort(gone)
	}
	for i := 0; i < len(gone)+len(in.Ready); i++ {
		var node *sdk.Node // nil: not ready
		nodeID := ""
		if i < len(gone) {
			nodeID = gone[i]
		} else {
			node = in.Ready[i-len(gone)]
			nodeID = node.ID
		}
		allocs := live[nodeID]
		slices.SortFunc(allocs, func(a, b *sdk.Allocation) int { return strings.Compare(a.ID, b.ID) })
		existing := map[string]bool{}
		for _, a := range allocs {
			existing[a.Name] = true
			tg, ok := required[a.Name]
			t := SystemTuple{Name: a.Name, NodeID: nodeID, Node: node, TaskGroup: tg, Alloc: a}
			if !ok {
				res.Stop = append(res.Stop, t)
				continue
			}
			if a.DesiredTransition.ShouldMigrate() {
				res.Migrate = append(res.Migrate, t)
				continue
			}
			// Nomad's supportsDisconnectedClients: the allocation's own
			// version of its group tolerates disconnects.
			tolerant := lostAfter(a) > 0
			tnode, tainted := in.Tainted[nodeID]
			gone := tainted && (tnode == nil || tnode.TerminalStatus())
			if tolerant && a.ClientStatus == sdk.AllocClientStatusUnknown {
				// Nomad loses an unknown allocation once its window is
				// over, and until then leaves it alone wherever it is:
				// on a node back from the disconnect (not updated to a
				// new version: its client has not said what runs), on a
				// node no longer targeted, and on a down or vanished
				// node. Drover loses it at once on a down or vanished
				// node: its heartbeats mark a node down when the windows
				// counted from the node's disconnect (in whole seconds)
				// end, before those counted from when each allocation was
				// marked unknown, later, and a system job has no
				// follow-up eval, so left alone it would stay unknown on
				// a down node with nothing to make it lost.
				if gone || unknownExpired(a, in.Now) {
					res.Lost = append(res.Lost, t)
				} else {
					res.Ignore = append(res.Ignore, t)
				}
				continue
			}
			if tainted {
				switch {
				case gone:
					res.Lost = append(res.Lost, t)
				case tolerant && tnode.Status == sdk.NodeStatusDisconnected && a.ClientStatus == sdk.AllocClientStatusRunning:
					res.Disconnect = append(res.Disconnect, t)
				default:
					// Draining, or disconnected and pending or not
					// tolerant: Nomad leaves it until the node comes back
					// or goes down (heartbeats mark it down when no
					// window is left), there being no other node for it.
					res.Ignore = append(res.Ignore, t)
				}
				continue
			}
			if _, notReady := in.NotReady[nodeID]; notReady {
				res.Ignore = append(res.Ignore, t)
				continue
			}
			if node == nil {
				res.Stop = append(res.Stop, t)
				continue
			}
			if a.Job == nil || a.Job.JobModifyIndex != in.Job.JobModifyIndex {
				res.Update = append(res.Update, t)
				continue
			}
			res.Ignore = append(res.Ignore, t)
		}
		for _, name := range order {
			if existing[name] {
				continue
			}
			tg := required[name]
			last := terminal[nodeID][name]
			if sysbatch && last != nil {
				// Nomad looks for the finished allocation on every node
				// it diffs, ready or not.
				t := SystemTuple{Name: name, NodeID: nodeID, Node: node, TaskGroup: tg, Alloc: last}
				switch {
				case last.Job != nil && last.Job.JobModifyIndex == in.Job.JobModifyIndex:
					res.Ignore = append(res.Ignore, t)
				case node == nil:
					res.Finished = append(res.Finished, t)
				default:
					res.Update = append(res.Update, t)
				}
				continue
			}
			if node != nil {
				res.Place = append(res.Place, SystemTuple{Name: name, NodeID: nodeID, Node: node, TaskGroup: tg, Alloc: last})
			}
		}
	}
	return res
}
