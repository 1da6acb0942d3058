package jobspec_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden diagnostics in testdata/bad")

// diagnose parses, converts and validates a jobspec file and renders every
// problem, as `drover job validate` prints them.
func diagnose(path string, src []byte) string {
	p, diags := jobspec.Parse(jobspec.Config{Path: path, Body: src})
	if diags.HasErrors() {
		return jobspec.FormatDiagnostics(p.Sources, diags)
	}
	job, err := p.Job.SDK()
	if err == nil {
		err = jobspec.Validate(job)
	}
	if err == nil {
		return ""
	}
	return jobspec.FormatDiagnostics(p.Sources, p.Locate(err))
}

// TestParse_BadJobspecs checks the corpus of bad jobspecs in testdata/bad:
// each must fail with the diagnostics in its .golden file, located in the
// file. Run with -rewrite to regenerate the golden files, then review them.
func TestParse_BadJobspecs(t *testing.T) {
	paths, _ := filepath.Glob("testdata/bad/*")
	var specs []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".golden") {
			specs = append(specs, p)
		}
	}
	if len(specs) < 30 {
		t.Fatalf("found %d bad jobspecs, expected the corpus", len(specs))
	}
	for _, path := range specs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := diagnose(path, src)
			if got == "" {
				t.Fatal("accepted")
			}
			if !strings.Contains(got, path+":") {
				t.Errorf("no diagnostic is located in the file:\n%s", got)
			}
			golden := strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
			if *rewrite {
				if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if got+"\n" != string(want) {
				t.Errorf("diagnostics differ from %s:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}
