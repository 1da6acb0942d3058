package feasible

import (
	"cmp"
	"math"
	"slices"
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
// group with enough healthy instances, a group giving each of its
// instances to one request at most. It ignores what other allocations hold
// (see DeviceAllocator). Unlike Nomad's first fit, it tries the other
// groups of earlier requests before it answers no (chooseGroups).
func HasDevices(ch *Checker, n *sdk.Node, reqs []*sdk.RequestedDevice) bool {
	if n.NodeResources == nil {
		return len(reqs) == 0
	}
	devices := n.NodeResources.Devices
	avail := make([]int, len(devices))
	for i, d := range devices {
		avail[i] = healthyInstances(d)
	}
	cands := make([][]int, len(reqs))
	for r, req := range reqs {
		for i, d := range devices {
			if uint64(avail[i]) >= req.Count && DeviceMatches(ch, d, req) {
				cands[r] = append(cands[r], i)
			}
		}
	}
	return chooseGroups(reqs, cands, avail) != nil
}

// maxDeviceSearch bounds chooseGroups' backtracking: tasks ask for a few
// devices of a few groups, so it is reached only where some requests
// between them ask more of their groups than those have (the search then
// tries every choice of the others), and a node it would take longer on
// is treated as without room.
const maxDeviceSearch = 10_000

// chooseGroups gives each request one of its candidate device groups
// (cands[r], indexes into free, most preferred first) such that no group
// gives more instances than it has free: the first such choice in order of
// preference, found by backtracking. Where taking each request's most
// preferred group that still has room fits (Nomad's greedy choice), that
// is the answer; where it does not, an earlier request takes its next
// group, so a node whose groups fit the requests only in another order is
// not refused. It returns nil when no choice fits; free is left as it was.
func chooseGroups(reqs []*sdk.RequestedDevice, cands [][]int, free []int) []int {
	// More asked than the groups any request could take from have: no
	// choice fits, and the search would try them all.
	need, have, counted := 0, 0, make([]bool, len(free))
	for r, req := range reqs {
		need += int(req.Count)
		for _, g := range cands[r] {
			if !counted[g] {
				counted[g], have = true, have+free[g]
			}
		}
	}
	if need > have {
		return nil
	}
	choice := make([]int, len(reqs))
	steps := 0
	var fit func(r int) bool
	fit = func(r int) bool {
		if r == len(reqs) {
			return true
		}
		n := int(reqs[r].Count)
		for _, g := range cands[r] {
			if steps++; steps > maxDeviceSearch {
				return false
			}
			if free[g] < n {
				continue
			}
			free[g] -= n
			choice[r] = g
			ok := fit(r + 1)
			free[g] += n
			if ok {
				return true
			}
		}
		return false
	}
	if !fit(0) {
		return nil
	}
	return choice
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
	out, scores := a.AssignAll([]*sdk.RequestedDevice{req})
	if out == nil {
		return nil, 0
	}
	return out[0], scores[0]
}

// AssignAll assigns instances to every request, in order, as Assign would
// one after the other, except that a request that finds no group with room
// left makes an earlier one take its next best group (chooseGroups). Nomad
// assigns greedily, and so finds no room on a node whose groups fit the
// requests only in another order. It returns nil, having marked nothing
// used, when no assignment fits.
func (a *DeviceAllocator) AssignAll(reqs []*sdk.RequestedDevice) ([]*sdk.AllocatedDeviceResource, []float64) {
	if a.node.NodeResources == nil {
		if len(reqs) == 0 {
			return []*sdk.AllocatedDeviceResource{}, nil
		}
		return nil, nil
	}
	devices := a.node.NodeResources.Devices
	free := make([]int, len(devices))
	for i, d := range devices {
		free[i] = a.free(d)
	}
	// Each request's groups, best affinity score first (the first of
	// equals in the node's order, as Assign always took).
	cands := make([][]int, len(reqs))
	score := make([][]float64, len(reqs)) // by group, for the candidates
	for r, req := range reqs {
		score[r] = make([]float64, len(devices))
		for i, d := range devices {
			if free[i] >= int(req.Count) && DeviceMatches(a.ch, d, req) {
				cands[r] = append(cands[r], i)
				score[r][i] = a.affinity(d, req)
			}
		}
		sc := score[r]
		slices.SortStableFunc(cands[r], func(x, y int) int { return cmp.Compare(sc[y], sc[x]) })
	}
	choice := chooseGroups(reqs, cands, free)
	if choice == nil {
		return nil, nil
	}
	out := make([]*sdk.AllocatedDeviceResource, len(reqs))
	scores := make([]float64, len(reqs))
	for r, req := range reqs {
		d := devices[choice[r]]
		got := &sdk.AllocatedDeviceResource{Vendor: d.Vendor, Type: d.Type, Name: d.Name}
		for _, inst := range d.Instances {
			if uint64(len(got.DeviceIDs)) == req.Count {
				break
			}
			if inst.Healthy && !a.used[inst.ID] {
				got.DeviceIDs = append(got.DeviceIDs, inst.ID)
				a.used[inst.ID] = true
			}
		}
		out[r], scores[r] = got, score[r][choice[r]]
	}
	return out, scores
}

// affinity is how well device group d meets req's affinities: the weight
// of those it meets over their total weight (0 without affinities).
func (a *DeviceAllocator) affinity(d *sdk.NodeDeviceResource, req *sdk.RequestedDevice) float64 {
	total, matched := 0.0, 0.0
	for _, af := range req.Affinities {
		total += math.Abs(float64(af.Weight))
		if a.ch.deviceCompare(af.Operand, af.LTarget, af.RTarget, d) {
			matched += float64(af.Weight)
		}
	}
	if total == 0 {
		return 0
	}
	return matched / total
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
