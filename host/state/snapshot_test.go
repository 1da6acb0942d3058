package state

import (
	"fmt"
	mrand "math/rand"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
)

// TestSnapshot_DeltaEqualsFull drives random writes and checks, at every
// step, that a mirror kept by deltas (forwards and backwards) holds exactly
// what a full sync at the same index holds; so does one kept by compacted
// deltas (abi.StateSync.CompactJobs, as ABI 1.3 plugins get them).
func TestSnapshot_DeltaEqualsFull(t *testing.T) {
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	index := uint64(0)
	write := func(fn func(tx *Txn) error) {
		index++
		if err := s.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	job := func(v int) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: fmt.Sprintf("job-%d", v%3), Type: "service", Priority: 50 + v,
			TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: v}}}
	}
	var snaps []*Snapshot
	fwd, compact := mirror.New(), mirror.New()
	statuses := 0
	for step := 0; step < 300; step++ {
		switch r.IntN(6) {
		case 5:
			write(func(tx *Txn) error {
				id := fmt.Sprintf("e%d", r.IntN(10))
				if r.IntN(3) == 0 {
					return tx.DeleteEval(id)
				}
				return tx.UpsertEval(&sdk.Evaluation{ID: id, Namespace: "default", JobID: "job-0",
					Status: []string{"pending", "complete", "blocked"}[r.IntN(3)]})
			})
		case 0:
			write(func(tx *Txn) error {
				return tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("n%d", r.IntN(8)), Status: sdk.NodeStatusReady})
			})
		case 1:
			write(func(tx *Txn) error { return tx.UpsertJob(job(r.IntN(10))) })
		case 2, 3:
			write(func(tx *Txn) error {
				j := tx.Job("default", fmt.Sprintf("job-%d", r.IntN(3)))
				if j == nil {
					return nil
				}
				desired := sdk.AllocDesiredStatusRun
				if r.IntN(4) == 0 {
					desired = sdk.AllocDesiredStatusStop
				}
				return tx.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("a%d", r.IntN(20)), Namespace: "default",
					JobID: j.ID, Job: j, NodeID: fmt.Sprintf("n%d", r.IntN(8)), DesiredStatus: desired,
					AllocatedResources: &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
						"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: int64(r.IntN(500))}}}}})
			})
		case 4:
			write(func(tx *Txn) error {
				if a := tx.Alloc(fmt.Sprintf("a%d", r.IntN(20))); a != nil {
					return tx.DeleteAlloc(a.ID)
				}
				return nil
			})
		}
		snap := s.Snapshot()
		snaps = append(snaps, snap)
		if err := fwd.Apply(snap.Sync(fwd.Index(), true)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		delta := snap.Sync(compact.Index(), true)
		delta.CompactJobs()
		statuses += len(delta.JobStatuses)
		if err := compact.Apply(delta); err != nil {
			t.Fatalf("step %d: compacted delta: %v", step, err)
		}
		full := mirror.New()
		if err := full.Apply(snap.FullSync(true)); err != nil {
			t.Fatal(err)
		}
		if d := diff(fwd, full); d != "" {
			t.Fatalf("step %d (index %d): delta-kept mirror differs from full sync: %s", step, snap.Index(), d)
		}
		if d := diff(compact, full); d != "" {
			t.Fatalf("step %d (index %d): mirror kept by compacted deltas differs from full sync: %s", step, snap.Index(), d)
		}
	}
	if statuses == 0 {
		t.Fatal("no delta carried a job status: the compacted path went untested")
	}
	// Backwards: bring the mirror to older snapshots.
	for _, i := range []int{250, 100, 3} {
		snap := snaps[i]
		if err := fwd.Apply(snap.Sync(fwd.Index(), true)); err != nil {
			t.Fatal(err)
		}
		full := mirror.New()
		_ = full.Apply(snap.FullSync(true))
		if d := diff(fwd, full); d != "" {
			t.Fatalf("backwards to index %d: %s", snap.Index(), d)
		}
	}
}

