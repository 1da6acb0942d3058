package feasible

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func fitNode() *sdk.Node {
	return &sdk.Node{ID: "n1",
		NodeResources: &sdk.NodeResources{Cpu: sdk.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: sdk.NodeMemoryResources{MemoryMB: 4096}, Disk: sdk.NodeDiskResources{DiskMB: 1000},
			Devices: []*sdk.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "t4",
				Instances: []*sdk.NodeDevice{{ID: "g0", Healthy: true}, {ID: "g1", Healthy: true}, {ID: "g2", Healthy: false}}}}},
		ReservedResources: &sdk.NodeReservedResources{Networks: sdk.NodeReservedNetworkResources{ReservedHostPorts: "22,80-81"}},
	}
}

func alloc(id string, cpu, mem int64, mutate func(r *sdk.AllocatedResources)) *sdk.Allocation {
	r := &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"t": {
		Cpu: sdk.AllocatedCpuResources{CpuShares: cpu}, Memory: sdk.AllocatedMemoryResources{MemoryMB: mem}}}}
	if mutate != nil {
		mutate(r)
	}
	return &sdk.Allocation{ID: id, DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning, AllocatedResources: r}
}

func withPort(p int) func(*sdk.AllocatedResources) {
	return func(r *sdk.AllocatedResources) { r.Shared.Ports = []sdk.PortMapping{{Label: "http", Value: p}} }
}

func TestAllocsFit(t *testing.T) {
	cores := func(cs ...uint16) func(*sdk.AllocatedResources) {
		return func(r *sdk.AllocatedResources) { r.Tasks["t"].Cpu.ReservedCores = cs }
	}
	devs := func(ids ...string) func(*sdk.AllocatedResources) {
		return func(r *sdk.AllocatedResources) {
			r.Tasks["t"].Devices = []*sdk.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "t4", DeviceIDs: ids}}
		}
	}
	stopped := alloc("s", 4000, 4096, withPort(8080))
	stopped.DesiredStatus = sdk.AllocDesiredStatusStop
	finished := alloc("f", 4000, 4096, withPort(8080))
	finished.DesiredStatus, finished.ClientStatus = sdk.AllocDesiredStatusStop, sdk.AllocClientStatusComplete
	failed := alloc("x", 4000, 4096, withPort(8080))
	failed.ClientStatus = sdk.AllocClientStatusFailed
	cases := []struct {
		name   string
		allocs []*sdk.Allocation
		dim    string
	}{
		{"fits", []*sdk.Allocation{alloc("a", 2000, 2048, nil), alloc("b", 2000, 2048, nil)}, ""},
		{"cpu", []*sdk.Allocation{alloc("a", 3000, 100, nil), alloc("b", 1001, 100, nil)}, "cpu"},
		{"memory", []*sdk.Allocation{alloc("a", 100, 4097, nil)}, "memory"},
		{"finished allocations hold nothing", []*sdk.Allocation{finished, failed, alloc("a", 4000, 4096, withPort(8080))}, ""},
		{"stopped allocations still running hold their ports", []*sdk.Allocation{stopped, alloc("a", 1, 1, withPort(8080))}, DimPortCollision},
		{"stopped allocations still running hold their cpu", []*sdk.Allocation{stopped, alloc("a", 1, 1, nil)}, "cpu"},
		{"distinct ports", []*sdk.Allocation{alloc("a", 1, 1, withPort(8080)), alloc("b", 1, 1, withPort(8081))}, ""},
		{"port collision", []*sdk.Allocation{alloc("a", 1, 1, withPort(8080)), alloc("b", 1, 1, withPort(8080))}, DimPortCollision},
		{"node reserved port", []*sdk.Allocation{alloc("a", 1, 1, withPort(81))}, DimPortCollision},
		{"cores", []*sdk.Allocation{alloc("a", 1000, 1, cores(0)), alloc("b", 1000, 1, cores(1))}, ""},
		{"core collision", []*sdk.Allocation{alloc("a", 1000, 1, cores(0)), alloc("b", 1000, 1, cores(0))}, DimCoreConflict},
		{"core the node lacks", []*sdk.Allocation{alloc("a", 1000, 1, cores(7))}, "cores"},
		{"devices", []*sdk.Allocation{alloc("a", 1, 1, devs("g0")), alloc("b", 1, 1, devs("g1"))}, ""},
		{"device collision", []*sdk.Allocation{alloc("a", 1, 1, devs("g0")), alloc("b", 1, 1, devs("g0"))}, DimDevices},
		{"unhealthy device", []*sdk.Allocation{alloc("a", 1, 1, devs("g2"))}, "devices: no healthy instance g2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, dim := AllocsFit(fitNode(), tc.allocs)
			if ok != (tc.dim == "") || dim != tc.dim {
				t.Fatalf("AllocsFit = %v %q, want %q", ok, dim, tc.dim)
			}
		})
	}
}

