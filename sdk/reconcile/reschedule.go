package reconcile

import (
	"time"

	"github.com/drover-sched/drover/sdk"
)

// Reschedule timing (Nomad's).
const (
	// RescheduleWindow: a failed allocation due to be rescheduled this soon
	// is rescheduled now rather than by a follow-up eval.
	RescheduleWindow = time.Second
	// BatchWindow: allocations due within this window of each other share
	// one follow-up eval.
	BatchWindow = 5 * time.Second
	// MaxPastRescheduleEvents bounds the events an unlimited policy keeps.
	MaxPastRescheduleEvents = 5
)

// ReschedulePolicy returns the policy that applies to an allocation: its
// group's, else its job's; nil when it may not be rescheduled.
func ReschedulePolicy(a *sdk.Allocation) *sdk.ReschedulePolicy {
	if a.Job == nil {
		return nil
	}
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.ReschedulePolicy != nil {
		return tg.ReschedulePolicy
	}
	return a.Job.Reschedule
}

// LastEventTime is when an allocation last changed on its node: the latest
// "FinishedAt" of its task states when the node reported one, else its
// modify time.
func LastEventTime(a *sdk.Allocation) time.Time {
	var last time.Time
	for _, ts := range a.TaskStates {
		if t, ok := finishedAt(ts); ok && t.After(last) {
			last = t
		}
	}
	if last.IsZero() && a.ModifyTime != 0 {
		last = time.Unix(0, a.ModifyTime)
	}
	return last
}

func finishedAt(ts sdk.Opaque) (time.Time, bool) {
	switch v := ts["FinishedAt"].(type) {
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		return t, err == nil && !t.IsZero()
	case time.Time:
		return v, !v.IsZero()
	case int64:
		return time.Unix(0, v), v != 0
	}
	return time.Time{}, false
}

// NextDelay is how long after its failure an allocation is rescheduled,
// following its policy's delay function: constant; exponential (twice the
// last delay); fibonacci (the sum of the last two delays); capped by
// MaxDelay, and back to Delay once the allocation ran longer than the cap
// since its last reschedule.
func NextDelay(a *sdk.Allocation) time.Duration {
	p := ReschedulePolicy(a)
	if p == nil {
		return 0
	}
	d := p.Delay
	if a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0 {
		return d
	}
	events := a.RescheduleTracker.Events
	last := events[len(events)-1]
	switch p.DelayFunction {
	case sdk.DelayFunctionExponential:
		d = last.Delay * 2
	case sdk.DelayFunctionFibonacci:
		if len(events) >= 2 {
			prev := events[len(events)-2].Delay
			if prev == p.MaxDelay && last.Delay == p.Delay {
				d = last.Delay // the series restarted after a reset
			} else {
				d = last.Delay + prev
			}
		}
	default:
		return d
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
		if LastEventTime(a).UnixNano()-last.RescheduleTime > d.Nanoseconds() {
			d = p.Delay
		}
	}
	return d
}

// rescheduleEligible reports whether the policy allows one more reschedule,
// after delay, of an allocation that failed at failTime: fewer attempts
// than allowed within the interval, and, as Nomad has it, a delay shorter
// than the interval (a policy whose delays outgrow its interval stops).
func rescheduleEligible(a *sdk.Allocation, p *sdk.ReschedulePolicy, failTime time.Time, delay time.Duration) bool {
	if p.Unlimited {
		return true
	}
	if p.Attempts <= 0 {
		return false
	}
	if a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0 {
		return true
	}
	return attempted(a, p, failTime) < p.Attempts && delay < p.Interval
}

// attempted counts the reschedules of a's tracker within p's interval
// before failTime.
func attempted(a *sdk.Allocation, p *sdk.ReschedulePolicy, failTime time.Time) int {
	n := 0
	if a.RescheduleTracker != nil {
		for _, e := range a.RescheduleTracker.Events {
			if failTime.UnixNano()-e.RescheduleTime < p.Interval.Nanoseconds() {
				n++
			}
		}
	}
	return n
}

// RescheduleEligible reports whether allocation a, failed at failTime, may
// be rescheduled once more under its group's policy, as Nomad's
// RescheduleTracker.RescheduleEligible has it: the policy is unlimited, or
// fewer reschedules than its attempts fall within its interval. (What a
// deployment watcher asks of an unhealthy allocation: whether to wait for
// its replacement or fail the deployment now.)
func RescheduleEligible(a *sdk.Allocation, failTime time.Time) bool {
	p := ReschedulePolicy(a)
	if p == nil {
		return false
	}
	if p.Unlimited {
		return true
	}
	return p.Attempts > 0 && attempted(a, p, failTime) < p.Attempts
}

// NextRescheduleTime is when a failed allocation may be rescheduled, and
// whether it may be at all.
func NextRescheduleTime(a *sdk.Allocation) (time.Time, bool) {
	failTime := LastEventTime(a)
	p := ReschedulePolicy(a)
	if a.DesiredStatus == sdk.AllocDesiredStatusStop || a.ClientStatus != sdk.AllocClientStatusFailed || failTime.IsZero() || p == nil {
		return time.Time{}, false
	}
	d := NextDelay(a)
	return failTime.Add(d), rescheduleEligible(a, p, failTime, d)
}

// NextRescheduleTimeByFailTime is NextRescheduleTime for an allocation that
// did not fail but is being replaced (it disconnected), taking now as its
// failure time.
func NextRescheduleTimeByFailTime(a *sdk.Allocation, now time.Time) (time.Time, bool) {
	p := ReschedulePolicy(a)
	if p == nil {
		return time.Time{}, false
	}
	d := NextDelay(a)
	return now.Add(d), rescheduleEligible(a, p, now, d)
}

// RescheduleTracker returns the tracker of an allocation that replaces prev
// at now: prev's recent events (within the policy's interval, or the last
// MaxPastRescheduleEvents for an unlimited policy) and one for this
// reschedule.
func RescheduleTracker(prev *sdk.Allocation, now time.Time) *sdk.RescheduleTracker {
	p := ReschedulePolicy(prev)
	var events []*sdk.RescheduleEvent
	if prev.RescheduleTracker != nil {
		past := prev.RescheduleTracker.Events
		if p != nil && p.Attempts > 0 && !p.Unlimited {
			for _, e := range past {
				if p.Interval > 0 && now.UnixNano()-e.RescheduleTime <= p.Interval.Nanoseconds() {
					c := *e
					events = append(events, &c)
				}
			}
		} else {
			start := max(0, len(past)-MaxPastRescheduleEvents)
			for _, e := range past[start:] {
				c := *e
				events = append(events, &c)
			}
		}
	}
	events = append(events, &sdk.RescheduleEvent{
		RescheduleTime: now.UnixNano(), PrevAllocID: prev.ID, PrevNodeID: prev.NodeID, Delay: NextDelay(prev),
	})
	return &sdk.RescheduleTracker{Events: events}
}
