package jobspec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spent parses src and returns what its evaluation spent of the budget.
func spent(t *testing.T, path string, src []byte) int64 {
	t.Helper()
	b := newBudget(evalBudget)
	if _, diags := parse(Config{Path: path, Body: src}, b); diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Error())
	}
	return evalBudget - b.left
}

// The figures evalBudget's comment and docs/api.md give: the example
// jobspecs spend about 40 KiB each, a job of a hundred groups of ten
// tasks (config, resources and env blocks each) about 14 MiB, far within
// the budget.
func TestBudget_WhatJobspecsSpend(t *testing.T) {
	paths, _ := filepath.Glob("../../examples/jobs/*.hcl")
	if len(paths) == 0 {
		t.Fatal("no example jobspecs")
	}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := spent(t, p, src); n > 64<<10 {
			t.Errorf("%s spends %d KiB", p, n>>10)
		}
	}
	if n := spent(t, "large.hcl", thousandTasks()); n < 12<<20 || n > 16<<20 {
		t.Errorf("a job of a thousand tasks spends %d MiB", n>>20)
	}
}

// thousandTasks is a jobspec of a hundred groups of ten tasks, each with
// config, resources and env blocks (143 KB).
func thousandTasks() []byte {
	var b strings.Builder
	b.WriteString("job \"j\" {\n")
	for g := range 100 {
		fmt.Fprintf(&b, "group \"g%d\" {\n network {\n port \"http\" {}\n }\n", g)
		for k := range 10 {
			fmt.Fprintf(&b, "task \"t%d\" {\n driver = \"docker\"\n config {\n image = \"x:1\"\n ports = [\"http\"]\n }\n"+
				" resources {\n cpu = 100\n memory = 64\n }\n env {\n A = \"b\"\n }\n }\n", k)
		}
		b.WriteString("}\n")
	}
	b.WriteString("}\n")
	return []byte(b.String())
}