func TestAssignPorts(t *testing.T) {
	n := fitNode()
	n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 30000, 30002
	rng := rand.New(rand.NewPCG(1, 2))
	used := &PortIndex{}
	if err := used.AddNode(n); err != nil {
		t.Fatal(err)
	}
	ask := &sdk.NetworkResource{Mode: "host", ReservedPorts: []sdk.Port{{Label: "admin", Value: 9000}},
		DynamicPorts: []sdk.Port{{Label: "http", To: -1}, {Label: "grpc"}}}
	offer, mappings, reason := AssignPorts(n, used, ask, rng)
	if reason != "" || len(mappings) != 3 || offer.DynamicPorts[0].Value == offer.DynamicPorts[1].Value {
		t.Fatalf("offer %+v mappings %+v reason %q", offer, mappings, reason)
	}
	if mappings[1].To != mappings[1].Value {
		t.Fatalf("to = -1 should map to the host port: %+v", mappings[1])
	}
	// The static port is now taken; the range has one port left.
	if _, _, reason := AssignPorts(n, used, &sdk.NetworkResource{ReservedPorts: []sdk.Port{{Label: "admin", Value: 9000}}}, rng); reason != "network: reserved port collision admin=9000" {
		t.Fatalf("reason %q", reason)
	}
	before := used.Len()
	if _, _, reason := AssignPorts(n, used, &sdk.NetworkResource{DynamicPorts: []sdk.Port{{Label: "a"}, {Label: "b"}}}, rng); reason != "network: dynamic port selection failed" {
		t.Fatalf("reason %q", reason)
	}
	if used.Len() != before {
		t.Fatalf("a failed offer left ports taken: %d -> %d", before, used.Len())
	}
}

// TestHostNetworks: a port on a host network is offered on that
// network's address, as the node reports it (NodeNetworks aliases), or on
// the node's address for one it only declares (HostNetworks); "default"
// and no name are the node's address; an address's reserved ports are kept
// on that address alone.
func TestHostNetworks(t *testing.T) {
	n := fitNode()
	n.NodeResources.Networks = []*sdk.NetworkResource{{Mode: "host", IP: "10.0.0.5"}}
	n.NodeResources.NodeNetworks = []*sdk.NodeNetworkResource{{Mode: "host", Device: "eth1", Addresses: []sdk.NodeNetworkAddress{
		{Family: "ipv4", Alias: "public", Address: "203.0.113.5", ReservedPorts: "8443"}}}}
	n.HostNetworks = map[string]sdk.Opaque{"storage": {"CIDR": "192.168.9.0/24"}}
	for _, tc := range []struct {
		name, addr string
		ok         bool
	}{{"", "10.0.0.5", true}, {"default", "10.0.0.5", true}, {"public", "203.0.113.5", true},
		{"storage", "10.0.0.5", true}, {"private", "", false}} {
		if addr, ok := HostNetworkAddress(n, tc.name); addr != tc.addr || ok != tc.ok {
			t.Errorf("HostNetworkAddress(%q) = %q, %v; want %q, %v", tc.name, addr, ok, tc.addr, tc.ok)
		}
	}
	used := &PortIndex{}
	if err := used.AddNode(n); err != nil {
		t.Fatal(err)
	}
	if !used.Has("203.0.113.5", 8443) {
		t.Fatal("the public address's reserved port is offered")
	}
	if used.Has("10.0.0.5", 8443) {
		t.Fatal("the public address's reserved port is kept on the node's other address")
	}
	ask := &sdk.NetworkResource{Mode: "host", ReservedPorts: []sdk.Port{{Label: "https", Value: 443, HostNetwork: "public"}},
		DynamicPorts: []sdk.Port{{Label: "admin", HostNetwork: "default"}}}
	_, mappings, reason := AssignPorts(n, used, ask, rand.New(rand.NewPCG(1, 2)))
	if reason != "" || len(mappings) != 2 || mappings[0].HostIP != "203.0.113.5" || mappings[1].HostIP != "10.0.0.5" {
		t.Fatalf("mappings %+v (%q), want https on 203.0.113.5 and admin on 10.0.0.5", mappings, reason)
	}
}

