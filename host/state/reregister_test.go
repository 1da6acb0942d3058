package state

import (
	"errors"
	"slices"
	"strings"
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

// After a job is purged and registered again, the instance queries leave
// out what the purged instance left (allocations, deployments), which the
// plain ones keep for schedulers; with no job registered, they hold
// everything of the ID.
func TestInstanceQueries_LeaveOutAPurgedInstance(t *testing.T) {
	s, _ := NewStore()
	write := func(i uint64, fn func(tx *Txn) error) {
		t.Helper()
		if err := s.Write(i, fn); err != nil {
			t.Fatal(err)
		}
	}
	job := func() *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1,
			Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}}}}
	}
	alloc := func(tx *Txn, id string) error {
		return tx.UpsertAlloc(&sdk.Allocation{ID: id, Namespace: "default", JobID: "web", Job: tx.Job("default", "web"),
			TaskGroup: "g", NodeID: "n1", DesiredStatus: "run"})
	}
	deployment := func(tx *Txn, id string) error {
		j := tx.Job("default", "web")
		return tx.UpsertDeployment(&sdk.Deployment{ID: id, Namespace: "default", JobID: "web", JobVersion: j.Version,
			JobCreateIndex: j.CreateIndex, Status: sdk.DeploymentStatusRunning})
	}
	ids := func(allocs []*sdk.Allocation, ds []*sdk.Deployment) string {
		var out []string
		for _, a := range allocs {
			out = append(out, a.ID)
		}
		for _, d := range ds {
			out = append(out, d.ID)
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	write(1, func(tx *Txn) error { return tx.UpsertJob(job()) })
	write(2, func(tx *Txn) error { return errors.Join(alloc(tx, "a1"), deployment(tx, "d1")) })
	write(3, func(tx *Txn) error { return tx.DeleteJob("default", "web") })
	snap := s.Snapshot()
	if got := ids(snap.AllocsByJobInstance("default", "web"), snap.DeploymentsByJobInstance("default", "web")); got != "a1,d1" {
		t.Errorf("with no job registered: %s, want every allocation and deployment of the ID", got)
	}
	write(4, func(tx *Txn) error { return tx.UpsertJob(job()) })
	snap = s.Snapshot()
	if got := ids(snap.AllocsByJobInstance("default", "web"), snap.DeploymentsByJobInstance("default", "web")); got != "" {
		t.Errorf("registered again: %s, want nothing of the purged instance", got)
	}
	if d := snap.LatestDeploymentByJobInstance("default", "web"); d != nil {
		t.Errorf("registered again, the latest deployment is the purged instance's %s", d.ID)
	}
	if d := snap.LatestDeployment("default", "web"); d == nil || d.ID != "d1" {
		t.Errorf("schedulers' latest deployment %v, want d1", d)
	}
	// An allocation that names its version only by JobModifyIndex (no Job)
	// is told apart by it.
	write(5, func(tx *Txn) error {
		return errors.Join(alloc(tx, "a2"), deployment(tx, "d2"),
			tx.UpsertAlloc(&sdk.Allocation{ID: "a0", Namespace: "default", JobID: "web", JobModifyIndex: 1, TaskGroup: "g", NodeID: "n1"}))
	})
	snap = s.Snapshot()
	if got := ids(snap.AllocsByJobInstance("default", "web"), snap.DeploymentsByJobInstance("default", "web")); got != "a2,d2" {
		t.Errorf("the new instance's: %s, want a2,d2", got)
	}
	if got := ids(snap.AllocsByJob("default", "web"), snap.DeploymentsByJob("default", "web")); got != "a0,a1,a2,d1,d2" {
		t.Errorf("every instance's: %s", got)
	}
	if d := snap.LatestDeploymentByJobInstance("default", "web"); d == nil || d.ID != "d2" {
		t.Errorf("latest deployment %v, want d2", d)
	}
}
