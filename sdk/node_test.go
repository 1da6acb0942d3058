package sdk

import "testing"

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
