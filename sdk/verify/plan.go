package verify

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/preempt"
)

// State is what plans are judged against: the host's state snapshot (or
// one with the plan being committed laid over it), or sdktest's cluster.
type State interface {
	Index() uint64
	Node(id string) *sdk.Node
	Alloc(id string) *sdk.Allocation
	// AllocsByNode returns the node's allocations, terminal ones included.
	AllocsByNode(nodeID string) []*sdk.Allocation
	Eval(id string) *sdk.Evaluation
	Job(ns, id string) *sdk.Job
	JobVersion(ns, id string, version uint64) *sdk.Job
	Deployment(id string) *sdk.Deployment
	// Nodes returns every node; CSIVolume a CSI volume with its claims
	// (nil if there is none). Only plans placing CSI volumes read them.
	Nodes() []*sdk.Node
	CSIVolume(ns, id string) *sdk.CSIVolume
}

// Limits bound what one plan may carry.
type Limits struct {
	// MaxAllocs bounds placements, stops and preemptions together.
	MaxAllocs int
}

// DefaultLimits are generous enough for a system job on a large cluster.
func DefaultLimits() Limits { return Limits{MaxAllocs: 100_000} }

// MaxAllocBytes bounds the size of one allocation of a plan as the plugin
// wrote it: its descriptions, names, resources and metrics, without what
// the host takes from the state instead (its job, and, for one that
// exists, its task states and allocation states, which a plugin's copy
// carries). Allocations are a few kilobytes; the bound keeps a plugin from
// writing megabytes into the state through one, or through a template
// many placements share (abi.PlanRequest.Shared).
const MaxAllocBytes = 64 << 10

// allocSize refuses an allocation over MaxAllocBytes.
func allocSize(a *sdk.Allocation) error {
	c := *a
	c.Job, c.TaskStates, c.AllocStates = nil, nil, nil
	if n := c.Msgsize(); n > MaxAllocBytes {
		return invalid("allocation %s takes %d bytes (without its job, task states and allocation states), over the limit of %d",
			a.ID, n, MaxAllocBytes)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sdk.ErrPlanInvalid, fmt.Sprintf(format, args...))
}