func diff(a, b *mirror.Mirror) string {
	if a.Index() != b.Index() {
		return fmt.Sprintf("index %d vs %d", a.Index(), b.Index())
	}
	ids := func(ns []*sdk.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.ID+"/"+n.Status)
		}
		return out
	}
	if !slices.Equal(ids(a.Nodes()), ids(b.Nodes())) {
		return fmt.Sprintf("nodes %v vs %v", ids(a.Nodes()), ids(b.Nodes()))
	}
	for _, n := range b.Nodes() {
		if a.NodeUsage(n.ID) != b.NodeUsage(n.ID) {
			return fmt.Sprintf("usage of %s: %+v vs %+v", n.ID, a.NodeUsage(n.ID), b.NodeUsage(n.ID))
		}
		var x, y []string
		for _, al := range a.AllocsByNode(n.ID) {
			x = append(x, al.ID+al.DesiredStatus+fmt.Sprint(al.Job != nil && al.Job.Version == al.JobVersion))
		}
		for _, al := range b.AllocsByNode(n.ID) {
			y = append(y, al.ID+al.DesiredStatus+fmt.Sprint(al.Job != nil && al.Job.Version == al.JobVersion))
		}
		if strings.Join(x, ",") != strings.Join(y, ",") {
			return fmt.Sprintf("allocs of %s: %v vs %v", n.ID, x, y)
		}
	}
	var ea, eb []string
	for _, e := range a.Evals() {
		ea = append(ea, e.ID+e.Status)
	}
	for _, e := range b.Evals() {
		eb = append(eb, e.ID+e.Status)
	}
	if !slices.Equal(ea, eb) {
		return fmt.Sprintf("evals %v vs %v", ea, eb)
	}
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("job-%d", i)
		if !reflect.DeepEqual(a.Job("default", id), b.Job("default", id)) {
			return "job " + id
		}
	}
	return ""
}

func TestStore_JobVersionsRiseOnlyOnSpecChange(t *testing.T) {
	s, _ := NewStore()
	mk := func(count int) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: count}}}
	}
	for i, tc := range []struct {
		count   int
		version uint64
	}{{1, 0}, {1, 0}, {2, 1}, {3, 2}} {
		if err := s.Write(uint64(i+1), func(tx *Txn) error { return tx.UpsertJob(mk(tc.count)) }); err != nil {
			t.Fatal(err)
		}
		if got := s.Snapshot().Job("default", "web").Version; got != tc.version {
			t.Fatalf("write %d: version %d, want %d", i, got, tc.version)
		}
	}
	if n := len(s.Snapshot().JobVersions("default", "web")); n != 3 {
		t.Fatalf("kept %d versions, want 3", n)
	}
}

// TestJobStatus_CarriesWhatSpecOfLeavesOut checks that a job status
// (abi.JobStatus) carries every field the server sets, that is every field
// specOf clears: patched onto a job's specification it gives the job back.
func TestJobStatus_CarriesWhatSpecOfLeavesOut(t *testing.T) {
	r := mrand.New(mrand.NewSource(3))
	for i := 0; i < 20; i++ {
		var j sdk.Job
		v := reflect.ValueOf(&j).Elem()
		for f := 0; f < v.NumField(); f++ {
			field := v.Field(f)
			if field.Type() == reflect.TypeOf(sdk.Opaque{}) {
				field.Set(reflect.ValueOf(sdk.Opaque{"k": "v"}))
				continue
			}
			// quick cannot make values holding interfaces (a group's
			// Opaque parts): such parts stay empty. They are
			// specification; what the server sets are plain fields.
			if val, ok := quick.Value(field.Type(), r); ok {
				field.Set(val)
			}
		}
		// The mirror's job, which a status patches, has the status's
		// JobModifyIndex (mirror.Apply checks it first).
		spec := specOf(&j)
		spec.JobModifyIndex = j.JobModifyIndex
		got := reflect.ValueOf(abi.StatusOf(&j).Patch(&spec)).Elem()
		for f := 0; f < v.NumField(); f++ {
			if !reflect.DeepEqual(got.Field(f).Interface(), v.Field(f).Interface()) {
				t.Errorf("Job.%s: the status does not carry it", v.Type().Field(f).Name)
			}
		}
	}
}

