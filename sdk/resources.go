package sdk

import (
	"fmt"
	"math"
	"slices"
)

// Resources is what a task asks for.
type Resources struct {
	CPU         int                `msg:",omitempty"`
	Cores       int                `msg:",omitempty"`
	MemoryMB    int                `msg:",omitempty"`
	MemoryMaxMB int                `msg:",omitempty"`
	DiskMB      int                `msg:",omitempty"`
	IOPS        int                `msg:",omitempty"`
	SecretsMB   int                `msg:",omitempty"`
	Networks    []*NetworkResource `msg:",omitempty"`
	Devices     []*RequestedDevice `msg:",omitempty"`
	NUMA        *NUMAResource      `msg:",omitempty"`
}

// NUMAResource asks for NUMA-aware core placement.
type NUMAResource struct {
	Affinity string   `msg:",omitempty"`
	Devices  []string `msg:",omitempty"`
}

// NetworkResource is a network block: a mode and the ports it needs.
type NetworkResource struct {
	Mode          string `msg:",omitempty"`
	Device        string `msg:",omitempty"`
	CIDR          string `msg:",omitempty"`
	IP            string `msg:",omitempty"`
	Hostname      string `msg:",omitempty"`
	MBits         int    `msg:",omitempty"`
	DNS           Opaque `msg:",omitempty"`
	CNI           Opaque `msg:",omitempty"`
	ReservedPorts []Port `msg:",omitempty"`
	DynamicPorts  []Port `msg:",omitempty"`
}

// Port is a static (Value set) or dynamic port.
type Port struct {
	Label           string `msg:",omitempty"`
	Value           int    `msg:",omitempty"`
	To              int    `msg:",omitempty"`
	HostNetwork     string `msg:",omitempty"`
	IgnoreCollision bool   `msg:",omitempty"`
}

// RequestedDevice asks for Count devices matching Name
// ("type", "vendor/type" or "vendor/type/model").
type RequestedDevice struct {
	Name        string        `msg:",omitempty"`
	Count       uint64        `msg:",omitempty"`
	Constraints []*Constraint `msg:",omitempty"`
	Affinities  []*Affinity   `msg:",omitempty"`
}

// NodeResources is what a node offers.
type NodeResources struct {
	Cpu            NodeCpuResources
	Memory         NodeMemoryResources
	Disk           NodeDiskResources
	Networks       []*NetworkResource    `msg:",omitempty"`
	Devices        []*NodeDeviceResource `msg:",omitempty"`
	MinDynamicPort int                   `msg:",omitempty"`
	MaxDynamicPort int                   `msg:",omitempty"`
	// NodeNetworks are the node's interfaces and their addresses, as
	// Nomad's client reports them: an address's Alias names the host
	// network it serves (a port's host_network).
	NodeNetworks []*NodeNetworkResource `msg:",omitempty"`
}

// NodeNetworkResource is one of a node's network interfaces.
type NodeNetworkResource struct {
	Mode       string               `msg:",omitempty"`
	Device     string               `msg:",omitempty"`
	MacAddress string               `msg:",omitempty"`
	Speed      int                  `msg:",omitempty"`
	Addresses  []NodeNetworkAddress `msg:",omitempty"`
}

// NodeNetworkAddress is one address of an interface. Alias is the host
// network it belongs to ("default" for the node's default one);
// ReservedPorts are ports the node keeps for itself there ("22,80-90").
type NodeNetworkAddress struct {
	Family        string `msg:",omitempty"`
	Alias         string `msg:",omitempty"`
	Address       string `msg:",omitempty"`
	ReservedPorts string `msg:",omitempty"`
	Gateway       string `msg:",omitempty"`
}

// NodeCpuResources is a node's CPU in MHz and cores.
type NodeCpuResources struct {
	CpuShares          int64    `msg:",omitempty"`
	TotalCpuCores      uint16   `msg:",omitempty"`
	ReservableCpuCores []uint16 `msg:",omitempty"`
}

// NodeMemoryResources is a node's memory.
type NodeMemoryResources struct{ MemoryMB int64 }

// NodeDiskResources is a node's disk.
type NodeDiskResources struct{ DiskMB int64 }

