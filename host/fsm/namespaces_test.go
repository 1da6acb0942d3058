package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// Namespace and node pool entries, applied through the log: a job (or a
// new variable) needs its namespace and pool as the entry applies; a
// namespace or pool is not deleted while something is in it; the
// built-ins are neither changed nor deleted; a node registering makes its
// pool; an older version's entries make what they name.
func TestFSM_NamespaceAndNodePoolEntries(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := func(ns, pool string) *sdk.Job {
		return &sdk.Job{Namespace: ns, ID: "web", Name: "web", Type: sdk.JobTypeService, NodePool: pool, Status: sdk.JobStatusPending}
	}
	register := func(j *sdk.Job) *JobRegisterRequest { return &JobRegisterRequest{Job: j, RefsMustExist: true} }
	variable := func(ns string) *VariableApplyRequest {
		return &VariableApplyRequest{Op: VarOpSet, RefsMustExist: true,
			Var: &state.Variable{Namespace: ns, Path: "app/db", KeyID: "k1", Data: []byte{1}}}
	}
	steps := []struct {
		typ  MessageType
		msg  msgp.Marshaler
		want error
	}{
		/* 1 */ {NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "prod", Description: "production",
			Capabilities: &state.NamespaceCapabilities{DisabledTaskDrivers: []string{"raw_exec"}}}}}, nil},
		/* 2 */ {JobRegisterRequestType, register(job("staging", "default")), state.ErrNonexistent},
		/* 3 */ {JobRegisterRequestType, register(job("prod", "gpu")), state.ErrNonexistent},
		/* 4 */ {NodePoolUpsertRequestType, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "gpu", Meta: map[string]string{"v": "1"}}}}, nil},
		/* 5 */ {NodePoolUpsertRequestType, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "all", Description: "mine"}}}, state.ErrBuiltIn},
		/* 6 */ {JobRegisterRequestType, register(job("prod", "gpu")), nil},
		/* 7 */ {NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"prod"}}, state.ErrInUse},
		/* 8 */ {NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"gpu"}}, state.ErrInUse},
		/* 9 */ {NodeRegisterRequestType, &NodeRegisterRequest{Node: &sdk.Node{ID: "n1", NodePool: "edge", Status: sdk.NodeStatusReady}}, nil},
		/* 10 */ {NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"edge"}}, state.ErrInUse},
		/* 11 */ {NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"default"}}, state.ErrBuiltIn},
		/* 12 */ {NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"default"}}, state.ErrBuiltIn},
		/* 13 */ {NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"nope"}}, state.ErrNotFound},
		// A new variable needs its namespace; the job gone, the variable
		// keeps the namespace in use.
		/* 14 */ {RootKeyUpsertRequestType, &RootKeyUpsertRequest{Keys: []*state.RootKey{{KeyID: "k1", Algorithm: "aes256-gcm",
			State: state.RootKeyActive, Key: []byte("k1")}}}, nil},
		/* 15 */ {VariableApplyRequestType, variable("staging"), state.ErrNonexistent},
		/* 16 */ {VariableApplyRequestType, variable("prod"), nil},
		/* 17 */ {JobDeregisterRequestType, &JobDeregisterRequest{Namespace: "prod", JobID: "web", Purge: true}, nil},
		/* 18 */ {NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"prod"}}, state.ErrInUse},
		/* 19 */ {NodePoolDeleteRequestType, &NodePoolDeleteRequest{Names: []string{"gpu"}}, nil},
		/* 20 */ {VariableApplyRequestType, &VariableApplyRequest{Op: VarOpDelete, Var: &state.Variable{Namespace: "prod", Path: "app/db"}}, nil},
		/* 21 */ {NamespaceDeleteRequestType, &NamespaceDeleteRequest{Names: []string{"prod"}}, nil},
		// An older version's entries (no RefsMustExist) make what they name.
		/* 22 */ {JobRegisterRequestType, &JobRegisterRequest{Job: job("legacy", "old")}, nil},
		/* 23 */ {VariableApplyRequestType, &VariableApplyRequest{Op: VarOpSet,
			Var: &state.Variable{Namespace: "legacy-vars", Path: "a", KeyID: "k1", Data: []byte{1}}}, nil},
		// The default namespace may be written; it keeps its creation.
		/* 24 */ {NamespaceUpsertRequestType, &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "default", Description: "ours"}}}, nil},
	}
	for i, st := range steps {
		if err := applyEntry(t, f, uint64(i+1), st.typ, st.msg); !errors.Is(err, st.want) {
			t.Fatalf("step %d (%T): err = %v, want %v", i+1, st.msg, err, st.want)
		}
	}
	snap := store.Snapshot()
	var names []string
	for _, ns := range snap.Namespaces() {
		names = append(names, ns.Name)
	}
	if got := strings.Join(names, ","); got != "default,legacy,legacy-vars" {
		t.Fatalf("namespaces %s", got)
	}
	if d := snap.Namespace("default"); d.Description != "ours" || d.CreateIndex != 1 || d.ModifyIndex != 24 {
		t.Fatalf("default namespace %+v", d)
	}
	if ns := snap.Namespace("legacy"); ns == nil || ns.CreateIndex != 22 {
		t.Fatalf("legacy namespace %+v", ns)
	}
	names = nil
	for _, p := range snap.NodePools() {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "all,default,edge,old" {
		t.Fatalf("node pools %s", got)
	}
	if p := snap.NodePool("edge"); p.CreateIndex != 9 {
		t.Fatalf("edge pool %+v", p)
	}
}