// Plan checks what does not depend on capacity, against snap: the plan
// must belong to an open eval and carry a job version the state knows (the
// eval's job), every placement must be of that job on a known node with a
// new or same-job ID, every stop of that job's allocation, every preemption
// of another job's allocation of low enough priority (against the job's
// current priority, not the eval's), its deployment of the plan's job
// version, and the plan must stay under the size limit. A plan that fails is rejected whole.
//
// Plan also makes the plan trustworthy for what follows: it replaces
// the plan's job with the stored version, takes the plan's priority from the
// eval and stamps the placements with the eval (an update that keeps its
// job version keeps its own, as in Nomad) and their desired status.
func Plan(snap State, p *sdk.Plan, lim Limits) error {
	if p.EvalID == "" {
		return invalid("no eval ID")
	}
	eval := snap.Eval(p.EvalID)
	if eval == nil {
		return invalid("eval %s does not exist", p.EvalID)
	}
	if eval.TerminalStatus() {
		return invalid("eval %s is %s", eval.ID, eval.Status)
	}
	owner := sdk.NamespacedID{Namespace: eval.Namespace, ID: eval.JobID}
	p.Priority = eval.Priority
	total := 0
	for _, m := range []map[string][]*sdk.Allocation{p.NodeUpdate, p.NodeAllocation, p.NodePreemptions} {
		for _, as := range m {
			total += len(as)
		}
	}
	if total > lim.MaxAllocs {
		return invalid("plan touches %d allocations, over the limit of %d", total, lim.MaxAllocs)
	}
	if p.Job != nil {
		if p.Job.Namespace != owner.Namespace || p.Job.ID != owner.ID {
			return invalid("plan job %s/%s is not the eval's job %s", p.Job.Namespace, p.Job.ID, owner)
		}
		stored := storedVersion(snap, p.Job)
		if stored == nil {
			return invalid("job %s version %d (modify index %d) is not a version the state knows",
				owner, p.Job.Version, p.Job.JobModifyIndex)
		}
		p.Job = stored
	}
	if len(p.NodeAllocation) > 0 && p.Job == nil {
		return invalid("placements without a job")
	}
	seen := map[string]bool{}
	dup := func(a *sdk.Allocation) error {
		if a.ID == "" {
			return invalid("allocation without an ID")
		}
		if seen[a.ID] {
			return invalid("allocation %s appears twice", a.ID)
		}
		seen[a.ID] = true
		return allocSize(a)
	}
	for node, allocs := range p.NodeAllocation {
		if snap.Node(node) == nil && !onlyAnnotatesFinished(snap, node, allocs) {
			return invalid("unknown node %s", node)
		}
		for _, a := range allocs {
			if a == nil {
				return invalid("a placement on node %s is missing (null)", node)
			}
			if err := checkPlacement(snap, p, node, a, dup); err != nil {
				return err
			}
		}
	}
	for node, stops := range p.NodeUpdate {
		for _, s := range stops {
			if s == nil {
				return invalid("a stop on node %s is missing (null)", node)
			}
			if err := dup(s); err != nil {
				return err
			}
			old := snap.Alloc(s.ID)
			if old == nil {
				return invalid("stop of unknown allocation %s", s.ID)
			}
			if old.NodeID != node {
				return invalid("stop of allocation %s filed under node %s, but it runs on %s", s.ID, node, old.NodeID)
			}
			if jk := (sdk.NamespacedID{Namespace: old.Namespace, ID: old.JobID}); jk != owner {
				return invalid("stop of allocation %s of another job (%s)", s.ID, jk)
			}
			switch s.DesiredStatus {
			case "", sdk.AllocDesiredStatusStop, sdk.AllocDesiredStatusEvict:
			default:
				return invalid("stop of allocation %s with desired status %q", s.ID, s.DesiredStatus)
			}
			switch s.ClientStatus {
			case "", sdk.AllocClientStatusLost, sdk.AllocClientStatusUnknown, sdk.AllocClientStatusComplete, sdk.AllocClientStatusFailed:
			default:
				return invalid("stop of allocation %s may not set client status %q", s.ID, s.ClientStatus)
			}
		}
	}
	// Preemption is by the job's priority, as the scheduler ranks it: the
	// eval's may be older (the job re-registered since) or raised for the
	// queue alone.
	preemptor := -1
	if j := snap.Job(owner.Namespace, owner.ID); j != nil {
		preemptor = j.Priority
	}
	for node, pre := range p.NodePreemptions {
		for _, s := range pre {
			if s == nil {
				return invalid("a preemption on node %s is missing (null)", node)
			}
			if err := dup(s); err != nil {
				return err
			}
			old := snap.Alloc(s.ID)
			if old == nil {
				return invalid("preemption of unknown allocation %s", s.ID)
			}
			if old.NodeID != node {
				return invalid("preemption of allocation %s filed under node %s, but it runs on %s", s.ID, node, old.NodeID)
			}
			if old.Namespace == owner.Namespace && old.JobID == owner.ID {
				return invalid("preemption of allocation %s of the plan's own job", s.ID)
			}
			prio := sdk.JobDefaultPriority
			if old.Job != nil {
				prio = old.Job.Priority
			}
			if preemptor < 0 {
				return invalid("preemption of allocation %s for job %s, which is gone", s.ID, owner)
			}
			if preemptor-prio < preempt.MinPriorityDelta {
				return invalid("allocation %s (priority %d) may not be preempted by job %s (priority %d)", s.ID, prio, owner, preemptor)
			}
		}
	}
	if d := p.Deployment; d != nil {
		if d.Namespace != owner.Namespace || d.JobID != owner.ID {
			return invalid("deployment %s is for job %s/%s, not %s", d.ID, d.Namespace, d.JobID, owner)
		}
		if old := snap.Deployment(d.ID); old != nil && (old.Namespace != owner.Namespace || old.JobID != owner.ID) {
			return invalid("deployment ID %s is already used by job %s/%s", d.ID, old.Namespace, old.JobID)
		}
		for g, st := range d.TaskGroups {
			if st == nil {
				return invalid("deployment %s: the state of group %q is missing (null)", d.ID, g)
			}
		}
		// A deployment tracks the version the plan places: one of another
		// version (or of the job before a purge) would run beside the
		// job's own, and nothing would ever end it.
		if p.Job == nil || d.JobVersion != p.Job.Version || d.JobCreateIndex != p.Job.CreateIndex {
			return invalid("deployment %s is for version %d (job created at %d), not the plan's job", d.ID, d.JobVersion, d.JobCreateIndex)
		}
	}
	for _, u := range p.DeploymentUpdates {
		if u == nil {
			return invalid("a deployment update is missing (null)")
		}
		d := snap.Deployment(u.DeploymentID)
		if d == nil && (p.Deployment == nil || p.Deployment.ID != u.DeploymentID) {
			return invalid("update of unknown deployment %s", u.DeploymentID)
		}
		if d != nil && (d.Namespace != owner.Namespace || d.JobID != owner.ID) {
			return invalid("update of deployment %s of another job", u.DeploymentID)
		}
	}
	return nil
}