// NodeDeviceResource is a group of identical devices on a node.
type NodeDeviceResource struct {
	Vendor     string           `msg:",omitempty"`
	Type       string           `msg:",omitempty"`
	Name       string           `msg:",omitempty"`
	Instances  []*NodeDevice    `msg:",omitempty"`
	Attributes DeviceAttributes `msg:",omitempty"`
}

// ID returns "vendor/type/name".
func (d *NodeDeviceResource) ID() string { return d.Vendor + "/" + d.Type + "/" + d.Name }

// NodeDevice is one device instance.
type NodeDevice struct {
	ID                string `msg:",omitempty"`
	Healthy           bool   `msg:",omitempty"`
	HealthDescription string `msg:",omitempty"`
	// Locality places the device on the node's hardware (PCI bus), for
	// placements that care.
	Locality *NodeDeviceLocality `msg:",omitempty"`
}

// NodeDeviceLocality is where a device sits on the node.
type NodeDeviceLocality struct {
	PciBusID string `msg:",omitempty"`
}

// NodeReservedResources is what a node keeps for itself.
type NodeReservedResources struct {
	Cpu      NodeReservedCpuResources
	Memory   NodeReservedMemoryResources
	Disk     NodeReservedDiskResources
	Networks NodeReservedNetworkResources
}

// NodeReservedCpuResources is reserved CPU.
type NodeReservedCpuResources struct {
	CpuShares     int64    `msg:",omitempty"`
	ReservedCores []uint16 `msg:",omitempty"`
}

// NodeReservedMemoryResources is reserved memory.
type NodeReservedMemoryResources struct{ MemoryMB int64 }

// NodeReservedDiskResources is reserved disk.
type NodeReservedDiskResources struct{ DiskMB int64 }

// NodeReservedNetworkResources is reserved host ports ("22,80,8000-8100").
type NodeReservedNetworkResources struct{ ReservedHostPorts string }

// AllocatedResources is what an allocation holds on its node.
//
// TaskLifecycles (ABI 1.9) names the lifecycle of each task that has one,
// as its group says (Nomad's field of the same name); a task it does not
// name is a main task. Usage folds the tasks by when they run. Empty, every
// task counts as a main task: the plain sum, never less than the fold. The
// host refuses a placement whose TaskLifecycles is neither empty nor
// exactly its group's (CheckCovers).
type AllocatedResources struct {
	Tasks          map[string]*AllocatedTaskResources `msg:",omitempty"`
	TaskLifecycles map[string]*TaskLifecycle          `msg:",omitempty"`
	Shared         AllocatedSharedResources
}

// AllocatedTaskResources is what one task holds.
type AllocatedTaskResources struct {
	Cpu      AllocatedCpuResources
	Memory   AllocatedMemoryResources
	Networks []*NetworkResource         `msg:",omitempty"`
	Devices  []*AllocatedDeviceResource `msg:",omitempty"`
}

// AllocatedCpuResources is held CPU.
type AllocatedCpuResources struct {
	CpuShares     int64    `msg:",omitempty"`
	ReservedCores []uint16 `msg:",omitempty"`
}

// AllocatedMemoryResources is held memory.
type AllocatedMemoryResources struct {
	MemoryMB    int64 `msg:",omitempty"`
	MemoryMaxMB int64 `msg:",omitempty"`
}

// AllocatedSharedResources is held by the whole group.
type AllocatedSharedResources struct {
	DiskMB   int64              `msg:",omitempty"`
	Networks []*NetworkResource `msg:",omitempty"`
	Ports    []PortMapping      `msg:",omitempty"`
}

// PortMapping is a port assigned to a group network.
type PortMapping struct {
	Label  string `msg:",omitempty"`
	Value  int    `msg:",omitempty"`
	To     int    `msg:",omitempty"`
	HostIP string `msg:",omitempty"`
}

// AllocatedDeviceResource is a set of device instances held by a task.
type AllocatedDeviceResource struct {
	Vendor    string   `msg:",omitempty"`
	Type      string   `msg:",omitempty"`
	Name      string   `msg:",omitempty"`
	DeviceIDs []string `msg:",omitempty"`
}

