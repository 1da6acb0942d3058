package sdk

import (
	"cmp"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node is a machine that runs allocations. Field names follow Nomad's.
type Node struct {
	ID                    string                 `msg:",omitempty"`
	SecretID              string                 `json:"-" msg:",omitempty"`
	Datacenter            string                 `msg:",omitempty"`
	Name                  string                 `msg:",omitempty"`
	HTTPAddr              string                 `msg:",omitempty"`
	TLSEnabled            bool                   `msg:",omitempty"`
	Attributes            map[string]string      `msg:",omitempty"`
	NodeResources         *NodeResources         `msg:",omitempty"`
	ReservedResources     *NodeReservedResources `msg:",omitempty"`
	Links                 map[string]string      `msg:",omitempty"`
	Meta                  map[string]string      `msg:",omitempty"`
	NodeClass             string                 `msg:",omitempty"`
	NodePool              string                 `msg:",omitempty"`
	ComputedClass         string                 `msg:",omitempty"`
	Drain                 bool                   `msg:",omitempty"`
	DrainStrategy         *DrainStrategy         `msg:",omitempty"`
	SchedulingEligibility string                 `msg:",omitempty"`
	Status                string                 `msg:",omitempty"`
	StatusDescription     string                 `msg:",omitempty"`
	StatusUpdatedAt       int64                  `msg:",omitempty"`
	Events                []*NodeEvent           `msg:",omitempty"`
	Drivers               map[string]*DriverInfo `msg:",omitempty"`
	HostVolumes           map[string]Opaque      `msg:",omitempty"`
	HostNetworks          map[string]Opaque      `msg:",omitempty"`
	CSIControllerPlugins  map[string]*CSIInfo    `msg:",omitempty"`
	CSINodePlugins        map[string]*CSIInfo    `msg:",omitempty"`
	LastDrain             Opaque                 `msg:",omitempty"`
	NodeMaxAllocs         int                    `msg:",omitempty"`
	CreateIndex           uint64                 `msg:",omitempty"`
	ModifyIndex           uint64                 `msg:",omitempty"`

	// slot and classSlot number the node and its computed class in the
	// state view holding it (see Slots); never sent.
	slot, classSlot int32
}

// Slots returns the numbers the state view holding n gave it and its
// computed class: small and dense from 1, so that a scheduler can keep
// what it learns per node or per class in slices instead of maps keyed by
// ID or class string, which in a wasm guest (hashing strings without AES)
// cost more than the learning. Both are 0 when no view numbered n: a
// decoded or copied node, or a state that does not number its nodes.
//
// A number identifies a node only within one view, and only while the
// node is in it: a view may give the number of a node it dropped to
// another, and a class's number, once none of its nodes holds it, to
// another class. A cache indexed by slot must therefore check what it
// finds (the node's ID, the class string) before trusting it.
func (n *Node) Slots() (node, class int32) { return n.slot, n.classSlot }

// SetSlots sets what Slots returns. It is for sdk.State implementations
// that number their nodes (sdk/mirror's Mirror); schedulers only read
// them.
func (n *Node) SetSlots(node, class int32) { n.slot, n.classSlot = node, class }

// DriverInfo is what a node's task driver reports.
type DriverInfo struct {
	Attributes        map[string]string `msg:",omitempty"`
	Detected          bool              `msg:",omitempty"`
	Healthy           bool              `msg:",omitempty"`
	HealthDescription string            `msg:",omitempty"`
	UpdateTime        time.Time         `msg:",omitempty"`
}

// DrainStrategy is set while a node drains.
type DrainStrategy struct {
	Deadline         time.Duration `msg:",omitempty"`
	IgnoreSystemJobs bool          `msg:",omitempty"`
	ForceDeadline    time.Time     `msg:",omitempty"`
	StartedAt        time.Time     `msg:",omitempty"`
}

// NodeEvent is a notable change in a node's life.
type NodeEvent struct {
	Message     string            `msg:",omitempty"`
	Subsystem   string            `msg:",omitempty"`
	Details     map[string]string `msg:",omitempty"`
	Timestamp   time.Time         `msg:",omitempty"`
	CreateIndex uint64            `msg:",omitempty"`
}

// Ready reports whether new allocations may be placed on the node: it is
// ready, eligible and not draining.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && n.SchedulingEligibility != NodeSchedulingIneligible && n.DrainStrategy == nil
}

// TerminalStatus reports whether the node is down.
func (n *Node) TerminalStatus() bool { return n.Status == NodeStatusDown }