// checkPlacement validates one placement (or in-place update, or
// annotation) on node and stamps it with its eval.
func checkPlacement(snap State, p *sdk.Plan, node string, a *sdk.Allocation, dup func(*sdk.Allocation) error) error {
	if err := dup(a); err != nil {
		return err
	}
	if a.NodeID != node {
		return invalid("allocation %s filed under node %s names node %s", a.ID, node, a.NodeID)
	}
	if a.JobID != p.Job.ID || a.Namespace != p.Job.Namespace {
		return invalid("allocation %s belongs to job %s/%s, not the plan's job %s/%s",
			a.ID, a.Namespace, a.JobID, p.Job.Namespace, p.Job.ID)
	}
	job := p.Job
	old := snap.Alloc(a.ID) // the allocation a updates, if any
	if older, err := olderVersion(snap, p, a, old); err != nil {
		return err
	} else if older != nil {
		job = older
	}
	tg := job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return invalid("allocation %s names unknown task group %q", a.ID, a.TaskGroup)
	}
	if err := checkResources(a, old, tg); err != nil {
		return err
	}
	if err := checkDevices(a, old, tg, func() *sdk.Node { return snap.Node(node) }); err != nil {
		return err
	}
	if a.PreviousAllocation != "" {
		if prev := snap.Alloc(a.PreviousAllocation); prev != nil && (prev.JobID != a.JobID || prev.Namespace != a.Namespace) {
			return invalid("allocation %s names allocation %s of another job as its predecessor", a.ID, a.PreviousAllocation)
		}
	}
	if a.DeploymentID != "" && (p.Deployment == nil || p.Deployment.ID != a.DeploymentID) {
		if d := snap.Deployment(a.DeploymentID); d == nil || d.Namespace != a.Namespace || d.JobID != a.JobID {
			return invalid("allocation %s names deployment %s, which is neither the plan's nor its job's", a.ID, a.DeploymentID)
		}
	}
	if old := snap.Alloc(a.ID); old != nil {
		if !sdk.SameAllocation(old, a, a.NodeID) {
			return invalid("allocation ID %s is already used by another allocation", a.ID)
		}
		// A stopped allocation is not brought back. One its node reports
		// finished (failed, say) that the server still wants running may
		// be updated: that is how a scheduler annotates it (the follow-up
		// eval of a delayed reschedule), as in Nomad; it stays finished.
		if old.DesiredStatus == sdk.AllocDesiredStatusStop || old.DesiredStatus == sdk.AllocDesiredStatusEvict {
			return invalid("allocation %s is stopped and cannot be updated in place", a.ID)
		}
	}
	switch a.DesiredStatus {
	case "":
		a.DesiredStatus = sdk.AllocDesiredStatusRun
	case sdk.AllocDesiredStatusRun:
	default:
		return invalid("placement %s with desired status %q", a.ID, a.DesiredStatus)
	}
	// A placement or an in-place update is the plan's eval's; an
	// annotation (a follow-up eval, a status marked unknown) leaves the
	// allocation the eval that placed it, as in Nomad.
	a.EvalID = p.EvalID
	if old != nil && sdk.KeepsVersion(old, a) {
		a.EvalID = old.EvalID
	}
	a.Job = nil
	return nil
}

