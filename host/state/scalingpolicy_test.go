package state

import (
	"reflect"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// A group's scaling policy gets its ID and indexes from the job writes
// that carry it, as Nomad's scaling policy table does: the ID stays while
// the group keeps a policy of that type, CreateIndex is the write that
// added it, ModifyIndex the last that changed it. Each step writes the job
// at the step's index (a purge instead when job is nil).
func TestScalingPolicyIdentity(t *testing.T) {
	type want struct {
		sameID      string // "" a new ID; else the name of the step whose ID it keeps
		create      uint64
		modify      uint64
		version     uint64
		listedCount int    // policies listed in the namespace
		tableIndex  uint64 // TableScalingPolicies' index after the step
	}
	policy := func(max int64) *sdk.ScalingPolicy {
		return &sdk.ScalingPolicy{Type: "horizontal", Min: 1, Max: max, Enabled: true, Policy: sdk.Opaque{"cooldown": "1m"}}
	}
	mk := func(count int, p *sdk.ScalingPolicy) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*sdk.TaskGroup{
			{Name: "g", Count: count, Scaling: p, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}},
			{Name: "other", Count: 1, Tasks: []*sdk.Task{{Name: "t", Driver: "docker"}}},
		}}
	}
	sentID := policy(5)
	sentID.ID, sentID.CreateIndex, sentID.Target = "from-the-client", 1, map[string]string{"Job": "elsewhere"}

	steps := []struct {
		name string
		job  *sdk.Job
		want want
	}{
		{"register", mk(2, policy(5)), want{create: 10, modify: 10, version: 0, listedCount: 1, tableIndex: 10}},
		{"same spec again", mk(2, policy(5)), want{sameID: "register", create: 10, modify: 10, version: 0, listedCount: 1, tableIndex: 10}},
		{"client-sent identity ignored", mk(2, sentID), want{sameID: "register", create: 10, modify: 10, version: 0, listedCount: 1, tableIndex: 10}},
		{"count changes, policy does not", mk(3, policy(5)), want{sameID: "register", create: 10, modify: 10, version: 1, listedCount: 1, tableIndex: 10}},
		{"policy changes", mk(3, policy(8)), want{sameID: "register", create: 10, modify: 50, version: 2, listedCount: 1, tableIndex: 50}},
		{"policy removed", mk(3, nil), want{version: 3, listedCount: 0, tableIndex: 60}},
		{"policy added again", mk(3, policy(8)), want{sameID: "register", create: 70, modify: 70, version: 4, listedCount: 1, tableIndex: 70}},
		{"purged", nil, want{listedCount: 0, tableIndex: 80}},
		{"registered after the purge", mk(3, policy(8)), want{create: 90, modify: 90, version: 0, listedCount: 1, tableIndex: 90}},
	}
	s, _ := NewStore()
	ids := map[string]string{}
	seen := map[string]bool{}
	for i, st := range steps {
		index := uint64(10 * (i + 1))
		var sent sdk.ScalingPolicy // the policy as the write gave it
		if st.job != nil && st.job.TaskGroups[0].Scaling != nil {
			sent = *st.job.TaskGroups[0].Scaling
		}
		given := st.job
		if st.job != nil {
			given = &sdk.Job{}
			*given = *st.job
		}
		if err := s.Write(index, func(tx *Txn) error {
			if st.job == nil {
				return tx.DeleteJob("default", "web")
			}
			return tx.UpsertJob(st.job)
		}); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		snap := s.Snapshot()
		if got := len(snap.ScalingPolicies("default")); got != st.want.listedCount {
			t.Fatalf("%s: %d policies listed, want %d", st.name, got, st.want.listedCount)
		}
		if got := snap.TableIndex(TableScalingPolicies); got != st.want.tableIndex {
			t.Errorf("%s: the policies' index is %d, want %d", st.name, got, st.want.tableIndex)
		}
		if st.job == nil || st.job.TaskGroups[0].Scaling == nil {
			continue
		}
		j := snap.Job("default", "web")
		p := j.TaskGroups[0].Scaling
		if j.Version != st.want.version {
			t.Errorf("%s: job version %d, want %d", st.name, j.Version, st.want.version)
		}
		if p.CreateIndex != st.want.create || p.ModifyIndex != st.want.modify {
			t.Errorf("%s: indexes %d/%d, want %d/%d", st.name, p.CreateIndex, p.ModifyIndex, st.want.create, st.want.modify)
		}
		if tg := p.Target; tg["Namespace"] != "default" || tg["Job"] != "web" || tg["Group"] != "g" || len(tg) != 3 {
			t.Errorf("%s: target %v", st.name, tg)
		}
		switch {
		case st.want.sameID != "" && p.ID != ids[st.want.sameID]:
			t.Errorf("%s: ID %q, want step %q's %q", st.name, p.ID, st.want.sameID, ids[st.want.sameID])
		case st.want.sameID == "" && (seen[p.ID] || len(p.ID) != 36):
			t.Errorf("%s: ID %q, want a new one", st.name, p.ID)
		}
		ids[st.name], seen[p.ID] = p.ID, true
		if got := snap.ScalingPolicy(p.ID); got != p {
			t.Errorf("%s: ScalingPolicy(%q) = %+v", st.name, p.ID, got)
		}
		if !reflect.DeepEqual(*given.TaskGroups[0].Scaling, sent) {
			t.Errorf("%s: the written job's policy was changed in place: %+v", st.name, given.TaskGroups[0].Scaling)
		}
	}
}

