package sdk

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node is a machine that runs allocations. Field names follow Nomad's.
type Node struct {
	ID                    string
	SecretID              string `json:"-"`
	Datacenter            string
	Name                  string
	HTTPAddr              string
	TLSEnabled            bool
	Attributes            map[string]string
	NodeResources         *NodeResources
	ReservedResources     *NodeReservedResources
	Links                 map[string]string
	Meta                  map[string]string
	NodeClass             string
	NodePool              string
	ComputedClass         string
	Drain                 bool
	DrainStrategy         *DrainStrategy
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	StatusUpdatedAt       int64
	Events                []*NodeEvent
	Drivers               map[string]*DriverInfo
	HostVolumes           map[string]Opaque
	HostNetworks          map[string]Opaque
	LastDrain             Opaque
	NodeMaxAllocs         int
	CreateIndex           uint64
	ModifyIndex           uint64
}

// DriverInfo is what a node's task driver reports.
type DriverInfo struct {
	Attributes        map[string]string
	Detected          bool
	Healthy           bool
	HealthDescription string
	UpdateTime        time.Time
}

// DrainStrategy is set while a node drains.
type DrainStrategy struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
	ForceDeadline    time.Time
	StartedAt        time.Time
}

// NodeEvent is a notable change in a node's life.
type NodeEvent struct {
	Message     string
	Subsystem   string
	Details     map[string]string
	Timestamp   time.Time
	CreateIndex uint64
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
		u.Cores = int64(r.Cpu.TotalCpuCores)
		if len(r.Cpu.ReservableCpuCores) > 0 {
			u.Cores = int64(len(r.Cpu.ReservableCpuCores))
		}
	}
	if r := n.ReservedResources; r != nil {
		u.CPU -= r.Cpu.CpuShares
		u.MemoryMB -= r.Memory.MemoryMB
		u.DiskMB -= r.Disk.DiskMB
		u.Cores -= int64(len(r.Cpu.ReservedCores))
	}
	return u
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
// attributes and meta other than unique.*, drivers, and the kind and
// attributes of each device group, as Nomad hashes them, but not its
// instances). Nodes of one class are feasible or not together, so
// schedulers check one node per class. The "v2:" prefix names the hash's
// version: v1 left device groups out, so a GPU node shared its class with
// plain nodes.
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
	n.ComputedClass = "v2:" + strconv.FormatUint(h.Sum64(), 10)
}
