package state

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/mirror"
)

// After a job is purged and registered again, version numbers start over;
// a plugin's mirror must still link each allocation to the version it
// runs, as the store does, through full syncs and deltas alike.
func TestSync_PurgedAndReregisteredJobKeepsVersionsApart(t *testing.T) {
	s, _ := NewStore()
	image := func(j *sdk.Job) any { return j.TaskGroups[0].Tasks[0].Config["image"] }
	mk := func(img string) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1,
			Tasks: []*sdk.Task{{Name: "t", Driver: "docker", Config: sdk.Opaque{"image": img}}}}}}
	}
	write := func(i uint64, fn func(tx *Txn) error) {
		if err := s.Write(i, fn); err != nil {
			t.Fatal(err)
		}
	}
	alloc := func(id string, j *sdk.Job) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: "web", Job: j, TaskGroup: "g", NodeID: "n1", DesiredStatus: "run"}
	}
	write(1, func(tx *Txn) error { return tx.UpsertJob(mk("v1")) })
	write(2, func(tx *Txn) error { return tx.UpsertAlloc(alloc("a1", tx.Job("default", "web"))) })
	fwd := mirror.New()
	if err := fwd.Apply(s.Snapshot().Sync(0, false)); err != nil {
		t.Fatal(err)
	}
	write(3, func(tx *Txn) error { return tx.DeleteJob("default", "web") })
	write(4, func(tx *Txn) error { return tx.UpsertJob(mk("v2")) })
	write(5, func(tx *Txn) error { return tx.UpsertAlloc(alloc("a2", tx.Job("default", "web"))) })
	// The old allocation changes after the new registration: the delta
	// carries the old version again.
	write(6, func(tx *Txn) error {
		c := *tx.Alloc("a1")
		c.ClientStatus = sdk.AllocClientStatusRunning
		return tx.UpsertAlloc(&c)
	})
	snap := s.Snapshot()
	if err := fwd.Apply(snap.Sync(fwd.Index(), false)); err != nil {
		t.Fatal(err)
	}
	full := mirror.New()
	if err := full.Apply(snap.Sync(0, false)); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*mirror.Mirror{"delta": fwd, "full": full} {
		for id, want := range map[string]string{"a1": "v1", "a2": "v2"} {
			stored := snap.Alloc(id)
			got := m.Alloc(id)
			if got.Job == nil || got.Job.JobModifyIndex != stored.Job.JobModifyIndex || image(got.Job) != want {
				t.Errorf("%s mirror: %s runs %+v, the store says image %s (job modify index %d)", name, id, got.Job, want, stored.Job.JobModifyIndex)
			}
		}
		if j := m.Job("default", "web"); image(j) != "v2" {
			t.Errorf("%s mirror: current job is %v", name, image(j))
		}
		if v := m.JobVersion("default", "web", 0); v == nil || image(v) != "v2" {
			t.Errorf("%s mirror: JobVersion(0) is not the current registration's", name)
		}
	}
}
