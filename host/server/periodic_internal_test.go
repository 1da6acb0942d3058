package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

func TestNextLaunch(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 30, 0, 0, time.UTC)
	cases := []struct {
		name string
		cfg  *sdk.PeriodicConfig
		want time.Time
		err  string
	}{
		{"hourly", &sdk.PeriodicConfig{Spec: "0 * * * *"}, time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC), ""},
		{"strictly after", &sdk.PeriodicConfig{Spec: "30 12 * * *"}, time.Date(2026, 3, 11, 12, 30, 0, 0, time.UTC), ""},
		{"earliest of several specs", &sdk.PeriodicConfig{Spec: "0 18 * * *", Specs: []string{"45 12 * * *", "0 0 * * *"}},
			time.Date(2026, 3, 10, 12, 45, 0, 0, time.UTC), ""},
		{"time zone", &sdk.PeriodicConfig{Spec: "0 9 * * *", TimeZone: "America/New_York"},
			time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC), ""}, // 08:30 EDT now: 09:00 EDT today
		{"explicit cron type", &sdk.PeriodicConfig{Spec: "* * * * *", SpecType: "cron"}, time.Date(2026, 3, 10, 12, 31, 0, 0, time.UTC), ""},
		{"bad spec", &sdk.PeriodicConfig{Spec: "every tuesday"}, time.Time{}, "cron spec"},
		{"unknown type", &sdk.PeriodicConfig{Spec: "x", SpecType: "test"}, time.Time{}, "not supported"},
		{"unknown zone", &sdk.PeriodicConfig{Spec: "* * * * *", TimeZone: "Mars/Olympus"}, time.Time{}, "time zone"},
		{"no spec", &sdk.PeriodicConfig{}, time.Time{}, "no cron spec"},
		// cronexpr parses these and panics in Next.
		{"reversed month range", &sdk.PeriodicConfig{Spec: "0 0 * DEC-JAN *"}, time.Time{}, `"0 0 * DEC-JAN *" cannot be evaluated`},
		{"reversed month range among several specs", &sdk.PeriodicConfig{Spec: "0 0 * * *", Specs: []string{"0 0 * 10-1 *"}},
			time.Time{}, `"0 0 * 10-1 *" cannot be evaluated`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NextLaunch(tc.cfg, at)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("NextLaunch = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestNextLaunch_ReversedMonthRangesAreErrors: every month range written
// backwards, which cronexpr parses and panics on in Next, is an error, not
// a panic (the launcher and the CLI call NextLaunch on stored jobs).
func TestNextLaunch_ReversedMonthRangesAreErrors(t *testing.T) {
	after := time.Date(2026, 3, 10, 12, 30, 0, 0, time.UTC)
	months := []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	for hi := 1; hi <= 12; hi++ {
		for lo := 1; lo < hi; lo++ {
			for _, spec := range []string{fmt.Sprintf("0 0 * %d-%d *", hi, lo), fmt.Sprintf("0 0 * %s-%s *", months[hi-1], months[lo-1])} {
				if _, err := NextLaunch(&sdk.PeriodicConfig{Spec: spec}, after); err == nil {
					t.Errorf("%q: no error", spec)
				}
			}
		}
	}
}

func TestLaunchSchedule_OrdersAndReschedules(t *testing.T) {
	l := newLaunchSchedule()
	base := time.Unix(1000, 0)
	a, b, c := sdk.NamespacedID{Namespace: "default", ID: "a"}, sdk.NamespacedID{Namespace: "default", ID: "b"}, sdk.NamespacedID{Namespace: "default", ID: "c"}
	l.set(a, base.Add(30*time.Second))
	l.set(b, base.Add(10*time.Second))
	l.set(c, base.Add(20*time.Second))
	l.set(b, base.Add(40*time.Second)) // rescheduled later
	l.set(c, time.Time{})              // no more launches
	if next := l.next(); !next.Equal(base.Add(30 * time.Second)) {
		t.Fatalf("next = %v", next)
	}
	if due := l.popDue(base.Add(29 * time.Second)); len(due) != 0 {
		t.Fatalf("due early: %v", due)
	}
	due := l.popDue(base.Add(time.Minute))
	if len(due) != 2 || due[0].job != a || due[1].job != b {
		t.Fatalf("due = %+v, want a then b", due)
	}
	if !l.next().IsZero() {
		t.Fatal("schedule not empty")
	}
}

func TestPeriodicChild(t *testing.T) {
	parent := &sdk.Job{Namespace: "default", ID: "report", Type: "batch", Priority: 70, Version: 3, Stable: true,
		Periodic: &sdk.PeriodicConfig{Enabled: true, Spec: "@daily"}, Status: sdk.JobStatusRunning, CreateIndex: 5, JobModifyIndex: 9}
	at := time.Unix(1_700_000_000, 42)
	c := periodicChild(parent, at)
	if c.ID != "report/periodic-1700000000" || c.ParentID != "report" || c.Periodic != nil || c.IsPeriodic() {
		t.Fatalf("child %+v", c)
	}
	if c.Priority != 70 || c.Type != "batch" || c.Version != 0 || c.Status != "" || c.SubmitTime != at.UnixNano() || c.CreateIndex != 0 {
		t.Fatalf("child fields %+v", c)
	}
	if parent.Periodic == nil || parent.ID != "report" {
		t.Fatal("deriving a child changed the parent")
	}
}

func TestRunningChild(t *testing.T) {
	s, _ := state.NewStore()
	parent := &sdk.Job{Namespace: "default", ID: "p", Type: "batch", TaskGroups: []*sdk.TaskGroup{{Name: "g"}},
		Periodic: &sdk.PeriodicConfig{Enabled: true, Spec: "@daily"}}
	// A child's status is derived on write: a stopped child whose eval is
	// complete is dead, a new one pending.
	child := func(id string, stopped bool) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: id, ParentID: "p", Type: "batch", Stop: stopped, TaskGroups: []*sdk.TaskGroup{{Name: "g"}}}
	}
	write := func(jobs ...*sdk.Job) {
		t.Helper()
		err := s.Write(s.LatestIndex()+1, func(tx *state.Txn) error {
			for _, j := range jobs {
				if err := tx.UpsertJob(j); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(parent, child("p/periodic-1", true), child("px/periodic-2", false))
	err := s.Write(s.LatestIndex()+1, func(tx *state.Txn) error {
		return tx.UpsertEval(&sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "p/periodic-1", Status: sdk.EvalStatusComplete})
	})
	if err != nil {
		t.Fatal(err)
	}
	if runningChild(s.Snapshot(), parent) {
		t.Fatal("a dead child, or another job's, counts as running")
	}
	write(child("p/periodic-3", false))
	if !runningChild(s.Snapshot(), parent) {
		t.Fatal("a pending child does not count as running")
	}
}
