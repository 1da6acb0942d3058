package stack_test

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// BenchmarkAssign times what the stack does on each candidate node for a
// group that asks for ports: count the ports the node keeps and its eight
// allocations hold, then hand out the group's static and dynamic ones.
// "one-address" is the common node (one address); "two-addresses" also has
// a public address with its own reserved ports, where the group asks for
// one static port.
func BenchmarkAssign(b *testing.B) {
	for _, tc := range []struct {
		name   string
		public bool
	}{{"one-address", false}, {"two-addresses", true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := sdktest.New()
			n := sdktest.Node("n1", 64000, 65536)
			n.ReservedResources = &sdk.NodeReservedResources{Networks: sdk.NodeReservedNetworkResources{ReservedHostPorts: "22,80-90"}}
			n.NodeResources.Networks = []*sdk.NetworkResource{{Mode: "host", Device: "eth0", IP: "10.0.0.1"}}
			addrs := []sdk.NodeNetworkAddress{{Family: "ipv4", Alias: "default", Address: "10.0.0.1"}}
			if tc.public {
				addrs = append(addrs, sdk.NodeNetworkAddress{Family: "ipv4", Alias: "public", Address: "203.0.113.5", ReservedPorts: "8000-8010"})
			}
			n.NodeResources.NodeNetworks = []*sdk.NodeNetworkResource{{Mode: "host", Device: "eth0", Addresses: addrs}}
			h.UpsertNode(n)
			job := sdktest.Job("web", 1)
			nw := &sdk.NetworkResource{Mode: "host", ReservedPorts: []sdk.Port{{Label: "http", Value: 8080, HostNetwork: "default"}},
				DynamicPorts: []sdk.Port{{Label: "admin", HostNetwork: "default"}, {Label: "metrics", HostNetwork: "default"}}}
			if tc.public {
				nw.ReservedPorts = append(nw.ReservedPorts, sdk.Port{Label: "https", Value: 443, HostNetwork: "public"})
			}
			job.TaskGroups[0].Networks = []*sdk.NetworkResource{nw}
			h.UpsertJob(job)
			for i := 0; i < 8; i++ {
				ports := []sdk.PortMapping{{Label: "http", Value: 9000 + i, HostIP: "10.0.0.1"},
					{Label: "admin", Value: 20000 + 2*i, HostIP: "10.0.0.1"}, {Label: "metrics", Value: 20001 + 2*i, HostIP: "10.0.0.1"}}
				h.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: "other", TaskGroup: "web",
					NodeID: "n1", DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusRunning,
					AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{"app": {}},
						Shared: sdk.AllocatedSharedResources{Ports: ports,
							Networks: []*sdk.NetworkResource{{Mode: "host", IP: "10.0.0.1"}}}}})
			}
			st, _, state := webStack(b, h, "e1")
			node, tg := state.Node("n1"), state.Job("default", "web").TaskGroups[0]
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r, dim := st.Assign(tg, node); r == nil {
					b.Fatal(dim)
				}
			}
		})
	}
}
