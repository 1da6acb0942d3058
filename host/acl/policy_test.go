package acl_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/acl"
)

// Every block of the language parses, each policy expanded into the
// capabilities Nomad 1.6 grants for it, after those written.
func TestParse_Valid(t *testing.T) {
	read := []string{"list-jobs", "parse-job", "read-job", "csi-list-volume", "csi-read-volume",
		"read-job-scaling", "list-scaling-policies", "read-scaling-policy"}
	write := append(append([]string{}, read...), "scale-job", "submit-job", "dispatch-job", "read-logs",
		"read-fs", "alloc-exec", "alloc-lifecycle", "csi-mount-volume", "csi-write-volume", "submit-recommendation")
	cases := []struct {
		name, rules string
		want        *acl.Policy
	}{
		{"namespace read", `namespace "default" { policy = "read" }`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "default", Policy: "read", Capabilities: read}}}},
		{"namespace write", `namespace "*" { policy = "write" }`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "*", Policy: "write", Capabilities: write}}}},
		{"namespace scale", `namespace "prod-*" { policy = "scale" }`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "prod-*", Policy: "scale",
				Capabilities: []string{"list-scaling-policies", "read-scaling-policy", "read-job-scaling", "scale-job"}}}}},
		{"namespace deny", `namespace "secret" { policy = "deny" }`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "secret", Policy: "deny", Capabilities: []string{"deny"}}}}},
		{"capabilities before the policy's, once each", `
namespace "dev" {
  policy       = "read"
  capabilities = ["alloc-node-exec", "read-job", "csi-register-plugin", "alloc-node-exec"]
}`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "dev", Policy: "read",
				Capabilities: append([]string{"alloc-node-exec", "read-job", "csi-register-plugin"},
					"list-jobs", "parse-job", "csi-list-volume", "csi-read-volume",
					"read-job-scaling", "list-scaling-policies", "read-scaling-policy")}}}},
		{"capabilities alone", `namespace "dev" { capabilities = ["submit-job", "sentinel-override"] }`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "dev", Capabilities: []string{"submit-job", "sentinel-override"}}}}},
		{"an empty namespace block", `namespace "dev" {}`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "dev"}}}},
		{"variables", `
namespace "default" {
  variables {
    path "project/*" {
      capabilities = ["read"]
    }
    path "project/secret" {
      capabilities = ["write", "deny"]
    }
    path "nomad/jobs" {
      capabilities = ["list", "read", "destroy"]
    }
  }
}`,
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{{Name: "default", Variables: &acl.VariablesPolicy{Paths: []*acl.VariablesPathPolicy{
				{PathSpec: "project/*", Capabilities: []string{"read", "list"}},
				{PathSpec: "project/secret", Capabilities: []string{"deny"}},
				{PathSpec: "nomad/jobs", Capabilities: []string{"list", "read", "destroy"}},
			}}}}}},
		{"node pools", `
node_pool "default" { policy = "read" }
node_pool "gpu_*" { policy = "write" }
node_pool "batch" { capabilities = ["delete"] }
node_pool "legacy" { policy = "deny" }`,
			&acl.Policy{NodePools: []*acl.NodePoolPolicy{
				{Name: "default", Policy: "read", Capabilities: []string{"read"}},
				{Name: "gpu_*", Policy: "write", Capabilities: []string{"read", "write", "delete"}},
				{Name: "batch", Capabilities: []string{"delete"}},
				{Name: "legacy", Policy: "deny", Capabilities: []string{"deny"}},
			}}},
		{"host volumes", `
host_volume "certs" { policy = "read" }
host_volume "data-*" { policy = "write" }
host_volume "scratch" { capabilities = ["mount-readwrite"] }`,
			&acl.Policy{HostVolumes: []*acl.HostVolumePolicy{
				{Name: "certs", Policy: "read", Capabilities: []string{"mount-readonly"}},
				{Name: "data-*", Policy: "write", Capabilities: []string{"mount-readonly", "mount-readwrite"}},
				{Name: "scratch", Capabilities: []string{"mount-readwrite"}},
			}}},
		{"the other blocks", `
# Comments of both kinds are fine.
node     { policy = "write" }
agent    { policy = "read" }
operator { policy = "deny" }
quota    { policy = "read" }
// plugin takes list, which others do not.
plugin   { policy = "list" }`,
			&acl.Policy{Node: "write", Agent: "read", Operator: "deny", Quota: "read", Plugin: "list"}},
		{"a namespace twice", "namespace \"a\" {\n\tpolicy = \"read\"\n}\nnamespace \"a\" {\n\tpolicy = \"deny\"\n}\n",
			&acl.Policy{Namespaces: []*acl.NamespacePolicy{
				{Name: "a", Policy: "read", Capabilities: read},
				{Name: "a", Policy: "deny", Capabilities: []string{"deny"}},
			}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := acl.Parse("", c.rules)
			if err != nil {
				t.Fatal(err)
			}
			if c.want != nil && !reflect.DeepEqual(p, c.want) {
				t.Fatalf("got %s\nwant %s", dump(p), dump(c.want))
			}
		})
	}
}

