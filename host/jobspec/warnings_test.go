package jobspec_test

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/sdk"
)

// TestWarnings: the settings Nomad's servers warn about, in Nomad's words
// and nesting (a task's warnings within its group's); a job without them
// has none.
func TestWarnings(t *testing.T) {
	job := func(edit func(j *sdk.Job)) *sdk.Job {
		j := &sdk.Job{ID: "x", Type: sdk.JobTypeService, TaskGroups: []*sdk.TaskGroup{
			{Name: "a", Count: 3, Update: &sdk.UpdateStrategy{MaxParallel: 1},
				Tasks: []*sdk.Task{{Name: "t", Driver: "exec", Resources: &sdk.Resources{CPU: 100, MemoryMB: 64}}}},
			{Name: "b", Count: 1, Update: &sdk.UpdateStrategy{MaxParallel: 1},
				Tasks: []*sdk.Task{{Name: "u", Driver: "exec", Resources: &sdk.Resources{CPU: 100, MemoryMB: 64}}}},
		}}
		if edit != nil {
			edit(j)
		}
		jobspec.Canonicalize(j)
		return j
	}
	const maxParallel = `Group "a" has warnings: 1 error occurred:
	* Update max parallel count is greater than task group count (5 > 3). A destructive change would result in the simultaneous replacement of all allocations.

`
	cases := []struct {
		name string
		job  *sdk.Job
		want []string
	}{
		{"none", job(nil), nil},
		{"max_parallel over the count", job(func(j *sdk.Job) { j.TaskGroups[0].Update.MaxParallel = 5 }), []string{maxParallel}},
		{"max_parallel over a count of 1 is fine", job(func(j *sdk.Job) { j.TaskGroups[1].Update.MaxParallel = 5 }), nil},
		{"auto_promote in some groups only", job(func(j *sdk.Job) {
			j.TaskGroups[0].Update.Canary, j.TaskGroups[0].Update.AutoPromote = 1, true
			j.TaskGroups[1].Update.Canary = 1
		}), []string{"auto_promote must be true for all groups to enable automatic promotion"}},
		{"auto_promote beside a group without canaries", job(func(j *sdk.Job) {
			j.TaskGroups[0].Update.Canary, j.TaskGroups[0].Update.AutoPromote = 1, true
		}), nil},
		{"mbits and a task's IOPS and networks", job(func(j *sdk.Job) {
			j.TaskGroups[1].Networks = []*sdk.NetworkResource{{MBits: 10}}
			r := j.TaskGroups[1].Tasks[0].Resources
			r.IOPS, r.Networks = 5, []*sdk.NetworkResource{{DynamicPorts: []sdk.Port{{Label: "http"}}}}
		}), []string{`Group "b" has warnings: 2 errors occurred:
	* mbits has been deprecated as of Nomad 0.12.0. Please remove mbits from the network block
	* 2 errors occurred:
	* Task "u": IOPS has been deprecated as of Nomad 0.9.0. Please remove IOPS from resource block.
	* Task "u": task network resources have been deprecated as of Nomad 0.12.0. Please configure networking via group network block.



`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := jobspec.Warnings(tc.job); !slices.Equal(got, tc.want) {
				t.Fatalf("warnings %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestFormatWarnings: the Warnings string of Nomad's answers.
func TestFormatWarnings(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"one\n\n"}, "1 warning:\n\n* one"},
		{[]string{"one", "two"}, "2 warnings:\n\n* one\n* two"},
	}
	for _, tc := range cases {
		if got := jobspec.FormatWarnings(tc.in); got != tc.want {
			t.Errorf("FormatWarnings(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
