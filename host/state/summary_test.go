package state

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestJobSummaryKept: a job's kept summary takes, group by group, the
// queued count of the eval written last with one (not a canceled one's),
// keeps it when that
// eval is deleted, counts the terminal allocations of the job's instance
// deleted, by client status (not a running one's, nor an earlier
// instance's), and goes with the job when it is purged.
func TestJobSummaryKept(t *testing.T) {
	s, _ := NewStore()
	write := writer(t, s)
	register := func() {
		write(func(tx *Txn) error {
			return tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "web", Type: "batch", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 4}}})
		})
	}
	eval := func(id, status string, queued map[string]int) {
		write(func(tx *Txn) error {
			return tx.UpsertEval(&sdk.Evaluation{ID: id, Namespace: "default", JobID: "web", Status: status, QueuedAllocations: queued})
		})
	}
	alloc := func(id, status string) {
		write(func(tx *Txn) error {
			job := tx.Job("default", "web")
			return tx.UpsertAlloc(&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g", Job: job, NodeID: "n1",
				DesiredStatus: "run", ClientStatus: status})
		})
	}
	collect := func(ids ...string) {
		write(func(tx *Txn) error {
			for _, id := range ids {
				if tx.Eval(id) != nil {
					if err := tx.DeleteEval(id); err != nil {
						return err
					}
					continue
				}
				if err := tx.DeleteAlloc(id); err != nil {
					return err
				}
			}
			return nil
		})
	}
	kept := func() string {
		k := s.Snapshot().JobSummaryKept("default", "web")
		if k == nil {
			return "none"
		}
		return fmt.Sprintf("queued %v collected %v", k.Queued, k.Collected)
	}
	check := func(step, want string) {
		t.Helper()
		if got := kept(); got != want {
			t.Fatalf("%s: kept %s, want %s", step, got, want)
		}
	}

	register()
	check("registered", "none")
	eval("e1", sdk.EvalStatusComplete, map[string]int{"g": 2})
	eval("e2", sdk.EvalStatusPending, nil)
	check("an eval with a count, then one without", "queued map[g:2] collected map[]")
	eval("e3", sdk.EvalStatusComplete, map[string]int{"g": 0})
	eval("b1", sdk.EvalStatusCanceled, map[string]int{"g": 1})
	check("a later count, then a canceled eval's", "queued map[g:0] collected map[]")
	collect("e3")
	check("the eval that counted collected", "queued map[g:0] collected map[]")
	eval("e4", sdk.EvalStatusComplete, map[string]int{"h": 3})
	check("an eval naming another group leaves g's", "queued map[g:0 h:3] collected map[]")

	alloc("a1", sdk.AllocClientStatusComplete)
	alloc("a2", sdk.AllocClientStatusFailed)
	alloc("a3", sdk.AllocClientStatusLost)
	alloc("a4", sdk.AllocClientStatusRunning)
	collect("a1", "a2", "a3", "a4")
	check("allocations collected", "queued map[g:0 h:3] collected map[g:{1 1 1}]")

	write(func(tx *Txn) error { return tx.DeleteJob("default", "web") })
	check("purged", "none")
	register()
	alloc("a5", sdk.AllocClientStatusComplete)
	// An earlier instance's allocation, left to garbage collection.
	write(func(tx *Txn) error {
		old := &sdk.Job{Namespace: "default", ID: "web", Type: "batch", CreateIndex: 1, JobModifyIndex: 1}
		return tx.UpsertAlloc(&sdk.Allocation{ID: "a0", Namespace: "default", JobID: "web", TaskGroup: "g", Job: old, NodeID: "n1",
			JobModifyIndex: 1, DesiredStatus: "run", ClientStatus: sdk.AllocClientStatusComplete})
	})
	collect("a0", "a5")
	check("registered again", "queued map[] collected map[g:{1 0 0}]")
}
