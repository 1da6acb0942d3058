package feasible

import (
	"math"
	"strings"

	"github.com/drover-sched/drover/sdk"
)

// DeviceNameMatches reports whether a device group is of the kind a
// request names: "type", "vendor/type" or "vendor/type/model", as in
// Nomad. The host checks with it that a placement holds instances of the
// devices its tasks ask for (package verify).
func DeviceNameMatches(d *sdk.NodeDeviceResource, name string) bool {
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		return d.Type == parts[0]
	case 2:
		return d.Vendor == parts[0] && d.Type == parts[1]
	case 3:
		return d.Vendor == parts[0] && d.Type == parts[1] && d.Name == parts[2]
	}
	return false
}

// resolveDeviceTarget resolves "${device.vendor}", "${device.type}",
// "${device.model}", "${device.ids}" (strings; the group's instance IDs,
// healthy or not, joined by commas), "${device.attr.X}" or a literal
// against a device group, as Nomad does: an attribute or a literal is read
// as a number with its unit where it is one (parseAttribute).
func resolveDeviceTarget(target string, d *sdk.NodeDeviceResource) (string, attribute, bool) {
	if !strings.HasPrefix(target, "${") {
		return target, parseAttribute(target), true
	}
	switch target {
	case deviceIDs:
		ids := make([]string, len(d.Instances))
		for i, inst := range d.Instances {
			ids[i] = inst.ID
		}
		s := strings.Join(ids, ",")
		return s, attribute{s: s}, true
	case "${device.vendor}":
		return d.Vendor, attribute{s: d.Vendor}, true
	case "${device.type}":
		return d.Type, attribute{s: d.Type}, true
	case "${device.model}":
		return d.Name, attribute{s: d.Name}, true
	}
	if key, ok := strings.CutPrefix(target, "${device.attr."); ok {
		v, ok := d.Attributes[strings.TrimSuffix(key, "}")]
		return v, parseAttribute(v), ok
	}
	return "", attribute{}, false
}

// deviceIDs names a device group's instance IDs in a device constraint.
const deviceIDs = "${device.ids}"

// DevicesEscape reports whether a device request's constraints depend on
// more than a node's computed class: instance IDs, which
// sdk.Node.ComputeClass leaves out (Nomad caches such a check per class
// all the same, and so may pass or fail every node of a class on the
// first one's instances).
func DevicesEscape(reqs []*sdk.RequestedDevice) bool {
	for _, r := range reqs {
		for _, c := range r.Constraints {
			if c.LTarget == deviceIDs || c.RTarget == deviceIDs {
				return true
			}
		}
	}
	return false
}

// DeviceMatches reports whether a device group satisfies a request's name
// and constraints. Comparisons read attributes as Nomad does: "11 GiB" is
// more than "9000 MiB" (deviceCompare).
func DeviceMatches(ch *Checker, d *sdk.NodeDeviceResource, req *sdk.RequestedDevice) bool {
	if !DeviceNameMatches(d, req.Name) {
		return false
	}
	for _, c := range req.Constraints {
		if !ch.deviceCompare(c.Operand, c.LTarget, c.RTarget, d) {
			return false
		}
	}
	return true
}

// deviceCompare checks a device constraint or affinity against a device
// group as Nomad's checkAttributeConstraint does: equality and order
// compare typed attributes (numbers after their units, and only with
// values of the same kind). The other operators compare the values as
// written, as for node attributes, where Nomad's match only strings:
// there `${device.attr.cuda_cores} regexp "^35"` or
// `${device.attr.driver} version ">= 12.0"` never match, the values
// being numbers (docs/api.md, "Differences from Nomad").
func (ch *Checker) deviceCompare(op, lt, rt string, d *sdk.NodeDeviceResource) bool {
	l, la, lok := resolveDeviceTarget(lt, d)
	r, ra, rok := resolveDeviceTarget(rt, d)
	switch op {
	case sdk.ConstraintNotEqual, "not":
		if !lok || !rok {
			return lok != rok
		}
		v, ok := la.compare(ra)
		return ok && v != 0
	case sdk.ConstraintEqual, "==", "is", sdk.ConstraintLess, sdk.ConstraintLessEqual, sdk.ConstraintGreater, sdk.ConstraintGreaterEqual:
		if !lok || !rok {
			return false
		}
		v, ok := la.compare(ra)
		if !ok {
			return false
		}
		switch op {
		case sdk.ConstraintLess:
			return v == -1
		case sdk.ConstraintLessEqual:
			return v != 1
		case sdk.ConstraintGreater:
			return v == 1
		case sdk.ConstraintGreaterEqual:
			return v != -1
		}
		return v == 0
	}
	return ch.Compare(op, l, r, lok, rok)
}

