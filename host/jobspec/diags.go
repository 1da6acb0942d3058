package jobspec

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// FormatDiagnostics renders HCL diagnostics as "file:line:col: severity: summary"
// with the detail and the offending line marked.
func FormatDiagnostics(path string, src []byte, diags hcl.Diagnostics) string {
	lines := bytes.Split(src, []byte("\n"))
	var b strings.Builder
	for i, d := range diags {
		if i > 0 {
			b.WriteString("\n")
		}
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		if d.Subject == nil {
			fmt.Fprintf(&b, "%s: %s: %s", path, sev, d.Summary)
		} else {
			file := d.Subject.Filename
			if file == "" {
				file = path
			}
			fmt.Fprintf(&b, "%s:%d:%d: %s: %s", file, d.Subject.Start.Line, d.Subject.Start.Column, sev, d.Summary)
		}
		if d.Detail != "" {
			fmt.Fprintf(&b, "; %s", d.Detail)
		}
		if s := d.Subject; s != nil && s.Start.Line >= 1 && s.Start.Line <= len(lines) {
			line := string(lines[s.Start.Line-1])
			fmt.Fprintf(&b, "\n  %4d | %s", s.Start.Line, line)
			width := 1
			if s.End.Line == s.Start.Line && s.End.Column > s.Start.Column {
				width = s.End.Column - s.Start.Column
			}
			pad := strings.Repeat(" ", max(s.Start.Column-1, 0))
			fmt.Fprintf(&b, "\n       | %s%s", pad, strings.Repeat("^", width))
		}
	}
	return b.String()
}
