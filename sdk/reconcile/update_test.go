package reconcile_test

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// TestTasksUpdated_CopyIsNoChange: copying a job (as a new version that
// only scales it does) or decoding it turns its nil maps and slices into
// empty ones; that is no change to its tasks.
func TestTasksUpdated_CopyIsNoChange(t *testing.T) {
	job := sdktest.Job("web", 1)
	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 3
	decoded := &sdk.Job{}
	b, err := job.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decoded.UnmarshalMsg(b); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		next *sdk.Job
	}{
		{"copy", scaled},
		{"decoded", decoded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pair := range [][2]*sdk.Job{{job, tc.next}, {tc.next, job}} {
				if changed, why := reconcile.TasksUpdated(pair[0], pair[1], "web"); changed {
					t.Fatalf("TasksUpdated = true (%s), want no change", why)
				}
			}
		})
	}
}