// healthyInstances counts a device group's healthy instances.
func healthyInstances(d *sdk.NodeDeviceResource) int {
	n := 0
	for _, inst := range d.Instances {
		if inst.Healthy {
			n++
		}
	}
	return n
}

// HasDevices reports whether node has, for every request, a matching device
// group with enough healthy instances, counting each group once across
// requests. It ignores what other allocations hold (see DeviceAllocator).
func HasDevices(ch *Checker, n *sdk.Node, reqs []*sdk.RequestedDevice) bool {
	if n.NodeResources == nil {
		return len(reqs) == 0
	}
	avail := make([]int, len(n.NodeResources.Devices))
	for i, d := range n.NodeResources.Devices {
		avail[i] = healthyInstances(d)
	}
next:
	for _, req := range reqs {
		for i, d := range n.NodeResources.Devices {
			if uint64(avail[i]) >= req.Count && DeviceMatches(ch, d, req) {
				avail[i] -= int(req.Count)
				continue next
			}
		}
		return false
	}
	return true
}

// DimNoDevices is the exhausted dimension of a node where no device group
// has enough free instances for a request, as Nomad words it.
const DimNoDevices = "devices: no devices match request"

// DeviceAllocator hands out device instances of one node. It starts from
// the instances other allocations hold.
type DeviceAllocator struct {
	ch   *Checker
	node *sdk.Node
	used map[string]bool
}

// NewDeviceAllocator returns an allocator for node, with the devices the
// given allocations hold marked used. Terminal allocations hold nothing.
func NewDeviceAllocator(ch *Checker, node *sdk.Node, allocs []*sdk.Allocation) *DeviceAllocator {
	a := &DeviceAllocator{ch: ch, node: node, used: map[string]bool{}}
	for _, al := range allocs {
		a.AddAlloc(al)
	}
	return a
}

// AddAlloc marks the devices alloc holds as used (none once its node
// reports it finished).
func (a *DeviceAllocator) AddAlloc(al *sdk.Allocation) {
	if al.ClientTerminalStatus() || al.AllocatedResources == nil {
		return
	}
	for _, t := range al.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			for _, id := range d.DeviceIDs {
				a.used[id] = true
			}
		}
	}
}

// Assign picks Count free healthy instances of the matching device group
// that best meets the request's affinities, marks them used and returns
// them with the affinity score (matched weight over total weight, 0 when
// the request has no affinities). It returns nil when no group has enough
// free instances.
func (a *DeviceAllocator) Assign(req *sdk.RequestedDevice) (*sdk.AllocatedDeviceResource, float64) {
	if a.node.NodeResources == nil {
		return nil, 0
	}
	var best *sdk.NodeDeviceResource
	bestScore := math.Inf(-1)
	totalWeight := 0.0
	for _, af := range req.Affinities {
		totalWeight += math.Abs(float64(af.Weight))
	}
	for _, d := range a.node.NodeResources.Devices {
		if !DeviceMatches(a.ch, d, req) || a.free(d) < int(req.Count) {
			continue
		}
		score := 0.0
		for _, af := range req.Affinities {
			if a.ch.deviceCompare(af.Operand, af.LTarget, af.RTarget, d) {
				score += float64(af.Weight)
			}
		}
		if totalWeight > 0 {
			score /= totalWeight
		}
		if score > bestScore {
			best, bestScore = d, score
		}
	}
	if best == nil {
		return nil, 0
	}
	out := &sdk.AllocatedDeviceResource{Vendor: best.Vendor, Type: best.Type, Name: best.Name}
	for _, inst := range best.Instances {
		if uint64(len(out.DeviceIDs)) == req.Count {
			break
		}
		if inst.Healthy && !a.used[inst.ID] {
			out.DeviceIDs = append(out.DeviceIDs, inst.ID)
			a.used[inst.ID] = true
		}
	}
	if totalWeight == 0 {
		bestScore = 0
	}
	return out, bestScore
}

// Free is how many healthy instances of the device group are not used.
func (a *DeviceAllocator) Free(d *sdk.NodeDeviceResource) int { return a.free(d) }

func (a *DeviceAllocator) free(d *sdk.NodeDeviceResource) int {
	n := 0
	for _, inst := range d.Instances {
		if inst.Healthy && !a.used[inst.ID] {
			n++
		}
	}
	return n
}
