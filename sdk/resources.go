package sdk

import (
	"fmt"
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
type AllocatedResources struct {
	Tasks  map[string]*AllocatedTaskResources `msg:",omitempty"`
	Shared AllocatedSharedResources
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

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.CPU += o.CPU
	u.MemoryMB += o.MemoryMB
	u.DiskMB += o.DiskMB
	u.Cores += o.Cores
}

// Sub subtracts o from u.
func (u *Usage) Sub(o Usage) {
	u.CPU -= o.CPU
	u.MemoryMB -= o.MemoryMB
	u.DiskMB -= o.DiskMB
	u.Cores -= o.Cores
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

// Usage sums what the allocated resources hold.
func (a *AllocatedResources) Usage() Usage {
	var u Usage
	if a == nil {
		return u
	}
	for _, t := range a.Tasks {
		u.CPU += t.Cpu.CpuShares
		u.MemoryMB += t.Memory.MemoryMB
		u.Cores += int64(len(t.Cpu.ReservedCores))
	}
	u.DiskMB += a.Shared.DiskMB
	return u
}

// GroupUsage is what one allocation of tg needs: the sum of its tasks plus
// its ephemeral disk. Cores count as whole cores; CPU of reserved cores is
// accounted by the scheduler that assigns them.
func GroupUsage(tg *TaskGroup) Usage {
	var u Usage
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		u.CPU += int64(t.Resources.CPU)
		u.MemoryMB += int64(t.Resources.MemoryMB)
		u.Cores += int64(t.Resources.Cores)
	}
	if tg.EphemeralDisk != nil {
		u.DiskMB += int64(tg.EphemeralDisk.SizeMB)
	}
	return u
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
	if tg.EphemeralDisk != nil {
		ar.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	return ar
}

// CheckCovers returns an error unless ar can stand for an allocation of tg:
// resources for every task, nothing negative or missing (null), at least what
// RequestedResources(tg) holds in each dimension, and every port the group's
// network and its tasks' networks ask for, static ones at their value. The
// host checks every placement with it before judging fit, so a plan cannot
// fool the fit check by under-reporting, nor place an allocation without
// the ports it needs (two of them could then claim one static port);
// sdktest does the same. Devices are checked beside it, by package verify,
// where the node is at hand: only the node says which device an instance
// is.
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
	have, need := ar.Usage(), GroupUsage(tg)
	for _, c := range []struct {
		dim        string
		have, need int64
	}{{"cpu", have.CPU, need.CPU}, {"memory", have.MemoryMB, need.MemoryMB}, {"disk", have.DiskMB, need.DiskMB}, {"cores", have.Cores, need.Cores}} {
		if c.have < c.need {
			return fmt.Errorf("it holds %d %s, less than its group %q asks for (%d)", c.have, c.dim, tg.Name, c.need)
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
