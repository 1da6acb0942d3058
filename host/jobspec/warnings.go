package jobspec

import (
	"fmt"
	"strings"

	"github.com/drover-sched/drover/sdk"
)

// Warnings lists the dubious settings and deprecated fields of a
// canonicalized job that Nomad's servers warn about with a registration,
// plan or validation (Nomad's Job.Warnings), in Nomad's words: a job with
// them is accepted all the same.
func Warnings(j *sdk.Job) []string {
	var out []string
	hasAutoPromote, allAutoPromote := false, true
	for _, tg := range j.TaskGroups {
		if ws := groupWarnings(tg); len(ws) > 0 {
			out = append(out, fmt.Sprintf("Group %q has warnings: %s", tg.Name, listed(ws)))
		}
		if u := tg.Update; u != nil {
			hasAutoPromote = hasAutoPromote || u.AutoPromote
			// A group without canaries has nothing to promote.
			allAutoPromote = allAutoPromote && (u.Canary == 0 || u.AutoPromote)
		}
	}
	if hasAutoPromote && !allAutoPromote {
		out = append(out, "auto_promote must be true for all groups to enable automatic promotion")
	}
	return out
}

func groupWarnings(tg *sdk.TaskGroup) []string {
	var out []string
	if u := tg.Update; u != nil && tg.Count > 1 && u.MaxParallel > tg.Count {
		out = append(out, fmt.Sprintf("Update max parallel count is greater than task group count (%d > %d). "+
			"A destructive change would result in the simultaneous replacement of all allocations.", u.MaxParallel, tg.Count))
	}
	if len(tg.Networks) > 0 && tg.Networks[0].MBits > 0 {
		out = append(out, "mbits has been deprecated as of Nomad 0.12.0. Please remove mbits from the network block")
	}
	for _, t := range tg.Tasks {
		var tw []string
		if r := t.Resources; r != nil && r.IOPS != 0 {
			tw = append(tw, "IOPS has been deprecated as of Nomad 0.9.0. Please remove IOPS from resource block.")
		}
		if r := t.Resources; r != nil && len(r.Networks) != 0 {
			tw = append(tw, "task network resources have been deprecated as of Nomad 0.12.0. Please configure networking via group network block.")
		}
		if len(tw) > 0 {
			for i, w := range tw {
				tw[i] = fmt.Sprintf("Task %q: %s", t.Name, w)
			}
			out = append(out, listed(tw))
		}
	}
	return out
}

// listed joins warnings nested in one as Nomad's multierror prints them
// (Nomad nests a task's in its group's, and a group's in the job's).
func listed(ws []string) string {
	if len(ws) == 1 {
		return "1 error occurred:\n\t* " + ws[0] + "\n\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors occurred:", len(ws))
	for _, w := range ws {
		b.WriteString("\n\t* " + w)
	}
	b.WriteString("\n\n")
	return b.String()
}

// FormatWarnings joins warnings into the one string of a registration's,
// plan's or validation's Warnings, as Nomad's servers write it ("" for
// none): "1 warning:" or "N warnings:", then each on a line of its own
// after a "* ".
func FormatWarnings(ws []string) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return "1 warning:\n\n* " + strings.TrimSpace(ws[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d warnings:\n", len(ws))
	for _, w := range ws {
		b.WriteString("\n* " + strings.TrimSpace(w))
	}
	return b.String()
}