func TestDevicesAndCores(t *testing.T) {
	n := fitNode()
	ch := NewChecker()
	req := &sdk.RequestedDevice{Name: "nvidia/gpu", Count: 2}
	if !HasDevices(ch, n, []*sdk.RequestedDevice{req}) || HasDevices(ch, n, []*sdk.RequestedDevice{{Name: "gpu", Count: 3}}) {
		t.Fatal("HasDevices counts healthy instances wrong")
	}
	if HasDevices(ch, n, []*sdk.RequestedDevice{{Name: "gpu", Count: 1, Constraints: []*sdk.Constraint{{LTarget: "${device.model}", RTarget: "a100", Operand: "="}}}}) {
		t.Fatal("device constraint ignored")
	}
	da := NewDeviceAllocator(ch, n, []*sdk.Allocation{alloc("a", 1, 1, func(r *sdk.AllocatedResources) {
		r.Tasks["t"].Devices = []*sdk.AllocatedDeviceResource{{DeviceIDs: []string{"g0"}}}
	})})
	if got, _ := da.Assign(req); got != nil {
		t.Fatalf("assigned %v though only one healthy instance is free", got.DeviceIDs)
	}
	if got, _ := da.Assign(&sdk.RequestedDevice{Name: "gpu", Count: 1}); got == nil || got.DeviceIDs[0] != "g1" {
		t.Fatalf("assigned %+v, want g1", got)
	}
	used := map[uint16]bool{0: true}
	if got := AssignCores(n, used, 2); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("cores %v", got)
	}
	if got := AssignCores(n, used, 2); got != nil {
		t.Fatalf("assigned %v with one core free", got)
	}
}

// A node with one A100 and one T4: the first request, for any GPU,
// prefers the A100 by its affinity; the second asks for the A100 itself.
// Taken greedily in order (as Nomad does) the second finds no room; taken
// together, the first takes the T4.
func TestDeviceAllocator_AssignAllTriesOtherGroups(t *testing.T) {
	n := fitNode()
	n.NodeResources.Devices = []*sdk.NodeDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "a100", Instances: []*sdk.NodeDevice{{ID: "a0", Healthy: true}}},
		{Vendor: "nvidia", Type: "gpu", Name: "t4", Instances: []*sdk.NodeDevice{{ID: "t0", Healthy: true}, {ID: "t1", Healthy: false}}},
	}
	ch := NewChecker()
	anyGPU := &sdk.RequestedDevice{Name: "gpu", Count: 1,
		Affinities: []*sdk.Affinity{{LTarget: "${device.model}", RTarget: "a100", Operand: "=", Weight: 50}}}
	a100 := &sdk.RequestedDevice{Name: "nvidia/gpu/a100", Count: 1}
	for _, tc := range []struct {
		name   string
		reqs   []*sdk.RequestedDevice
		want   []string // instance per request; nil: no room
		scores []float64
	}{
		{"the preferred group when it leaves room", []*sdk.RequestedDevice{anyGPU}, []string{"a0"}, []float64{1}},
		{"the next group when a later request needs the preferred one", []*sdk.RequestedDevice{anyGPU, a100}, []string{"t0", "a0"}, []float64{0, 0}},
		{"the same in the other order", []*sdk.RequestedDevice{a100, anyGPU}, []string{"a0", "t0"}, []float64{0, 0}},
		{"no room for a third (the T4's other instance is unhealthy)", []*sdk.RequestedDevice{anyGPU, a100, {Name: "gpu", Count: 1}}, nil, nil},
		{"no room for two of one group", []*sdk.RequestedDevice{{Name: "nvidia/gpu/t4", Count: 2}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HasDevices(ch, n, tc.reqs); got != (tc.want != nil) {
				t.Errorf("HasDevices = %v", got)
			}
			da := NewDeviceAllocator(ch, n, nil)
			out, scores := da.AssignAll(tc.reqs)
			if tc.want == nil {
				if out != nil {
					t.Fatalf("assigned %+v, want no room", out)
				}
				if got, _ := da.Assign(anyGPU); got == nil || got.DeviceIDs[0] != "a0" {
					t.Fatalf("a failed AssignAll marked instances used: then %+v", got)
				}
				return
			}
			if len(out) != len(tc.want) {
				t.Fatalf("assigned %d requests, want %d", len(out), len(tc.want))
			}
			for i, d := range out {
				if len(d.DeviceIDs) != 1 || d.DeviceIDs[0] != tc.want[i] || scores[i] != tc.scores[i] {
					t.Errorf("request %d: %+v score %v, want %s score %v", i, d, scores[i], tc.want[i], tc.scores[i])
				}
			}
			if got, _ := da.Assign(&sdk.RequestedDevice{Name: "gpu", Count: uint64(3 - len(out))}); got != nil {
				t.Errorf("instances given out are still free: %+v", got)
			}
		})
	}
}

