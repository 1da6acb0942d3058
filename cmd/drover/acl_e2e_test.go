package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// An agent with ACLs enabled is driven by the CLI as an operator would:
// bootstrap (once; again with the reset file the refusal names), a policy
// and a client token, which may read jobs but not submit them; a request
// without a token is refused with a hint; the management token submits.
// The agent restarts from its data dir, and the tokens still work.
func TestE2E_ACL_BootstrapPoliciesAndTokens(t *testing.T) {
	bin := droverBin(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	conf := writeFile(t, dir, "agent.hcl", `
data_dir = "`+data+`"
acl {
  enabled = true
}
`)
	a := startAgent(t, bin, "-config", conf)

	// run runs the CLI against the agent with token (none when empty),
	// none of the test's own DROVER_ or NOMAD_ variables.
	run := func(t *testing.T, token string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "DROVER_") && !strings.HasPrefix(kv, "NOMAD_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "DROVER_ADDR="+a.base)
		if token != "" {
			cmd.Env = append(cmd.Env, "NOMAD_TOKEN="+token)
		}
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !asExit(err, &ee) {
			t.Fatalf("drover %v: %v", args, err)
		}
		if ee != nil {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	must := func(t *testing.T, token string, args ...string) string {
		t.Helper()
		code, out := run(t, token, args...)
		if code != 0 {
			t.Fatalf("drover %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	accessorOf := func(t *testing.T, out string) string {
		t.Helper()
		m := regexp.MustCompile(`Accessor ID\s+=\s+(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no accessor in:\n%s", out)
		}
		return m[1]
	}
	secretRE := regexp.MustCompile(`Secret ID\s+=\s+(\S+)`)
	secret := func(t *testing.T, out string) string {
		t.Helper()
		m := secretRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no secret in:\n%s", out)
		}
		return m[1]
	}

	first := secret(t, must(t, "", "acl", "bootstrap"))
	code, out := run(t, "", "acl", "bootstrap")
	m := regexp.MustCompile(`reset index: (\d+)`).FindStringSubmatch(out)
	if code != 1 || m == nil {
		t.Fatalf("second bootstrap: exit %d\n%s", code, out)
	}
	// The operator who lost the token writes the index into the data
	// dir's reset file, as with Nomad, and bootstraps again.
	writeFile(t, data, "acl-bootstrap-reset", m[1]+"\n")
	root := secret(t, must(t, "", "acl", "bootstrap"))
	if root == first {
		t.Fatal("the reset bootstrap gave the same secret")
	}
	// A reset makes a new management token; the first one is the
	// operator's to delete, as with Nomad.
	must(t, root, "acl", "token", "delete", accessorOf(t, must(t, first, "acl", "token", "self")))
	if code, out := run(t, first, "job", "status"); code != 1 || !strings.Contains(out, "ACL token not found") {
		t.Fatalf("deleted token: exit %d\n%s", code, out)
	}

	policy := writeFile(t, dir, "readonly.hcl", `
namespace "default" {
  policy = "read"
}
node {
  policy = "read"
}
`)
	must(t, root, "acl", "policy", "apply", "-description", "read jobs and nodes", "readonly", policy)
	if out := must(t, root, "acl", "policy", "list"); !strings.Contains(out, "readonly") || !strings.Contains(out, "read jobs and nodes") {
		t.Fatalf("policy list:\n%s", out)
	}
	reader := secret(t, must(t, root, "acl", "token", "create", "-name", "ci", "-policy", "readonly", "-ttl", "1h"))

	// The reader reads, and is refused a submission.
	must(t, reader, "job", "status")
	must(t, reader, "node", "status")
	code, out = run(t, reader, "job", "run", "-detach", "examples/jobs/batch.hcl")
	if code != 1 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("reader's job run: exit %d\n%s", code, out)
	}
	// Without a token, refused with the hint.
	code, out = run(t, "", "job", "status")
	if code != 1 || !strings.Contains(out, "Permission denied") || !strings.Contains(out, "NOMAD_TOKEN") {
		t.Fatalf("job status without a token: exit %d\n%s", code, out)
	}
	// The management token submits; the reader sees the job.
	must(t, root, "job", "run", "-detach", "examples/jobs/batch.hcl")
	if out := must(t, reader, "job", "status"); !strings.Contains(out, "batch") {
		t.Fatalf("reader's job status:\n%s", out)
	}
	if out := must(t, reader, "acl", "token", "self"); !strings.Contains(out, "ci") || !strings.Contains(out, "readonly") {
		t.Fatalf("token self:\n%s", out)
	}

	// A role holding the policy, and a token holding the role (by name):
	// it reads as the reader does, is refused a submission, and shows the
	// role. The role renamed, the token shows the new name; deleted, it
	// grants nothing.
	roleOut := must(t, root, "acl", "role", "create", "-name", "readers", "-description", "read all", "-policy", "readonly")
	rm := regexp.MustCompile(`ID\s+=\s+(\S+)`).FindStringSubmatch(roleOut)
	if rm == nil || !strings.Contains(roleOut, "Policies     = readonly") {
		t.Fatalf("role create:\n%s", roleOut)
	}
	roleID := rm[1]
	if out := must(t, root, "acl", "role", "list"); !strings.Contains(out, roleID) || !strings.Contains(out, "readers") {
		t.Fatalf("role list:\n%s", out)
	}
	if out := must(t, root, "acl", "role", "info", "-by-name", "readers"); !strings.Contains(out, roleID) {
		t.Fatalf("role info -by-name:\n%s", out)
	}
	roleTok := secret(t, must(t, root, "acl", "token", "create", "-name", "by-role", "-role-name", "readers"))
	if out := must(t, roleTok, "job", "status"); !strings.Contains(out, "batch") {
		t.Fatalf("role token's job status:\n%s", out)
	}
	code, out = run(t, roleTok, "job", "run", "-detach", "examples/jobs/batch.hcl")
	if code != 1 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("role token's job run: exit %d\n%s", code, out)
	}
	if out := must(t, roleTok, "acl", "token", "self"); !strings.Contains(out, roleID+"  readers") {
		t.Fatalf("role token's self:\n%s", out)
	}
	// The token reads its own role.
	must(t, roleTok, "acl", "role", "info", roleID)
	if out := must(t, root, "acl", "role", "update", "-name", "viewers", roleID); !strings.Contains(out, "Name         = viewers") {
		t.Fatalf("role update:\n%s", out)
	}
	if out := must(t, roleTok, "acl", "token", "self"); !strings.Contains(out, roleID+"  viewers") {
		t.Fatalf("role token's self after the rename:\n%s", out)
	}

	// After a restart from the data dir, the tokens and policy are there.
	_ = a.cmd.Process.Signal(os.Interrupt)
	<-a.done
	a = startAgent(t, bin, "-config", conf)
	must(t, reader, "job", "status")
	// The reset file names the first bootstrap, not the second.
	if code, out := run(t, "", "acl", "bootstrap"); code != 1 || !strings.Contains(out, "reset index") {
		t.Fatalf("bootstrap after a restart, with the reset file used: exit %d\n%s", code, out)
	}
	if out := must(t, root, "acl", "token", "list"); strings.Count(out, "management") != 1 || !strings.Contains(out, "ci") {
		t.Fatalf("token list after restart:\n%s", out)
	}
	// The role and the token holding it survive the restart; the role
	// deleted, the token is refused what it read.
	must(t, roleTok, "job", "status")
	if out := must(t, root, "acl", "role", "delete", roleID); !strings.Contains(out, "ACL role "+roleID+" successfully deleted") {
		t.Fatalf("role delete:\n%s", out)
	}
	if code, out := run(t, roleTok, "job", "status"); code != 1 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("token of a deleted role: exit %d\n%s", code, out)
	}
	if out := must(t, root, "acl", "role", "list"); !strings.Contains(out, "No ACL roles found") {
		t.Fatalf("role list after the delete:\n%s", out)
	}
}