// Capacity is what the node offers for allocations: its resources less its
// reservations.
func (n *Node) Capacity() Usage {
	var u Usage
	if r := n.NodeResources; r != nil {
		u.CPU = r.Cpu.CpuShares
		u.MemoryMB = r.Memory.MemoryMB
		u.DiskMB = r.Disk.DiskMB
		switch {
		case n.ReservedResources != nil && len(n.ReservedResources.Cpu.ReservedCores) > 0:
			n.EachReservableCore(func(uint16) { u.Cores++ })
		case len(r.Cpu.ReservableCpuCores) > 0:
			u.Cores = int64(len(r.Cpu.ReservableCpuCores))
		default:
			u.Cores = int64(r.Cpu.TotalCpuCores)
		}
	}
	if r := n.ReservedResources; r != nil {
		u.CPU = subSat(u.CPU, r.Cpu.CpuShares)
		u.MemoryMB = subSat(u.MemoryMB, r.Memory.MemoryMB)
		u.DiskMB = subSat(u.DiskMB, r.Disk.DiskMB)
	}
	return u
}

// EachReservableCore calls fn with each core a task may reserve on the
// node, in order: its reservable cores (all of them, 0 to TotalCpuCores-1,
// when it lists none) but the reserved ones. As in Nomad, reserved cores
// are taken out as a set: a node's client may already leave them out of
// its reservable cores.
func (n *Node) EachReservableCore(fn func(uint16)) {
	if n.NodeResources == nil {
		return
	}
	var reserved []uint16
	if n.ReservedResources != nil {
		reserved = n.ReservedResources.Cpu.ReservedCores
	}
	cpu := n.NodeResources.Cpu
	each := func(c uint16) {
		if !slices.Contains(reserved, c) {
			fn(c)
		}
	}
	if len(cpu.ReservableCpuCores) > 0 {
		for _, c := range cpu.ReservableCpuCores {
			each(c)
		}
		return
	}
	for c := range cpu.TotalCpuCores {
		each(c)
	}
}

// HasDriver reports whether the node runs the task driver: detected and
// healthy in Drivers, or, for nodes that report only attributes,
// "driver.NAME" set to a true value.
func (n *Node) HasDriver(name string) bool {
	if d, ok := n.Drivers[name]; ok {
		return d.Detected && d.Healthy
	}
	v, ok := n.Attributes["driver."+name]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// ComputeClass sets ComputedClass: a hash of everything that decides
// feasibility and is shared by many nodes (datacenter, pool, class,
// attributes and meta other than unique.*, drivers, the kind and
// attributes of each device group, as Nomad hashes them, but not its
// instances; and, where Nomad's hash falls short of what its class cache
// decides, the names of the node's host volumes and host networks and the
// modes of its networks). Nodes of one class are feasible or not
// together, so schedulers check one node per class. The "v3:" prefix
// names the hash's version: v1 left device groups out, so a GPU node
// shared its class with plain nodes; v2 left host volumes and networks
// out, so a node without a volume a group mounts took the verdict of one
// with it. CSI plugins are left out, as Nomad leaves them out: their
// health changes with their allocations. The CSI checks must therefore
// be made node by node and not decide for a class (Nomad's are
// "available" checks, which leave a class eligible): a node gaining a
// plugin keeps its class, and unblocks only the evals that saw the class
// eligible.
func (n *Node) ComputeClass() {
	h := fnv.New64a()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(n.Datacenter)
	w(n.NodePool)
	w(n.NodeClass)
	hashMap := func(tag string, m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			if !strings.HasPrefix(k, "unique.") {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			w(tag)
			w(k)
			w(m[k])
		}
	}
	hashMap("a", n.Attributes)
	hashMap("m", n.Meta)
	drivers := make([]string, 0, len(n.Drivers))
	for name, d := range n.Drivers {
		if d.Detected && d.Healthy {
			drivers = append(drivers, name)
		}
	}
	slices.Sort(drivers)
	for _, d := range drivers {
		w("d")
		w(d)
	}
	if n.NodeResources != nil {
		// Device groups in the order the node lists them: a node reports
		// them in a stable order, and the order is rarely worth a sort.
		for _, d := range n.NodeResources.Devices {
			w("v")
			w(d.ID())
			hashMap("va", d.Attributes)
		}
	}
	names := func(tag string, m map[string]Opaque) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			w(tag)
			w(k)
		}
	}
	names("hv", n.HostVolumes)
	names("hn", n.HostNetworks)
	if n.NodeResources != nil {
		var aliases []string
		for _, nw := range n.NodeResources.NodeNetworks {
			if nw == nil {
				continue
			}
			for _, a := range nw.Addresses {
				if a.Address != "" { // what feasible.HostNetworkAddress counts
					aliases = append(aliases, a.Alias)
				}
			}
		}
		slices.Sort(aliases)
		for _, a := range slices.Compact(aliases) {
			w("na")
			w(a)
		}
		modes := make([]string, 0, len(n.NodeResources.Networks))
		for _, nw := range n.NodeResources.Networks {
			modes = append(modes, cmp.Or(nw.Mode, "host"))
		}
		slices.Sort(modes)
		for _, m := range slices.Compact(modes) {
			w("nm")
			w(m)
		}
	}
	n.ComputedClass = "v3:" + strconv.FormatUint(h.Sum64(), 10)
}
