// Command msgpgen runs msgp over a package's non-test source files.
//
// msgp's -file takes a directory and parses every .go file in it, test
// files included, and gives up on a directory that also holds an external
// test package (package x_test): sdk's runnable examples are one. msgpgen
// copies the package's other files (not the output file) to a temporary
// directory, runs msgp there, and writes its output where it was asked.
//
// Usage (in a go:generate line): msgpgen OUT [msgp flags...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// msgp is the generator's pinned version.
const msgp = "github.com/tinylib/msgp@v1.6.5"

func main() {
	if len(os.Args) < 2 || filepath.Base(os.Args[1]) != os.Args[1] || !strings.HasSuffix(os.Args[1], ".go") {
		fmt.Fprintln(os.Stderr, "usage: msgpgen OUT.go [msgp flags...] (OUT in the current directory)")
		os.Exit(2)
	}
	for _, a := range os.Args[2:] {
		if a == "-o" || strings.HasPrefix(a, "-o=") || strings.HasPrefix(a, "-tests") && a != "-tests=false" {
			fmt.Fprintf(os.Stderr, "msgpgen: %s: the output is OUT, and msgp's generated tests are not kept (-tests=false)\n", a)
			os.Exit(2)
		}
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "msgpgen:", err)
		os.Exit(1)
	}
}

func run(out string, msgpArgs []string) error {
	tmp, err := os.MkdirTemp("", "msgpgen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	files, err := filepath.Glob("*.go")
	if err != nil {
		return err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == out {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return err
		}
	}
	// msgp writes -o relative to the directory it parses.
	args := append([]string{"run", msgp, "-file", tmp, "-o", "msgpgen.out"}, msgpArgs...)
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("msgp: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(tmp, "msgpgen.out"))
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
