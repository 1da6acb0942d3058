package verify

import (
	"fmt"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// PlacesCSIVolumes reports whether any new placement of p may claim a CSI
// volume: whether the check of CSIClaims has anything to do. A placement
// may run another version than the plan's job (PlacedVersion), whose
// volumes are the ones it claims.
func PlacesCSIVolumes(snap State, p *sdk.Plan) bool {
	if p.Job != nil && jobHasCSI(p.Job) {
		return true
	}
	for _, as := range p.NodeAllocation {
		for _, a := range as {
			if j := PlacedJob(snap, p.Job, a); j != nil && j != p.Job && jobHasCSI(j) {
				return true
			}
		}
	}
	return false
}

func jobHasCSI(j *sdk.Job) bool {
	for _, tg := range j.TaskGroups {
		if sdk.HasCSIVolumes(tg) {
			return true
		}
	}
	return false
}

// CSIClaims checks the claims the new placements of p make on CSI
// volumes, node by node in the order given, skipping the nodes in
// rejected: each volume must exist, its plugin be schedulable, have a
// claim free for the request (the claims of live allocations and of the
// placements accepted on earlier nodes counted; those of allocations the
// plan stops, and of allocations of the same job being stopped, not;
// those of allocations it preempts are, as they still run), and the node
// must run the plugin, healthy, with room for the volume. It returns the reason for each node it refuses, nil when
// none: the host's re-check of what the scheduler decided, as the FSM
// will take the claims as the plan commits.
func CSIClaims(snap State, p *sdk.Plan, nodes []string, rejected map[string]bool) map[string]string {
	// The plan's stops (of its own job's allocations) end their claims
	// for its placements. Its preemptions do not: a preempted allocation
	// runs, and holds its claims, until its node reports it finished.
	gone := map[string]bool{}
	for _, as := range p.NodeUpdate {
		for _, a := range as {
			gone[a.ID] = true
		}
	}
	var plugins map[string]*sdk.CSIPlugin
	type count struct{ reads, writes int }
	taken := map[sdk.NamespacedID]*count{}
	var out map[string]string
	for _, nodeID := range nodes {
		if rejected[nodeID] {
			continue
		}
		var node *sdk.Node
		mounted := map[string]map[sdk.NamespacedID]bool{} // plugin -> volumes, once counted
		var here []func()
		why := ""
		for _, a := range p.NodeAllocation[nodeID] {
			if why != "" {
				break
			}
			if old := snap.Alloc(a.ID); old != nil {
				// An update keeps the claims its allocation holds: one that
				// would change them (the FSM takes claims as an allocation
				// is placed) is a destructive update, not an in-place one.
				if !sdk.KeepsVersion(old, a) && !old.ClientTerminalStatus() &&
					!slices.Equal(sdk.CSIAllocRequests(old.Job, old), sdk.CSIAllocRequests(p.Job, a)) {
					why = "an in-place update cannot change the CSI volumes an allocation mounts"
				}
				continue
			}
			job := PlacedJob(snap, p.Job, a)
			for _, r := range sdk.CSIAllocRequests(job, a) {
				k := sdk.NamespacedID{Namespace: a.Namespace, ID: r.Source}
				v := snap.CSIVolume(k.Namespace, k.ID)
				if v == nil {
					why = fmt.Sprintf("missing CSI Volume %s", r.Source)
					break
				}
				if plugins == nil {
					plugins = sdk.CSIPlugins(snap.Nodes())
				}
				reads, writes := v.LiveClaims(func(id string) bool { return claimLive(snap, gone, job, id) })
				if c := taken[k]; c != nil {
					reads, writes = reads+c.reads, writes+c.writes
				}
				if why = v.CanClaim(r, plugins[v.PluginID].Schedulable(), reads, writes); why != "" {
					break
				}
				if node == nil {
					node = snap.Node(nodeID)
				}
				if node == nil {
					why = "node does not exist"
					break
				}
				if mounted[v.PluginID] == nil {
					mounted[v.PluginID] = mountedOn(snap, gone, nodeID, v.PluginID)
				}
				n := int64(len(mounted[v.PluginID]))
				if mounted[v.PluginID][k] {
					n-- // mounted already: no more room needed
				}
				if why = sdk.CSINodeCheck(node, v, n); why != "" {
					break
				}
				mounted[v.PluginID][k] = true
				ro := r.ReadOnly
				here = append(here, func() {
					c := taken[k]
					if c == nil {
						c = &count{}
						taken[k] = c
					}
					if ro {
						c.reads++
					} else {
						c.writes++
					}
				})
			}
		}
		if why != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[nodeID] = why
			continue
		}
		for _, take := range here {
			take()
		}
	}
	return out
}

// claimLive reports whether the allocation holding a claim holds it still
// for a placement of job.
func claimLive(snap State, gone map[string]bool, job *sdk.Job, allocID string) bool {
	if gone[allocID] {
		return false
	}
	a := snap.Alloc(allocID)
	if a == nil || a.ClientTerminalStatus() {
		return false
	}
	return job == nil || !(a.Namespace == job.Namespace && a.JobID == job.ID && a.DesiredStatus != sdk.AllocDesiredStatusRun)
}

// mountedOn returns the volumes of a plugin the node's live allocations
// (but those the plan stops; those it preempts still run) claim.
func mountedOn(snap State, gone map[string]bool, nodeID, pluginID string) map[sdk.NamespacedID]bool {
	out := map[sdk.NamespacedID]bool{}
	for _, a := range snap.AllocsByNode(nodeID) {
		if gone[a.ID] || a.ClientTerminalStatus() {
			continue
		}
		for _, r := range sdk.CSIAllocRequests(a.Job, a) {
			k := sdk.NamespacedID{Namespace: a.Namespace, ID: r.Source}
			if v := snap.CSIVolume(k.Namespace, k.ID); v != nil && v.PluginID == pluginID {
				out[k] = true
			}
		}
	}
	return out
}

// PlacedJob is the job version a new placement runs, and so whose CSI
// volumes it claims as it commits: its own Job when it carries one, else
// the kept version it names (PlacedVersion), else the plan's job, as the
// host's FSM links it. Plan strips placements of their Job, so the version
// they name is what decides.
func PlacedJob(versions interface {
	JobVersion(ns, id string, v uint64) *sdk.Job
}, planJob *sdk.Job, a *sdk.Allocation) *sdk.Job {
	if a.Job != nil {
		return a.Job
	}
	if v, _ := PlacedVersion(versions, planJob, a); v != nil {
		return v
	}
	return planJob
}