// olderVersion returns the kept job version a new placement runs instead
// of the plan's job (PlacedVersion), or nil. old is the stored allocation a
// updates, nil for a new placement.
func olderVersion(snap State, p *sdk.Plan, a, old *sdk.Allocation) (*sdk.Job, error) {
	if old != nil {
		if sdk.KeepsVersion(old, a) {
			return old.Job, nil // an annotation: the version it runs
		}
		return nil, nil // an in-place update to the plan's job
	}
	v, other := PlacedVersion(snap, p.Job, a)
	if other && v == nil {
		return nil, invalid("allocation %s names job version %d (modify index %d), which the state does not keep",
			a.ID, a.JobVersion, a.JobModifyIndex)
	}
	return v, nil
}

// checkResources checks what a placement claims to hold (see
// sdk.AllocatedResources.CheckCovers), so the fit check cannot be fooled
// by a plugin that under-reports, or reports negative, resources.
//
// old is the stored allocation a updates (in place, or an annotation), nil
// for a new placement. An update that keeps exactly the networks and ports
// the allocation holds, for a group that asks for the same networks as the
// version the allocation runs, is not refused for the ports the group asks
// for: it changes nothing the port check guards (no port is freed or
// claimed, none is newly asked for), and an allocation placed before the
// host checked ports (by a plugin that placed with sdk.RequestedResources)
// must stay updatable, or every plan that touches it (a scaling, a
// reschedule annotation) is refused.
func checkResources(a, old *sdk.Allocation, tg *sdk.TaskGroup) error {
	err := a.AllocatedResources.CheckCovers(tg)
	if err != nil && old != nil && old.Job != nil && sameNetworks(old.AllocatedResources, a.AllocatedResources) {
		if otg := old.Job.LookupTaskGroup(a.TaskGroup); otg != nil && reflect.DeepEqual(networkAsks(otg), networkAsks(tg)) {
			err = a.AllocatedResources.CheckCovers(withoutNetworks(tg))
		}
	}
	if err != nil {
		return invalid("allocation %s: %v", a.ID, err)
	}
	return nil
}

// sameNetworks reports whether a and b hold the same networks and ports,
// shared and per task (nil and empty alike; a task missing on one side
// holds none).
func sameNetworks(a, b *sdk.AllocatedResources) bool {
	if a == nil || b == nil {
		return false
	}
	nets := func(x, y []*sdk.NetworkResource) bool {
		return slices.EqualFunc(x, y, func(p, q *sdk.NetworkResource) bool { return reflect.DeepEqual(p, q) })
	}
	return nets(a.Shared.Networks, b.Shared.Networks) && slices.Equal(a.Shared.Ports, b.Shared.Ports) &&
		samePerTask(a, b, func(x, y *sdk.AllocatedTaskResources) bool { return nets(x.Networks, y.Networks) })
}

// networkAsks returns the ports tg's network (the first, the one assigned)
// and its tasks' networks ask for, by task name ("" for the group's), none
// for those that ask for none: what CheckCovers requires a placement to hold.
func networkAsks(tg *sdk.TaskGroup) map[string][]sdk.Port {
	out := map[string][]sdk.Port{}
	add := func(key string, nws []*sdk.NetworkResource) {
		var ports []sdk.Port
		for _, nw := range nws {
			if nw != nil {
				ports = append(append(ports, nw.ReservedPorts...), nw.DynamicPorts...)
			}
		}
		if len(ports) > 0 {
			out[key] = ports
		}
	}
	if len(tg.Networks) > 0 {
		add("", tg.Networks[:1])
	}
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			add(t.Name, t.Resources.Networks)
		}
	}
	return out
}