// A snapshot an older version wrote, from when namespaces and node pools
// were implicit, restores with those its jobs, variables and nodes were
// in; a current one restores with what it holds, and no more: a namespace
// deleted while a dead job was left in it stays deleted.
func TestSnapshot_OlderSnapshotMakesImplicitNamespacesAndPools(t *testing.T) {
	src, _ := state.NewStore()
	write := func(index uint64, fn func(tx *state.Txn) error) {
		t.Helper()
		if err := src.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(2, func(tx *state.Txn) error { return tx.MakeRefsExplicit() })
	write(3, func(tx *state.Txn) error {
		return tx.UpsertJob(&sdk.Job{Namespace: "team-a", ID: "web", Type: sdk.JobTypeService, NodePool: "gpu"})
	})
	write(5, func(tx *state.Txn) error {
		return tx.UpsertJob(&sdk.Job{Namespace: "team-a", ID: "db", Type: sdk.JobTypeService, NodePool: "default"})
	})
	write(7, func(tx *state.Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n1", NodePool: "edge", Status: "ready"})
	})
	write(8, func(tx *state.Txn) error {
		return tx.SetVariable(&state.Variable{Namespace: "vars-only", Path: "a", KeyID: "k", Data: []byte{1}})
	})
	var current bytes.Buffer
	if err := writeSnapshot(&current, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	older := withoutRecords(t, current.Bytes(), []byte{recNamespace, recNodePool}, state.TableNamespaces, state.TableNodePools,
		state.RefsExplicitKey)
	dst, err := ReadSnapshot(bytes.NewReader(older))
	if err != nil {
		t.Fatal(err)
	}
	snap := dst.Snapshot()
	for name, want := range map[string][2]uint64{"team-a": {3, 5}, "vars-only": {8, 8}} {
		if ns := snap.Namespace(name); ns == nil || ns.CreateIndex != want[0] || ns.ModifyIndex != want[1] {
			t.Errorf("namespace %s = %+v, want created at %d, modified at %d", name, ns, want[0], want[1])
		}
	}
	for name, want := range map[string]uint64{"gpu": 3, "edge": 7} {
		if p := snap.NodePool(name); p == nil || p.CreateIndex != want {
			t.Errorf("node pool %s = %+v, want created at %d", name, p, want)
		}
	}
	if snap.TableIndex(state.TableNamespaces) != 8 {
		t.Errorf("namespaces table index %d", snap.TableIndex(state.TableNamespaces))
	}

	// The current snapshot restores as it is: its jobs are in namespaces
	// and pools without rows here (as dead jobs stay in a namespace
	// deleted), and none is made for them.
	dst, err = ReadSnapshot(bytes.NewReader(current.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if snap := dst.Snapshot(); snap.Namespace("team-a") != nil || snap.NodePool("gpu") != nil {
		t.Fatalf("a current snapshot made namespaces or pools: %+v %+v", snap.Namespace("team-a"), snap.NodePool("gpu"))
	}
}

// A rolling upgrade: one server replays an older version's entries, and
// keeps the namespaces and pools they made though nothing is in them any
// more (a job purged, a node gone); another restores that version's
// snapshot taken after them, with only those in use. From the same log
// the two must decide alike: a job in the namespace the purged job made,
// and what a namespace or pool write finds, are the same on both.
func TestFSM_OlderEntriesAndOlderSnapshotAgree(t *testing.T) {
	replayed, _ := state.NewStore()
	fr := New(replayed, nil, zerolog.Nop())
	job := func(ns, id, pool string) *sdk.Job {
		return &sdk.Job{Namespace: ns, ID: id, Name: id, Type: sdk.JobTypeService, NodePool: pool, Status: sdk.JobStatusPending}
	}
	older := []struct {
		typ MessageType
		msg msgp.Marshaler
	}{
		{JobRegisterRequestType, &JobRegisterRequest{Job: job("tmp", "a", "batch")}},
		{JobDeregisterRequestType, &JobDeregisterRequest{Namespace: "tmp", JobID: "a", Purge: true}},
		{NodeRegisterRequestType, &NodeRegisterRequest{Node: &sdk.Node{ID: "n1", NodePool: "edge", Status: sdk.NodeStatusReady}}},
		{NodeDeregisterRequestType, &NodeDeregisterRequest{NodeIDs: []string{"n1"}}},
		{JobRegisterRequestType, &JobRegisterRequest{Job: job("team", "b", "default")}},
	}
	for i, e := range older {
		if err := applyEntry(t, fr, uint64(i+1), e.typ, e.msg); err != nil {
			t.Fatalf("older entry %d: %v", i+1, err)
		}
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, replayed.Snapshot()); err != nil {
		t.Fatal(err)
	}
	restored, err := ReadSnapshot(bytes.NewReader(withoutRecords(t, buf.Bytes(), []byte{recNamespace, recNodePool},
		state.TableNamespaces, state.TableNodePools, state.RefsExplicitKey)))
	if err != nil {
		t.Fatal(err)
	}
	fs := New(restored, nil, zerolog.Nop())

	// The upgraded cluster's entries, applied to both.
	steps := []struct {
		typ MessageType
		msg func() msgp.Marshaler
	}{
		{JobRegisterRequestType, func() msgp.Marshaler { return &JobRegisterRequest{Job: job("team", "c", "edge"), RefsMustExist: true} }},
		{NamespaceUpsertRequestType, func() msgp.Marshaler {
			return &NamespaceUpsertRequest{Namespaces: []*state.Namespace{{Name: "other"}}}
		}},
		{JobRegisterRequestType, func() msgp.Marshaler {
			return &JobRegisterRequest{Job: job("tmp", "d", "default"), RefsMustExist: true}
		}},
		{NamespaceDeleteRequestType, func() msgp.Marshaler { return &NamespaceDeleteRequest{Names: []string{"tmp"}} }},
		{NodePoolDeleteRequestType, func() msgp.Marshaler { return &NodePoolDeleteRequest{Names: []string{"batch"}} }},
	}
	for i, st := range steps {
		index := uint64(len(older) + i + 1)
		errR := applyEntry(t, fr, index, st.typ, st.msg())
		errS := applyEntry(t, fs, index, st.typ, st.msg())
		if (errR == nil) != (errS == nil) {
			t.Fatalf("entry %d (%T): replayed: %v; restored: %v", index, st.msg(), errR, errS)
		}
	}
	if d := compare(replayed.Snapshot(), restored.Snapshot()); d != "" {
		t.Fatalf("the replayed and restored states differ:\n%s", d)
	}
	if snap := replayed.Snapshot(); snap.Namespace("tmp") != nil || snap.NodePool("batch") != nil || snap.NodePool("edge") == nil {
		t.Fatalf("namespaces and pools: tmp %+v, batch %+v, edge %+v", snap.Namespace("tmp"), snap.NodePool("batch"), snap.NodePool("edge"))
	}
	// A snapshot keeps that they are written objects now.
	buf.Reset()
	if err := writeSnapshot(&buf, replayed.Snapshot()); err != nil {
		t.Fatal(err)
	}
	again, err := ReadSnapshot(&buf)
	if err != nil || !again.Snapshot().RefsExplicit() {
		t.Fatalf("restored: %v; refs explicit: %v", err, err == nil && again.Snapshot().RefsExplicit())
	}
}

// A failed deployment's auto-revert does not go back to a version whose
// node pool was deleted since the version rolled out moved the job off
// it: the job would run again in a pool that is gone.
func TestDeploymentFailure_DoesNotRevertIntoADeletedPool(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	apply := func(i uint64, msg msgp.Unmarshaler) {
		t.Helper()
		if err := f.ApplyDecoded(i, msg); err != nil {
			t.Fatalf("entry %d (%T): %v", i, msg, err)
		}
	}
	apply(1, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "gpu"}, {Name: "cpu"}}})
	v0, v1 := casJob(100), casJob(200)
	v0.NodePool, v1.NodePool = "gpu", "cpu"
	apply(2, &JobRegisterRequest{Job: v0, RefsMustExist: true})
	apply(3, &JobRegisterRequest{Job: v1, RefsMustExist: true}) // version 1, rolled out by d1
	d := &sdk.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: 1, JobCreateIndex: 2,
		Status: sdk.DeploymentStatusRunning, TaskGroups: map[string]*sdk.DeploymentState{"g": {DesiredTotal: 1}}}
	apply(4, &ApplyPlanResultsRequest{Job: store.Snapshot().Job("default", "web"), EvalID: "e1", Deployment: d})
	apply(5, &NodePoolDeleteRequest{Names: []string{"gpu"}}) // nothing in it now
	revert := store.Snapshot().JobVersion("default", "web", 0).Copy()
	apply(6, &DeploymentStatusUpdateRequest{Job: revert, UpdatedAt: 1,
		Update: &sdk.DeploymentStatusUpdate{DeploymentID: "d1", Status: sdk.DeploymentStatusFailed,
			StatusDescription: "Failed due to unhealthy allocations - rolling back to job version 0"}})
	snap := store.Snapshot()
	if j := snap.Job("default", "web"); j.NodePool != "cpu" || j.Version != 1 {
		t.Fatalf("job after the failure: pool %q, version %d; want cpu, 1", j.NodePool, j.Version)
	}
	want := `Failed due to unhealthy allocations - not rolled back: job "web" is in nonexistent node pool "gpu"`
	if dep := snap.Deployment("d1"); dep.Status != sdk.DeploymentStatusFailed || dep.StatusDescription != want {
		t.Fatalf("deployment %s %q, want failed %q", dep.Status, dep.StatusDescription, want)
	}
}

