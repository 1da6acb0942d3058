package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Variables driven through the CLI against an agent with a data dir, as
// an operator would: put (check-and-set by default, so an update needs
// -check-index or -force), get, list, a full keyring rotation, purge; the
// items are nowhere in the data dir in the clear, and the variables and
// keys survive a restart.
func TestE2E_Variables(t *testing.T) {
	bin := droverBin(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	conf := writeFile(t, dir, "agent.hcl", `data_dir = "`+data+`"`+"\n")
	a := startAgent(t, bin, "-config", conf)
	c := &cliRun{t: t, bin: bin, addr: a.base}

	const secret = "e2e-s3cret-9f1c"
	c.run(0, "var", "put", "app/db", "user=admin", "password="+secret)
	if out := c.run(0, "var", "get", "-item", "password", "app/db"); strings.TrimSpace(out) != secret {
		t.Fatalf("var get -item password: %q", out)
	}
	out := c.run(1, "var", "put", "app/db", "password=other")
	c.contains(out, "-check-index")
	// A put replaces the items, as Nomad's does.
	c.run(0, "var", "put", "-force", "app/db", "password=other")
	c.run(1, "var", "get", "-item", "user", "app/db")
	c.run(0, "var", "put", "app/cache", "host=localhost")
	out = c.run(0, "var", "list", "app/")
	c.contains(out, "app/db", "app/cache")

	c.run(0, "operator", "root", "keyring", "rotate", "-full")
	waitUntil(t, 20*time.Second, "the full rotation to finish", func() bool {
		_, out := drover(t, bin, a.base, "operator", "root", "keyring", "list")
		return strings.Count(out, "inactive") == 1 && strings.Count(out, "active") == 2
	})
	if out := c.run(0, "var", "get", "-item", "password", "app/db"); strings.TrimSpace(out) != "other" {
		t.Fatalf("after the rotation, var get: %q", out)
	}
	c.run(0, "var", "purge", "app/cache")
	if out := c.run(1, "var", "get", "app/cache"); !strings.Contains(out, "Variable not found") {
		t.Fatalf("var get of a purged variable:\n%s", out)
	}

	// Restarted from its data dir: the variable and both keys are there.
	_ = a.cmd.Process.Signal(os.Interrupt)
	<-a.done
	if err := filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds a variable's item in the clear", path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	a = startAgent(t, bin, "-config", conf)
	c.addr = a.base
	if out := c.run(0, "var", "get", "-item", "password", "app/db"); strings.TrimSpace(out) != "other" {
		t.Fatalf("after a restart, var get: %q", out)
	}
	if out := c.run(0, "operator", "root", "keyring", "list"); strings.Count(out, "active") != 2 {
		t.Fatalf("keyring after a restart:\n%s", out)
	}
}