// withoutNetworks returns a copy of tg that asks for no networks.
func withoutNetworks(tg *sdk.TaskGroup) *sdk.TaskGroup {
	c := *tg
	c.Networks = nil
	c.Tasks = make([]*sdk.Task, len(tg.Tasks))
	for i, t := range tg.Tasks {
		ct := *t
		if t.Resources != nil {
			r := *t.Resources
			r.Networks = nil
			ct.Resources = &r
		}
		c.Tasks[i] = &ct
	}
	return &c
}

// checkDevices checks that a placement holds, for every device a task of
// its group asks for, at least the count asked of instances of a matching
// device (feasible.DeviceNameMatches: "type", "vendor/type" or
// "vendor/type/model"), so that no task runs without the GPUs it asked
// for. It is here rather than in sdk.AllocatedResources.CheckCovers
// because what an instance is, is the node's to say: an instance counts as
// the node's device group that lists it, not as what the placement calls
// it. One the node does not know (a made-up ID, or a node registered
// again since the plugin looked) counts as what the placement names, and
// feasible.AllocsFit then rejects the node for it, as it does collisions
// and unhealthy instances: those are capacity, judged node by node.
//
// nodeOf returns the node, looked up only for a group that asks for
// devices (most do not, and this runs for every placement the applier
// judges). old is the stored allocation a updates, nil for a new
// placement. As for ports (checkResources), an update that keeps exactly the devices the
// allocation holds, for a group asking for the same devices as the
// version the allocation runs, is not refused: it claims and frees no
// instance, and an allocation placed before the host checked devices must
// stay updatable.
func checkDevices(a, old *sdk.Allocation, tg *sdk.TaskGroup, nodeOf func() *sdk.Node) error {
	asks := deviceAsks(tg)
	if len(asks) == 0 {
		return nil
	}
	if old != nil && old.Job != nil && sameDevices(old.AllocatedResources, a.AllocatedResources) {
		if otg := old.Job.LookupTaskGroup(a.TaskGroup); otg != nil && reflect.DeepEqual(deviceAsks(otg), asks) {
			return nil
		}
	}
	groups := map[string]*sdk.NodeDeviceResource{} // by instance ID
	if node := nodeOf(); node != nil && node.NodeResources != nil {
		for _, d := range node.NodeResources.Devices {
			for _, inst := range d.Instances {
				groups[inst.ID] = d
			}
		}
	}
	for _, t := range tg.Tasks {
		reqs := asks[t.Name]
		if len(reqs) == 0 {
			continue
		}
		// The instances the task holds, each as the device group it is.
		var held []*sdk.NodeDeviceResource
		seen := map[string]bool{}
		if tr := a.AllocatedResources.Tasks[t.Name]; tr != nil {
			for _, d := range tr.Devices {
				if d == nil {
					continue
				}
				for _, id := range d.DeviceIDs {
					if seen[id] {
						continue
					}
					seen[id] = true
					g := groups[id]
					if g == nil {
						g = &sdk.NodeDeviceResource{Vendor: d.Vendor, Type: d.Type, Name: d.Name}
					}
					held = append(held, g)
				}
			}
		}
		// Each instance serves one request. The names a task asks for are
		// nested or disjoint ("gpu" holds every "nvidia/gpu", which holds
		// every "nvidia/gpu/1080ti"), so serving the most specific first
		// never takes an instance a later request needed more.
		reqs = slices.Clone(reqs)
		slices.SortStableFunc(reqs, func(x, y deviceAsk) int {
			return strings.Count(y.Name, "/") - strings.Count(x.Name, "/")
		})
		taken := make([]bool, len(held))
		for _, req := range reqs {
			var n uint64
			for i, g := range held {
				if n == req.Count {
					break
				}
				if !taken[i] && feasible.DeviceNameMatches(g, req.Name) {
					taken[i] = true
					n++
				}
			}
			if n < req.Count {
				return invalid("allocation %s: it holds %d instance(s) of device %s, fewer than the %d its task %q asks for",
					a.ID, n, req.Name, req.Count, t.Name)
			}
		}
	}
	return nil
}

