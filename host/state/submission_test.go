package state

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// A submission is kept with the job version it registered, stays the
// version's first one, goes when its version is no longer kept, and goes
// with the job when it is purged.
func TestJobSubmission_KeptWithItsVersion(t *testing.T) {
	s, _ := NewStore()
	write := writer(t, s)
	register := func(count int, source string) {
		t.Helper()
		write(func(tx *Txn) error {
			if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "web", Type: "service",
				TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: count}}}); err != nil {
				return err
			}
			if source == "" {
				return nil
			}
			return tx.UpsertJobSubmission("default", "web", &JobSubmission{Source: source, Format: "hcl2",
				VariableFlags: map[string]string{"count": fmt.Sprint(count)}})
		})
	}
	sources := func() map[uint64]string {
		out := map[uint64]string{}
		for _, sub := range s.Snapshot().JobSubmissions() {
			if sub.Namespace != "default" || sub.JobID != "web" {
				t.Fatalf("submission of %s/%s", sub.Namespace, sub.JobID)
			}
			out[sub.Version] = sub.Source
		}
		return out
	}

	register(1, "count = 1")
	sub := s.Snapshot().JobSubmission("default", "web", 0)
	if sub == nil || sub.Source != "count = 1" || sub.Version != 0 || sub.JobModifyIndex != 1 || sub.VariableFlags["count"] != "1" {
		t.Fatalf("version 0's submission: %+v", sub)
	}
	// The same spec again makes no new version; its first source stays.
	register(1, "count = 1 # again")
	if got := sources(); len(got) != 1 || got[0] != "count = 1" {
		t.Fatalf("after the same spec again: %v", got)
	}
	// A version registered without a source has none, and does not get
	// one from a registration of the same spec that made no new version.
	register(2, "")
	register(2, "count = 2")
	if s.Snapshot().JobSubmission("default", "web", 1) != nil {
		t.Fatal("version 1 has a submission it was not registered with")
	}
	for c := 3; c <= 8; c++ {
		register(c, fmt.Sprintf("count = %d", c))
	}
	// Versions 2 to 7 are kept (JobTrackedVersions), and their sources.
	want := map[uint64]string{}
	for v := uint64(2); v <= 7; v++ {
		if s.Snapshot().JobVersion("default", "web", v) == nil {
			t.Fatalf("version %d not kept", v)
		}
		want[v] = fmt.Sprintf("count = %d", v+1)
	}
	if got := sources(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("kept sources %v, want %v", got, want)
	}
	if index := s.LatestIndex(); s.Snapshot().TableIndex(TableSubmissions) != index {
		t.Fatalf("submission table index %d, want %d", s.Snapshot().TableIndex(TableSubmissions), index)
	}

	write(func(tx *Txn) error { return tx.DeleteJob("default", "web") })
	if got := sources(); len(got) != 0 {
		t.Fatalf("after the purge: %v", got)
	}
	// A submission needs its job.
	if err := s.Write(s.LatestIndex()+1, func(tx *Txn) error {
		return tx.UpsertJobSubmission("default", "web", &JobSubmission{Source: "x"})
	}); err == nil {
		t.Fatal("a submission for a missing job was kept")
	}
}

// writer returns a function that writes fn to s at the next index,
// failing the test on an error.
func writer(t *testing.T, s *Store) func(fn func(tx *Txn) error) {
	index := s.LatestIndex()
	return func(fn func(tx *Txn) error) {
		t.Helper()
		index++
		if err := s.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
}
