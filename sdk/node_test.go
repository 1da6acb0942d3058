package sdk

import (
	"fmt"
	"testing"
)

// Device groups are part of the computed class (their kind and attributes,
// not their instances), since the device checks are cached per class.
func TestNode_ComputeClassHashesDeviceGroups(t *testing.T) {
	node := func(devs ...*NodeDeviceResource) *Node {
		n := &Node{ID: "n", Datacenter: "dc1", Attributes: map[string]string{"kernel.name": "linux"},
			NodeResources: &NodeResources{Devices: devs}}
		n.ComputeClass()
		return n
	}
	gpu := func(model, mem string, instances ...string) *NodeDeviceResource {
		d := &NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model, Attributes: DeviceAttributes{"memory": mem}}
		for _, id := range instances {
			d.Instances = append(d.Instances, &NodeDevice{ID: id, Healthy: true})
		}
		return d
	}
	base := node(gpu("1080ti", "11 GiB", "a", "b")).ComputedClass
	for _, tc := range []struct {
		name string
		node *Node
		same bool
	}{
		{"no devices", node(), false},
		{"another model", node(gpu("2080ti", "11 GiB", "a", "b")), false},
		{"another attribute value", node(gpu("1080ti", "12 GiB", "a", "b")), false},
		{"other instances", node(gpu("1080ti", "11 GiB", "c")), true},
		{"a second group", node(gpu("1080ti", "11 GiB", "a"), gpu("2080ti", "11 GiB", "b")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.node.ComputedClass == base; got != tc.same {
				t.Fatalf("same class = %v, want %v (%s vs %s)", got, tc.same, tc.node.ComputedClass, base)
			}
		})
	}
}

// CSI plugins are not part of the computed class, as in Nomad: a
// plugin's health changes as its allocations come and go, and the CSI
// checks are run per node without deciding for its class. A node gaining
// a plugin keeps its class, and the blocked evals that saw the class
// eligible are unblocked by its registration.
func TestNode_ComputeClassLeavesOutCSIPlugins(t *testing.T) {
	n := &Node{ID: "n", Datacenter: "dc1", Attributes: map[string]string{"kernel.name": "linux"}}
	n.ComputeClass()
	before := n.ComputedClass
	n.CSINodePlugins = map[string]*CSIInfo{"hostpath": {PluginID: "hostpath", Healthy: true, NodeInfo: &CSINodeInfo{ID: "n"}}}
	n.CSIControllerPlugins = map[string]*CSIInfo{"hostpath": {PluginID: "hostpath", Healthy: true,
		ControllerInfo: &CSIControllerInfo{SupportsAttachDetach: true}}}
	n.ComputeClass()
	if n.ComputedClass != before {
		t.Fatalf("CSI plugins changed the computed class: %s, was %s", n.ComputedClass, before)
	}
}

// TestNode_CapacityCores: as in Nomad, the reserved cores are taken out of
// the reservable ones as a set. QA found a node whose client already left
// its reserved core 0 out of ReservableCpuCores [1] offered no core at all:
// the reserved one was subtracted twice.
func TestNode_CapacityCores(t *testing.T) {
	cases := []struct {
		name             string
		total            uint16
		reservable, kept []uint16
		want             int64
		cores            string
	}{
		{"all cores", 4, nil, nil, 4, "[0 1 2 3]"},
		{"all cores but the reserved", 4, nil, []uint16{0}, 3, "[1 2 3]"},
		{"reservable listed", 4, []uint16{1, 2}, nil, 2, "[1 2]"},
		{"reserved already left out of the reservable", 2, []uint16{1}, []uint16{0}, 1, "[1]"},
		{"reserved among the reservable", 4, []uint16{0, 1, 2}, []uint16{2}, 2, "[0 1]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &Node{NodeResources: &NodeResources{Cpu: NodeCpuResources{CpuShares: 4000, TotalCpuCores: c.total, ReservableCpuCores: c.reservable}},
				ReservedResources: &NodeReservedResources{Cpu: NodeReservedCpuResources{ReservedCores: c.kept}}}
			if got := n.Capacity().Cores; got != c.want {
				t.Errorf("capacity %d cores, want %d", got, c.want)
			}
			var cores []uint16
			n.EachReservableCore(func(c uint16) { cores = append(cores, c) })
			if got := fmt.Sprint(cores); got != c.cores {
				t.Errorf("reservable cores %s, want %s", got, c.cores)
			}
		})
	}
}