// deviceAsk is a device request as checkDevices judges it.
type deviceAsk struct {
	Name  string
	Count uint64
}

// deviceAsks returns the devices tg's tasks ask for, by task name, none
// for tasks that ask for none (nil when none does: most groups, and no
// allocation for them).
func deviceAsks(tg *sdk.TaskGroup) map[string][]deviceAsk {
	var out map[string][]deviceAsk
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		for _, d := range t.Resources.Devices {
			if d == nil {
				continue
			}
			if out == nil {
				out = map[string][]deviceAsk{}
			}
			out[t.Name] = append(out[t.Name], deviceAsk{Name: d.Name, Count: d.Count})
		}
	}
	return out
}

// sameDevices reports whether b holds, task by task, the devices a holds
// (nil and empty alike).
func sameDevices(a, b *sdk.AllocatedResources) bool {
	return a != nil && b != nil && samePerTask(a, b, func(x, y *sdk.AllocatedTaskResources) bool {
		return slices.EqualFunc(x.Devices, y.Devices, func(p, q *sdk.AllocatedDeviceResource) bool { return reflect.DeepEqual(p, q) })
	})
}

// samePerTask reports whether same holds for each task of a or b, a task
// missing on one side being compared as empty resources.
func samePerTask(a, b *sdk.AllocatedResources, same func(x, y *sdk.AllocatedTaskResources) bool) bool {
	task := func(r *sdk.AllocatedResources, name string) *sdk.AllocatedTaskResources {
		if tr := r.Tasks[name]; tr != nil {
			return tr
		}
		return &sdk.AllocatedTaskResources{}
	}
	for name := range a.Tasks {
		if !same(task(a, name), task(b, name)) {
			return false
		}
	}
	for name := range b.Tasks {
		if !same(task(a, name), task(b, name)) {
			return false
		}
	}
	return true
}

// storedVersion returns the stored job version j claims to be: the current
// job or a kept version with the same version and job modify index.
func storedVersion(snap State, j *sdk.Job) *sdk.Job {
	if cur := snap.Job(j.Namespace, j.ID); cur != nil && cur.Version == j.Version && cur.JobModifyIndex == j.JobModifyIndex {
		return cur
	}
	if v := snap.JobVersion(j.Namespace, j.ID, j.Version); v != nil && v.JobModifyIndex == j.JobModifyIndex {
		return v
	}
	return nil
}

// onlyAnnotatesFinished reports whether every placement on nodeID updates
// an allocation there that its node reported finished: annotations (a
// failed allocation's follow-up eval), which need nothing of the node, so
// its node may be gone (collected after it went down).
func onlyAnnotatesFinished(snap State, nodeID string, placements []*sdk.Allocation) bool {
	for _, a := range placements {
		if a == nil {
			return false
		}
		if old := snap.Alloc(a.ID); old == nil || old.NodeID != nodeID || !old.ClientTerminalStatus() {
			return false
		}
	}
	return len(placements) > 0
}

// onlyMarksUnknown reports whether every placement is a live allocation
// marked unknown: what a scheduler does on a disconnected node.
func onlyMarksUnknown(placements []*sdk.Allocation, live map[string]bool) bool {
	for _, a := range placements {
		if !live[a.ID] || a.ClientStatus != sdk.AllocClientStatusUnknown {
			return false
		}
	}
	return true
}