// TestSnapshot_MirrorFromAnotherHistoryGetsAFullSync: a mirror at an index
// the store never reached since its last restore (the store was restored
// to an older state, or the plugin synchronised with another store) cannot
// be brought up to date by a delta, which would leave it what it saw there.
func TestSnapshot_MirrorFromAnotherHistoryGetsAFullSync(t *testing.T) {
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 5; i++ {
		if err := s.Write(i, func(tx *Txn) error {
			return tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("n%d", i), Status: sdk.NodeStatusReady})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if sync := s.Snapshot().Sync(3, false); sync.Full || len(sync.Nodes) != 2 {
		t.Fatalf("from 3 at 5: full %v, %d nodes; want a delta of 2", sync.Full, len(sync.Nodes))
	}
	// A write that journals nothing still moves the journal's top: a
	// mirror synchronised at it is covered.
	if err := s.Write(6, func(tx *Txn) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if sync := s.Snapshot().Sync(6, false); sync.Full {
		t.Fatal("a mirror at the store's own latest index got a full sync")
	}

	if err := s.Restore(2, func(tx *Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n1", Status: sdk.NodeStatusReady})
	}); err != nil {
		t.Fatal(err)
	}
	sync := s.Snapshot().Sync(5, false)
	if !sync.Full || len(sync.Nodes) != 1 || sync.Nodes[0].ID != "n1" {
		t.Fatalf("from 5 after a restore at 2: full %v, %d nodes; want a full sync of n1", sync.Full, len(sync.Nodes))
	}
	if !s.Journal().ChangedBetween(KindNode, 2, 5, 0) {
		t.Fatal("ChangedBetween answered for indexes the restored store never reached")
	}
	// raft numbers the first write after a restore past the old history
	// (here 1 to 6) and the restore itself (7, 8): a mirror from anywhere
	// in that history still loads in full, then deltas resume.
	if err := s.Write(9, func(tx *Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n9", Status: sdk.NodeStatusReady})
	}); err != nil {
		t.Fatal(err)
	}
	for _, from := range []uint64{2, 5, 6} {
		if sync := s.Snapshot().Sync(from, false); !sync.Full || len(sync.Nodes) != 2 {
			t.Fatalf("from %d after the restore and a write at 9: full %v, %d nodes; want a full sync of n1 and n9", from, sync.Full, len(sync.Nodes))
		}
	}
	if err := s.Write(10, func(tx *Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n10", Status: sdk.NodeStatusReady})
	}); err != nil {
		t.Fatal(err)
	}
	if sync := s.Snapshot().Sync(9, false); sync.Full || len(sync.Nodes) != 1 {
		t.Fatalf("from 9 at 10: full %v, %d nodes; want a delta of n10", sync.Full, len(sync.Nodes))
	}
}

// A node restored from a snapshot gets its class computed again: one
// written by an older version holds a class hashed without its devices,
// which would share the class of plain nodes.
func TestRestore_ComputesNodeClassesAgain(t *testing.T) {
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	gpu := &sdk.Node{ID: "gpu", Status: sdk.NodeStatusReady, Datacenter: "dc1", ComputedClass: "v1:42",
		NodeResources: &sdk.NodeResources{Devices: []*sdk.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "t4"}}}}
	restored := *gpu
	if err := s.Restore(2, func(tx *Txn) error { return tx.UpsertNode(&restored) }); err != nil {
		t.Fatal(err)
	}
	want := *gpu
	want.ComputeClass()
	got := s.Snapshot().Node("gpu")
	if got.ComputedClass != want.ComputedClass || !strings.HasPrefix(got.ComputedClass, "v3:") {
		t.Fatalf("restored class %q, want %q", got.ComputedClass, want.ComputedClass)
	}
	if got.ModifyIndex != gpu.ModifyIndex || got.CreateIndex != gpu.CreateIndex {
		t.Fatalf("restore changed the node's indexes to %d/%d", got.CreateIndex, got.ModifyIndex)
	}
}

