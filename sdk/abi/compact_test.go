package abi

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestStateSync_CompactJobs(t *testing.T) {
	same := &sdk.Job{Namespace: "default", ID: "same", JobModifyIndex: 5, Status: "running"}
	edge := &sdk.Job{Namespace: "default", ID: "edge", JobModifyIndex: 10}
	changed := &sdk.Job{Namespace: "default", ID: "changed", JobModifyIndex: 12}
	tests := []struct {
		name       string
		sync       StateSync
		wantJobs   []string
		wantStatus []string
	}{
		{"forward delta", StateSync{FromIndex: 10, Index: 12, Jobs: []*sdk.Job{same, changed, edge}},
			[]string{"changed"}, []string{"same", "edge"}},
		{"full sync", StateSync{Full: true, Index: 12, Jobs: []*sdk.Job{same, changed}},
			[]string{"same", "changed"}, nil},
		{"backward delta", StateSync{FromIndex: 14, Index: 12, Jobs: []*sdk.Job{same, changed}},
			[]string{"same", "changed"}, nil},
		{"registered without an index", StateSync{FromIndex: 10, Index: 12, Jobs: []*sdk.Job{{ID: "zero"}}},
			[]string{"zero"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.sync
			s.CompactJobs()
			var jobs, statuses []string
			for _, j := range s.Jobs {
				jobs = append(jobs, j.ID)
			}
			for _, st := range s.JobStatuses {
				statuses = append(statuses, st.ID)
			}
			if !slices.Equal(jobs, tt.wantJobs) || !slices.Equal(statuses, tt.wantStatus) {
				t.Fatalf("jobs %v, statuses %v; want %v and %v", jobs, statuses, tt.wantJobs, tt.wantStatus)
			}
		})
	}
}
