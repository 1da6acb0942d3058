package feasible

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/sdk"
)

// Dynamic port range used when a node does not report one (Nomad's default).
const (
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
	maxPort               = 65535
	// randomPortAttempts is how many random picks are tried before the
	// range is scanned in order.
	randomPortAttempts = 20
)

// PortSet is a set of host ports. The zero value is empty and ready; Reset
// empties it in time proportional to what was added, so one PortSet can be
// reused across candidate nodes without reallocating.
type PortSet struct {
	bits  [(maxPort + 1) / 64]uint64
	added []int
}

// Has reports whether port is in the set.
func (s *PortSet) Has(port int) bool {
	if port < 0 || port > maxPort {
		return false
	}
	return s.bits[port>>6]&(1<<(port&63)) != 0
}

// Add adds port and reports whether it was already there (a collision).
// Ports outside 0..65535 collide, so that a bad port never fits.
func (s *PortSet) Add(port int) (collision bool) {
	if port < 0 || port > maxPort {
		return true
	}
	w, b := port>>6, uint64(1)<<(port&63)
	if s.bits[w]&b != 0 {
		return true
	}
	s.bits[w] |= b
	s.added = append(s.added, port)
	return false
}

// Reset empties the set.
func (s *PortSet) Reset() {
	for _, p := range s.added {
		s.bits[p>>6] = 0
	}
	s.added = s.added[:0]
}

// Len is the number of ports in the set.
func (s *PortSet) Len() int { return len(s.added) }

// ParsePortRanges parses a reserved-ports list such as "22,80,8000-8100".
func ParsePortRanges(spec string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("feasible: bad port %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return nil, fmt.Errorf("feasible: bad port range %q", part)
			}
		}
		if a < 0 || b > maxPort || a > b {
			return nil, fmt.Errorf("feasible: port range %q is outside 0-65535", part)
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out, nil
}

// AddNode adds the host ports the node keeps for itself, node-wide and on
// any of its addresses (ports are counted per node, not per address: a
// port one address keeps is not offered on another either). A malformed
// reservation is reported, not ignored: the node cannot be trusted with
// ports.
func (s *PortSet) AddNode(n *sdk.Node) error {
	var specs []string
	if n.ReservedResources != nil && n.ReservedResources.Networks.ReservedHostPorts != "" {
		specs = append(specs, n.ReservedResources.Networks.ReservedHostPorts)
	}
	if r := n.NodeResources; r != nil {
		for _, nw := range r.NodeNetworks {
			for _, a := range nw.Addresses {
				if a.ReservedPorts != "" {
					specs = append(specs, a.ReservedPorts)
				}
			}
		}
	}
	for _, spec := range specs {
		ports, err := ParsePortRanges(spec)
		if err != nil {
			return err
		}
		for _, p := range ports {
			s.Add(p)
		}
	}
	return nil
}

// AddAlloc adds the host ports an allocation holds (none once its node
// reports it finished) and reports the first port that was already taken
// (0 if none). Static ports that ignore collisions are not added.
func (s *PortSet) AddAlloc(a *sdk.Allocation) (collision int) {
	if a.ClientTerminalStatus() || a.AllocatedResources == nil {
		return 0
	}
	r := a.AllocatedResources
	add := func(p int) {
		if p > 0 && s.Add(p) && collision == 0 {
			collision = p
		}
	}
	if len(r.Shared.Ports) > 0 {
		for _, pm := range r.Shared.Ports {
			add(pm.Value)
		}
	} else {
		for _, nw := range r.Shared.Networks {
			s.addNetwork(nw, add)
		}
	}
	for _, t := range r.Tasks {
		for _, nw := range t.Networks {
			s.addNetwork(nw, add)
		}
	}
	return collision
}

func (s *PortSet) addNetwork(nw *sdk.NetworkResource, add func(int)) {
	for _, p := range nw.ReservedPorts {
		if !p.IgnoreCollision {
			add(p.Value)
		}
	}
	for _, p := range nw.DynamicPorts {
		add(p.Value)
	}
}

// dynamicRange returns the node's dynamic port range.
func dynamicRange(n *sdk.Node) (int, int) {
	lo, hi := DefaultMinDynamicPort, DefaultMaxDynamicPort
	if r := n.NodeResources; r != nil && r.MinDynamicPort > 0 && r.MaxDynamicPort >= r.MinDynamicPort {
		lo, hi = r.MinDynamicPort, r.MaxDynamicPort
	}
	return lo, hi
}

