package feasible

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestChecker_Meets(t *testing.T) {
	n := &sdk.Node{ID: "n1", Name: "host-1", Datacenter: "dc1", NodeClass: "gpu",
		Attributes: map[string]string{"kernel.name": "linux", "os.version": "12.4", "cpu.numcores": "8", "tags": "a,b,c"},
		Meta:       map[string]string{"rack": "r1"}}
	cases := []struct {
		name string
		c    sdk.Constraint
		want bool
	}{
		{"equal attr", sdk.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}, true},
		{"equal mismatch", sdk.Constraint{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: "="}, false},
		{"not equal", sdk.Constraint{LTarget: "${meta.rack}", RTarget: "r2", Operand: "!="}, true},
		{"not equal missing attr", sdk.Constraint{LTarget: "${meta.zone}", RTarget: "z", Operand: "!="}, true},
		{"equal missing attr", sdk.Constraint{LTarget: "${meta.zone}", RTarget: "z", Operand: "="}, false},
		{"node fields", sdk.Constraint{LTarget: "${node.datacenter}", RTarget: "dc1", Operand: "="}, true},
		{"node class", sdk.Constraint{LTarget: "${node.class}", RTarget: "gpu", Operand: "="}, true},
		{"regexp", sdk.Constraint{LTarget: "${node.unique.name}", RTarget: "^host-[0-9]+$", Operand: "regexp"}, true},
		{"bad regexp", sdk.Constraint{LTarget: "${node.unique.name}", RTarget: "([", Operand: "regexp"}, false},
		{"version", sdk.Constraint{LTarget: "${attr.os.version}", RTarget: ">= 12.0, < 13", Operand: "version"}, true},
		{"version fails", sdk.Constraint{LTarget: "${attr.os.version}", RTarget: "> 12.5", Operand: "version"}, false},
		{"numeric >", sdk.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "4", Operand: ">"}, true},
		{"numeric <= (not lexical)", sdk.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "10", Operand: "<="}, true},
		{"set_contains", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "a,c", Operand: "set_contains"}, true},
		{"set_contains_any", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "x,c", Operand: "set_contains_any"}, true},
		{"set_contains_any none", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "x,y", Operand: "set_contains_any"}, false},
		{"is_set", sdk.Constraint{LTarget: "${meta.rack}", Operand: "is_set"}, true},
		{"is_not_set", sdk.Constraint{LTarget: "${meta.rack}", Operand: "is_not_set"}, false},
		{"unknown operator", sdk.Constraint{LTarget: "a", RTarget: "a", Operand: "~"}, false},
		{"set_contains_all", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "a, b", Operand: "set_contains_all"}, true},
		{"set_contains missing element", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "a,z", Operand: "set_contains"}, false},
		{"semver", sdk.Constraint{LTarget: "${attr.os.version}", RTarget: ">= 12.0.0, < 13.0.0", Operand: "semver"}, true},
		{"semver prerelease orders before release", sdk.Constraint{LTarget: "1.2.0-beta", RTarget: "< 1.2.0", Operand: "semver"}, true},
		{"version excludes prerelease by default", sdk.Constraint{LTarget: "1.2.0-beta", RTarget: ">= 1.0", Operand: "version"}, false},
		{"semver malformed never matches", sdk.Constraint{LTarget: "1.2.0", RTarget: ">= banana", Operand: "semver"}, false},
		{"lexical order", sdk.Constraint{LTarget: "${meta.rack}", RTarget: "r0", Operand: ">"}, true},
		{"float order", sdk.Constraint{LTarget: "2.5", RTarget: "10.25", Operand: "<"}, true},
		{"node pool", sdk.Constraint{LTarget: "${node.pool}", RTarget: "", Operand: "="}, true},
		{"unknown interpolation", sdk.Constraint{LTarget: "${env.HOME}", RTarget: "/", Operand: "="}, false},
		{"not equal to empty when missing", sdk.Constraint{LTarget: "${meta.zone}", RTarget: "", Operand: "!="}, false},
		{"distinct_hosts is not a node check", sdk.Constraint{Operand: "distinct_hosts"}, true},
	}
	ch := NewChecker()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ch.Meets(&tc.c, n); got != tc.want {
				t.Fatalf("Meets(%s) = %v, want %v", tc.c.String(), got, tc.want)
			}
		})
	}
}

