package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// FormatDiagnostics renders diagnostics as compilers do:
// "file:line:col: error: summary; detail", then the offending line with the
// range marked. sources holds the files' content by name (Parsed.Sources).
// A diagnostic said twice (the same problem in every copy a dynamic block
// makes) is shown once.
func FormatDiagnostics(sources map[string][]byte, diags hcl.Diagnostics) string {
	var b strings.Builder
	shown := map[string]bool{}
	for _, d := range diags {
		key := fmt.Sprint(d.Severity, d.Summary, d.Detail, d.Subject)
		if shown[key] {
			continue
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
		lines := bytes.Split(sources[s.Filename], []byte("\n"))
		if s.Start.Line < 1 || s.Start.Line > len(lines) {
			continue
		}
		line := strings.TrimRight(string(lines[s.Start.Line-1]), "\r")
		fmt.Fprintf(&b, "\n  %4d | %s", s.Start.Line, line)
		width := 1
		if s.End.Line == s.Start.Line && s.End.Column > s.Start.Column {
			width = s.End.Column - s.Start.Column
		}
		pad := strings.Repeat(" ", min(max(s.Start.Column-1, 0), len(line)))
		fmt.Fprintf(&b, "\n       | %s%s", pad, strings.Repeat("^", width))
	}
	return b.String()
}

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