// Over random nodes and requests, AssignAll fits exactly when some choice
// of a group per request does (found by trying every choice), HasDevices
// agrees with it on a node with nothing in use, and what it hands out are
// distinct healthy instances of a group matching each request.
func TestDeviceAllocator_AssignAllFitsWhenAnyChoiceFits(t *testing.T) {
	names := []string{"gpu", "nvidia/gpu", "nvidia/gpu/a100", "nvidia/gpu/t4", "amd/gpu", "fpga"}
	models := []struct{ vendor, typ, name string }{{"nvidia", "gpu", "a100"}, {"nvidia", "gpu", "t4"}, {"amd", "gpu", "mi50"}, {"xilinx", "fpga", "u50"}}
	ch := NewChecker()
	r := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 2000; i++ {
		n := fitNode()
		n.NodeResources.Devices = nil
		for g := range 1 + r.IntN(3) {
			m := models[r.IntN(len(models))]
			d := &sdk.NodeDeviceResource{Vendor: m.vendor, Type: m.typ, Name: m.name}
			for k := range 1 + r.IntN(3) {
				d.Instances = append(d.Instances, &sdk.NodeDevice{ID: fmt.Sprintf("d%d-%d", g, k), Healthy: r.IntN(4) > 0})
			}
			n.NodeResources.Devices = append(n.NodeResources.Devices, d)
		}
		var reqs []*sdk.RequestedDevice
		for range 1 + r.IntN(3) {
			req := &sdk.RequestedDevice{Name: names[r.IntN(len(names))], Count: uint64(1 + r.IntN(2))}
			for range r.IntN(3) {
				m := models[r.IntN(len(models))]
				req.Affinities = append(req.Affinities, &sdk.Affinity{LTarget: "${device.model}", RTarget: m.name, Operand: "=", Weight: int8(r.IntN(201) - 100)})
			}
			reqs = append(reqs, req)
		}
		// Try every choice of a group per request.
		devices := n.NodeResources.Devices
		var any func(k int, free []int) bool
		any = func(k int, free []int) bool {
			if k == len(reqs) {
				return true
			}
			for g, d := range devices {
				if c := int(reqs[k].Count); free[g] >= c && DeviceMatches(ch, d, reqs[k]) {
					free[g] -= c
					ok := any(k+1, free)
					free[g] += c
					if ok {
						return true
					}
				}
			}
			return false
		}
		free := make([]int, len(devices))
		for g, d := range devices {
			free[g] = healthyInstances(d)
		}
		want := any(0, free)
		da := NewDeviceAllocator(ch, n, nil)
		out, scores := da.AssignAll(reqs)
		if (out != nil) != want || HasDevices(ch, n, reqs) != want {
			t.Fatalf("case %d: AssignAll %v, HasDevices %v, want %v: devices %+v requests %+v", i, out != nil, HasDevices(ch, n, reqs), want, devices, reqs)
		}
		// Where the greedy choice (each request its best group with room
		// left, the first of equals) fits, it is the answer.
		greedy := make([]int, len(reqs))
		for g := range free {
			free[g] = healthyInstances(devices[g])
		}
		for k, req := range reqs {
			greedy[k] = -1
			for g, d := range devices {
				if free[g] >= int(req.Count) && DeviceMatches(ch, d, req) && (greedy[k] < 0 || da.affinity(d, req) > da.affinity(devices[greedy[k]], req)) {
					greedy[k] = g
				}
			}
			if greedy[k] < 0 {
				greedy = nil
				break
			}
			free[greedy[k]] -= int(req.Count)
		}
		for k := range greedy {
			if g := devices[greedy[k]]; out[k].Name != g.Name || out[k].Vendor != g.Vendor || scores[k] != da.affinity(g, reqs[k]) {
				t.Fatalf("case %d: request %d got %s/%s (score %v), the greedy choice is %s/%s: devices %+v requests %+v",
					i, k, out[k].Vendor, out[k].Name, scores[k], g.Vendor, g.Name, devices, reqs)
			}
		}
		seen := map[string]bool{}
		for k, d := range out {
			if uint64(len(d.DeviceIDs)) != reqs[k].Count {
				t.Fatalf("case %d: request %d got %v", i, k, d.DeviceIDs)
			}
			for _, id := range d.DeviceIDs {
				var group *sdk.NodeDeviceResource
				for _, g := range devices {
					for _, inst := range g.Instances {
						if inst.ID == id && inst.Healthy {
							group = g
						}
					}
				}
				if seen[id] || group == nil || !DeviceMatches(ch, group, reqs[k]) {
					t.Fatalf("case %d: request %d (%s) got %s: given twice, unhealthy or of another kind", i, k, reqs[k].Name, id)
				}
				seen[id] = true
			}
		}
	}
}

