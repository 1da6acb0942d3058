package feasible

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// remove takes back port, the last one added.
func (s *PortSet) remove(port int) {
	s.bits[port>>6] &^= 1 << (port & 63)
	if k := len(s.added) - 1; k >= 0 && s.added[k] == port {
		s.added = s.added[:k]
	}
}

// ParsePortRanges parses a reserved-ports list such as "22,80,8000-8100".
func ParsePortRanges(spec string) ([]int, error) {
	var out []int
	err := eachPortRange(spec, func(lo, hi int) {
		for p := lo; p <= hi; p++ {
			out = append(out, p)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachPortRange calls fn with the bounds of each range of a reserved-ports
// list, a single port being a range of one, without allocating (but for an
// error).
func eachPortRange(spec string, fn func(lo, hi int)) error {
	for rest := spec; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return fmt.Errorf("feasible: bad port %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return fmt.Errorf("feasible: bad port range %q", part)
			}
		}
		if a < 0 || b > maxPort || a > b {
			return fmt.Errorf("feasible: port range %q is outside 0-65535", part)
		}
		fn(a, b)
	}
	return nil
}

// PortIndex counts the host ports used on one node per address, as Nomad's
// NetworkIndex does: a port taken on one address is free on another, so two
// allocations may both bind static port 53 on a node, each on its own host
// network, and one group may ask for port 53 on two host networks. The
// node's reserved ports (ReservedResources.Networks.ReservedHostPorts) are
// taken on every address; those an address reserves (NodeNetworks'
// ReservedPorts) on that address alone. Ports are counted on the address
// an allocation holds them on: a group network's port mapping's HostIP, a
// task network's IP.
//
// The zero value is empty and ready. Reset empties it in time proportional
// to what was added and keeps its memory, so one PortIndex serves every
// candidate node without allocating once it has seen as many addresses on
// one node as any has (most nodes have one).
type PortIndex struct {
	// reserved holds the ports the node keeps on every address.
	reserved PortSet
	// addrs[:n] are the addresses in use, the rest kept for reuse.
	addrs []*addrPorts
	n     int
	// journal lists the ports AssignPorts added, to take them back when
	// the offer fails.
	journal []journalEntry
	// collided is the last static port AssignPorts found taken, and
	// reason the reason it gave (kept across Reset).
	collided sdk.Port
	reason   string
}

// collisionReason is the reason AssignPorts gives for static port p taken,
// as Nomad words it, formatted once for a port that collides on node after
// node.
func (x *PortIndex) collisionReason(p sdk.Port) string {
	if x.reason == "" || x.collided.Label != p.Label || x.collided.Value != p.Value {
		x.collided = p
		x.reason = fmt.Sprintf("network: reserved port collision %s=%d", p.Label, p.Value)
	}
	return x.reason
}

type addrPorts struct {
	addr  string
	ports PortSet
}

type journalEntry struct {
	set  *PortSet
	port int
}

// Reset empties the index.
func (x *PortIndex) Reset() {
	x.reserved.Reset()
	for _, a := range x.addrs[:x.n] {
		a.ports.Reset()
	}
	x.n = 0
	x.journal = x.journal[:0]
}

// find returns the ports used on addr, or nil if none is.
func (x *PortIndex) find(addr string) *PortSet {
	for _, a := range x.addrs[:x.n] {
		if a.addr == addr {
			return &a.ports
		}
	}
	return nil
}

// on returns the ports used on addr, adding the address if it is new.
func (x *PortIndex) on(addr string) *PortSet {
	if s := x.find(addr); s != nil {
		return s
	}
	if x.n == len(x.addrs) {
		x.addrs = append(x.addrs, &addrPorts{})
	}
	a := x.addrs[x.n]
	x.n++
	a.addr = addr
	return &a.ports
}

// Has reports whether port is taken on addr: reserved by the node, or
// used there.
func (x *PortIndex) Has(addr string, port int) bool {
	if x.reserved.Has(port) {
		return true
	}
	s := x.find(addr)
	return s != nil && s.Has(port)
}

// Add takes port on addr and reports whether it was already taken there
// (a collision). Ports outside 0..65535 collide, so that a bad port never
// fits.
func (x *PortIndex) Add(addr string, port int) (collision bool) {
	return x.reserved.Has(port) || x.on(addr).Add(port)
}

// Len is the number of ports taken, on all addresses (a reserved port
// counted once).
func (x *PortIndex) Len() int {
	n := x.reserved.Len()
	for _, a := range x.addrs[:x.n] {
		n += a.ports.Len()
	}
	return n
}

// AddNode adds the host ports the node keeps for itself: those it reserves
// on every address, and those each of its addresses reserves there (as
// Nomad merges client.reserved.reserved_ports into every host network's).
// A malformed reservation is reported, not ignored: the node cannot be
// trusted with ports.
func (x *PortIndex) AddNode(n *sdk.Node) error {
	if n.ReservedResources != nil && n.ReservedResources.Networks.ReservedHostPorts != "" {
		if err := addRanges(n.ReservedResources.Networks.ReservedHostPorts, &x.reserved); err != nil {
			return err
		}
	}
	if r := n.NodeResources; r != nil {
		for _, nw := range r.NodeNetworks {
			for _, a := range nw.Addresses {
				if a.ReservedPorts != "" {
					if err := addRanges(a.ReservedPorts, x.on(a.Address)); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// addRanges adds the ports of a reserved-ports list to s.
func addRanges(spec string, s *PortSet) error {
	return eachPortRange(spec, func(lo, hi int) {
		for p := lo; p <= hi; p++ {
			s.Add(p)
		}
	})
}

// AddAlloc adds the host ports an allocation holds (none once its node
// reports it finished), each on its address, and reports the first port
// that was already taken there, or is no port (outside 1-65535; 0 is
// one not assigned, skipped), 0 if none. Static ports of networks that
// ignore collisions are not added.
func (x *PortIndex) AddAlloc(a *sdk.Allocation) (collision int) {
	if a.ClientTerminalStatus() || a.AllocatedResources == nil {
		return 0
	}
	r := a.AllocatedResources
	if len(r.Shared.Ports) > 0 {
		var set *PortSet
		addr := ""
		for _, pm := range r.Shared.Ports {
			if pm.Value == 0 || ignoresCollision(r.Shared.Networks, pm) { // 0: none assigned
				continue
			}
			if set == nil || pm.HostIP != addr {
				set, addr = x.on(pm.HostIP), pm.HostIP
			}
			if (x.reserved.Has(pm.Value) || set.Add(pm.Value)) && collision == 0 {
				collision = pm.Value
			}
		}
	} else {
		for _, nw := range r.Shared.Networks {
			x.addNetwork(nw, &collision)
		}
	}
	for _, t := range r.Tasks {
		for _, nw := range t.Networks {
			x.addNetwork(nw, &collision)
		}
	}
	return collision
}

// ignoresCollision reports whether networks hold the static port of pm's
// label and value with IgnoreCollision, which a PortMapping does not say:
// such a port is not counted, as AssignPorts does not count it. The host
// accepts the flag only where the group asks for it
// (sdk.AllocatedResources.CheckCovers).
func ignoresCollision(networks []*sdk.NetworkResource, pm sdk.PortMapping) bool {
	for _, nw := range networks {
		if nw == nil {
			continue
		}
		for _, p := range nw.ReservedPorts {
			if p.IgnoreCollision && p.Label == pm.Label && p.Value == pm.Value {
				return true
			}
		}
	}
	return false
}

func (x *PortIndex) addNetwork(nw *sdk.NetworkResource, collision *int) {
	if nw == nil || len(nw.ReservedPorts)+len(nw.DynamicPorts) == 0 {
		return
	}
	set := x.on(nw.IP)
	for _, p := range nw.ReservedPorts {
		if p.Value != 0 && !p.IgnoreCollision && (x.reserved.Has(p.Value) || set.Add(p.Value)) && *collision == 0 {
			*collision = p.Value
		}
	}
	for _, p := range nw.DynamicPorts {
		if p.Value != 0 && (x.reserved.Has(p.Value) || set.Add(p.Value)) && *collision == 0 {
			*collision = p.Value
		}
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

// AssignPorts offers the ports a group network block asks for on node,
// given the ports already used there: each port on the address of its host
// network (HostNetworkAddress), static ports as asked, dynamic ones picked
// from the node's dynamic range among those free on that address (randomly,
// then in order), as Nomad's NetworkIndex.AssignPorts does. On success it
// adds the offered ports to used and returns the network with every port's
// Value set (its IP the node's, NodeIP), and the port mappings (their
// HostIP the port's address). On failure it returns the reason as Nomad
// reports an exhausted network ("network: reserved port collision
// http=22", "network: dynamic port selection failed") and leaves used
// unchanged.
func AssignPorts(n *sdk.Node, used *PortIndex, ask *sdk.NetworkResource, rng *rand.Rand) (*sdk.NetworkResource, []sdk.PortMapping, string) {
	offer := &sdk.NetworkResource{}
	mappings, reason := assignPorts(n, used, ask, rng, false, offer, nil)
	if reason != "" {
		return nil, nil, reason
	}
	return offer, mappings, ""
}

// AssignPortsInto is AssignPorts writing the offer into *offer and
// appending the mappings to mappings[:0], reusing the memory of both (the
// offer's port lists included): a scheduler that offers ports on many
// candidate nodes and keeps one allocates nothing per node. It returns the
// mappings; on failure, them emptied and the reason, and *offer is not to
// be used.
func AssignPortsInto(n *sdk.Node, used *PortIndex, ask *sdk.NetworkResource, rng *rand.Rand, offer *sdk.NetworkResource, mappings []sdk.PortMapping) ([]sdk.PortMapping, string) {
	return assignPorts(n, used, ask, rng, false, offer, mappings[:0])
}

// AssignTaskPorts offers the ports a task's network block (Nomad's
// deprecated task resources network) asks for on node, as AssignPorts does
// but all on the node's address (NodeIP), whatever host network a port
// names, as Nomad's AssignTaskNetwork does: that is the address the
// offered network's IP says, where AddAlloc counts its ports.
func AssignTaskPorts(n *sdk.Node, used *PortIndex, ask *sdk.NetworkResource, rng *rand.Rand) (*sdk.NetworkResource, string) {
	offer := &sdk.NetworkResource{}
	if _, reason := assignPorts(n, used, ask, rng, true, offer, nil); reason != "" {
		return nil, reason
	}
	return offer, ""
}

// assignPorts offers ask's ports into *offer, reusing its port lists, and
// appends the group's mappings (none for a task) to mappings.
func assignPorts(n *sdk.Node, used *PortIndex, ask *sdk.NetworkResource, rng *rand.Rand, task bool,
	offer *sdk.NetworkResource, mappings []sdk.PortMapping) ([]sdk.PortMapping, string) {
	reserved, dynamic := offer.ReservedPorts[:0], offer.DynamicPorts[:0]
	*offer = *ask
	offer.IP = NodeIP(n)
	offer.ReservedPorts = append(reserved, ask.ReservedPorts...)
	offer.DynamicPorts = append(dynamic, ask.DynamicPorts...)
	used.journal = used.journal[:0]
	undo := func() {
		for i := len(used.journal) - 1; i >= 0; i-- {
			e := used.journal[i]
			e.set.remove(e.port)
		}
		used.journal = used.journal[:0]
	}
	// addr returns the address port p is offered on and the ports used
	// there. Most ports are on one address: the last one is kept.
	var lastSet *PortSet
	lastNet, lastAddr := "", ""
	addr := func(p sdk.Port) (string, *PortSet) {
		if task {
			p.HostNetwork = ""
		}
		if lastSet == nil || p.HostNetwork != lastNet {
			lastNet = p.HostNetwork
			if task {
				lastAddr = offer.IP
			} else {
				lastAddr, _ = HostNetworkAddress(n, p.HostNetwork)
			}
			lastSet = used.on(lastAddr)
		}
		return lastAddr, lastSet
	}
	if !task && mappings == nil {
		mappings = make([]sdk.PortMapping, 0, len(ask.ReservedPorts)+len(ask.DynamicPorts))
	}
	// As Nomad's AssignPorts, a dynamic port is none the allocation was
	// already given, on whatever address.
	var inOffer [8]int
	offered := inOffer[:0]
	for _, p := range offer.ReservedPorts {
		ip, set := addr(p)
		if p.IgnoreCollision {
			if p.Value <= 0 || p.Value > maxPort {
				undo()
				return mappings[:0], fmt.Sprintf("network: invalid port %s=%d", p.Label, p.Value)
			}
		} else if used.reserved.Has(p.Value) || set.Add(p.Value) {
			undo()
			return mappings[:0], used.collisionReason(p)
		} else {
			used.journal = append(used.journal, journalEntry{set, p.Value})
		}
		offered = append(offered, p.Value)
		if !task {
			mappings = append(mappings, sdk.PortMapping{Label: p.Label, Value: p.Value, To: p.To, HostIP: ip})
		}
	}
	lo, hi := dynamicRange(n)
	for i := range offer.DynamicPorts {
		ip, set := addr(offer.DynamicPorts[i])
		p := pickDynamic(&used.reserved, set, offered, lo, hi, rng)
		if p == 0 {
			undo()
			return mappings[:0], "network: dynamic port selection failed"
		}
		offered = append(offered, p)
		used.journal = append(used.journal, journalEntry{set, p})
		offer.DynamicPorts[i].Value = p
		to := offer.DynamicPorts[i].To
		if to == -1 {
			to = p
		}
		if !task {
			mappings = append(mappings, sdk.PortMapping{Label: offer.DynamicPorts[i].Label, Value: p, To: to, HostIP: ip})
		}
	}
	used.journal = used.journal[:0]
	return mappings, ""
}

// pickDynamic takes and returns a port in lo..hi that neither reserved nor
// used holds, nor offered (the ports the allocation was given so far, on
// any address), or returns 0.
func pickDynamic(reserved, used *PortSet, offered []int, lo, hi int, rng *rand.Rand) int {
	free := func(p int) bool { return !reserved.Has(p) && !slices.Contains(offered, p) && !used.Add(p) }
	span := hi - lo + 1
	for i := 0; i < randomPortAttempts; i++ {
		if p := lo + rng.IntN(span); free(p) {
			return p
		}
	}
	for p := lo; p <= hi; p++ {
		if free(p) {
			return p
		}
	}
	return 0
}
