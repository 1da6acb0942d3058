package main

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

func TestNextPeriodicLaunch(t *testing.T) {
	now := time.Date(2026, 11, 24, 2, 59, 30, 0, time.UTC)
	cron := func(spec string) *sdk.PeriodicConfig {
		return &sdk.PeriodicConfig{Enabled: true, SpecType: "cron", Specs: []string{spec}, TimeZone: "UTC"}
	}
	for _, tc := range []struct {
		name string
		job  *sdk.Job
		want string
	}{
		{"next launch and how long until it", &sdk.Job{Periodic: cron("0 3 * * *")}, "(in 30s)"},
		{"the earliest of several specs", &sdk.Job{Periodic: &sdk.PeriodicConfig{Enabled: true, SpecType: "cron",
			Specs: []string{"0 4 * * *", "0 3 * * *"}, TimeZone: "UTC"}}, "(in 30s)"},
		{"stopped", &sdk.Job{Stop: true, Periodic: cron("0 3 * * *")}, "none (job stopped)"},
		{"disabled", &sdk.Job{Periodic: &sdk.PeriodicConfig{SpecType: "cron", Specs: []string{"0 3 * * *"}}}, "none (launches disabled)"},
		{"no further launch", &sdk.Job{Periodic: cron("0 0 1 1 * 2020")}, "none (no further launch)"},
		{"a broken spec", &sdk.Job{Periodic: cron("every day")}, "unknown: "},
		{"a spec cronexpr panics on", &sdk.Job{Periodic: cron("0 0 * DEC-JAN *")}, "unknown: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextPeriodicLaunch(tc.job, now); !strings.Contains(got, tc.want) {
				t.Fatalf("nextPeriodicLaunch = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
