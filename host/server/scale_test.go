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

// TestScaleJob_ToTheSameCountAnswersTheJobsModifyIndex: scaling a group to
// the count it has makes no new version (the spec is unchanged); the
// JobModifyIndex answered is the job's, so a registration enforcing it
// applies. It used to answer the entry's index, which the job never had
// (a 409 for the registration). Nomad makes a new, identical, version.
func TestScaleJob_ToTheSameCountAnswersTheJobsModifyIndex(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(servertest.Node(0, 8000, 8192)); err != nil {
		t.Fatal(err)
	}
	evalID, _, err := s.RegisterJob(servertest.Job("web", sdk.JobTypeService, 1, 100, 64))
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	before := s.Store().Snapshot().Job("default", "web")
	same := int64(1)
	res, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &same})
	if err != nil {
		t.Fatal(err)
	}
	e := servertest.WaitForEval(t, s, res.EvalID)
	after := s.Store().Snapshot().Job("default", "web")
	if after.Version != before.Version || res.JobModifyIndex != after.JobModifyIndex || e.JobModifyIndex != after.JobModifyIndex {
		t.Fatalf("answered job modify index %d (eval's %d), the job's is %d (version %d→%d)", res.JobModifyIndex,
			e.JobModifyIndex, after.JobModifyIndex, before.Version, after.Version)
	}
	if _, _, err := s.RegisterJobOpts(servertest.Job("web", sdk.JobTypeService, 2, 100, 64),
		server.RegisterOptions{EnforceIndex: true, JobModifyIndex: res.JobModifyIndex}); err != nil {
		t.Fatalf("registration enforcing the answered index: %v", err)
	}
}
