package jobspec_test

import (
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/drover-sched/drover/host/jobspec"
)

// TestFormatDiagnostics_IsBounded: what FormatDiagnostics renders, the
// body of /v1/jobs/parse's answer, is bounded however many problems a
// jobspec has and however long its lines. Before, each diagnostic split
// its whole file into lines (5,000 problems in a file of 5,000 lines
// allocated 600 MiB; a million, hours), and printed its whole line (a
// jobspec in JSON on one line, its whole size, twice, per problem).
func TestFormatDiagnostics_IsBounded(t *testing.T) {
	t.Run("many problems", func(t *testing.T) {
		src := "locals {\n" + strings.Repeat("  x = !\n", 5000) + "}\n"
		p, diags := jobspec.Parse(jobspec.Config{Path: "job.hcl", Body: []byte(src)})
		if len(diags) < 5000 {
			t.Fatalf("%d diagnostics", len(diags))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := jobspec.FormatDiagnostics(p.Sources, diags)
		runtime.ReadMemStats(&after)
		if n := strings.Count("\n"+got, "\njob.hcl:"); n != 100 || !strings.HasSuffix(got, "more diagnostics not shown)") {
			t.Errorf("%d diagnostics shown, ending:\n%s", n, got[max(len(got)-200, 0):])
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("formatting allocated %d MiB", alloc>>20)
		}
	})
	t.Run("a long line", func(t *testing.T) {
		src := `{"job": {"j": {"meta": {"m": "` + strings.Repeat("é", 1<<18) + `"}, "bad": 1}}}`
		p, diags := jobspec.Parse(jobspec.Config{Path: "job.json", Body: []byte(src)})
		got := jobspec.FormatDiagnostics(p.Sources, diags)
		if !strings.HasPrefix(got, "job.json:1:") || len(got) > 2000 || !strings.Contains(got, `"bad": 1}}}`) {
			t.Errorf("got %d bytes:\n%.2000s", len(got), got)
		}
		// The marker is under "bad", counted in characters.
		lines := strings.Split(got, "\n")
		shown, mark := lines[1][strings.Index(lines[1], "| ")+2:], lines[2][strings.Index(lines[2], "| ")+2:]
		if at := utf8.RuneCountInString(shown[:strings.Index(shown, `"bad"`)]); mark != strings.Repeat(" ", at)+"^^^^^" ||
			strings.ContainsRune(got, utf8.RuneError) {
			t.Errorf("the part of the line shown, and the range marked in it:\n%s", got)
		}
	})
}