// Usage is a comparable sum of resources: what a node offers, what its
// allocations use, or what one allocation needs.
type Usage struct {
	CPU      int64
	MemoryMB int64
	DiskMB   int64
	Cores    int64
}

// Add adds o to u. The sums saturate rather than wrap around (see
// addSat).
func (u *Usage) Add(o Usage) {
	u.CPU = addSat(u.CPU, o.CPU)
	u.MemoryMB = addSat(u.MemoryMB, o.MemoryMB)
	u.DiskMB = addSat(u.DiskMB, o.DiskMB)
	u.Cores = addSat(u.Cores, o.Cores)
}

// Sub subtracts o from u, saturating as Add does.
func (u *Usage) Sub(o Usage) {
	u.CPU = subSat(u.CPU, o.CPU)
	u.MemoryMB = subSat(u.MemoryMB, o.MemoryMB)
	u.DiskMB = subSat(u.DiskMB, o.DiskMB)
	u.Cores = subSat(u.Cores, o.Cores)
}

// addSat returns a+b, or the int64 nearest to it when that is out of
// range. Resources come from jobs and plugins' plans, which may ask for
// anything up to the int64 maximum: a sum that wrapped around would be
// small or negative, and fit any node (two allocations of 2^62 MHz, or
// two such tasks of one allocation, fitted a 1,000 MHz node).
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// subSat returns a-b, or the int64 nearest to it when that is out of
// range.
func subSat(a, b int64) int64 {
	if b == math.MinInt64 {
		return addSat(addSat(a, math.MaxInt64), 1)
	}
	return addSat(a, -b)
}

// Fits reports whether u fits in capacity; if not it names the first
// exhausted dimension as Nomad does ("cpu", "memory", "disk", "cores").
func (u Usage) Fits(capacity Usage) (bool, string) {
	switch {
	case u.CPU > capacity.CPU:
		return false, "cpu"
	case u.MemoryMB > capacity.MemoryMB:
		return false, "memory"
	case u.DiskMB > capacity.DiskMB:
		return false, "disk"
	case u.Cores > capacity.Cores:
		return false, "cores"
	}
	return true, ""
}

// Usage is what the allocated resources hold: their tasks folded by
// lifecycle (TaskPhases) plus the shared disk.
func (a *AllocatedResources) Usage() Usage {
	var u Usage
	if a == nil {
		return u
	}
	if len(a.TaskLifecycles) == 0 {
		for _, t := range a.Tasks {
			u.Add(t.usage())
		}
	} else {
		var p TaskPhases
		for name, t := range a.Tasks {
			p.Add(a.TaskLifecycles[name], t.usage())
		}
		u = p.Total()
	}
	u.DiskMB = addSat(u.DiskMB, a.Shared.DiskMB)
	return u
}

func (t *AllocatedTaskResources) usage() Usage {
	return Usage{CPU: t.Cpu.CpuShares, MemoryMB: t.Memory.MemoryMB, Cores: int64(len(t.Cpu.ReservedCores))}
}

// TaskPhases sums a group's tasks by when they run, so that a group uses
// what its tasks need at once, as Nomad counts it
// (AllocatedResources.Comparable): prestart sidecars run beside everything;
// the other prestart tasks run together before the main tasks, and the
// poststop tasks together after them. Poststart tasks run beside the main
// tasks and count with them (Nomad v1.6.1 leaves them out, an
// under-count).
type TaskPhases struct {
	Sidecars, Prestart, Main, Poststop Usage
}

// Add counts a task that runs at lc (nil: a main task) and uses u.
func (p *TaskPhases) Add(lc *TaskLifecycle, u Usage) {
	switch {
	case lc == nil:
		p.Main.Add(u)
	case lc.Hook == TaskLifecycleHookPrestart && lc.Sidecar:
		p.Sidecars.Add(u)
	case lc.Hook == TaskLifecycleHookPrestart:
		p.Prestart.Add(u)
	case lc.Hook == TaskLifecycleHookPoststop:
		p.Poststop.Add(u)
	default:
		p.Main.Add(u)
	}
}

