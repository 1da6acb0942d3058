package jobspec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
)

// seeds adds every jobspec in the repository's testdata and examples.
func seeds(f *testing.F) {
	var paths []string
	for _, glob := range []string{"testdata/*", "testdata/bad/*", "../../examples/jobs/*.hcl", "../../cmd/drover/assets/*.hcl"} {
		ps, _ := filepath.Glob(glob)
		paths = append(paths, ps...)
	}
	for _, p := range paths {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
}

// FuzzParse checks that no input makes the parser, the conversion, the
// validator or the diagnostics panic, and that a parse either fails with
// errors or yields a job.
func FuzzParse(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		p, diags := jobspec.Parse(jobspec.Config{Path: "fuzz.hcl", Body: src})
		_ = jobspec.FormatDiagnostics(p.Sources, diags)
		if diags.HasErrors() {
			return
		}
		if p.Job == nil {
			t.Fatal("no errors and no job")
		}
		job, err := p.Job.SDK()
		if err != nil {
			_ = jobspec.FormatDiagnostics(p.Sources, p.Locate(err))
			return
		}
		if err := jobspec.Validate(job); err != nil {
			_ = jobspec.FormatDiagnostics(p.Sources, p.Locate(err))
		}
	})
}

// FuzzDecodeJSON checks that strict API JSON decoding and the conversion
// of what it accepts never panic.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec"}]}]}}`))
	f.Add([]byte(`{"ID": "x", "TaskGroups": [null]}`))
	f.Add([]byte(`{"ID": "x", "Periodic": {"Spec": "* * * * *"}, "Type": "batch"}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		job, diags := jobspec.DecodeJSON("fuzz.json", src)
		if diags.HasErrors() {
			_ = jobspec.FormatDiagnostics(map[string][]byte{"fuzz.json": src}, diags)
			return
		}
		if sj, err := job.SDK(); err == nil {
			_ = jobspec.Validate(sj)
		}
	})
}
