package jobspec_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/hashicorp/hcl/v2"
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
// validator or the diagnostics panic, that a parse either fails with
// errors or yields a job, and that every error a parse or the validator
// reports is located in the file (line and column), as the user is
// promised.
func FuzzParse(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		p, diags := jobspec.Parse(jobspec.Config{Path: "fuzz.hcl", Body: src})
		_ = jobspec.FormatDiagnostics(p.Sources, diags)
		if diags.HasErrors() {
			requireLocated(t, "fuzz.hcl", src, diags)
			return
		}
		if p.Job == nil {
			t.Fatal("no errors and no job")
		}
		// Every part of an HCL job, down to the job block itself, is
		// recorded, so each problem the conversion or the validator finds
		// has somewhere to point.
		hcl2 := jobspec.SourceFormat(src) == "hcl2"
		job, err := p.Job.SDK()
		if err != nil {
			located := p.Locate(err)
			_ = jobspec.FormatDiagnostics(p.Sources, located)
			if hcl2 {
				requireLocated(t, "fuzz.hcl", src, located)
			}
			return
		}
		if err := jobspec.Validate(job); err != nil {
			located := p.Locate(err)
			_ = jobspec.FormatDiagnostics(p.Sources, located)
			if hcl2 {
				requireLocated(t, "fuzz.hcl", src, located)
			}
		}
	})
}

// requireLocated fails the test unless every error in diags points at a
// line and column of the file named name, whose content is src.
func requireLocated(t *testing.T, name string, src []byte, diags hcl.Diagnostics) {
	t.Helper()
	lines := bytes.Count(src, []byte("\n")) + 1
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		s := d.Subject
		switch {
		case s == nil:
			t.Fatalf("error without a location: %s: %s", d.Summary, d.Detail)
		case s.Filename != name:
			t.Fatalf("error located in %q, not %q: %s: %s", s.Filename, name, d.Summary, d.Detail)
		case s.Start.Line < 1 || s.Start.Line > lines || s.Start.Column < 1 || s.Start.Byte > len(src):
			t.Fatalf("error located at %d:%d (byte %d), outside the file's %d lines and %d bytes: %s: %s",
				s.Start.Line, s.Start.Column, s.Start.Byte, lines, len(src), d.Summary, d.Detail)
		}
	}
}

// FuzzDecodeJSON checks that strict API JSON decoding and the conversion
// of what it accepts never panic, and that what decoding refuses it
// locates in the file.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec"}]}]}}`))
	f.Add([]byte(`{"ID": "x", "TaskGroups": [null]}`))
	f.Add([]byte(`{"ID": "x", "Periodic": {"Spec": "* * * * *"}, "Type": "batch"}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		job, diags := jobspec.DecodeJSON("fuzz.json", src)
		if diags.HasErrors() {
			_ = jobspec.FormatDiagnostics(map[string][]byte{"fuzz.json": src}, diags)
			requireLocated(t, "fuzz.json", src, diags)
			return
		}
		if sj, err := job.SDK(); err == nil {
			_ = jobspec.Validate(sj)
		}
	})
}
