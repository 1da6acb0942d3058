package server_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

func parameterizedJob(id, payload string, required, optional []string) *sdk.Job {
	j := servertest.Job(id, sdk.JobTypeBatch, 1, 100, 64)
	j.Meta = map[string]string{"team": "data", "region": "eu"}
	j.ParameterizedJob = &sdk.ParameterizedJobConfig{Payload: payload, MetaRequired: required, MetaOptional: optional}
	return j
}

// TestDispatch_LaunchesAChildWithPayloadAndMeta: a dispatch registers a
// child job carrying the payload and the parent's metadata overlaid with
// the request's, evaluates it (the child is placed), and the parent's
// summary counts it; the parent itself is never evaluated.
func TestDispatch_LaunchesAChildWithPayloadAndMeta(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	if id := registerJob(t, s, parameterizedJob("report", sdk.DispatchPayloadRequired, []string{"day"}, []string{"region"})); id != "" {
		t.Fatalf("a parameterized job got an eval %s", id)
	}
	res, err := s.DispatchJob("default", "report", server.DispatchRequest{
		Payload: []byte("rows=10"), Meta: map[string]string{"day": "monday", "region": "us"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.DispatchedJobID, "report"+server.DispatchLaunchSuffix) || res.EvalID == "" || res.Index == 0 {
		t.Fatalf("result %+v", res)
	}
	e := servertest.WaitForEval(t, s, res.EvalID)
	if e.Status != sdk.EvalStatusComplete || e.TriggeredBy != sdk.EvalTriggerJobRegister || e.JobID != res.DispatchedJobID {
		t.Fatalf("eval %+v", e)
	}
	snap := s.Store().Snapshot()
	child := snap.Job("default", res.DispatchedJobID)
	if child == nil || child.ParentID != "report" || !child.Dispatched || child.IsParameterized() ||
		!bytes.Equal(child.Payload, []byte("rows=10")) {
		t.Fatalf("child %+v", child)
	}
	if want := map[string]string{"team": "data", "region": "us", "day": "monday"}; !equalMaps(child.Meta, want) {
		t.Fatalf("child meta %v, want %v", child.Meta, want)
	}
	if parent := snap.Job("default", "report"); parent.Meta["region"] != "eu" || len(parent.Meta) != 2 {
		t.Fatalf("the dispatch changed the parent's meta: %v", parent.Meta)
	}
	if n := len(snap.AllocsByJob("default", res.DispatchedJobID)); n != 1 {
		t.Fatalf("child has %d allocations", n)
	}
	if evals := snap.EvalsByJob("default", "report"); len(evals) != 0 {
		t.Fatalf("the parent was evaluated: %+v", evals)
	}
	sum := server.JobSummary(snap, snap.Job("default", "report"))
	if sum.Children == nil || sum.Children.Pending+sum.Children.Running+sum.Children.Dead != 1 {
		t.Fatalf("parent summary %+v", sum)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestDispatch_RefusesWhatTheJobDoesNotAllow: each broken rule is a bad
// request naming it, and nothing is dispatched.
func TestDispatch_RefusesWhatTheJobDoesNotAllow(t *testing.T) {
	s := rig(t, placer)
	registerJob(t, s, parameterizedJob("needs", sdk.DispatchPayloadRequired, []string{"day"}, []string{"region"}))
	registerJob(t, s, parameterizedJob("bare", sdk.DispatchPayloadForbidden, nil, nil))
	registerJob(t, s, servertest.Job("plain", sdk.JobTypeBatch, 1, 100, 64))
	stopped := parameterizedJob("stopped", "", nil, nil)
	registerJob(t, s, stopped)
	if _, _, err := s.DeregisterJob("default", "stopped", false); err != nil {
		t.Fatal(err)
	}
	ok := server.DispatchRequest{Payload: []byte("x"), Meta: map[string]string{"day": "monday"}}
	for _, tc := range []struct {
		name, job string
		req       server.DispatchRequest
		want      []string
	}{
		{"no payload", "needs", server.DispatchRequest{Meta: ok.Meta}, []string{"requires a payload"}},
		{"forbidden payload", "bare", server.DispatchRequest{Payload: []byte("x")}, []string{"forbids a payload"}},
		{"payload too large", "needs", server.DispatchRequest{Payload: make([]byte, server.DispatchPayloadLimit+1), Meta: ok.Meta},
			[]string{"16385 bytes, over the limit of 16384"}},
		{"required meta missing", "needs", server.DispatchRequest{Payload: ok.Payload, Meta: map[string]string{"region": "us"}},
			[]string{"required metadata not given: day"}},
		{"unknown meta", "needs", server.DispatchRequest{Payload: ok.Payload, Meta: map[string]string{"day": "1", "zz": "1", "aa": "2"}},
			[]string{"neither required nor optional: aa, zz (allowed: day, region)"}},
		{"two rules at once", "bare", server.DispatchRequest{Payload: ok.Payload, Meta: map[string]string{"x": "1"}},
			[]string{"forbids a payload", "neither required nor optional: x (allowed: none)"}},
		{"priority out of range", "needs", server.DispatchRequest{Payload: ok.Payload, Meta: ok.Meta, Priority: 101},
			[]string{"priority must be between 1 and 100, not 101"}},
		{"slash in the ID prefix", "needs", server.DispatchRequest{Payload: ok.Payload, Meta: ok.Meta, IDPrefix: "a/b"},
			[]string{`the ID prefix "a/b" holds a slash`}},
		{"not parameterized", "plain", ok, []string{`job "plain" is not a parameterized job`}},
		{"stopped", "stopped", server.DispatchRequest{}, []string{`job "stopped" is stopped`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.DispatchJob("default", tc.job, tc.req)
			if !errors.Is(err, server.ErrInvalid) {
				t.Fatalf("DispatchJob = %+v, %v; want a bad request", res, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := s.DispatchJob("default", "missing", ok); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
	for _, j := range s.Store().Snapshot().Jobs("default") {
		if j.ParentID != "" {
			t.Fatalf("a refused dispatch launched %s", j.ID)
		}
	}
}

// TestDispatch_IdempotencyToken: a retry with the token of an existing
// dispatch answers that job and launches nothing; another token launches
// another job.
func TestDispatch_IdempotencyToken(t *testing.T) {
	s := rig(t, placer)
	registerJob(t, s, parameterizedJob("report", "", nil, nil))
	first, err := s.DispatchJob("default", "report", server.DispatchRequest{IdempotencyToken: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.DispatchJob("default", "report", server.DispatchRequest{IdempotencyToken: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if again.DispatchedJobID != first.DispatchedJobID || again.EvalID != "" || again.JobCreateIndex != first.JobCreateIndex {
		t.Fatalf("retry = %+v, first = %+v", again, first)
	}
	other, err := s.DispatchJob("default", "report", server.DispatchRequest{IdempotencyToken: "def"})
	if err != nil {
		t.Fatal(err)
	}
	if other.DispatchedJobID == first.DispatchedJobID || other.EvalID == "" {
		t.Fatalf("another token = %+v", other)
	}
	var n int
	for _, j := range s.Store().Snapshot().Jobs("default") {
		if j.ParentID == "report" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d children, want 2", n)
	}
}

// TestRejectJobRegistration_RefusesEveryNewVersionAndChild: while the
// scheduler configuration sheds registrations, Nomad refuses a
// registration, a revert (a registration), a dispatch and a scaling
// request, even one without a count; stopping a job, evaluating it and
// forcing a periodic launch go on. Nothing refused leaves a trace.
func TestRejectJobRegistration_RefusesEveryNewVersionAndChild(t *testing.T) {
	s := rig(t, placer)
	registerNode(t, s, 0, 100_000)
	registerJob(t, s, parameterizedJob("report", sdk.DispatchPayloadOptional, nil, nil))
	web := servertest.Job("web", sdk.JobTypeService, 1, 100, 64)
	servertest.WaitForEval(t, s, registerJob(t, s, web))
	two := web.Copy()
	two.TaskGroups[0].Count = 2
	servertest.WaitForEval(t, s, registerJob(t, s, two))
	cron := servertest.Job("cron", sdk.JobTypeBatch, 1, 100, 64)
	cron.Periodic = &sdk.PeriodicConfig{Enabled: true, Spec: "0 3 * * *"}
	registerJob(t, s, cron)
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{RejectJobRegistration: true}); err != nil {
		t.Fatal(err)
	}
	before := s.Store().Snapshot()
	count := int64(3)
	refused := []struct {
		name string
		do   func() error
	}{
		{"register", func() error {
			_, _, err := s.RegisterJob(servertest.Job("new", sdk.JobTypeService, 1, 100, 64))
			return err
		}},
		{"revert", func() error { _, _, err := s.RevertJob("default", "web", 0, nil); return err }},
		{"dispatch", func() error { _, err := s.DispatchJob("default", "report", server.DispatchRequest{}); return err }},
		{"scale", func() error {
			_, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Count: &count})
			return err
		}},
		{"scaling event", func() error {
			_, err := s.ScaleJob(server.ScaleRequest{Namespace: "default", JobID: "web", Group: "g", Message: "policy ran"})
			return err
		}},
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			if err := r.do(); !errors.Is(err, server.ErrForbidden) || !strings.Contains(err.Error(), "disabled by the scheduler configuration") {
				t.Fatalf("err = %v, want the registration refused", err)
			}
		})
	}
	after := s.Store().Snapshot()
	if n, m := len(before.Jobs("default")), len(after.Jobs("default")); n != m {
		t.Fatalf("%d jobs before, %d after", n, m)
	}
	if v := after.Job("default", "web").Version; v != before.Job("default", "web").Version {
		t.Fatalf("web went to version %d", v)
	}
	if evs := after.ScalingEvents("default", "web"); evs != nil {
		t.Fatalf("scaling events %+v", evs.ScalingEvents)
	}

	if _, _, err := s.ForcePeriodicRun("default", "cron"); err != nil {
		t.Fatalf("periodic force: %v", err)
	}
	if _, _, err := s.DeregisterJob("default", "web", false); err != nil {
		t.Fatalf("stop: %v", err)
	}
}