// NodeIP returns the address ports are offered on: the first node network's
// IP, else the fingerprinted "unique.network.ip-address".
func NodeIP(n *sdk.Node) string {
	if r := n.NodeResources; r != nil {
		for _, nw := range r.Networks {
			if nw.IP != "" {
				return nw.IP
			}
		}
	}
	return n.Attributes["unique.network.ip-address"]
}

// HostNetworkAddress returns the address node n offers host network name
// on, and whether it has that network: the address of its NodeNetworks
// aliased name; else NodeIP for a network it declares in HostNetworks
// without reporting an address, and for "default" (or no name), which
// every node has.
func HostNetworkAddress(n *sdk.Node, name string) (string, bool) {
	if name == "" {
		name = "default"
	}
	if r := n.NodeResources; r != nil {
		for _, nw := range r.NodeNetworks {
			for _, a := range nw.Addresses {
				if a.Alias == name && a.Address != "" {
					return a.Address, true
				}
			}
		}
	}
	if _, ok := n.HostNetworks[name]; ok || name == "default" {
		return NodeIP(n), true
	}
	return "", false
}

// AssignPorts offers the ports a network block asks for on node, given the
// ports already used there: static ports as asked, dynamic ones picked from
// the node's dynamic range (randomly, then in order). On success it adds
// the offered ports to used and returns the network with every port's Value
// set, and the port mappings. On failure it returns the reason as Nomad
// reports an exhausted network ("network: reserved port collision http=22",
// "network: dynamic port selection failed") and leaves used unchanged.
func AssignPorts(n *sdk.Node, used *PortSet, ask *sdk.NetworkResource, rng *rand.Rand) (*sdk.NetworkResource, []sdk.PortMapping, string) {
	offer := *ask
	offer.IP = NodeIP(n)
	offer.ReservedPorts = append([]sdk.Port(nil), ask.ReservedPorts...)
	offer.DynamicPorts = append([]sdk.Port(nil), ask.DynamicPorts...)
	mark := len(used.added)
	undo := func() {
		for _, p := range used.added[mark:] {
			used.bits[p>>6] &^= 1 << (p & 63)
		}
		used.added = used.added[:mark]
	}
	mappings := make([]sdk.PortMapping, 0, len(ask.ReservedPorts)+len(ask.DynamicPorts))
	for _, p := range offer.ReservedPorts {
		if p.IgnoreCollision {
			if p.Value <= 0 || p.Value > maxPort {
				undo()
				return nil, nil, fmt.Sprintf("network: invalid port %s=%d", p.Label, p.Value)
			}
		} else if used.Add(p.Value) {
			undo()
			return nil, nil, fmt.Sprintf("network: reserved port collision %s=%d", p.Label, p.Value)
		}
		mappings = append(mappings, sdk.PortMapping{Label: p.Label, Value: p.Value, To: p.To, HostIP: hostIP(n, p)})
	}
	lo, hi := dynamicRange(n)
	for i := range offer.DynamicPorts {
		p := pickDynamic(used, lo, hi, rng)
		if p == 0 {
			undo()
			return nil, nil, "network: dynamic port selection failed"
		}
		offer.DynamicPorts[i].Value = p
		to := offer.DynamicPorts[i].To
		if to == -1 {
			to = p
		}
		mappings = append(mappings, sdk.PortMapping{Label: offer.DynamicPorts[i].Label, Value: p, To: to,
			HostIP: hostIP(n, offer.DynamicPorts[i])})
	}
	return &offer, mappings, ""
}

// hostIP is the address port p is offered on: its host network's.
func hostIP(n *sdk.Node, p sdk.Port) string {
	addr, _ := HostNetworkAddress(n, p.HostNetwork)
	return addr
}

// pickDynamic adds and returns a free port in lo..hi, or returns 0.
func pickDynamic(used *PortSet, lo, hi int, rng *rand.Rand) int {
	span := hi - lo + 1
	for i := 0; i < randomPortAttempts; i++ {
		p := lo + rng.IntN(span)
		if !used.Add(p) {
			return p
		}
	}
	for p := lo; p <= hi; p++ {
		if !used.Add(p) {
			return p
		}
	}
	return 0
}