// Refused rules: each problem is named where it is, and every problem is
// named, not only the first.
func TestParse_Invalid(t *testing.T) {
	cases := []struct {
		name, rules string
		want        []string // lines of the error
	}{
		{"empty", "", []string{"policy.hcl:1:1: Empty policy; A policy needs at least one rule"}},
		{"only comments", "# nothing\n\n", []string{"policy.hcl:1:1: Empty policy"}},
		{"syntax", "namespace \"a\" {\n", []string{"policy.hcl:1:15: Unclosed configuration block"}},
		{"unknown block", "namespace \"a\" {}\nnodes { policy = \"read\" }\n",
			[]string{`policy.hcl:2:1: Unsupported block type; Blocks of type "nodes" are not expected here.`}},
		{"unknown argument", "namespace \"a\" {\n  polcy = \"read\"\n}\n",
			[]string{`policy.hcl:2:3: Unsupported argument; An argument named "polcy" is not expected here. Did you mean "policy"?`}},
		{"top-level argument", `policy = "read"`, []string{`policy.hcl:1:1: Unsupported argument`}},
		{"namespace without a name", "namespace {\n}\n", []string{"policy.hcl:1:11: Missing name for namespace"}},
		{"namespace policy", "namespace \"default\" {\n  policy = \"reed\"\n}\n",
			[]string{`policy.hcl:2:12: Invalid namespace policy; "reed" is not one of "deny", "read", "write", "scale".`}},
		{"namespace list policy", `namespace "default" { policy = "list" }`, []string{`policy.hcl:1:32: Invalid namespace policy; "list"`}},
		{"namespace capability", "namespace \"default\" {\n  capabilities = [\"read-job\", \"read-jobs\"]\n}\n",
			[]string{`policy.hcl:2:31: Invalid namespace capability; "read-jobs" is not one of "deny", "list-jobs",`}},
		{"node pool capability in a namespace", `namespace "default" { capabilities = ["delete"] }`,
			[]string{`policy.hcl:1:39: Invalid namespace capability; "delete"`}},
		{"namespace name", `namespace "web_1" { policy = "read" }`,
			[]string{`policy.hcl:1:11: Invalid namespace name; "web_1" is neither a namespace name nor a glob of names: 1 to 128 letters, digits, "-" and "*".`}},
		{"empty namespace name", `namespace "" { policy = "read" }`, []string{`policy.hcl:1:11: Invalid namespace name; "" is neither`}},
		{"long namespace name", `namespace "` + strings.Repeat("a", 129) + `" {}`, []string{`policy.hcl:1:11: Invalid namespace name`}},
		{"node pool name", `node_pool "gpu.large" {}`, []string{`policy.hcl:1:11: Invalid node pool name; "gpu.large" is neither a node pool name nor a glob of names: 1 to 128 letters, digits, "-", "_" and "*".`}},
		{"node pool scale", `node_pool "a" { policy = "scale" }`, []string{`policy.hcl:1:26: Invalid node pool policy; "scale" is not one of "deny", "read", "write".`}},
		{"node pool capability", `node_pool "a" { capabilities = ["mount-readonly"] }`, []string{`policy.hcl:1:33: Invalid node pool capability; "mount-readonly" is not one of "deny", "read", "write", "delete".`}},
		{"host volume name", `host_volume "a_b" { policy = "read" }`, []string{`policy.hcl:1:13: Invalid host volume name`}},
		{"host volume capability", `host_volume "a" { capabilities = ["read"] }`, []string{`policy.hcl:1:35: Invalid host volume capability; "read" is not one of "deny", "mount-readonly", "mount-readwrite".`}},
		{"host volume variables", "host_volume \"a\" {\n  variables {\n  }\n}\n", []string{`policy.hcl:2:3: Unsupported block type; Blocks of type "variables"`}},
		{"agent policy missing", "agent {\n}\n", []string{`policy.hcl:1:7: Missing required argument; The argument "policy" is required`}},
		{"agent scale", `agent { policy = "scale" }`, []string{`policy.hcl:1:18: Invalid agent policy; "scale" is not one of "deny", "read", "write".`}},
		{"agent capabilities", `agent { capabilities = ["read"] }`, []string{
			`policy.hcl:1:9: Missing required argument; The argument "policy" is required`,
			`policy.hcl:1:9: Unsupported argument; An argument named "capabilities"`,
		}},
		{"plugin write", `plugin { policy = "write" }`, []string{`policy.hcl:1:19: Invalid plugin policy; "write" is not one of "deny", "read", "list".`}},
		{"node list", `node { policy = "list" }`, []string{`policy.hcl:1:17: Invalid node policy`}},
		{"quota", `quota { policy = "all" }`, []string{`policy.hcl:1:18: Invalid quota policy`}},
		{"operator labelled", `operator "x" { policy = "read" }`, []string{`policy.hcl:1:10: Extraneous label for operator`}},
		{"duplicate node", "node { policy = \"read\" }\nnode { policy = \"write\" }\n",
			[]string{"policy.hcl:2:1: Duplicate node block; The node block was already defined at policy.hcl:1:1."}},
		{"policy not a string", `namespace "a" { policy = ["read"] }`, []string{"policy.hcl:1:26: Incorrect value type; A string is required here."}},
		{"policy a bare word", `namespace "a" { policy = read }`, []string{"policy.hcl:1:26: Variables not allowed"}},
		{"capabilities not a list", `namespace "a" { capabilities = "read-job" }`, []string{"policy.hcl:1:33: Invalid expression; A static list expression is required."}},
		{"capability not a string", `namespace "a" { capabilities = ["read-job", 1] }`, []string{"policy.hcl:1:45: Incorrect value type"}},
		{"an operator", `namespace "a" { policy = "re" + "ad" }`, []string{`policy.hcl:1:31: Unexpected "+"; A policy holds blocks whose arguments are strings or lists of strings.`}},
		{"a template", `namespace "a" { policy = "${var.p}" }`, []string{`policy.hcl:1:27: Unexpected "${"`}},
		{"a heredoc", "namespace \"a\" {\n  policy = <<EOT\nread\nEOT\n}\n", []string{`policy.hcl:2:12: Unexpected "<<EOT\n"`}},
		{"a function", `namespace "a" { policy = lower("READ") }`, []string{`policy.hcl:1:31: Unexpected "("`}},
		{"deep nesting", `namespace "a" { capabilities = ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + ` }`,
			[]string{"policy.hcl:1:63: Nesting too deep"}},
		{"empty variables", "namespace \"a\" {\n  variables {\n  }\n}\n", []string{"policy.hcl:2:3: Invalid variables block; A variables block needs at least one path block."}},
		{"two variables blocks", "namespace \"a\" {\n  variables {\n    path \"x\" {}\n  }\n  variables {\n    path \"y\" {}\n  }\n}\n",
			[]string{"policy.hcl:5:3: Duplicate variables block; The variables block of this namespace was already defined at policy.hcl:2:3."}},
		{"variables path", "namespace \"a\" {\n  variables {\n    path \"\" {\n      capabilities = [\"read\", \"submit-job\"]\n    }\n  }\n}\n",
			[]string{
				"policy.hcl:3:10: Invalid variables path; The path must not be empty.",
				`policy.hcl:4:31: Invalid variables capability; "submit-job" is not one of "list", "read", "write", "destroy", "deny".`,
			}},
		{"variables path policy", "namespace \"a\" {\n  variables {\n    path \"x\" {\n      policy = \"read\"\n    }\n  }\n}\n",
			[]string{`policy.hcl:4:7: Unsupported argument; An argument named "policy" is not expected here.`}},
		{"every problem, in order", "namespace \"a b\" {\n  capabilities = [\"x\"]\n  policy = \"y\"\n}\nplugin { policy = \"z\" }\n",
			[]string{
				`policy.hcl:1:11: Invalid namespace name`,
				`policy.hcl:2:19: Invalid namespace capability; "x"`,
				`policy.hcl:3:12: Invalid namespace policy; "y"`,
				`policy.hcl:5:19: Invalid plugin policy; "z"`,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := acl.Parse("policy.hcl", c.rules)
			if err == nil {
				t.Fatalf("parsed: %s", dump(p))
			}
			var perr *acl.Error
			if !errors.As(err, &perr) {
				t.Fatalf("err = %T, want *acl.Error", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(c.want) {
				t.Fatalf("err =\n%v\nwant %d problems", err, len(c.want))
			}
			for i, w := range c.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d = %q, want it to start %q", i, lines[i], w)
				}
			}
		})
	}
}

// Of many problems, the error shows the first 20, and says how many
// more there are.
func TestParse_ManyProblems(t *testing.T) {
	_, err := acl.Parse("", `namespace "a" { capabilities = [`+strings.Repeat(`"x", `, 1000)+`] }`)
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 21 || lines[20] != "(and 980 more problems)" || len(err.(*acl.Error).Diagnostics) != 1000 {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
}

// Without a file name, errors name the rules "rules".
func TestParse_DefaultName(t *testing.T) {
	_, err := acl.Parse("", `node { policy = "all" }`)
	if err == nil || !strings.HasPrefix(err.Error(), "rules:1:17: ") {
		t.Fatalf("err = %v", err)
	}
}

func dump(p *acl.Policy) string {
	if p == nil {
		return "nil"
	}
	var b strings.Builder
	for _, ns := range p.Namespaces {
		b.WriteString("\n  namespace " + ns.Name + " " + ns.Policy + " " + strings.Join(ns.Capabilities, ","))
		if ns.Variables != nil {
			for _, path := range ns.Variables.Paths {
				b.WriteString("\n    path " + path.PathSpec + " " + strings.Join(path.Capabilities, ","))
			}
		}
	}
	for _, np := range p.NodePools {
		b.WriteString("\n  node_pool " + np.Name + " " + np.Policy + " " + strings.Join(np.Capabilities, ","))
	}
	for _, hv := range p.HostVolumes {
		b.WriteString("\n  host_volume " + hv.Name + " " + hv.Policy + " " + strings.Join(hv.Capabilities, ","))
	}
	b.WriteString("\n  node=" + p.Node + " agent=" + p.Agent + " operator=" + p.Operator + " quota=" + p.Quota + " plugin=" + p.Plugin)
	return b.String()
}