// NodeFits checks one node's part of the plan against snap, as Nomad's
// plan applier does: a node that only loses allocations, or only has
// finished ones annotated, always fits; a node that gets allocations must
// exist and be ready (or be disconnected, when its part only marks live
// allocations unknown); one that gets new allocations (not only in-place
// updates of its live ones) must also be eligible; and the proposed set —
// the node's live allocations, less the plan's stops, preemptions and
// updated allocations, plus the plan's placements — must fit the node, as
// feasible.AllocsFit judges (host ports per address, as Nomad counts them),
// the ports of new placements and of updates that change their networks
// being on the node's addresses. It returns the reason a node does not fit.
func NodeFits(snap State, p *sdk.Plan, nodeID string) (bool, string) {
	placements := p.NodeAllocation[nodeID]
	if len(placements) == 0 {
		return true, ""
	}
	existing := snap.AllocsByNode(nodeID)
	live := make(map[string]bool, len(existing))
	var finished map[string]bool
	for _, a := range existing {
		switch {
		case !a.TerminalStatus():
			live[a.ID] = true
		case a.ClientTerminalStatus():
			if finished == nil {
				finished = map[string]bool{}
			}
			finished[a.ID] = true
		}
	}
	// Updates of allocations the node reports finished only annotate
	// them: they hold nothing and need nothing of the node.
	if len(finished) > 0 {
		placements = slices.DeleteFunc(slices.Clone(placements), func(a *sdk.Allocation) bool { return finished[a.ID] })
		if len(placements) == 0 {
			return true, ""
		}
	}
	node := snap.Node(nodeID)
	if node == nil {
		return false, "node does not exist"
	}
	if node.Status != sdk.NodeStatusReady && !(node.Status == sdk.NodeStatusDisconnected && onlyMarksUnknown(placements, live)) {
		return false, "node is not ready for placements"
	}
	removed := make(map[string]bool, len(placements))
	for _, a := range p.NodeUpdate[nodeID] {
		removed[a.ID] = true
	}
	for _, a := range p.NodePreemptions[nodeID] {
		removed[a.ID] = true
	}
	onlyUpdates := true
	for _, a := range placements {
		removed[a.ID] = true
		if !live[a.ID] {
			onlyUpdates = false
		}
	}
	if !onlyUpdates && !node.Ready() {
		return false, "node is not eligible for new placements"
	}
	proposed := make([]*sdk.Allocation, 0, len(existing)+len(placements))
	for _, a := range existing {
		if live[a.ID] && !removed[a.ID] {
			proposed = append(proposed, a)
		}
	}
	for _, a := range placements {
		if live[a.ID] && a.ClientTerminalStatus() {
			// The FSM keeps the node's view of an allocation updated in
			// place: a plan that calls a running allocation finished does
			// not free its room (AllocsFit would leave it out).
			c := *a
			c.ClientStatus = snap.Alloc(a.ID).ClientStatus
			a = &c
		}
		proposed = append(proposed, a)
	}
	// Ports are counted per address (feasible.PortIndex): a port held on
	// an address the node does not have would collide with nothing. An
	// update that keeps its networks claims nothing new, and keeps the
	// addresses it holds even if the node's have changed since.
	for _, a := range placements {
		if live[a.ID] {
			if old := snap.Alloc(a.ID); old != nil && sameNetworks(old.AllocatedResources, a.AllocatedResources) {
				continue
			}
		}
		if addr, port := portOffNode(node, a.AllocatedResources); port != 0 {
			return false, fmt.Sprintf("network: port %d is held on %q, not an address of the node", port, addr)
		}
	}
	if ok, dim := feasible.AllocsFit(node, proposed); !ok {
		if onlyUpdates && claimNothingNew(snap, placements) {
			// The node was over before this plan (it registered again,
			// smaller): updates that hold no more than the allocations
			// they update add nothing to that, and refusing them would
			// fail their eval at every attempt.
			return true, ""
		}
		return false, dim + " exhausted"
	}
	return true, ""
}