func TestDatacenterMatches(t *testing.T) {
	cases := []struct {
		dcs  []string
		dc   string
		want bool
	}{
		{nil, "dc1", true}, {[]string{"dc1"}, "dc1", true}, {[]string{"dc1"}, "dc2", false},
		{[]string{"dc*"}, "dc2", true}, {[]string{"*"}, "eu-west", true}, {[]string{"us-*"}, "eu-west", false},
		// As Nomad: only '*' is special, and it crosses '/'.
		{[]string{"*"}, "eu/west", true}, {[]string{"eu*"}, "eu/west/1", true}, {[]string{"*/west"}, "eu/west", true},
		{[]string{"dc?"}, "dc1", false}, {[]string{"dc?"}, "dc?", true}, {[]string{"dc[12]"}, "dc1", false},
		{[]string{"dc[12]"}, "dc[12]", true}, {[]string{"eu-*-1"}, "eu-west-1", true}, {[]string{"eu-*-1"}, "eu-west-2", false},
		{[]string{"**"}, "", true}, {[]string{""}, "", true}, {[]string{""}, "dc1", false}, {[]string{"a*a"}, "a", false},
	}
	for _, tc := range cases {
		if got := DatacenterMatches(tc.dcs, tc.dc); got != tc.want {
			t.Errorf("DatacenterMatches(%v, %q) = %v, want %v", tc.dcs, tc.dc, got, tc.want)
		}
	}
}

// TestGlob_EqualsARegexp compares Glob with the regular expression that
// says the same ('*' as ".*", everything else literal) over random
// patterns and strings of a small alphabet.
func TestGlob_EqualsARegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	word := func(alphabet string) string {
		b := make([]byte, r.IntN(7))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		pattern, s := word("ab*/?"), word("ab/?")
		parts := strings.Split(pattern, "*")
		for i, part := range parts {
			parts[i] = regexp.QuoteMeta(part)
		}
		want := regexp.MustCompile("^(?s:" + strings.Join(parts, ".*") + ")$").MatchString(s)
		if got := Glob(pattern, s); got != want {
			t.Fatalf("Glob(%q, %q) = %v, the regexp says %v", pattern, s, got, want)
		}
	}
}

func TestEscapes(t *testing.T) {
	cases := []struct {
		c    sdk.Constraint
		want bool
	}{
		{sdk.Constraint{LTarget: "${node.unique.name}", RTarget: "x", Operand: "="}, true},
		{sdk.Constraint{LTarget: "${attr.unique.hostname}", RTarget: "x", Operand: "="}, true},
		{sdk.Constraint{LTarget: "x", RTarget: "${meta.unique.id}", Operand: "="}, true},
		{sdk.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}, false},
		{sdk.Constraint{LTarget: "unique.literal", RTarget: "x", Operand: "="}, false},
	}
	for _, tc := range cases {
		if got := Escapes(&tc.c); got != tc.want {
			t.Errorf("Escapes(%s) = %v", tc.c.String(), got)
		}
	}
}

func TestEligibility_CachesPerClass(t *testing.T) {
	job := &sdk.Job{Constraints: []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}}}}}
	linux := func(id string) *sdk.Node {
		n := &sdk.Node{ID: id, Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1"}}
		n.ComputeClass()
		return n
	}
	win := &sdk.Node{ID: "w", Attributes: map[string]string{"kernel.name": "windows", "driver.exec": "1"}}
	win.ComputeClass()
	e := NewEligibility(job)
	checks := NewGroupChecks(job, job.TaskGroups[0])
	ch := NewChecker()
	if r := e.Check(ch, checks, win); r != "${attr.kernel.name} = linux" {
		t.Fatalf("first windows node: %q", r)
	}
	if r := e.Check(ch, checks, win); r != FilterClassIneligible {
		t.Fatalf("second look: %q, want the class cached", r)
	}
	if r := e.Check(ch, checks, linux("l1")); r != "" {
		t.Fatalf("linux node: %q", r)
	}
	classes := e.Classes()
	if classes[win.ComputedClass] || !classes[linux("l2").ComputedClass] || e.Escaped() {
		t.Fatalf("classes %v escaped %v", classes, e.Escaped())
	}
}

