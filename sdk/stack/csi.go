package stack

import (
	"fmt"
	"maps"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// csiGroup is a group's CSI volume requests, checked per node and per
// selection: whether a volume can be claimed depends on the allocation
// (a per_alloc request names a volume by its index) and on the plan so
// far (the claims of its earlier placements and stops), so the outcome is
// not cached with the node checks.
type csiGroup struct {
	requests []sdk.CSIVolumeRequest // sources not yet per allocation
	// The selection the volumes were resolved for: the allocation's name
	// and the plan's length of changes then.
	name    string
	version int
	valid   bool
	// reason is why no node can take the allocation (a volume missing,
	// or without a free claim), else "".
	reason string
	vols   []csiVolume
}

type csiVolume struct {
	req sdk.CSIVolumeRequest
	vol *sdk.CSIVolume
}

func newCSIGroup(tg *sdk.TaskGroup) *csiGroup {
	if !sdk.HasCSIVolumes(tg) {
		return nil
	}
	return &csiGroup{requests: sdk.CSIVolumeRequests(tg, "")}
}

// csiResolve resolves the group's volumes for an allocation named name
// (once per selection: again when the name or the plan changed) and
// checks what does not depend on the node: each volume exists, its plugin
// can take claims, and it has a claim free for the request, counting the
// claims of live allocations and of the plan's own placements.
func (s *Stack) csiResolve(g *group, name string) {
	c := g.csi
	if c.valid && c.name == name && c.version == len(s.plan.changed) {
		return
	}
	c.name, c.version, c.valid, c.reason, c.vols = name, len(s.plan.changed), true, "", c.vols[:0]
	ns := g.job.Namespace
	for _, r := range c.requests {
		if r.PerAlloc {
			r.Source += sdk.AllocSuffix(name)
		}
		v := s.plan.State().CSIVolume(ns, r.Source)
		if v == nil {
			c.reason = fmt.Sprintf("missing CSI Volume %s", r.Source)
			return
		}
		reads, writes := v.LiveClaims(func(id string) bool { return s.plan.csiClaimLive(id, g.job) })
		pr, pw := s.plan.csiPlanClaims(ns, v.ID)
		if why := v.CanClaim(r, s.csiPlugin(v.PluginID).Schedulable(), reads+pr, writes+pw); why != "" {
			c.reason = why
			return
		}
		c.vols = append(c.vols, csiVolume{req: r, vol: v})
	}
}

// csiCheck reports why node n cannot mount the group's volumes for the
// selection csiResolve resolved them for, or "".
func (s *Stack) csiCheck(g *group, n *sdk.Node) string {
	c := g.csi
	if c.reason != "" {
		return c.reason
	}
	for _, cv := range c.vols {
		var mounted int64
		if info := n.CSINodePlugins[cv.vol.PluginID]; info != nil && info.NodeInfo != nil && info.NodeInfo.MaxVolumes > 0 {
			mounted = s.plan.csiMounted(n.ID, cv.vol.PluginID)
		}
		if why := sdk.CSINodeCheck(n, cv.vol, mounted); why != "" {
			return why
		}
	}
	return ""
}

// csiPlugin returns a CSI plugin's health across the nodes, gathered once
// per evaluation (nil for a plugin no node runs).
func (s *Stack) csiPlugin(id string) *sdk.CSIPlugin {
	if s.csiPlugins == nil {
		s.csiPlugins = sdk.CSIPlugins(s.plan.State().Nodes())
	}
	return s.csiPlugins[id]
}

// csiClaimLive reports whether the allocation holding a claim still holds
// it for a placement of job: it exists, has not finished on its node and,
// of job itself, is neither stopped by the plan nor being stopped (its
// replacement takes the claim over, as a destructive update's does). An
// allocation of another job the plan preempts still holds it: it runs
// until its node reports it finished, and the host counts it so.
func (p *Plan) csiClaimLive(allocID string, job *sdk.Job) bool {
	a := p.state.Alloc(allocID)
	if a == nil || a.ClientTerminalStatus() {
		return false
	}
	if a.Namespace != job.Namespace || a.JobID != job.ID {
		return true
	}
	return a.DesiredStatus == sdk.AllocDesiredStatusRun && !p.csiStopped(a)
}

// csiStopped reports whether the plan stops (or updates in place) a, an
// allocation of its own job: its claims pass to the plan's allocations. A
// preemption, of another job's allocation, ends no claim.
func (p *Plan) csiStopped(a *sdk.Allocation) bool {
	c := p.find(a.NodeID)
	return c != nil && c.removed[a.ID] && p.job != nil && a.Namespace == p.job.Namespace && a.JobID == p.job.ID
}

// csiClaims is what the plan's placements claim of CSI volumes, kept as
// they come (Place and Update log them once csi is on), so that a
// selection does not count the whole plan again.
type csiClaims struct {
	on     bool
	log    []*sdk.Allocation
	seen   int
	counts map[sdk.NamespacedID][2]int // reads, writes
}

// csiTrack turns the log of the plan's CSI claims on, with what the plan
// has placed so far.
func (p *Plan) csiTrack() {
	if p.csi.on {
		return
	}
	p.csi.on = true
	for _, node := range slices.Sorted(maps.Keys(p.NodeAllocation)) {
		p.csi.log = append(p.csi.log, p.NodeAllocation[node]...)
	}
}

// csiPlanClaims counts the claims the plan's placements and in-place
// updates make on a volume (an update's claim, held already, is not
// counted from the state: the plan removes the allocation it replaces).
// An annotation changes no claim: a live one's is counted from the state,
// a finished one's is gone.
func (p *Plan) csiPlanClaims(ns, volID string) (reads, writes int) {
	p.csiTrack()
	for _, a := range p.csi.log[p.csi.seen:] {
		if old := p.state.Alloc(a.ID); old != nil && !p.csiStopped(old) {
			continue // an annotation
		}
		for _, r := range p.csiRequests(a) {
			if p.csi.counts == nil {
				p.csi.counts = map[sdk.NamespacedID][2]int{}
			}
			k := sdk.NamespacedID{Namespace: a.Namespace, ID: r.Source}
			c := p.csi.counts[k]
			if r.ReadOnly {
				c[0]++
			} else {
				c[1]++
			}
			p.csi.counts[k] = c
		}
	}
	p.csi.seen = len(p.csi.log)
	c := p.csi.counts[sdk.NamespacedID{Namespace: ns, ID: volID}]
	return c[0], c[1]
}

// csiMounted counts the volumes of a CSI plugin a node mounts after the
// plan: those its live allocations (but those the plan stops; those it
// preempts still run) and the plan's placements there claim.
func (p *Plan) csiMounted(nodeID, pluginID string) int64 {
	seen := map[sdk.NamespacedID]bool{}
	count := func(a *sdk.Allocation) {
		for _, r := range p.csiRequests(a) {
			k := sdk.NamespacedID{Namespace: a.Namespace, ID: r.Source}
			if v := p.state.CSIVolume(k.Namespace, k.ID); v != nil && v.PluginID == pluginID {
				seen[k] = true
			}
		}
	}
	for _, a := range p.state.AllocsByNode(nodeID) {
		if !a.ClientTerminalStatus() && !p.csiStopped(a) {
			count(a)
		}
	}
	for _, a := range p.NodeAllocation[nodeID] {
		if !a.ClientTerminalStatus() { // an annotation of a finished one mounts nothing
			count(a)
		}
	}
	return int64(len(seen))
}

// csiRequests are the CSI volume requests of an allocation, from its job
// version (the plan's job for a placement that carries none).
func (p *Plan) csiRequests(a *sdk.Allocation) []sdk.CSIVolumeRequest {
	job := a.Job
	if job == nil {
		job = p.Plan.Job
	}
	return sdk.CSIAllocRequests(job, a)
}
