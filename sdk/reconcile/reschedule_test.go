package reconcile

import (
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
