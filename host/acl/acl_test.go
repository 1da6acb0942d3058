package acl_test

import (
	"testing"

	"github.com/drover-sched/drover/host/acl"
)

// build parses each of rules and merges them.
func build(t testing.TB, rules ...string) *acl.ACL {
	t.Helper()
	var ps []*acl.Policy
	for _, r := range rules {
		p, err := acl.Parse("", r)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return acl.New(ps)
}

// check is a question to an ACL and its expected answer.
type check struct {
	name string
	ask  func(*acl.ACL) bool
	want bool
}

func nsOp(ns, op string, want bool) check {
	return check{"namespace " + ns + " " + op, func(a *acl.ACL) bool { return a.AllowNamespaceOperation(ns, op) }, want}
}

func run(t *testing.T, a *acl.ACL, checks []check) {
	t.Helper()
	for _, c := range checks {
		if got := c.ask(a); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// AllowNamespaceOperationIn reads "*" as one namespace's name: only the
// rules of the glob "*" grant there, not a grant in any namespace.
func TestAllowNamespaceOperationIn(t *testing.T) {
	in := func(ns, op string, want bool) check {
		return check{"in namespace " + ns + " " + op, func(a *acl.ACL) bool { return a.AllowNamespaceOperationIn(ns, op) }, want}
	}
	run(t, build(t, `namespace "prod" { policy = "write" }`), []check{
		in("prod", "submit-job", true),
		in(acl.AllNamespaces, "read-job", false),
		in(acl.AllNamespaces, "submit-job", false),
		nsOp(acl.AllNamespaces, "read-job", true),
	})
	run(t, build(t, `namespace "*" { policy = "read" }`), []check{
		in(acl.AllNamespaces, "read-job", true),
		in(acl.AllNamespaces, "submit-job", false),
		in("prod", "read-job", true),
	})
	run(t, acl.Management, []check{in(acl.AllNamespaces, "submit-job", true)})
	var none *acl.ACL
	run(t, none, []check{in("default", "read-job", false)})
}

// Policies' grants to the same namespace add up, and a deny in any of them
// takes them all away, in whichever order the policies come.
func TestNew_Merge(t *testing.T) {
	reader := `namespace "default" { policy = "read" }`
	submitter := `namespace "default" { capabilities = ["submit-job"] }`
	denier := `namespace "default" { policy = "deny" }`
	t.Run("capabilities add up", func(t *testing.T) {
		run(t, build(t, reader, submitter), []check{
			nsOp("default", "read-job", true),
			nsOp("default", "submit-job", true),
			nsOp("default", "dispatch-job", false),
			nsOp("other", "read-job", false),
		})
	})
	for _, order := range [][]string{{reader, submitter, denier}, {denier, reader, submitter}, {reader, denier}} {
		run(t, build(t, order...), []check{
			nsOp("default", "read-job", false),
			nsOp("default", "submit-job", false),
			nsOp("default", "deny", false),
			{"namespace default, any", func(a *acl.ACL) bool { return a.AllowNamespace("default") }, false},
		})
	}
	t.Run("a deny capability in the same block", func(t *testing.T) {
		run(t, build(t, `namespace "default" { capabilities = ["read-job", "deny"] }`), []check{
			nsOp("default", "read-job", false),
		})
	})
	t.Run("a deny of a glob leaves exact names alone", func(t *testing.T) {
		// Patterns merge only with the same pattern: the exact name's
		// rules are the namespace's, whatever the globs say.
		run(t, build(t, `namespace "*" { policy = "deny" }`, reader), []check{
			nsOp("default", "read-job", true),
			nsOp("prod", "read-job", false),
		})
	})
	t.Run("levels: the most permissive, but deny wins", func(t *testing.T) {
		a := build(t, `node { policy = "read" }
agent { policy = "write" }
operator { policy = "write" }
quota { policy = "read" }
plugin { policy = "list" }`, `node { policy = "write" }
agent { policy = "read" }
operator { policy = "deny" }
plugin { policy = "read" }`)
		run(t, a, []check{
			{"node read", (*acl.ACL).AllowNodeRead, true},
			{"node write", (*acl.ACL).AllowNodeWrite, true},
			{"agent read", (*acl.ACL).AllowAgentRead, true},
			{"agent write", (*acl.ACL).AllowAgentWrite, true},
			{"operator read", (*acl.ACL).AllowOperatorRead, false},
			{"operator write", (*acl.ACL).AllowOperatorWrite, false},
			{"quota read", (*acl.ACL).AllowQuotaRead, true},
			{"quota write", (*acl.ACL).AllowQuotaWrite, false},
			{"plugin read", (*acl.ACL).AllowPluginRead, true},
			{"plugin list", (*acl.ACL).AllowPluginList, true},
		})
	})
	t.Run("plugin list does not read", func(t *testing.T) {
		run(t, build(t, `plugin { policy = "list" }`), []check{
			{"plugin read", (*acl.ACL).AllowPluginRead, false},
			{"plugin list", (*acl.ACL).AllowPluginList, true},
			{"node read", (*acl.ACL).AllowNodeRead, false},
		})
	})
}

// A namespace's own rules come first; else the closest glob that matches:
// the one whose "*" stands for the fewest characters.
func TestNamespaceMatch(t *testing.T) {
	a := build(t, `
namespace "*" {
  policy = "read"
}
namespace "prod-*" {
  policy = "deny"
}
namespace "prod-api" {
  policy = "write"
}
namespace "prod-web-*" {
  capabilities = ["submit-job"]
}
namespace "dev" {
}
`)
	run(t, a, []check{
		nsOp("default", "read-job", true), // "*"
		nsOp("default", "submit-job", false),
		nsOp("prod-db", "read-job", false),     // "prod-*" (2) over "*" (7)
		nsOp("prod-api", "submit-job", true),   // exact, over the deny of "prod-*"
		nsOp("prod-web-1", "submit-job", true), // "prod-web-*" (1) over "prod-*" (5)
		nsOp("prod-web-1", "read-job", false),  // and only what it grants
		nsOp("dev", "read-job", false),         // an empty rule is the namespace's rule
		nsOp("prod-", "read-job", false),       // "*" stands for the empty run too
		{"namespace dev, any", func(a *acl.ACL) bool { return a.AllowNamespace("dev") }, false},
		{"namespace prod-db, any", func(a *acl.ACL) bool { return a.AllowNamespace("prod-db") }, false},
		{"namespace default, any", func(a *acl.ACL) bool { return a.AllowNamespace("default") }, true},
	})
}

// Globs may hold several "*", anywhere; of two equally close, the greater
// in byte order wins, as in Nomad.
func TestGlobs(t *testing.T) {
	cases := []struct {
		globs []string // each granted to a namespace of its own policy
		ns    string
		want  string // the glob whose rule applies; "" none
	}{
		{[]string{"*"}, "anything", "*"},
		{[]string{"a*"}, "a", "a*"},
		{[]string{"a*"}, "ba", ""},
		{[]string{"*a"}, "ba", "*a"},
		{[]string{"*a"}, "ab", ""},
		{[]string{"a*b*c"}, "abc", "a*b*c"},
		{[]string{"a*b*c"}, "aXbYbZc", "a*b*c"},
		{[]string{"a*b*c"}, "acb", ""},
		{[]string{"a*a"}, "a", ""},
		{[]string{"*-*"}, "team-a", "*-*"},
		{[]string{"**"}, "x", "**"},
		{[]string{"*", "team-*"}, "team-a", "team-*"},
		{[]string{"*", "team-*", "*-a"}, "team-a", "team-*"},
		{[]string{"*", "team-*", "*-a"}, "x-a", "*-a"},
		{[]string{"*a", "a*"}, "aba", "a*"},    // tie: 2 and 2
		{[]string{"*-b", "a-*"}, "a-b", "a-*"}, // tie: 1 and 1
	}
	// Each glob's namespace grants a capability of its own, which names it.
	caps := []string{"list-jobs", "read-job", "submit-job"}
	for _, c := range cases {
		var rules string
		for i, g := range c.globs {
			rules += `namespace "` + g + `" { capabilities = ["` + caps[i] + `"] }` + "\n"
		}
		a := build(t, rules)
		got := ""
		for i, g := range c.globs {
			if a.AllowNamespaceOperation(c.ns, caps[i]) {
				if got != "" {
					t.Errorf("%v, %s: both %s and %s apply", c.globs, c.ns, got, g)
				}
				got = g
			}
		}
		if got != c.want {
			t.Errorf("%v, %s: %q applies, want %q", c.globs, c.ns, got, c.want)
		}
	}
}

// For all namespaces ("*", as ?namespace=* asks), a grant in any namespace
// allows: the listing then shows each namespace what it may see.
func TestAllNamespaces(t *testing.T) {
	run(t, build(t, `namespace "prod" { policy = "read" }`+"\n"+`namespace "dev" { policy = "deny" }`), []check{
		nsOp(acl.AllNamespaces, "list-jobs", true),
		nsOp(acl.AllNamespaces, "submit-job", false),
		{"all namespaces, any", func(a *acl.ACL) bool { return a.AllowNamespace(acl.AllNamespaces) }, true},
	})
	run(t, build(t, `namespace "dev" { policy = "deny" }`), []check{
		nsOp(acl.AllNamespaces, "list-jobs", false),
		{"all namespaces, any", func(a *acl.ACL) bool { return a.AllowNamespace(acl.AllNamespaces) }, false},
	})
}

func TestNodePoolsAndHostVolumes(t *testing.T) {
	a := build(t, `
node_pool "*" { policy = "read" }
node_pool "gpu_*" { policy = "write" }
node_pool "gpu_legacy" { policy = "deny" }
host_volume "*" { policy = "read" }
host_volume "scratch-*" { policy = "write" }
host_volume "secrets" { policy = "deny" }
`, `node_pool "batch" { capabilities = ["delete"] }`)
	pool := func(p, op string, want bool) check {
		return check{"node pool " + p + " " + op, func(a *acl.ACL) bool { return a.AllowNodePoolOperation(p, op) }, want}
	}
	vol := func(v, op string, want bool) check {
		return check{"host volume " + v + " " + op, func(a *acl.ACL) bool { return a.AllowHostVolumeOperation(v, op) }, want}
	}
	run(t, a, []check{
		pool("default", "read", true),
		pool("default", "write", false),
		pool("gpu_a100", "write", true),
		pool("gpu_a100", "delete", true),
		pool("gpu_legacy", "read", false),
		pool("batch", "delete", true),
		pool("batch", "read", false), // the exact rule, not "*"
		{"node pool gpu_legacy, any", func(a *acl.ACL) bool { return a.AllowNodePool("gpu_legacy") }, false},
		{"node pool default, any", func(a *acl.ACL) bool { return a.AllowNodePool("default") }, true},
		vol("certs", "mount-readonly", true),
		vol("certs", "mount-readwrite", false),
		vol("scratch-1", "mount-readwrite", true),
		vol("secrets", "mount-readonly", false),
		{"host volume secrets, any", func(a *acl.ACL) bool { return a.AllowHostVolume("secrets") }, false},
		{"node pool search", (*acl.ACL).AllowNodePoolSearch, true},
	})
	// A search of node pools finds none with nothing granted in any pool.
	for name, rules := range map[string]string{"no pool rule": `node { policy = "read" }`, "deny only": `node_pool "*" { policy = "deny" }`} {
		if build(t, rules).AllowNodePoolSearch() {
			t.Errorf("%s: node pool search allowed", name)
		}
	}
}

func TestVariables(t *testing.T) {
	a := build(t, `
namespace "default" {
  variables {
    path "project/*" {
      capabilities = ["read"]
    }
    path "project/secret" {
      capabilities = ["deny"]
    }
    path "shared" {
      capabilities = ["write"]
    }
  }
}
namespace "*" {
  variables {
    path "common/*" {
      capabilities = ["list"]
    }
  }
}
`, `namespace "default" {
  variables {
    path "project/secret" {
      capabilities = ["read"]
    }
  }
}`)
	v := func(ns, path, op string, want bool) check {
		return check{"variable " + ns + " " + path + " " + op, func(a *acl.ACL) bool { return a.AllowVariableOperation(ns, path, op) }, want}
	}
	run(t, a, []check{
		v("default", "project/a", "read", true),
		v("default", "project/a", "list", true), // read implies list
		v("default", "project/a", "write", false),
		v("default", "project/secret", "read", false), // deny wins over the other policy's read
		v("default", "shared", "write", true),
		v("default", "shared", "read", false),
		v("prod", "common/x", "list", true),
		v("prod", "common/x", "read", false),
		v("prod", "project/a", "read", false),
	})
}

func TestManagementAndDenyAll(t *testing.T) {
	all := []check{
		nsOp("default", "submit-job", true),
		nsOp(acl.AllNamespaces, "alloc-node-exec", true),
		{"namespace any", func(a *acl.ACL) bool { return a.AllowNamespace("x") }, true},
		{"node pool", func(a *acl.ACL) bool { return a.AllowNodePoolOperation("x", "delete") }, true},
		{"node pool any", func(a *acl.ACL) bool { return a.AllowNodePool("x") }, true},
		{"node pool search", (*acl.ACL).AllowNodePoolSearch, true},
		{"host volume", func(a *acl.ACL) bool { return a.AllowHostVolumeOperation("x", "mount-readwrite") }, true},
		{"host volume any", func(a *acl.ACL) bool { return a.AllowHostVolume("x") }, true},
		{"variable", func(a *acl.ACL) bool { return a.AllowVariableOperation("x", "y", "write") }, true},
		{"node read", (*acl.ACL).AllowNodeRead, true},
		{"node write", (*acl.ACL).AllowNodeWrite, true},
		{"agent read", (*acl.ACL).AllowAgentRead, true},
		{"agent write", (*acl.ACL).AllowAgentWrite, true},
		{"operator read", (*acl.ACL).AllowOperatorRead, true},
		{"operator write", (*acl.ACL).AllowOperatorWrite, true},
		{"quota read", (*acl.ACL).AllowQuotaRead, true},
		{"quota write", (*acl.ACL).AllowQuotaWrite, true},
		{"plugin read", (*acl.ACL).AllowPluginRead, true},
		{"plugin list", (*acl.ACL).AllowPluginList, true},
		{"management", (*acl.ACL).IsManagement, true},
	}
	run(t, acl.Management, all)
	none := make([]check, len(all))
	for i, c := range all {
		c.want = false
		none[i] = c
	}
	for name, a := range map[string]*acl.ACL{"DenyAll": acl.DenyAll, "New(nil)": acl.New(nil), "nil": nil, "New([nil])": acl.New([]*acl.Policy{nil})} {
		t.Run(name, func(t *testing.T) { run(t, a, none) })
	}
}