// Total is what the tasks use at their peak: the sidecars plus the largest
// of the prestart, main and poststop sums in CPU and memory. Reserved
// cores are summed over every task, since each task holds cores of its
// own.
func (p *TaskPhases) Total() Usage {
	u := Usage{
		CPU:      max(p.Prestart.CPU, p.Main.CPU, p.Poststop.CPU),
		MemoryMB: max(p.Prestart.MemoryMB, p.Main.MemoryMB, p.Poststop.MemoryMB),
	}
	for _, phase := range []Usage{p.Sidecars, p.Prestart, p.Main, p.Poststop} {
		u.DiskMB = addSat(u.DiskMB, phase.DiskMB)
		u.Cores = addSat(u.Cores, phase.Cores)
	}
	u.CPU = addSat(u.CPU, p.Sidecars.CPU)
	u.MemoryMB = addSat(u.MemoryMB, p.Sidecars.MemoryMB)
	return u
}

// GroupUsage is what one allocation of tg needs: its tasks folded by
// lifecycle (TaskPhases) plus its ephemeral disk. Cores count as whole
// cores; CPU of reserved cores is accounted by the scheduler that assigns
// them.
func GroupUsage(tg *TaskGroup) Usage {
	var p TaskPhases
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		p.Add(t.Lifecycle, Usage{CPU: int64(t.Resources.CPU), MemoryMB: int64(t.Resources.MemoryMB), Cores: int64(t.Resources.Cores)})
	}
	u := p.Total()
	if tg.EphemeralDisk != nil {
		u.DiskMB = addSat(u.DiskMB, int64(tg.EphemeralDisk.SizeMB))
	}
	return u
}

// TaskLifecycles returns the lifecycles of tg's tasks that have one, by
// task name, as AllocatedResources.TaskLifecycles holds them; nil when
// every task is a main task.
func TaskLifecycles(tg *TaskGroup) map[string]*TaskLifecycle {
	var out map[string]*TaskLifecycle
	for _, t := range tg.Tasks {
		if t.Lifecycle != nil {
			if out == nil {
				out = map[string]*TaskLifecycle{}
			}
			out[t.Name] = t.Lifecycle
		}
	}
	return out
}