// TestEligibility_HostVolumesAndNetworks: a group that mounts a host
// volume or puts a port on a host network runs only on nodes that have
// them, and nodes that differ only there are told apart by class, so that
// the cache never hands one node's verdict to another.
func TestEligibility_HostVolumesAndNetworks(t *testing.T) {
	job := &sdk.Job{TaskGroups: []*sdk.TaskGroup{{Name: "g", Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}},
		Volumes: map[string]sdk.Opaque{"data": {"Type": "host", "Source": "data"}},
		// A static port on the network too: the reason names the dynamic
		// one, as Nomad's NetworkChecker lists dynamic ports first.
		Networks: []*sdk.NetworkResource{{Mode: "host", ReservedPorts: []sdk.Port{{Label: "dns", Value: 53, HostNetwork: "public"}},
			DynamicPorts: []sdk.Port{{Label: "http", HostNetwork: "public"}, {Label: "admin", HostNetwork: "default"}}}}}}}
	node := func(id string, volume, network bool) *sdk.Node {
		n := &sdk.Node{ID: id, Attributes: map[string]string{"driver.exec": "1"}}
		if volume {
			n.HostVolumes = map[string]sdk.Opaque{"data": {"Path": "/srv/data"}}
		}
		if network {
			n.HostNetworks = map[string]sdk.Opaque{"public": {"CIDR": "203.0.113.0/24"}}
		}
		n.ComputeClass()
		return n
	}
	e := NewEligibility(job)
	checks := NewGroupChecks(job, job.TaskGroups[0])
	ch := NewChecker()
	for _, tc := range []struct {
		node *sdk.Node
		want string
	}{
		{node("both", true, true), ""},
		{node("no-volume", false, true), FilterHostVolumes},
		{node("no-network", true, false), `missing host network "public" for port "http"`},
		{node("both-again", true, true), ""},
		{func() *sdk.Node {
			// The network reported as an address's alias, as Nomad's
			// client reports it, rather than declared.
			n := node("reported", true, false)
			n.NodeResources = &sdk.NodeResources{NodeNetworks: []*sdk.NodeNetworkResource{{Addresses: []sdk.NodeNetworkAddress{
				{Alias: "public", Address: "203.0.113.7"}}}}}
			n.ComputeClass()
			return n
		}(), ""},
		{node("no-volume-again", false, true), FilterClassIneligible},
	} {
		if got := e.Check(ch, checks, tc.node); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.node.ID, got, tc.want)
		}
	}
}

// TestEligibility_CheckFollowsRecordedStatuses: once Check has decided a
// class, statuses recorded afterwards still decide its next nodes.
func TestEligibility_CheckFollowsRecordedStatuses(t *testing.T) {
	job := &sdk.Job{Constraints: []*sdk.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}},
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Tasks: []*sdk.Task{{Name: "t", Driver: "exec"}}}}}
	node := func(kernel string) *sdk.Node {
		n := &sdk.Node{ID: kernel, Attributes: map[string]string{"kernel.name": kernel, "driver.exec": "1"}}
		n.ComputeClass()
		return n
	}
	linux, win := node("linux"), node("windows")
	e := NewEligibility(job)
	checks := NewGroupChecks(job, job.TaskGroups[0])
	ch := NewChecker()
	for _, step := range []struct {
		set  func()
		n    *sdk.Node
		want string
	}{
		{nil, linux, ""},
		{nil, linux, ""},
		{func() { e.SetGroup("g", linux.ComputedClass, false) }, linux, FilterClassIneligible},
		{func() { e.SetGroup("g", linux.ComputedClass, true) }, linux, ""},
		{func() { e.SetJob(linux.ComputedClass, false) }, linux, FilterClassIneligible},
		{nil, win, "${attr.kernel.name} = linux"},
		{nil, win, FilterClassIneligible},
		{func() { e.SetJob(win.ComputedClass, true); e.SetGroup("g", win.ComputedClass, true) }, win, ""},
	} {
		if step.set != nil {
			step.set()
		}
		if got := e.Check(ch, checks, step.n); got != step.want {
			t.Fatalf("%s: %q, want %q", step.n.ID, got, step.want)
		}
	}
}

// TestEligibility_GroupsKeptApart alternates between groups, one of them
// escaped, so that remembering the last group asked about cannot mix
// their statuses.
func TestEligibility_GroupsKeptApart(t *testing.T) {
	job := &sdk.Job{TaskGroups: []*sdk.TaskGroup{
		{Name: "a"}, {Name: "b"},
		{Name: "u", Constraints: []*sdk.Constraint{{LTarget: "${node.unique.id}", RTarget: "x", Operand: "="}}},
	}}
	e := NewEligibility(job)
	for _, step := range []struct {
		tg, class string
		set       *bool
		want      ClassStatus
	}{
		{"a", "c1", nil, ClassUnknown},
		{"b", "c1", nil, ClassUnknown},
		{"a", "c1", ptr(true), ClassEligible},
		{"b", "c1", nil, ClassUnknown},
		{"b", "c1", ptr(false), ClassIneligible},
		{"a", "c1", nil, ClassEligible},
		{"u", "c1", nil, ClassEscaped},
		{"a", "c2", nil, ClassUnknown},
		{"b", "c1", nil, ClassIneligible},
		{"u", "c1", ptr(true), ClassEscaped},
		{"a", "c1", nil, ClassEligible},
	} {
		if step.set != nil {
			e.SetGroup(step.tg, step.class, *step.set)
		}
		if got := e.GroupStatus(step.tg, step.class); got != step.want {
			t.Fatalf("%s/%s: %v, want %v", step.tg, step.class, got, step.want)
		}
	}
	if got := e.Classes(); !got["c1"] || len(got) != 1 {
		t.Fatalf("classes %v, want c1 eligible (group a)", got)
	}
}

func ptr[T any](v T) *T { return &v }
