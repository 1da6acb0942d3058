package feasible

import (
	"fmt"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// Exhausted dimensions AllocsFit reports, besides the Usage dimensions
// ("cpu", "memory", "disk", "cores").
const (
	DimPortCollision = "network: port collision"
	DimInvalidPorts  = "network: invalid node"
	DimCoreConflict  = "cores: reserved core collision"
	DimDevices       = "devices: instance collision"
)

// AllocsFit reports whether allocs, all meant to run on node, fit on it
// together; if not it names the exhausted dimension as Nomad reports it
// ("cpu", "memory", "disk", "cores", "network: port collision", ...).
// Allocations the node reports finished hold nothing; one the servers
// stopped still holds what it has until then (its tasks may take their
// kill_timeout to stop): callers that count it free, as the host's plan
// applier does (Nomad's too), leave it out of allocs. Beyond quantities it
// checks what must not be shared: host ports, per address as Nomad counts
// them (with the node's own reserved ports; see PortIndex), reserved cores
// (which must also exist on the node) and device instances (which must
// exist and be healthy). Schedulers and the host's plan applier use this
// one function, so both judge fit alike.
func AllocsFit(node *sdk.Node, allocs []*sdk.Allocation) (bool, string) {
	var used sdk.Usage
	var ports *PortIndex
	var cores map[uint16]bool
	var devices map[string]bool
	for _, a := range allocs {
		if a.ClientTerminalStatus() {
			continue
		}
		used.Add(a.Usage())
		r := a.AllocatedResources
		if r == nil {
			continue
		}
		if allocHasPorts(r) {
			if ports == nil {
				ports = &PortIndex{}
				if err := ports.AddNode(node); err != nil {
					return false, DimInvalidPorts
				}
			}
			if ports.AddAlloc(a) != 0 {
				return false, DimPortCollision
			}
		}
		for _, t := range r.Tasks {
			for _, c := range t.Cpu.ReservedCores {
				if cores == nil {
					cores = map[uint16]bool{}
				}
				if cores[c] {
					return false, DimCoreConflict
				}
				cores[c] = true
			}
			for _, d := range t.Devices {
				for _, id := range d.DeviceIDs {
					if devices == nil {
						devices = map[string]bool{}
					}
					if devices[id] {
						return false, DimDevices
					}
					devices[id] = true
				}
			}
		}
	}
	if ok, dim := used.Fits(node.Capacity()); !ok {
		return false, dim
	}
	if len(cores) > 0 {
		reservable := ReservableCores(node)
		for c := range cores {
			if !slices.Contains(reservable, c) {
				return false, "cores"
			}
		}
	}
	if len(devices) > 0 {
		if missing := missingDevice(node, devices); missing != "" {
			return false, fmt.Sprintf("devices: no healthy instance %s", missing)
		}
	}
	return true, ""
}

func allocHasPorts(r *sdk.AllocatedResources) bool {
	if len(r.Shared.Ports) > 0 || len(r.Shared.Networks) > 0 {
		return true
	}
	for _, t := range r.Tasks {
		if len(t.Networks) > 0 {
			return true
		}
	}
	return false
}

// missingDevice returns a device ID in ids that the node has no healthy
// instance of, or "".
func missingDevice(n *sdk.Node, ids map[string]bool) string {
	healthy := map[string]bool{}
	if n.NodeResources != nil {
		for _, d := range n.NodeResources.Devices {
			for _, inst := range d.Instances {
				if inst.Healthy {
					healthy[inst.ID] = true
				}
			}
		}
	}
	for id := range ids {
		if !healthy[id] {
			return id
		}
	}
	return ""
}
