package acl_test

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/acl"
)

// FuzzParse checks that no rules make Parse panic, that a refusal is an
// *acl.Error whose every problem is located in the rules, and that rules
// that parse make an ACL that answers every question.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`namespace "default" { policy = "read" }`,
		"namespace \"prod-*\" {\n  policy = \"write\"\n  capabilities = [\"alloc-node-exec\"]\n  variables {\n    path \"a/*\" {\n      capabilities = [\"read\"]\n    }\n  }\n}\n",
		"node_pool \"gpu_*\" {\n  policy = \"write\"\n}\nhost_volume \"*\" {\n  capabilities = [\"mount-readonly\"]\n}\n",
		"node { policy = \"read\" }\nagent { policy = \"write\" }\noperator { policy = \"deny\" }\nquota { policy = \"read\" }\nplugin { policy = \"list\" }\n",
		"# nothing\n",
		`namespace "a" { policy = "re" + "ad" }`,
		`namespace "a" { capabilities = [[["x"]]] }`,
		"namespace \"a\" {\n  policy = <<EOT\nread\nEOT\n}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rules string) {
		p, err := acl.Parse("fuzz.hcl", rules)
		if err != nil {
			var perr *acl.Error
			if !errors.As(err, &perr) || len(perr.Diagnostics) == 0 {
				t.Fatalf("err = %#v, want an *acl.Error with diagnostics", err)
			}
			for _, d := range perr.Diagnostics {
				if d.Subject == nil || d.Subject.Filename != "fuzz.hcl" || d.Subject.Start.Line < 1 {
					t.Fatalf("problem not located: %s", d)
				}
			}
			_ = err.Error()
			return
		}
		a := acl.New([]*acl.Policy{p, p})
		for _, name := range []string{"default", "*", "prod-api", ""} {
			a.AllowNamespaceOperation(name, acl.NamespaceCapabilitySubmitJob)
			a.AllowNamespace(name)
			a.AllowNodePoolOperation(name, acl.NodePoolCapabilityRead)
			a.AllowHostVolumeOperation(name, acl.HostVolumeCapabilityMountReadOnly)
			a.AllowVariableOperation(name, "a/b", acl.VariablesCapabilityRead)
		}
		a.AllowNodeRead()
		a.AllowPluginList()
	})
}
