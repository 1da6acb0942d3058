package reconcile

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

func TestNextDelay(t *testing.T) {
	events := func(ds ...time.Duration) *sdk.RescheduleTracker {
		tr := &sdk.RescheduleTracker{}
		for _, d := range ds {
			tr.Events = append(tr.Events, &sdk.RescheduleEvent{Delay: d, RescheduleTime: time.Unix(100, 0).UnixNano()})
		}
		return tr
	}
	cases := []struct {
		name   string
		policy sdk.ReschedulePolicy
		past   *sdk.RescheduleTracker
		want   time.Duration
	}{
		{"first reschedule", sdk.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: "exponential"}, nil, 5 * time.Second},
		{"constant", sdk.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: "constant"}, events(5 * time.Second), 5 * time.Second},
		{"exponential", sdk.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour}, events(5*time.Second, 10*time.Second), 20 * time.Second},
		{"fibonacci", sdk.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: "fibonacci", MaxDelay: time.Hour}, events(5*time.Second, 5*time.Second, 10*time.Second), 15 * time.Second},
		{"capped", sdk.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: "exponential", MaxDelay: 15 * time.Second}, events(10 * time.Second), 15 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &sdk.Job{TaskGroups: []*sdk.TaskGroup{{Name: "g", ReschedulePolicy: &tc.policy}}}
			a := &sdk.Allocation{Job: job, TaskGroup: "g", RescheduleTracker: tc.past, ModifyTime: time.Unix(105, 0).UnixNano()}
			if got := NextDelay(a); got != tc.want {
				t.Fatalf("NextDelay = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRescheduleEligible_AttemptsWithinInterval(t *testing.T) {
	p := &sdk.ReschedulePolicy{Attempts: 2, Interval: time.Hour}
	fail := time.Unix(10_000, 0)
	a := &sdk.Allocation{RescheduleTracker: &sdk.RescheduleTracker{Events: []*sdk.RescheduleEvent{
		{RescheduleTime: fail.Add(-2 * time.Hour).UnixNano()}, {RescheduleTime: fail.Add(-time.Minute).UnixNano()}}}}
	if !rescheduleEligible(a, p, fail, time.Minute) {
		t.Fatal("one attempt within the interval: a second is allowed")
	}
	// As Nomad: not once the next delay reaches the interval.
	if rescheduleEligible(a, p, fail, time.Hour) {
		t.Fatal("a delay as long as the interval: no more")
	}
	a.RescheduleTracker.Events[0].RescheduleTime = fail.Add(-30 * time.Minute).UnixNano()
	if rescheduleEligible(a, p, fail, time.Minute) {
		t.Fatal("two attempts within the interval: no third")
	}
	// Without past events the delay does not count, as in Nomad.
	if !rescheduleEligible(&sdk.Allocation{}, p, fail, 2*time.Hour) {
		t.Fatal("a first reschedule is allowed whatever its delay")
	}
}

func TestNameIndex(t *testing.T) {
	in := newSet(&sdk.Allocation{ID: "a", Name: "j.g[0]"}, &sdk.Allocation{ID: "b", Name: "j.g[2]"}, &sdk.Allocation{ID: "c", Name: "j.g[5]"})
	n := newNameIndex("j", "g", 4, in)
	if got := n.next(3); len(got) != 3 || got[0] != "j.g[1]" || got[1] != "j.g[3]" || got[2] != "j.g[6]" {
		t.Fatalf("next = %v", got)
	}
	n = newNameIndex("j", "g", 4, in)
	if got := n.highest(2); !got["j.g[5]"] || !got["j.g[2]"] || len(got) != 2 {
		t.Fatalf("highest = %v", got)
	}
}

// TestFollowupEvals_Windows pins the reschedule timing windows at their
// boundaries, as Nomad v1.6.1's reconciler has them (checked against it):
// a failed allocation due within RescheduleWindow (inclusive) is
// rescheduled now; later ones share a follow-up eval, dated at the first
// of them, while due less than BatchWindow after it.
func TestFollowupEvals_Windows(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	due := []time.Duration{time.Second, time.Second + 1, 6 * time.Second, 6*time.Second + 1, 11 * time.Second, 11*time.Second + 1}
	delay := 10 * time.Second
	job := &sdk.Job{Namespace: "default", ID: "job", Type: sdk.JobTypeService, TaskGroups: []*sdk.TaskGroup{{
		Name: "web", Count: len(due), Tasks: []*sdk.Task{{Name: "web"}},
		ReschedulePolicy: &sdk.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: delay, DelayFunction: sdk.DelayFunctionConstant},
	}}}
	var allocs []*sdk.Allocation
	for i, d := range due {
		allocs = append(allocs, &sdk.Allocation{
			ID: fmt.Sprintf("a%d", i), Namespace: "default", JobID: "job", Job: job, TaskGroup: "web", NodeID: "n1",
			Name: sdk.AllocName("job", "web", i), DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusFailed,
			TaskStates: map[string]sdk.Opaque{"web": {"State": "dead", "Failed": true, "FinishedAt": now.Add(d - delay)}},
			ModifyTime: now.UnixNano(),
		})
	}
	n := 0
	res := Compute(Input{Job: job, Allocs: allocs, Tainted: map[string]*sdk.Node{}, EvalID: "eval", Now: now,
		NewID: func() string { n++; return fmt.Sprint("ev", n) }})

	var nowIDs []string
	for _, p := range res.Place {
		if p.Previous != nil && p.Reschedule {
			nowIDs = append(nowIDs, p.Previous.ID)
		}
	}
	if !slices.Equal(nowIDs, []string{"a0"}) {
		t.Fatalf("rescheduled now: %v, want [a0] (due exactly RescheduleWindow ahead)", nowIDs)
	}
	waits := map[string]time.Duration{}
	var got []time.Duration
	for _, ev := range res.FollowupEvals {
		waits[ev.ID] = ev.WaitUntil.Sub(now)
		got = append(got, ev.WaitUntil.Sub(now))
	}
	if want := []time.Duration{time.Second + 1, 6*time.Second + 1, 11*time.Second + 1}; !slices.Equal(got, want) {
		t.Fatalf("follow-up evals at %v, want %v", got, want)
	}
	wantEval := map[string]time.Duration{"a1": time.Second + 1, "a2": time.Second + 1, "a3": 6*time.Second + 1, "a4": 6*time.Second + 1, "a5": 11*time.Second + 1}
	for _, a := range res.Annotate {
		if w, ok := wantEval[a.ID]; !ok || waits[a.FollowupEvalID] != w {
			t.Errorf("%s: follow-up at %v, want %v", a.ID, waits[a.FollowupEvalID], w)
		}
		delete(wantEval, a.ID)
	}
	if len(wantEval) != 0 {
		t.Errorf("no follow-up eval for %v", wantEval)
	}
}
