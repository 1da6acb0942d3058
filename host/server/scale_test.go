package server_test

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

// TestScaleJob_ScalingBlockBoundsTheCount: a group's scaling block bounds
// the count it is scaled to whether or not it is enabled (enabled is for
// the autoscaler) and whatever its max, 0 included, as Nomad's Job.Scale
// checks whenever the group has one. Scaling used to skip the check for a
// disabled block and for a max of 0, leaving a job whose count its own
// scaling block refuses.
func TestScaleJob_ScalingBlockBoundsTheCount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  sdk.ScalingPolicy
		count   int // the registered count
		scaleTo int64
		ok      bool
	}{
		{"enabled, within", sdk.ScalingPolicy{Enabled: true, Min: 1, Max: 3}, 2, 3, true},
		{"enabled, above max", sdk.ScalingPolicy{Enabled: true, Min: 1, Max: 3}, 2, 4, false},
		{"enabled, below min", sdk.ScalingPolicy{Enabled: true, Min: 1, Max: 3}, 2, 0, false},
		{"disabled, within", sdk.ScalingPolicy{Min: 1, Max: 3}, 2, 1, true},
		{"disabled, above max", sdk.ScalingPolicy{Min: 1, Max: 3}, 2, 10, false},
		{"disabled, below min", sdk.ScalingPolicy{Min: 1, Max: 3}, 2, 0, false},
		{"max 0, to 0", sdk.ScalingPolicy{Enabled: true, Min: 0, Max: 0}, 0, 0, true},
		{"max 0, above it", sdk.ScalingPolicy{Enabled: true, Min: 0, Max: 0}, 0, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := servertest.New(t, nil, nil)
			job := servertest.Job("web", sdk.JobTypeService, tc.count, 100, 64)
			p := tc.policy
			job.TaskGroups[0].Scaling = &p
			if _, _, err := s.RegisterJob(job); err != nil {
				t.Fatal(err)
			}
			_, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &tc.scaleTo})
			if tc.ok != (err == nil) {
				t.Fatalf("scale %d with policy [%d, %d] enabled %v: err %v, want ok %v", tc.scaleTo, p.Min, p.Max, p.Enabled, err, tc.ok)
			}
			if err != nil && !errors.Is(err, server.ErrInvalid) {
				t.Fatalf("refusal %v is not a bad request", err)
			}
			want := tc.count
			if tc.ok {
				want = int(tc.scaleTo)
			}
			if got := s.Store().Snapshot().Job("default", "web").TaskGroups[0].Count; got != want {
				t.Fatalf("count %d after scaling, want %d", got, want)
			}
		})
	}
}