// The search is bounded (maxDeviceSearch): six requests any GPU serves,
// then two for the node's one A100 group, which has two instances. Taken in
// this order, the first requests all prefer the A100 (the first group),
// and the search tries nearly every choice of them before it moves both
// away: it gives up, and the node is taken as without room. In the other
// order the first choice fits. Where no choice fits, the search is just as
// bounded.
func TestDeviceAllocator_AssignAllStopsSearching(t *testing.T) {
	n := fitNode()
	n.NodeResources.Devices = []*sdk.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "a100",
		Instances: []*sdk.NodeDevice{{ID: "a0", Healthy: true}, {ID: "a1", Healthy: true}}}}
	for g := range 7 {
		n.NodeResources.Devices = append(n.NodeResources.Devices, &sdk.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "t4",
			Instances: []*sdk.NodeDevice{{ID: fmt.Sprintf("t%d", g), Healthy: true}}})
	}
	var anyGPU, a100 []*sdk.RequestedDevice
	for range 6 {
		anyGPU = append(anyGPU, &sdk.RequestedDevice{Name: "gpu", Count: 1})
	}
	for range 2 {
		a100 = append(a100, &sdk.RequestedDevice{Name: "nvidia/gpu/a100", Count: 1})
	}
	ch := NewChecker()
	for _, tc := range []struct {
		name string
		reqs []*sdk.RequestedDevice
		fits bool
	}{
		{"the A100's own requests last", slices.Concat(anyGPU, a100), false},
		{"the A100's own requests first", slices.Concat(a100, anyGPU), true},
		{"one more for the A100 than it has", slices.Concat(anyGPU[1:], a100, a100[:1]), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := NewDeviceAllocator(ch, n, nil).AssignAll(tc.reqs)
			if (out != nil) != tc.fits || HasDevices(ch, n, tc.reqs) != tc.fits {
				t.Fatalf("assigned %v, want fits %v", out, tc.fits)
			}
		})
	}
}