// Stopping a job (a write of a shallow copy of the stored one) keeps its
// policy as it is and changes nothing the store holds in place.
func TestScalingPolicyIdentity_StopKeepsThePolicy(t *testing.T) {
	s, _ := NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*sdk.TaskGroup{
		{Name: "g", Count: 1, Scaling: &sdk.ScalingPolicy{Type: "horizontal", Max: 3, Enabled: true}}}}
	if err := s.Write(5, func(tx *Txn) error { return tx.UpsertJob(job) }); err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot().Job("default", "web")
	stored := *before.TaskGroups[0].Scaling
	if err := s.Write(6, func(tx *Txn) error {
		c := *tx.Job("default", "web")
		c.Stop = true
		return tx.UpsertJob(&c)
	}); err != nil {
		t.Fatal(err)
	}
	after := s.Snapshot().Job("default", "web")
	if !after.Stop || !reflect.DeepEqual(after.TaskGroups[0].Scaling, before.TaskGroups[0].Scaling) {
		t.Fatalf("stopped job's policy %+v, want %+v", after.TaskGroups[0].Scaling, before.TaskGroups[0].Scaling)
	}
	if p := before.TaskGroups[0].Scaling; p.ModifyIndex != stored.ModifyIndex || p.ID != stored.ID {
		t.Fatalf("the stored policy changed in place: %+v", p)
	}
}

// A server that restores a snapshot written before policies had an
// identity gives them the ID a server applying the job's registration
// gives: the replicas agree whichever way they came by the job.
func TestScalingPolicyIdentity_RestoredFromAnOlderSnapshot(t *testing.T) {
	mk := func() *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*sdk.TaskGroup{
			{Name: "g", Count: 1, Scaling: &sdk.ScalingPolicy{Type: "horizontal", Max: 3, Enabled: true}}}}
	}
	applied, _ := NewStore()
	if err := applied.Write(900, func(tx *Txn) error { return tx.UpsertJob(mk()) }); err != nil {
		t.Fatal(err)
	}
	old := mk() // as an older server stored it: indexes, no policy identity
	old.CreateIndex, old.ModifyIndex, old.JobModifyIndex = 900, 900, 900
	restored, _ := NewStore()
	if err := restored.Restore(900, func(tx *Txn) error { return tx.UpsertJob(old) }); err != nil {
		t.Fatal(err)
	}
	a, b := applied.Snapshot().ScalingPolicies("default"), restored.Snapshot().ScalingPolicies("default")
	if len(a) != 1 || len(b) != 1 || !reflect.DeepEqual(a[0], b[0]) {
		t.Fatalf("applied %+v, restored %+v", a, b)
	}
	if got := restored.Snapshot().ScalingPolicy(a[0].ID); got == nil {
		t.Fatalf("the restored policy is not found by its ID %s", a[0].ID)
	}
}

// A dispatched or periodic child carries its parent's policy, as Nomad's
// children do: it gets no identity of its own and is not listed, and its
// writes leave the policies' index alone.
func TestScalingPolicyIdentity_ChildrenCarryTheParents(t *testing.T) {
	s, _ := NewStore()
	parent := &sdk.Job{Namespace: "default", ID: "report", Type: "batch", TaskGroups: []*sdk.TaskGroup{
		{Name: "g", Count: 1, Scaling: &sdk.ScalingPolicy{Type: "horizontal", Max: 3, Enabled: true}}}}
	if err := s.Write(10, func(tx *Txn) error { return tx.UpsertJob(parent) }); err != nil {
		t.Fatal(err)
	}
	stored := s.Snapshot().Job("default", "report")
	child := *stored
	child.ID, child.ParentID = "report/dispatch-1", "report"
	if err := s.Write(11, func(tx *Txn) error { return tx.UpsertJob(&child) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(12, func(tx *Txn) error { return tx.DeleteJob("default", child.ID) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(13, func(tx *Txn) error { return tx.UpsertJob(&child) }); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	ps := snap.ScalingPolicies("*")
	if len(ps) != 1 || ps[0].Target["Job"] != "report" || snap.TableIndex(TableScalingPolicies) != 10 {
		t.Fatalf("policies %+v, index %d; want the parent's alone, at 10", ps, snap.TableIndex(TableScalingPolicies))
	}
	if got := snap.Job("default", child.ID).TaskGroups[0].Scaling; !reflect.DeepEqual(got, stored.TaskGroups[0].Scaling) {
		t.Fatalf("the child's policy %+v, want the parent's %+v", got, stored.TaskGroups[0].Scaling)
	}
	if got := snap.ScalingPolicy(ps[0].ID); got != stored.TaskGroups[0].Scaling {
		t.Fatalf("ScalingPolicy(%s) = %+v, want the parent's", ps[0].ID, got)
	}
}
