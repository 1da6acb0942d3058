package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// A job's budget allows its burst at once, then its rate; jobs draw on
// their own; full budgets are swept once many jobs are tracked.
func TestEvalBudget(t *testing.T) {
	b := newEvalBudget()
	now := time.Unix(1000, 0)
	web, api := sdk.NamespacedID{Namespace: "default", ID: "web"}, sdk.NamespacedID{Namespace: "default", ID: "api"}
	for i := range createdEvalBurst {
		if err := b.take(web, now); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
	}
	if err := b.take(web, now); !errors.Is(err, sdk.ErrInvalidEval) {
		t.Fatalf("past the burst: %v", err)
	}
	if err := b.take(api, now); err != nil {
		t.Fatalf("another job: %v", err)
	}
	if err := b.take(web, now.Add(time.Second)); err != nil {
		t.Fatalf("a second later: %v", err)
	}
	for i := range evalBudgetSweep {
		_ = b.take(sdk.NamespacedID{Namespace: "default", ID: fmt.Sprint("j", i)}, now)
	}
	// Past the sweep size, a new job's draw drops the budgets that are
	// full again (as good as none), and keeps those that are not.
	_ = b.take(sdk.NamespacedID{Namespace: "default", ID: "new"}, now)
	if _, ok := b.jobs[web]; !ok || len(b.jobs) != evalBudgetSweep+3 {
		t.Fatalf("%d budgets tracked (web's kept: %v) with none full", len(b.jobs), ok)
	}
	_ = b.take(sdk.NamespacedID{Namespace: "default", ID: "later"}, now.Add(time.Hour))
	if n := len(b.jobs); n != 1 {
		t.Fatalf("%d budgets tracked an hour later, want the new one's alone", n)
	}
}
