package acl

import "strings"

// AllNamespaces is the namespace that names them all, as a request's
// ?namespace=* does.
const AllNamespaces = "*"

// ACL is what a token may do: the union of its policies. It is immutable,
// so one ACL may serve any number of requests at once. A nil *ACL may do
// nothing: a caller with ACLs disabled uses Management rather than nil,
// so that a token forgotten is a refusal, not a permission.
type ACL struct {
	management bool

	namespaces, nodePools, hostVolumes, variables patterns

	// levels holds the policy of node, agent, operator, quota and
	// plugin (by block type): the most permissive, deny winning.
	levels map[string]string
}

var (
	// Management can do everything.
	Management = &ACL{management: true}
	// DenyAll can do nothing.
	DenyAll = &ACL{}
)

// New merges policies (none: deny everything), as Nomad merges them: the
// capabilities granted to the same namespace, node pool, host volume or
// variables path pattern add up, unless one of them is deny, which takes
// all of them away; for node, agent, operator, quota and plugin the most
// permissive policy wins, unless one is deny.
//
// Patterns merge only with the same pattern: namespace "prod-*" and
// namespace "*" stay apart, and the check chooses between them.
func New(policies []*Policy) *ACL {
	a := &ACL{levels: map[string]string{}}
	for _, p := range policies {
		if p == nil {
			continue
		}
		for _, ns := range p.Namespaces {
			a.namespaces.add(ns.Name, ns.Capabilities)
			if ns.Variables == nil {
				continue
			}
			for _, path := range ns.Variables.Paths {
				a.variables.add(variableKey(ns.Name, path.PathSpec), path.Capabilities)
			}
		}
		for _, np := range p.NodePools {
			a.nodePools.add(np.Name, np.Capabilities)
		}
		for _, hv := range p.HostVolumes {
			a.hostVolumes.add(hv.Name, hv.Capabilities)
		}
		for typ, policy := range map[string]string{
			"node": p.Node, "agent": p.Agent, "operator": p.Operator, "quota": p.Quota, "plugin": p.Plugin,
		} {
			a.levels[typ] = mostPermissive(a.levels[typ], policy)
		}
	}
	for _, ps := range []*patterns{&a.namespaces, &a.nodePools, &a.hostVolumes, &a.variables} {
		ps.denyWins()
	}
	return a
}

// mostPermissive is the policy that grants the more of a and b, but deny
// if either is.
func mostPermissive(a, b string) string {
	for _, p := range []string{PolicyDeny, PolicyWrite, PolicyRead, PolicyList} {
		if a == p || b == p {
			return p
		}
	}
	return ""
}

// variableKey is what variables' patterns are kept under: a namespace and
// a path, which NUL cannot be part of. The key is a glob if either is.
func variableKey(ns, path string) string { return ns + "\x00" + path }

// IsManagement reports whether a may do everything.
func (a *ACL) IsManagement() bool { return a != nil && a.management }

// AllowNamespaceOperation reports whether a grants capability op in
// namespace ns. The namespace's own rules count if there are any; else
// those of the glob that matches it closest (see patterns.match); a deny
// there denies. For AllNamespaces ("*"), a grant in any namespace allows,
// as Nomad's listings across namespaces need: they filter what each
// namespace shows.
func (a *ACL) AllowNamespaceOperation(ns, op string) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	case ns == AllNamespaces && a.namespaces.any(func(c capabilitySet) bool { return c.allows(op) }):
		return true
	}
	return a.namespaces.match(ns).allows(op)
}

// AllowNamespaceOperationIn is AllowNamespaceOperation for one namespace
// only: ns is a namespace's name even when it is "*" (which the rules of
// the glob "*" grant), never every namespace. A request that acts on one
// object, which cannot filter what each namespace shows, checks this.
func (a *ACL) AllowNamespaceOperationIn(ns, op string) bool {
	return a != nil && (a.management || a.namespaces.match(ns).allows(op))
}

// AllowNamespace reports whether a grants any capability in namespace ns,
// as listing namespaces needs.
func (a *ACL) AllowNamespace(ns string) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	case ns == AllNamespaces && a.namespaces.any(capabilitySet.allowsAny):
		return true
	}
	return a.namespaces.match(ns).allowsAny()
}

// AllowNodePoolOperation reports whether a grants capability op in the
// node pool pool, which is matched as namespaces are.
func (a *ACL) AllowNodePoolOperation(pool, op string) bool {
	return a != nil && (a.management || a.nodePools.match(pool).allows(op))
}

// AllowNodePool reports whether a grants any capability in node pool pool.
func (a *ACL) AllowNodePool(pool string) bool {
	return a != nil && (a.management || a.nodePools.match(pool).allowsAny())
}

// AllowNodePoolSearch reports whether a grants anything in any node pool:
// whether a search of node pools could find any, as Nomad's search asks
// before it filters the pools one by one.
func (a *ACL) AllowNodePoolSearch() bool {
	return a != nil && (a.management || a.nodePools.any(capabilitySet.allowsAny))
}

// AllowHostVolumeOperation reports whether a grants capability op on host
// volume vol, which is matched as namespaces are.
func (a *ACL) AllowHostVolumeOperation(vol, op string) bool {
	return a != nil && (a.management || a.hostVolumes.match(vol).allows(op))
}

// AllowHostVolume reports whether a grants any capability on host volume vol.
func (a *ACL) AllowHostVolume(vol string) bool {
	return a != nil && (a.management || a.hostVolumes.match(vol).allowsAny())
}

