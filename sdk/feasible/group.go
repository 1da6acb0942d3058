package feasible

import (
	"fmt"
	"slices"

	"github.com/drover-sched/drover/sdk"
)

// Filter reasons reported in AllocMetric.ConstraintFiltered, as Nomad names
// them. A failed constraint is reported as its String().
const (
	FilterClassIneligible = "computed class ineligible"
	FilterDrivers         = "missing drivers"
	FilterDevices         = "missing devices"
	FilterNetwork         = "missing network"
	FilterHostVolumes     = "missing compatible host volumes"
	FilterDistinctHosts   = sdk.ConstraintDistinctHosts
)

// GroupChecks is what a task group asks of a node itself, independent of
// what else runs there: the job's constraints, the group's and its tasks'
// constraints, drivers, devices (by kind and healthy count), network mode,
// the host networks its ports name, and host volumes. Everything it reads
// is part of the node's computed class (unless a constraint escapes), so
// results are cached per class by Eligibility.
type GroupChecks struct {
	name           string
	jobConstraints []*sdk.Constraint
	constraints    []*sdk.Constraint
	drivers        []string
	devices        []*sdk.RequestedDevice
	networkMode    string
	hostNetworks   []namedPort // ports on a host network other than "default"
	hostVolumes    []string
}

// namedPort is a port that names its host network.
type namedPort struct{ network, label string }

// NewGroupChecks collects the node checks of tg in job.
func NewGroupChecks(job *sdk.Job, tg *sdk.TaskGroup) *GroupChecks {
	g := &GroupChecks{name: tg.Name, networkMode: "none"}
	if job != nil {
		for _, c := range job.Constraints {
			if nodeConstraint(c) {
				g.jobConstraints = append(g.jobConstraints, c)
			}
		}
	}
	for _, c := range tg.Constraints {
		if nodeConstraint(c) {
			g.constraints = append(g.constraints, c)
		}
	}
	for _, t := range tg.Tasks {
		if t.Driver != "" && !slices.Contains(g.drivers, t.Driver) {
			g.drivers = append(g.drivers, t.Driver)
		}
		for _, c := range t.Constraints {
			if nodeConstraint(c) {
				g.constraints = append(g.constraints, c)
			}
		}
		if t.Resources != nil {
			g.devices = append(g.devices, t.Resources.Devices...)
		}
	}
	if len(tg.Networks) > 0 {
		g.networkMode = tg.Networks[0].Mode
		if g.networkMode == "" {
			g.networkMode = "host"
		}
	}
	for _, nw := range tg.Networks {
		// Dynamic ports first, as Nomad's NetworkChecker lists them: the
		// first port on a missing host network is the one the reason names.
		for _, ports := range [][]sdk.Port{nw.DynamicPorts, nw.ReservedPorts} {
			for _, p := range ports {
				if p.HostNetwork != "" && p.HostNetwork != "default" {
					g.hostNetworks = append(g.hostNetworks, namedPort{p.HostNetwork, p.Label})
				}
			}
		}
	}
	for _, v := range tg.Volumes {
		if v.Field("Type") == "host" {
			src, _ := v.Field("Source").(string)
			g.hostVolumes = append(g.hostVolumes, src)
		}
	}
	slices.Sort(g.hostVolumes)
	return g
}

// nodeConstraint reports whether c is a property of the node alone.
func nodeConstraint(c *sdk.Constraint) bool {
	return c.Operand != sdk.ConstraintDistinctHosts && c.Operand != sdk.ConstraintDistinctProperty
}

// Name is the task group's name.
func (g *GroupChecks) Name() string { return g.name }

// Check runs every check on n without caching and returns "" or the failed
// check's reason.
func (g *GroupChecks) Check(ch *Checker, n *sdk.Node) string {
	if r := g.checkJob(ch, n); r != "" {
		return r
	}
	return g.checkGroup(ch, n)
}

func (g *GroupChecks) checkJob(ch *Checker, n *sdk.Node) string {
	for _, c := range g.jobConstraints {
		if !ch.Meets(c, n) {
			return c.String()
		}
	}
	return ""
}

func (g *GroupChecks) checkGroup(ch *Checker, n *sdk.Node) string {
	for _, d := range g.drivers {
		if !n.HasDriver(d) {
			return FilterDrivers
		}
	}
	for _, c := range g.constraints {
		if !ch.Meets(c, n) {
			return c.String()
		}
	}
	if len(g.devices) > 0 && !HasDevices(ch, n, g.devices) {
		return FilterDevices
	}
	if !hasNetworkMode(n, g.networkMode) {
		return FilterNetwork
	}
	for _, p := range g.hostNetworks {
		if _, ok := HostNetworkAddress(n, p.network); !ok {
			return fmt.Sprintf("missing host network %q for port %q", p.network, p.label)
		}
	}
	for _, src := range g.hostVolumes {
		if _, ok := n.HostVolumes[src]; !ok {
			return FilterHostVolumes
		}
	}
	return ""
}

// hasNetworkMode reports whether the node offers a network of the mode. A
// node that reports no networks at all offers "host" (every machine has a
// host network; Drover's simulated and minimal nodes do not list it).
func hasNetworkMode(n *sdk.Node, mode string) bool {
	if mode == "none" {
		return true
	}
	if n.NodeResources == nil || len(n.NodeResources.Networks) == 0 {
		return mode == "host"
	}
	for _, nw := range n.NodeResources.Networks {
		m := nw.Mode
		if m == "" {
			m = "host"
		}
		if m == mode {
			return true
		}
	}
	return false
}
