package state

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestJobStatus follows Nomad's getJobStatus (checked against Nomad
// v1.6.1's state store): deleting a job's evals leaves it dead when
// nothing else keeps it running or pending (DELETE /v1/evaluations of a
// blocked job's evals used to leave it pending, as DeleteEval did not have
// the status recomputed); deleting a terminal allocation alone changes
// nothing; and a stopped job with neither evals nor allocations is
// pending, not dead (Drover used to count Stop alone as dead).
func TestJobStatus(t *testing.T) {
	type step func(tx *Txn) error
	eval := func(id, status string) step {
		return func(tx *Txn) error {
			return tx.UpsertEval(&sdk.Evaluation{ID: id, Namespace: "default", JobID: "web", Status: status})
		}
	}
	alloc := func(id, status string) step {
		return func(tx *Txn) error {
			return tx.UpsertAlloc(&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", TaskGroup: "g",
				Job: tx.Job("default", "web"), NodeID: "n1", DesiredStatus: "run", ClientStatus: status})
		}
	}
	deleteEvals := func(ids ...string) step {
		return func(tx *Txn) error {
			for _, id := range ids {
				if err := tx.DeleteEval(id); err != nil {
					return err
				}
			}
			return nil
		}
	}
	deleteAlloc := func(id string) step { return func(tx *Txn) error { return tx.DeleteAlloc(id) } }
	for _, tc := range []struct {
		name  string
		stop  bool
		steps []step
		want  string
	}{
		{"registered, no eval yet", false, nil, sdk.JobStatusPending},
		{"an open eval", false, []step{eval("e1", sdk.EvalStatusPending)}, sdk.JobStatusPending},
		{"a blocked eval, deleted", false, []step{eval("e1", sdk.EvalStatusBlocked), deleteEvals("e1")}, sdk.JobStatusDead},
		{"one of two open evals deleted", false,
			[]step{eval("e1", sdk.EvalStatusComplete), eval("e2", sdk.EvalStatusBlocked), deleteEvals("e1")}, sdk.JobStatusPending},
		{"a live allocation, its evals deleted", false,
			[]step{eval("e1", sdk.EvalStatusComplete), alloc("a1", sdk.AllocClientStatusRunning), deleteEvals("e1")}, sdk.JobStatusRunning},
		{"a complete eval, deleted", false, []step{eval("e1", sdk.EvalStatusComplete), deleteEvals("e1")}, sdk.JobStatusDead},
		{"a terminal allocation deleted alone", false,
			[]step{alloc("a1", sdk.AllocClientStatusComplete), deleteAlloc("a1")}, sdk.JobStatusDead},
		{"stopped, nothing else", true, nil, sdk.JobStatusPending},
		{"stopped, its eval complete", true, []step{eval("e1", sdk.EvalStatusComplete)}, sdk.JobStatusDead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := NewStore()
			write := writer(t, s)
			write(func(tx *Txn) error {
				return tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "web", Type: sdk.JobTypeBatch, Stop: tc.stop,
					TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1}}})
			})
			for _, st := range tc.steps {
				write(st)
			}
			if got := s.Snapshot().Job("default", "web").Status; got != tc.want {
				t.Fatalf("status %s, want %s", got, tc.want)
			}
		})
	}
}
