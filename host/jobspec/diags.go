package jobspec

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// FormatDiagnostics renders diagnostics as compilers do:
// "file:line:col: error: summary; detail", then the offending line with the
// range marked. sources holds the files' content by name (Parsed.Sources).
// A diagnostic said twice (the same problem in every copy a dynamic block
// makes) is shown once.
//
// What it renders is bounded, as a jobspec sent to /v1/jobs/parse makes
// the answer: the first maxShownDiagnostics, and of a line longer than
// maxShownLine (a jobspec in JSON on one line), the part around the
// range. Each file is split into lines once: a file of a million lines
// with a million problems, split for each, took hours.
func FormatDiagnostics(sources map[string][]byte, diags hcl.Diagnostics) string {
	var b strings.Builder
	shown := map[string]bool{}
	lines := map[string][]int{} // the files' lineStarts
	for i, d := range diags {
		key := fmt.Sprint(d.Severity, d.Summary, d.Detail, d.Subject)
		if shown[key] {
			continue
		}
		if len(shown) == maxShownDiagnostics {
			fmt.Fprintf(&b, "\n(%d more diagnostics not shown)", len(diags)-i)
			break
		}
		if len(shown) > 0 {
			b.WriteString("\n")
		}
		shown[key] = true
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		if d.Subject == nil {
			name := ""
			if len(sources) == 1 {
				for n := range sources {
					name = n + ": "
				}
			}
			fmt.Fprintf(&b, "%s%s: %s", name, sev, d.Summary)
		} else {
			fmt.Fprintf(&b, "%s:%d:%d: %s: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, sev, d.Summary)
		}
		if d.Detail != "" {
			fmt.Fprintf(&b, "; %s", d.Detail)
		}
		s := d.Subject
		if s == nil {
			continue
		}
		if _, ok := lines[s.Filename]; !ok {
			lines[s.Filename] = lineStarts(sources[s.Filename])
		}
		if line, mark, ok := snippet(sources[s.Filename], lines[s.Filename], s); ok {
			fmt.Fprintf(&b, "\n  %4d | %s", s.Start.Line, line)
			fmt.Fprintf(&b, "\n       | %s", mark)
		}
	}
	return b.String()
}

// snippet returns the line of src where rng starts (starts are its
// lineStarts), or of a long line the part around it, and under it a
// marker of the range. The range's byte offsets place the marker when
// they fall within the line, its columns otherwise.
func snippet(src []byte, starts []int, rng *hcl.Range) (line, mark string, ok bool) {
	if rng.Start.Line < 1 || rng.Start.Line > len(starts) {
		return "", "", false
	}
	lineStart, lineEnd := starts[rng.Start.Line-1], len(src)
	if rng.Start.Line < len(starts) {
		lineEnd = starts[rng.Start.Line] - 1
	}
	line = strings.TrimRight(string(src[lineStart:lineEnd]), "\r")
	col := min(max(rng.Start.Column-1, 0), len(line))
	width := 1
	if rng.End.Line == rng.Start.Line && rng.End.Column > rng.Start.Column {
		width = rng.End.Column - rng.Start.Column
	}
	if b := rng.Start.Byte - lineStart; b >= 0 && b <= len(line) && rng.Start.Byte <= rng.End.Byte {
		col = b
		if rng.End.Line == rng.Start.Line {
			width = max(min(rng.End.Byte-lineStart, len(line))-col, 1)
		}
	}
	if len(line) > maxShownLine {
		// The part of the line around the range's start.
		from := max(col-maxShownLine/4, 0)
		to := min(from+maxShownLine, len(line))
		// Not within a character (a few bytes at most, in UTF-8).
		for i := 1; i < utf8.UTFMax && from > 0 && !utf8.RuneStart(line[from]); i++ {
			from--
		}
		for i := 1; i < utf8.UTFMax && to < len(line) && !utf8.RuneStart(line[to]); i++ {
			to--
		}
		line, col = line[from:to], min(col-from, to-from)
	}
	end := min(col+width, len(line))
	pad := utf8.RuneCountInString(line[:col])
	width = max(utf8.RuneCountInString(line[col:end]), 1)
	return line, strings.Repeat(" ", pad) + strings.Repeat("^", width), true
}

// maxShownDiagnostics and maxShownLine bound what FormatDiagnostics
// renders: how many diagnostics, and how much of a line (in bytes).
const (
	maxShownDiagnostics = 100
	maxShownLine        = 200
)

// Locate turns the problems of a validation error into diagnostics that
// point at the part of the jobspec each concerns. A part the jobspec does
// not spell out (a default, or a block inherited from the job) is located
// at the nearest enclosing part it does: the job-level block a group
// inherited, or the group. Other errors become one diagnostic without a
// location.
func (p *Parsed) Locate(err error) hcl.Diagnostics {
	if err == nil {
		return nil
	}
	var problems []*FieldError
	var ve *ValidationError
	var fe *FieldError
	switch {
	case errors.As(err, &ve):
		problems = ve.Problems
	case errors.As(err, &fe):
		problems = []*FieldError{fe}
	default:
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid job", Detail: err.Error()}}
	}
	diags := make(hcl.Diagnostics, 0, len(problems))
	for _, fe := range problems {
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + subject(fe.Path), Detail: fe.Error()}
		if r, ok := p.locate(fe.Path); ok {
			d.Subject = &r
		}
		diags = append(diags, d)
	}
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		return a != nil && (b == nil || a.Start.Byte < b.Start.Byte)
	})
	return diags
}

// locate finds the source range of the nearest part of path the jobspec
// spells out.
func (p *Parsed) locate(path Path) (hcl.Range, bool) {
	for ; ; path = path[:len(path)-1] {
		if r, ok := p.ranges[path.key()]; ok {
			return r, true
		}
		// A group's update, reschedule or migrate block, or a task written
		// directly in the job, may be spelled out at the job level.
		if len(path) > 1 && strings.HasPrefix(path[0], "group ") {
			if r, ok := p.ranges[path[1:].key()]; ok {
				return r, true
			}
		}
		if len(path) == 0 {
			return hcl.Range{}, false
		}
	}
}

// subject names the last part of a path for a diagnostic's summary.
func subject(p Path) string {
	if len(p) == 0 {
		return "job"
	}
	last := p[len(p)-1]
	if i := strings.IndexAny(last, " ["); i > 0 {
		last = last[:i]
	}
	return last
}