// claimNothingNew reports whether each of the in-place updates holds no
// more of any resource than the stored allocation it updates, and the same
// ports, reserved cores and device instances.
func claimNothingNew(snap State, updates []*sdk.Allocation) bool {
	for _, a := range updates {
		old := snap.Alloc(a.ID)
		if old == nil {
			return false
		}
		if ok, _ := a.Usage().Fits(old.Usage()); !ok {
			return false
		}
		if !sameNetworks(old.AllocatedResources, a.AllocatedResources) || !sameDevices(old.AllocatedResources, a.AllocatedResources) ||
			!sameCores(old.AllocatedResources, a.AllocatedResources) {
			return false
		}
	}
	return true
}

// sameCores reports whether a and b reserve the same cores for each task.
func sameCores(a, b *sdk.AllocatedResources) bool {
	return a != nil && b != nil && samePerTask(a, b, func(x, y *sdk.AllocatedTaskResources) bool {
		return slices.Equal(x.Cpu.ReservedCores, y.Cpu.ReservedCores)
	})
}

// portOffNode returns a port r holds, and its address, where the address
// is not one of node's (see nodeHasAddress); port 0 if there is none. It
// reads the ports as feasible.PortIndex.AddAlloc counts them, skipping
// those not assigned (0); values that are not ports were refused before
// (sdk.AllocatedResources.CheckCovers).
func portOffNode(node *sdk.Node, r *sdk.AllocatedResources) (addr string, port int) {
	if r == nil {
		return "", 0
	}
	network := func(nw *sdk.NetworkResource) (string, int) {
		if nw == nil || nodeHasAddress(node, nw.IP) {
			return "", 0
		}
		for _, ports := range [2][]sdk.Port{nw.ReservedPorts, nw.DynamicPorts} {
			for _, p := range ports {
				if p.Value > 0 {
					return nw.IP, p.Value
				}
			}
		}
		return "", 0
	}
	if len(r.Shared.Ports) > 0 {
		for _, pm := range r.Shared.Ports {
			if pm.Value > 0 && !nodeHasAddress(node, pm.HostIP) {
				return pm.HostIP, pm.Value
			}
		}
	} else {
		for _, nw := range r.Shared.Networks {
			if addr, port := network(nw); port != 0 {
				return addr, port
			}
		}
	}
	for _, t := range r.Tasks {
		if t == nil {
			continue
		}
		for _, nw := range t.Networks {
			if addr, port := network(nw); port != 0 {
				return addr, port
			}
		}
	}
	return "", 0
}

// nodeHasAddress reports whether node offers ports on addr: its address
// (feasible.NodeIP, which may be empty on a node that reports none), or
// one its networks or host network interfaces report.
func nodeHasAddress(node *sdk.Node, addr string) bool {
	if addr == feasible.NodeIP(node) {
		return true
	}
	if addr == "" || node.NodeResources == nil {
		return false
	}
	for _, nw := range node.NodeResources.Networks {
		if nw != nil && nw.IP == addr {
			return true
		}
	}
	for _, nw := range node.NodeResources.NodeNetworks {
		if nw == nil {
			continue
		}
		for _, a := range nw.Addresses {
			if a.Address == addr {
				return true
			}
		}
	}
	return false
}

// PlacedVersion says which version of its job a new placement runs. A
// placement names another version than the plan's job by a non-zero
// JobModifyIndex (with its JobVersion), as Nomad's non-canary placements
// run the deployed version while canaries of a new one await promotion;
// other reports whether it does, and v is that version as the state keeps
// it (nil: the state keeps no such version, which Plan refuses). In-place
// updates always move to the plan's job: callers ask only for new
// allocations.
func PlacedVersion(versions interface {
	JobVersion(ns, id string, v uint64) *sdk.Job
}, planJob *sdk.Job, a *sdk.Allocation) (v *sdk.Job, other bool) {
	if planJob == nil || a.JobModifyIndex == 0 || a.JobModifyIndex == planJob.JobModifyIndex {
		return nil, false
	}
	if v := versions.JobVersion(a.Namespace, a.JobID, a.JobVersion); v != nil && v.JobModifyIndex == a.JobModifyIndex {
		return v, true
	}
	return nil, true
}
