package verify

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestCheckResources_UnderReportedClaimsAreRefused(t *testing.T) {
	tg := &sdk.TaskGroup{Name: "g", EphemeralDisk: &sdk.EphemeralDisk{SizeMB: 300},
		Tasks: []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}
	full := sdk.RequestedResources(tg)
	if err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: full}, nil, tg); err != nil {
		t.Fatalf("what the group asks for is refused: %v", err)
	}
	for dim, cut := range map[string]func(*sdk.AllocatedResources){
		"cpu":    func(r *sdk.AllocatedResources) { r.Tasks["t"].Cpu.CpuShares = 499 },
		"memory": func(r *sdk.AllocatedResources) { r.Tasks["t"].Memory.MemoryMB = 1 },
		"disk":   func(r *sdk.AllocatedResources) { r.Shared.DiskMB = 0 },
	} {
		r := sdk.RequestedResources(tg)
		cut(r)
		err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: r}, nil, tg)
		if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), dim) {
			t.Errorf("%s under-reported: err = %v", dim, err)
		}
	}
}

// TestCheckResources_PortsAskedForMustBeHeld: a placement that leaves out
// the ports its group or tasks ask for (so that two allocations could claim
// one static port of a node), or holds a static port at another value, is
// refused; one that holds them, as the stack assigns them, passes.
func TestCheckResources_PortsAskedForMustBeHeld(t *testing.T) {
	tg := &sdk.TaskGroup{Name: "g",
		Networks: []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}},
			DynamicPorts: []sdk.Port{{Label: "admin"}}}},
		Tasks: []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256,
			Networks: []*sdk.NetworkResource{{DynamicPorts: []sdk.Port{{Label: "metrics"}}}}}}}}
	held := func(http, admin, metrics int) *sdk.AllocatedResources {
		r := sdk.RequestedResources(tg)
		r.Shared.Networks = []*sdk.NetworkResource{{Mode: "host", IP: "10.0.0.1"}}
		if http > 0 {
			r.Shared.Ports = append(r.Shared.Ports, sdk.PortMapping{Label: "http", Value: http, HostIP: "10.0.0.1"})
		}
		if admin > 0 {
			r.Shared.Ports = append(r.Shared.Ports, sdk.PortMapping{Label: "admin", Value: admin, HostIP: "10.0.0.1"})
		}
		if metrics > 0 {
			r.Tasks["t"].Networks = []*sdk.NetworkResource{{IP: "10.0.0.1", DynamicPorts: []sdk.Port{{Label: "metrics", Value: metrics}}}}
		}
		return r
	}
	cases := []struct {
		name string
		res  *sdk.AllocatedResources
		want string // "" for accepted
	}{
		{"all held", held(8080, 21000, 21001), ""},
		{"none held", sdk.RequestedResources(tg), "static port http = 8080"},
		{"static port elsewhere", held(9090, 21000, 21001), "static port http = 8080"},
		{"dynamic port missing", held(8080, 0, 21001), "no port admin"},
		{"task port missing", held(8080, 21000, 0), `no port metrics, which its task "t"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: tc.res}, nil, tg)
			wantRefusal(t, err, tc.want)
		})
	}
}

// TestCheckResources_UpdateKeepingItsPortsPasses: an update of an
// allocation that exists and keeps the networks it holds is not refused for
// ports its group asks for, even if it holds none (placed before the host
// checked ports): otherwise no plan could scale its job or annotate it. An
// update that drops or changes ports it held, one to a version whose group
// asks for ports the version it runs did not, and a new placement without
// them, are still refused; so is one that under-reports CPU.
func TestCheckResources_UpdateKeepingItsPortsPasses(t *testing.T) {
	tg := &sdk.TaskGroup{Name: "g",
		Networks: []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}},
		Tasks:    []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}
	portless := func() *sdk.AllocatedResources { return sdk.RequestedResources(tg) }
	holding := func(v int) *sdk.AllocatedResources {
		r := sdk.RequestedResources(tg)
		r.Shared.Networks = []*sdk.NetworkResource{{Mode: "host", IP: "10.0.0.1",
			ReservedPorts: []sdk.Port{{Label: "http", Value: v}}}}
		r.Shared.Ports = []sdk.PortMapping{{Label: "http", Value: v, HostIP: "10.0.0.1"}}
		return r
	}
	job := &sdk.Job{ID: "j", TaskGroups: []*sdk.TaskGroup{tg}}
	stored := func(r *sdk.AllocatedResources) *sdk.Allocation {
		return &sdk.Allocation{ID: "a", TaskGroup: "g", Job: job, AllocatedResources: r}
	}
	// A version of the group without the port: its allocations hold none.
	portlessTG := *tg
	portlessTG.Networks = nil
	earlier := &sdk.Allocation{ID: "a", TaskGroup: "g", Job: &sdk.Job{ID: "j", TaskGroups: []*sdk.TaskGroup{&portlessTG}},
		AllocatedResources: portless()}
	cases := []struct {
		name     string
		old      *sdk.Allocation
		res      *sdk.AllocatedResources
		accepted bool
	}{
		{"update keeping no ports", stored(portless()), portless(), true},
		{"update keeping its ports", stored(holding(8080)), holding(8080), true},
		{"update dropping its ports", stored(holding(8080)), portless(), false},
		{"update moving a static port", stored(holding(9090)), holding(9091), false},
		{"new placement without ports", nil, portless(), false},
		{"update to a version that asks for a port it lacks", earlier, portless(), false},
		{"update under-reporting cpu", stored(portless()), func() *sdk.AllocatedResources {
			r := portless()
			r.Tasks["t"].Cpu.CpuShares = 1
			return r
		}(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkResources(&sdk.Allocation{ID: "a", TaskGroup: "g", AllocatedResources: tc.res}, tc.old, tg)
			if tc.accepted != (err == nil) {
				t.Fatalf("err = %v, want accepted %v", err, tc.accepted)
			}
			if err != nil && !errors.Is(err, sdk.ErrPlanInvalid) {
				t.Fatalf("err = %v, not ErrPlanInvalid", err)
			}
		})
	}
}

// gpuNode has two GeForce and one A100 from nvidia, an AMD GPU and an
// Intel FPGA.
func gpuNode() *sdk.Node {
	group := func(vendor, typ, name string, ids ...string) *sdk.NodeDeviceResource {
		d := &sdk.NodeDeviceResource{Vendor: vendor, Type: typ, Name: name}
		for _, id := range ids {
			d.Instances = append(d.Instances, &sdk.NodeDevice{ID: id, Healthy: true})
		}
		return d
	}
	return &sdk.Node{ID: "n", NodeResources: &sdk.NodeResources{Devices: []*sdk.NodeDeviceResource{
		group("nvidia", "gpu", "1080ti", "g0", "g1"), group("nvidia", "gpu", "a100", "a0"),
		group("amd", "gpu", "mi100", "m0"), group("intel", "fpga", "x", "f0")}}}
}

// deviceGroup is a group whose task t asks for devices.
func deviceGroup(asks ...*sdk.RequestedDevice) *sdk.TaskGroup {
	return &sdk.TaskGroup{Name: "g", Tasks: []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256, Devices: asks}},
		{Name: "side", Resources: &sdk.Resources{CPU: 100, MemoryMB: 64}}}}
}

// holding returns what an allocation of tg holds, with the devices given
// to task t.
func holding(tg *sdk.TaskGroup, devices ...*sdk.AllocatedDeviceResource) *sdk.AllocatedResources {
	r := sdk.RequestedResources(tg)
	r.Tasks["t"].Devices = devices
	return r
}

func held(vendor, typ, name string, ids ...string) *sdk.AllocatedDeviceResource {
	return &sdk.AllocatedDeviceResource{Vendor: vendor, Type: typ, Name: name, DeviceIDs: ids}
}

// TestCheckDevices_AskedForMustBeHeld: a placement must hold, for every
// device a task asks for, at least the count asked of instances of a
// matching device, by Nomad's name matching ("type", "vendor/type",
// "vendor/type/model"), each instance being the device the node says it
// is. Instances the node does not know count as named: the node's fit
// check refuses them (feasible.AllocsFit).
func TestCheckDevices_AskedForMustBeHeld(t *testing.T) {
	gpus := func(n uint64) *sdk.RequestedDevice { return &sdk.RequestedDevice{Name: "nvidia/gpu", Count: n} }
	cases := []struct {
		name string
		tg   *sdk.TaskGroup
		res  func(tg *sdk.TaskGroup) *sdk.AllocatedResources
		node *sdk.Node
		want string // "" for accepted
	}{
		{"held", deviceGroup(gpus(2)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0", "g1"))
		}, gpuNode(), ""},
		{"held across models", deviceGroup(gpus(2)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0"), held("nvidia", "gpu", "a100", "a0"))
		}, gpuNode(), ""},
		{"none held", deviceGroup(gpus(2)), sdk.RequestedResources, gpuNode(),
			`holds 0 instance(s) of device nvidia/gpu, fewer than the 2 its task "t" asks for`},
		{"fewer than asked", deviceGroup(gpus(2)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0"))
		}, gpuNode(), "holds 1 instance(s) of device nvidia/gpu"},
		{"one instance named twice", deviceGroup(gpus(2)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0", "g0"))
		}, gpuNode(), "holds 1 instance(s) of device nvidia/gpu"},
		{"another vendor's device", deviceGroup(gpus(2)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0"), held("amd", "gpu", "mi100", "m0"))
		}, gpuNode(), "holds 1 instance(s) of device nvidia/gpu"},
		{"another device named as the one asked for", deviceGroup(gpus(2)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0", "f0"))
		}, gpuNode(), "holds 1 instance(s) of device nvidia/gpu"},
		{"held by another task", deviceGroup(gpus(1)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			r := sdk.RequestedResources(tg)
			r.Tasks["side"].Devices = []*sdk.AllocatedDeviceResource{held("nvidia", "gpu", "1080ti", "g0")}
			return r
		}, gpuNode(), `holds 0 instance(s) of device nvidia/gpu, fewer than the 1 its task "t" asks for`},
		{"type alone", deviceGroup(&sdk.RequestedDevice{Name: "gpu", Count: 2}), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0"), held("amd", "gpu", "mi100", "m0"))
		}, gpuNode(), ""},
		{"a model", deviceGroup(&sdk.RequestedDevice{Name: "nvidia/gpu/a100", Count: 1}), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "a100", "a0"))
		}, gpuNode(), ""},
		{"another model", deviceGroup(&sdk.RequestedDevice{Name: "nvidia/gpu/a100", Count: 1}), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "g0"))
		}, gpuNode(), "holds 0 instance(s) of device nvidia/gpu/a100"},
		{"nested asks served most specific first", deviceGroup(&sdk.RequestedDevice{Name: "gpu", Count: 1}, gpus(1)),
			func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
				return holding(tg, held("nvidia", "gpu", "1080ti", "g0"), held("amd", "gpu", "mi100", "m0"))
			}, gpuNode(), ""},
		{"nested asks, one instance for two", deviceGroup(&sdk.RequestedDevice{Name: "gpu", Count: 1}, gpus(1)),
			func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
				return holding(tg, held("nvidia", "gpu", "1080ti", "g0"))
			}, gpuNode(), "holds 0 instance(s) of device gpu"},
		{"instances the node does not know", deviceGroup(gpus(2)), func(tg *sdk.TaskGroup) *sdk.AllocatedResources {
			return holding(tg, held("nvidia", "gpu", "1080ti", "x0", "x1"))
		}, gpuNode(), ""},
		{"no devices asked", deviceGroup(), sdk.RequestedResources, gpuNode(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDevices(&sdk.Allocation{ID: "a", TaskGroup: "g", AllocatedResources: tc.res(tc.tg)}, nil, tc.tg, func() *sdk.Node { return tc.node })
			wantRefusal(t, err, tc.want)
		})
	}
}

// TestCheckDevices_UpdateKeepingItsDevicesPasses: an update of an
// allocation that exists and keeps the devices it holds is not refused for
// devices its group asks for, even if it holds none (placed before the
// host checked devices): otherwise no plan could scale its job or annotate
// it. An update that drops or changes devices it held, one to a version
// whose group asks for devices the version it runs did not (or more of
// them), and a new placement without them, are still refused.
func TestCheckDevices_UpdateKeepingItsDevicesPasses(t *testing.T) {
	tg := deviceGroup(&sdk.RequestedDevice{Name: "nvidia/gpu", Count: 1})
	more := deviceGroup(&sdk.RequestedDevice{Name: "nvidia/gpu", Count: 2})
	none := func() *sdk.AllocatedResources { return holding(tg) }
	one := func(id string) *sdk.AllocatedResources { return holding(tg, held("nvidia", "gpu", "1080ti", id)) }
	runs := func(g *sdk.TaskGroup, r *sdk.AllocatedResources) *sdk.Allocation {
		return &sdk.Allocation{ID: "a", TaskGroup: "g", Job: &sdk.Job{ID: "j", TaskGroups: []*sdk.TaskGroup{g}}, AllocatedResources: r}
	}
	cases := []struct {
		name     string
		old      *sdk.Allocation
		tg       *sdk.TaskGroup // the group the update is to
		res      *sdk.AllocatedResources
		accepted bool
	}{
		{"update keeping no devices", runs(tg, none()), tg, none(), true},
		{"update keeping its devices", runs(tg, one("g0")), tg, one("g0"), true},
		{"update dropping its devices", runs(tg, one("g0")), tg, none(), false},
		{"update trading its devices for another", runs(tg, holding(tg, held("intel", "fpga", "x", "f0"))), tg,
			holding(tg, held("nvidia", "gpu", "1080ti", "f0")), false},
		{"new placement without devices", nil, tg, none(), false},
		{"update to a version asking for a device the one it runs did not", runs(deviceGroup(), none()), tg, none(), false},
		{"update to a version asking for more than it holds", runs(tg, one("g0")), more, one("g0"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDevices(&sdk.Allocation{ID: "a", TaskGroup: "g", AllocatedResources: tc.res}, tc.old, tc.tg, gpuNode)
			if tc.accepted != (err == nil) {
				t.Fatalf("err = %v, want accepted %v", err, tc.accepted)
			}
			if err != nil && !errors.Is(err, sdk.ErrPlanInvalid) {
				t.Fatalf("err = %v, not ErrPlanInvalid", err)
			}
		})
	}
}

// wantRefusal fails t unless err is what want describes: nil for want "",
// otherwise ErrPlanInvalid naming want.
func wantRefusal(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want ErrPlanInvalid naming %q", err, want)
	}
}

// nodeState is a State holding one node and its allocations, for NodeFits.
type nodeState struct {
	node   *sdk.Node
	allocs []*sdk.Allocation
}

func (s *nodeState) Index() uint64 { return 1 }
func (s *nodeState) Node(id string) *sdk.Node {
	if id == s.node.ID {
		return s.node
	}
	return nil
}
func (s *nodeState) Alloc(id string) *sdk.Allocation {
	for _, a := range s.allocs {
		if a.ID == id {
			return a
		}
	}
	return nil
}
func (s *nodeState) AllocsByNode(id string) []*sdk.Allocation {
	if id == s.node.ID {
		return s.allocs
	}
	return nil
}
func (s *nodeState) Eval(string) *sdk.Evaluation                { return nil }
func (s *nodeState) Job(string, string) *sdk.Job                { return nil }
func (s *nodeState) JobVersion(string, string, uint64) *sdk.Job { return nil }
func (s *nodeState) Deployment(string) *sdk.Deployment          { return nil }
func (s *nodeState) Nodes() []*sdk.Node                         { return []*sdk.Node{s.node} }
func (s *nodeState) CSIVolume(string, string) *sdk.CSIVolume    { return nil }

// TestNodeFits_PortsPerAddress: the host counts a node's ports per address,
// as Nomad does: a placement binding a port already bound on the same
// address is refused, one binding it on another address of the node is
// accepted; the node's reserved ports are taken on every address, an
// address's own on that address alone. A new placement may not hold a port
// on an address the node does not have (it would collide with nothing);
// an update keeping its networks may, the node's addresses having changed
// since it was placed.
func TestNodeFits_PortsPerAddress(t *testing.T) {
	const def, pub = "10.0.0.5", "203.0.113.5"
	node := &sdk.Node{ID: "n1", Status: sdk.NodeStatusReady, SchedulingEligibility: sdk.NodeSchedulingEligible,
		NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 4000}, Memory: sdk.NodeMemoryResources{MemoryMB: 4096},
			Disk:     sdk.NodeDiskResources{DiskMB: 10000},
			Networks: []*sdk.NetworkResource{{Mode: "host", Device: "eth0", IP: def}},
			NodeNetworks: []*sdk.NodeNetworkResource{
				{Mode: "host", Device: "eth0", Addresses: []sdk.NodeNetworkAddress{{Alias: "default", Address: def}}},
				{Mode: "host", Device: "eth1", Addresses: []sdk.NodeNetworkAddress{{Alias: "public", Address: pub, ReservedPorts: "8443"}}}}},
		ReservedResources: &sdk.NodeReservedResources{Networks: sdk.NodeReservedNetworkResources{ReservedHostPorts: "22"}}}
	// binding is an allocation on n1 binding each port on its address.
	binding := func(id string, ports ...sdk.PortMapping) *sdk.Allocation {
		return &sdk.Allocation{ID: id, NodeID: "n1", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
			AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {
				Cpu: sdk.AllocatedCpuResources{CpuShares: 100}, Memory: sdk.AllocatedMemoryResources{MemoryMB: 64}}},
				Shared: sdk.AllocatedSharedResources{Ports: ports}}}
	}
	on := func(port int, ip string) sdk.PortMapping {
		return sdk.PortMapping{Label: fmt.Sprintf("p%d", port), Value: port, HostIP: ip}
	}
	// "old" binds 53 on the default address and 9000 on an address the
	// node no longer has.
	existing := []*sdk.Allocation{binding("old", on(53, def), on(9000, "192.0.2.9"))}
	cases := []struct {
		name       string
		placements []*sdk.Allocation
		why        string // "" for accepted
	}{
		{"the port bound on the same address", []*sdk.Allocation{binding("a", on(53, def))}, "network: port collision exhausted"},
		{"the port bound on another address", []*sdk.Allocation{binding("a", on(53, pub))}, ""},
		{"two placements binding one port on one address", []*sdk.Allocation{binding("a", on(54, pub)), binding("b", on(54, pub))},
			"network: port collision exhausted"},
		{"two placements binding one port on two addresses", []*sdk.Allocation{binding("a", on(54, pub)), binding("b", on(54, def))}, ""},
		{"one placement binding one port on two addresses", []*sdk.Allocation{binding("a", on(54, pub), on(54, def))}, ""},
		{"the node's reserved port on the public address", []*sdk.Allocation{binding("a", on(22, pub))}, "network: port collision exhausted"},
		{"the public address's reserved port", []*sdk.Allocation{binding("a", on(8443, pub))}, "network: port collision exhausted"},
		{"the public address's reserved port on the default address", []*sdk.Allocation{binding("a", on(8443, def))}, ""},
		{"a port on an address the node lacks", []*sdk.Allocation{binding("a", on(53, "192.0.2.1"))}, `port 53 is held on "192.0.2.1"`},
		{"a port on no address", []*sdk.Allocation{binding("a", on(53, ""))}, `port 53 is held on ""`},
		{"a task network on an address the node lacks", []*sdk.Allocation{func() *sdk.Allocation {
			a := binding("a")
			a.AllocatedResources.Tasks["t"].Networks = []*sdk.NetworkResource{{IP: "192.0.2.1", DynamicPorts: []sdk.Port{{Label: "x", Value: 21000}}}}
			return a
		}()}, `port 21000 is held on "192.0.2.1"`},
		{"an update keeping its networks", []*sdk.Allocation{binding("old", on(53, def), on(9000, "192.0.2.9"))}, ""},
		{"an update moving a port to an address the node lacks", []*sdk.Allocation{binding("old", on(53, def), on(9001, "192.0.2.9"))},
			`port 9001 is held on "192.0.2.9"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := &nodeState{node: node, allocs: existing}
			ok, why := NodeFits(snap, &sdk.Plan{NodeAllocation: map[string][]*sdk.Allocation{"n1": tc.placements}}, "n1")
			if ok != (tc.why == "") || !strings.Contains(why, tc.why) {
				t.Fatalf("NodeFits = %v %q, want %q", ok, why, tc.why)
			}
		})
	}
}

// sameNetworks compares both sides' tasks: a task's networks that only one
// side has make them differ, whichever side it is.
func TestSameNetworks_BothSides(t *testing.T) {
	withTask := func() *sdk.AllocatedResources {
		return &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
			"t": {Networks: []*sdk.NetworkResource{{Mode: "host", IP: "10.0.0.1", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080}}}}}}}
	}
	without := func() *sdk.AllocatedResources {
		return &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{}}
	}
	for _, tc := range []struct {
		name string
		a, b *sdk.AllocatedResources
		want bool
	}{
		{"same", withTask(), withTask(), true},
		{"neither", without(), without(), true},
		{"the task only in the first", withTask(), without(), false},
		{"the task only in the second", without(), withTask(), false},
	} {
		if got := sameNetworks(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