// TestSync_CarriesTheVersionsAllocationsRun: a sync, full or delta,
// carries one job version per version its allocations run that is not
// their job's current one, and no other, whatever the order in which
// allocations of several jobs and versions come.
func TestSync_CarriesTheVersionsAllocationsRun(t *testing.T) {
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	index := uint64(0)
	for step := 0; step < 400; step++ {
		index++
		err := s.Write(index, func(tx *Txn) error {
			id := fmt.Sprintf("job-%d", r.IntN(3))
			if r.IntN(4) == 0 {
				return tx.UpsertJob(&sdk.Job{Namespace: "default", ID: id, Type: "service", Priority: 50 + r.IntN(40),
					TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1 + r.IntN(5)}}})
			}
			j := tx.Job("default", id)
			if j == nil {
				return nil
			}
			return tx.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("a%d", r.IntN(30)), Namespace: "default",
				JobID: j.ID, Job: j, NodeID: "n1", DesiredStatus: sdk.AllocDesiredStatusRun})
		})
		if err != nil {
			t.Fatal(err)
		}
		snap := s.Snapshot()
		from := uint64(r.IntN(int(index)))
		for _, sync := range []*abi.StateSync{snap.Sync(from, false), snap.FullSync(false)} {
			want := map[versionKeyT]bool{}
			for _, a := range sync.Allocs {
				stored := snap.Alloc(a.ID)
				cur := snap.Job(stored.Namespace, stored.JobID)
				if cur == nil || cur.JobModifyIndex != stored.Job.JobModifyIndex || cur.Version != stored.Job.Version {
					want[versionKeyT{stored.Namespace, stored.JobID, stored.Job.JobModifyIndex}] = true
				}
			}
			got := map[versionKeyT]bool{}
			for _, j := range sync.JobVersions {
				k := versionKeyT{j.Namespace, j.ID, j.JobModifyIndex}
				if got[k] {
					t.Fatalf("step %d: version %v sent twice", step, k)
				}
				got[k] = true
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d (full %v): versions %v, want %v", step, sync.Full, got, want)
			}
		}
	}
}

// TestSync_CSIVolumesReachTheMirror: CSI volumes travel in full syncs and
// deltas, with their claims and without their secrets, and a mirror fed
// both ends up holding what the state holds.
func TestSync_CSIVolumesReachTheMirror(t *testing.T) {
	s, _ := NewStore()
	write := func(index uint64, fn func(tx *Txn) error) {
		t.Helper()
		if err := s.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	job := &sdk.Job{Namespace: "default", ID: "db", Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1,
		Volumes: map[string]sdk.Opaque{"d": {"Type": "csi", "Source": "data", "AccessMode": sdk.CSIAccessModeSingleNodeWriter}}}}}
	write(1, func(tx *Txn) error {
		return tx.RegisterCSIVolumes([]*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs", Secrets: map[string]string{"k": "s3cret"}},
			{Namespace: "default", ID: "old", PluginID: "ebs"}})
	})
	m := mirror.New()
	if err := m.Apply(s.Snapshot().Sync(0, false)); err != nil {
		t.Fatal(err)
	}
	if v := m.CSIVolume("default", "data"); v == nil || v.Secrets != nil || m.CSIVolume("default", "old") == nil {
		t.Fatalf("full sync: %+v", v)
	}
	write(2, func(tx *Txn) error { return tx.UpsertJob(job) })
	write(3, func(tx *Txn) error {
		return tx.UpsertAlloc(&sdk.Allocation{ID: "a1", Namespace: "default", JobID: "db", TaskGroup: "g", Name: "db.g[0]",
			NodeID: "n1", Job: tx.Job("default", "db"), DesiredStatus: sdk.AllocDesiredStatusRun})
	})
	write(4, func(tx *Txn) error { return tx.DeregisterCSIVolumes("default", []string{"old"}) })
	delta := s.Snapshot().Sync(1, false)
	if len(delta.CSIVolumes) != 1 || len(delta.DeletedCSIVolumes) != 1 || delta.CSIVolumes[0].Secrets != nil {
		t.Fatalf("delta: %+v / %+v", delta.CSIVolumes, delta.DeletedCSIVolumes)
	}
	if err := m.Apply(delta); err != nil {
		t.Fatal(err)
	}
	if v := m.CSIVolume("default", "data"); v == nil || v.WriteClaims["a1"] == nil || m.CSIVolume("default", "old") != nil {
		t.Fatalf("after delta: %+v, old %+v", v, m.CSIVolume("default", "old"))
	}
	if s.Snapshot().CSIVolume("default", "data").Secrets["k"] != "s3cret" {
		t.Fatal("the state lost the volume's secrets")
	}
}