// recordKinds are the kinds of a snapshot's records, in order.
func recordKinds(t *testing.T, b []byte) []byte {
	t.Helper()
	var kinds []byte
	rest := b[len(snapshotMagic):]
	for rest[0] != recEnd {
		n, w := binary.Uvarint(rest[1:])
		kinds = append(kinds, rest[0])
		rest = rest[1+w+int(n):]
	}
	return kinds
}

// Until namespaces and node pools are written objects, a snapshot is one
// an older version restores: during a rolling upgrade an upgraded leader
// sends it to the followers that fell behind, older ones among them,
// which refuse a record kind they do not know. Its rows (a node's pool, an
// older entry's namespace) decide nothing yet, and are made again from
// what uses them as it restores. Once they are written objects, it holds
// them.
func TestSnapshot_BeforeRefsAreExplicitAnOlderVersionReadsIt(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	apply := func(i uint64, msg msgp.Unmarshaler) {
		t.Helper()
		if err := f.ApplyDecoded(i, msg); err != nil {
			t.Fatalf("entry %d (%T): %v", i, msg, err)
		}
	}
	apply(1, &NodeRegisterRequest{Node: &sdk.Node{ID: "n1", NodePool: "edge", Status: sdk.NodeStatusReady}})
	apply(2, &JobRegisterRequest{Job: &sdk.Job{Namespace: "team", ID: "web", Type: sdk.JobTypeService, NodePool: "default"}})
	snapshot := func() ([]byte, *state.Snapshot) {
		t.Helper()
		var buf bytes.Buffer
		if err := writeSnapshot(&buf, store.Snapshot()); err != nil {
			t.Fatal(err)
		}
		restored, err := ReadSnapshot(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), restored.Snapshot()
	}
	b, snap := snapshot()
	if kinds := recordKinds(t, b); bytes.IndexByte(kinds, recNamespace) >= 0 || bytes.IndexByte(kinds, recNodePool) >= 0 {
		t.Fatalf("a snapshot before namespaces and pools are written objects holds their records: kinds %v", kinds)
	}
	if snap.RefsExplicit() || snap.Namespace("team") == nil || snap.NodePool("edge") == nil {
		t.Fatalf("restored: explicit %v, team %+v, edge %+v", snap.RefsExplicit(), snap.Namespace("team"), snap.NodePool("edge"))
	}

	apply(3, &NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "gpu", Description: "GPUs"}}})
	b, snap = snapshot()
	if kinds := recordKinds(t, b); bytes.IndexByte(kinds, recNamespace) < 0 || bytes.IndexByte(kinds, recNodePool) < 0 {
		t.Fatalf("a snapshot of written namespaces and pools lacks their records: kinds %v", kinds)
	}
	if !snap.RefsExplicit() || snap.NodePool("gpu") == nil || snap.NodePool("gpu").Description != "GPUs" || snap.Namespace("team") == nil {
		t.Fatalf("restored: explicit %v, gpu %+v, team %+v", snap.RefsExplicit(), snap.NodePool("gpu"), snap.Namespace("team"))
	}
}