// RequestedResources returns what one allocation of tg asks for, as the
// resources an allocation holds: each task's CPU and memory and the
// group's ephemeral disk. Reserved cores, ports and devices are assigned
// per node by a scheduler and are not included. The host rejects a
// placement that holds less than this, or lacks a port the group asks for
// (see CheckCovers; feasible.AssignPorts assigns ports) or a device its
// tasks ask for (checked against the node by package verify; stack.Assign
// hands out ports, cores and devices).
func RequestedResources(tg *TaskGroup) *AllocatedResources {
	ar := &AllocatedResources{Tasks: make(map[string]*AllocatedTaskResources, len(tg.Tasks))}
	for _, t := range tg.Tasks {
		tr := &AllocatedTaskResources{}
		if r := t.Resources; r != nil {
			tr.Cpu.CpuShares = int64(r.CPU)
			tr.Memory.MemoryMB = int64(r.MemoryMB)
			tr.Memory.MemoryMaxMB = int64(r.MemoryMaxMB)
		}
		ar.Tasks[t.Name] = tr
	}
	ar.TaskLifecycles = TaskLifecycles(tg)
	if tg.EphemeralDisk != nil {
		ar.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	return ar
}

// CheckCovers returns an error unless ar can stand for an allocation of tg:
// nothing negative or missing (null), no port outside 0-65535; for each
// task at least what RequestedResources(tg) holds in each dimension, and
// the group's disk;
// the group's lifecycles or none (every task then counts as a main task,
// which never uses less); and every port the group's network and its
// tasks' networks ask for, static ones at their value. The host checks
// every placement with it before judging fit, so a plan cannot fool the
// fit check by under-reporting, nor place an allocation without the ports
// it needs (two of them could then claim one static port); sdktest does
// the same. Devices are checked beside it, by package verify, where the
// node is at hand: only the node says which device an instance is.
func (ar *AllocatedResources) CheckCovers(tg *TaskGroup) error {
	if ar == nil {
		return fmt.Errorf("it holds no resources")
	}
	for name, tr := range ar.Tasks {
		if tr == nil {
			return fmt.Errorf("the resources of task %q are missing (null)", name)
		}
		if tr.Cpu.CpuShares < 0 || tr.Memory.MemoryMB < 0 || tr.Memory.MemoryMaxMB < 0 {
			return fmt.Errorf("task %q holds negative resources", name)
		}
		if slices.Contains(tr.Networks, nil) {
			return fmt.Errorf("a network of task %q is missing (null)", name)
		}
		if slices.Contains(tr.Devices, nil) {
			return fmt.Errorf("a device of task %q is missing (null)", name)
		}
	}
	if ar.Shared.DiskMB < 0 {
		return fmt.Errorf("it holds a negative disk")
	}
	if slices.Contains(ar.Shared.Networks, nil) {
		return fmt.Errorf("a shared network is missing (null)")
	}
	if err := ar.checkTasks(tg); err != nil {
		return err
	}
	if need := tg.EphemeralDisk; need != nil && ar.Shared.DiskMB < int64(need.SizeMB) {
		return fmt.Errorf("it holds %d disk, less than its group %q asks for (%d)", ar.Shared.DiskMB, tg.Name, need.SizeMB)
	}
	if err := ar.checkIgnoredPorts(tg); err != nil {
		return err
	}
	if err := ar.checkPortValues(); err != nil {
		return err
	}
	for i, pm := range ar.Shared.Ports {
		for _, prev := range ar.Shared.Ports[:i] {
			if prev.Label == pm.Label {
				return fmt.Errorf("it maps port %q twice", pm.Label)
			}
		}
	}
	if len(tg.Networks) > 0 {
		held := heldPorts(ar.Shared.Networks)
		for _, pm := range ar.Shared.Ports {
			held[pm.Label] = pm.Value
		}
		// A group has one network (Nomad's rule): schedulers assign the first.
		if err := checkPorts(tg.Networks[:1], held); err != nil {
			return fmt.Errorf("%v, which its group %q asks for", err, tg.Name)
		}
	}
	for _, t := range tg.Tasks {
		if t.Resources == nil || len(t.Resources.Networks) == 0 {
			continue
		}
		var held map[string]int
		if tr := ar.Tasks[t.Name]; tr != nil {
			held = heldPorts(tr.Networks)
		}
		if err := checkPorts(t.Resources.Networks, held); err != nil {
			return fmt.Errorf("%v, which its task %q asks for", err, t.Name)
		}
	}
	return nil
}

// checkPortValues refuses a held port outside 0-65535 (0: not assigned).
// The fit check also never fits one (feasible.PortIndex), but as capacity,
// node by node, so a plan holding one would be retried until its eval
// failed; it is an invalid plan.
func (ar *AllocatedResources) checkPortValues() error {
	bad := func(v int) bool { return v < 0 || v > 65535 }
	for _, pm := range ar.Shared.Ports {
		if bad(pm.Value) {
			return fmt.Errorf("it maps port %q to %d, not a port", pm.Label, pm.Value)
		}
	}
	networks := slices.Clone(ar.Shared.Networks)
	for _, tr := range ar.Tasks {
		networks = append(networks, tr.Networks...)
	}
	for _, nw := range networks {
		for _, ports := range [2][]Port{nw.ReservedPorts, nw.DynamicPorts} {
			for _, p := range ports {
				if bad(p.Value) {
					return fmt.Errorf("it holds port %q as %d, not a port", p.Label, p.Value)
				}
			}
		}
	}
	return nil
}

// checkTasks checks ar's tasks against tg's: each holding at least the
// CPU, memory and reserved cores it asks for, and TaskLifecycles empty or
// exactly the group's. Both matter to Usage: a task short of its ask, or a
// main task passed off as a prestart one, would make the allocation seem
// to use less than it will. A task the group does not have only adds to
// what the allocation uses.
func (ar *AllocatedResources) checkTasks(tg *TaskGroup) error {
	for _, t := range tg.Tasks {
		if r := t.Resources; r != nil {
			var have AllocatedTaskResources
			if tr := ar.Tasks[t.Name]; tr != nil {
				have = *tr
			}
			for _, c := range []struct {
				dim        string
				have, need int64
			}{{"cpu", have.Cpu.CpuShares, int64(r.CPU)}, {"memory", have.Memory.MemoryMB, int64(r.MemoryMB)}, {"cores", int64(len(have.Cpu.ReservedCores)), int64(r.Cores)}} {
				if c.have < c.need {
					return fmt.Errorf("task %q holds %d %s, less than it asks for (%d)", t.Name, c.have, c.dim, c.need)
				}
			}
		}
		if len(ar.TaskLifecycles) == 0 {
			continue
		}
		// A task TaskLifecycles leaves out or names with null (as Nomad
		// names a main task) is a main task.
		if lc := ar.TaskLifecycles[t.Name]; !lc.Equal(t.Lifecycle) {
			if t.Lifecycle == nil {
				return fmt.Errorf("it gives task %q the lifecycle %s, but it is a main task", t.Name, lc)
			}
			return fmt.Errorf("it gives task %q the lifecycle %s, not its own (%s)", t.Name, lc, t.Lifecycle)
		}
	}
	for name := range ar.TaskLifecycles {
		if tg.LookupTask(name) == nil {
			return fmt.Errorf("it gives a lifecycle to task %q, which its group %q does not have", name, tg.Name)
		}
	}
	return nil
}

// checkIgnoredPorts refuses a held port that ignores collisions unless its
// network asks for it so: the same label and value, with IgnoreCollision
// (a group's port in the group's first network, a task's in the task's
// networks). Such a port is not counted against the node's (see
// feasible.PortIndex), so a plan that set the flag on a port of its own
// choosing could bind one port twice on an address.
func (ar *AllocatedResources) checkIgnoredPorts(tg *TaskGroup) error {
	asked := func(asks []*NetworkResource, p Port) bool {
		for _, ask := range asks {
			if ask == nil {
				continue
			}
			for _, q := range ask.ReservedPorts {
				if q.IgnoreCollision && q.Label == p.Label && q.Value == p.Value {
					return true
				}
			}
		}
		return false
	}
	// unasked returns a held port that ignores collisions unasked.
	unasked := func(held, asks []*NetworkResource) (Port, bool) {
		for _, nw := range held {
			for _, ports := range [2][]Port{nw.ReservedPorts, nw.DynamicPorts} {
				for _, p := range ports {
					if p.IgnoreCollision && !asked(asks, p) {
						return p, true
					}
				}
			}
		}
		return Port{}, false
	}
	var group []*NetworkResource
	if len(tg.Networks) > 0 {
		group = tg.Networks[:1]
	}
	if p, bad := unasked(ar.Shared.Networks, group); bad {
		return fmt.Errorf("its port %s = %d ignores collisions, which its group %q does not ask for", p.Label, p.Value, tg.Name)
	}
	for name, tr := range ar.Tasks {
		var asks []*NetworkResource
		if t := tg.LookupTask(name); t != nil && t.Resources != nil {
			asks = t.Resources.Networks
		}
		if p, bad := unasked(tr.Networks, asks); bad {
			return fmt.Errorf("its port %s = %d ignores collisions, which its task %q does not ask for", p.Label, p.Value, name)
		}
	}
	return nil
}

// heldPorts returns the ports networks offer, by label.
func heldPorts(networks []*NetworkResource) map[string]int {
	out := map[string]int{}
	for _, nw := range networks {
		if nw == nil {
			continue
		}
		for _, p := range nw.ReservedPorts {
			out[p.Label] = p.Value
		}
		for _, p := range nw.DynamicPorts {
			out[p.Label] = p.Value
		}
	}
	return out
}

// checkPorts reports the first port of asks that held lacks: a dynamic port
// must hold some port, a static one its own value.
func checkPorts(asks []*NetworkResource, held map[string]int) error {
	for _, ask := range asks {
		if ask == nil {
			continue
		}
		for _, p := range ask.ReservedPorts {
			if v, ok := held[p.Label]; !ok || v != p.Value {
				return fmt.Errorf("it does not hold the static port %s = %d", p.Label, p.Value)
			}
		}
		for _, p := range ask.DynamicPorts {
			if v, ok := held[p.Label]; !ok || v <= 0 {
				return fmt.Errorf("it holds no port %s", p.Label)
			}
		}
	}
	return nil
}