// AllowVariableOperation reports whether a grants capability op on the
// variable at path in namespace ns: the rules of that namespace and path
// if there are any, else those of the closest matching glob of
// namespace and path together (Nomad's match). Nomad's implicit access
// of a workload to its own job's variables is not here; Drover serves no
// variables yet.
func (a *ACL) AllowVariableOperation(ns, path, op string) bool {
	return a != nil && (a.management || a.variables.match(variableKey(ns, path)).allows(op))
}

// AllowNodeRead reports whether a may read nodes.
func (a *ACL) AllowNodeRead() bool { return a.level("node", PolicyRead) }

// AllowNodeWrite reports whether a may change nodes (drain, eligibility).
func (a *ACL) AllowNodeWrite() bool { return a.level("node", PolicyWrite) }

// AllowAgentRead reports whether a may read agents (members, self).
func (a *ACL) AllowAgentRead() bool { return a.level("agent", PolicyRead) }

// AllowAgentWrite reports whether a may change agents (join, force-leave).
func (a *ACL) AllowAgentWrite() bool { return a.level("agent", PolicyWrite) }

// AllowOperatorRead reports whether a may read the cluster's operation
// (raft, scheduler configuration).
func (a *ACL) AllowOperatorRead() bool { return a.level("operator", PolicyRead) }

// AllowOperatorWrite reports whether a may change the cluster's operation.
func (a *ACL) AllowOperatorWrite() bool { return a.level("operator", PolicyWrite) }

// AllowQuotaRead reports whether a may read quotas.
func (a *ACL) AllowQuotaRead() bool { return a.level("quota", PolicyRead) }

// AllowQuotaWrite reports whether a may change quotas.
func (a *ACL) AllowQuotaWrite() bool { return a.level("quota", PolicyWrite) }

// AllowPluginRead reports whether a may read CSI plugins.
func (a *ACL) AllowPluginRead() bool { return a.level("plugin", PolicyRead) }

// AllowPluginList reports whether a may list CSI plugins: read or list.
func (a *ACL) AllowPluginList() bool { return a.level("plugin", PolicyList) }

// level reports whether a's policy for block type typ grants at least
// want: write grants read, which grants list.
func (a *ACL) level(typ, want string) bool {
	if a == nil {
		return false
	}
	if a.management {
		return true
	}
	switch a.levels[typ] {
	case PolicyWrite:
		return true
	case PolicyRead:
		return want != PolicyWrite
	case PolicyList:
		return want == PolicyList
	}
	return false
}

// capabilitySet is a set of capabilities; one holding deny holds nothing
// else (see patterns.denyWins).
type capabilitySet map[string]bool

// allows reports whether c grants op. A deny is no grant, not even of
// "deny".
func (c capabilitySet) allows(op string) bool { return op != PolicyDeny && c[op] }

// allowsAny reports whether c grants anything.
func (c capabilitySet) allowsAny() bool { return len(c) > 0 && !c[PolicyDeny] }

// patterns are the capabilities granted per name (exact) and per glob.
type patterns struct {
	exact, globs map[string]capabilitySet
}

// add grants caps to a name or glob. A rule that grants nothing is still
// kept: it is the name's rule, and shadows the globs that match the name.
func (ps *patterns) add(pattern string, caps []string) {
	m := &ps.exact
	if strings.Contains(pattern, "*") {
		m = &ps.globs
	}
	if *m == nil {
		*m = map[string]capabilitySet{}
	}
	set := (*m)[pattern]
	if set == nil {
		set = capabilitySet{}
		(*m)[pattern] = set
	}
	for _, c := range caps {
		set[c] = true
	}
}

// denyWins leaves each set that holds deny with deny alone. Every kind of
// rule names its deny capability "deny".
func (ps *patterns) denyWins() {
	for _, m := range []map[string]capabilitySet{ps.exact, ps.globs} {
		for p, set := range m {
			if set[PolicyDeny] {
				m[p] = capabilitySet{PolicyDeny: true}
			}
		}
	}
}

// match returns the capabilities for name: its own if a rule names it,
// else those of the closest glob that matches it, else none. The closest
// glob, as Nomad measures it, is the one whose "*"s stand for the fewest
// characters of name: for "prod-api", "prod-*" (3) is closer than "*"
// (8). Of globs equally close, the greatest in byte order wins, as it
// does in Nomad (whose sort keeps the last of its walk, in that order).
func (ps *patterns) match(name string) capabilitySet {
	if set, ok := ps.exact[name]; ok {
		return set
	}
	var (
		best     capabilitySet
		bestGlob string
		bestDiff int
	)
	for g, set := range ps.globs {
		if !globMatch(g, name) {
			continue
		}
		diff := len(name) - len(g) + strings.Count(g, "*")
		if best == nil || diff < bestDiff || diff == bestDiff && g > bestGlob {
			best, bestGlob, bestDiff = set, g, diff
		}
	}
	return best
}

// any reports whether any rule's capabilities satisfy ok.
func (ps *patterns) any(ok func(capabilitySet) bool) bool {
	for _, m := range []map[string]capabilitySet{ps.exact, ps.globs} {
		for _, set := range m {
			if ok(set) {
				return true
			}
		}
	}
	return false
}

// globMatch reports whether name matches glob, in which "*" stands for any
// run of characters, the empty one too, and everything else for itself.
func globMatch(glob, name string) bool {
	parts := strings.Split(glob, "*")
	if len(parts) == 1 {
		return glob == name
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(name, first) {
		return false
	}
	name = name[len(first):]
	// Each middle part is taken where it first occurs: leaving as much
	// of name as can be for the parts after it loses no match.
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return strings.HasSuffix(name, last)
}
