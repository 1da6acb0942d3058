package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/snapshot"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

func durableConfig(dir string) server.Config {
	cfg := servertest.Config()
	fastLifecycle(&cfg)
	cfg.Dev = false
	cfg.DataDir = dir
	return cfg
}

func startDurable(t *testing.T, dir string, fn sdk.SchedulerFunc) *server.Server {
	t.Helper()
	s, err := servertest.Start(t, durableConfig(dir), servertest.Func(t, 2, fn))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dump lists every object of a snapshot, keyed by table and ID, so two
// states can be compared exactly.
func dump(t *testing.T, snap *state.Snapshot) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, n := range snap.Nodes() {
		out["node/"+n.ID] = n
	}
	for _, j := range snap.Jobs("") {
		out["job/"+j.ID] = j
		for _, v := range snap.JobVersions(j.Namespace, j.ID) {
			out[fmt.Sprintf("version/%s/%d", j.ID, v.Version)] = v
		}
	}
	for _, a := range snap.Allocs() {
		out["alloc/"+a.ID] = a
	}
	for _, e := range snap.Evals() {
		out["eval/"+e.ID] = e
	}
	for _, d := range snap.Deployments() {
		out["deployment/"+d.ID] = d
	}
	for _, l := range snap.PeriodicLaunches() {
		out["periodic/"+l.ID] = l
	}
	out["config"] = snap.SchedulerConfig()
	return out
}

func sameState(t *testing.T, want, got map[string]any) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s lost", k)
		} else if !reflect.DeepEqual(v, g) {
			t.Errorf("%s differs:\n%+v\n%+v", k, v, g)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// TestDurable_RestartRestoresEverything writes through a durable server
// (part before a raft snapshot, part after, so a restart both restores the
// snapshot and replays the log), restarts it on the same data dir and
// checks that the state is identical and that the leader restored its
// machinery: the pending eval is scheduled, the blocked eval is tracked
// again, the delayed eval keeps its deadline and the broker stays paused.
func TestDurable_RestartRestoresEverything(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, placer)
	registerNode(t, s, 0, 1000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	cron := servertest.Job("cron", "batch", 1, 100, 64)
	cron.Periodic = &sdk.PeriodicConfig{Enabled: true, Spec: "0 0 1 1 *"}
	registerJob(t, s, cron)
	if err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	blockedID := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("big", "service", 2, 800, 64))).BlockedEval
	due := time.Now().Add(time.Hour).Round(0)
	delayedID := delayedEval(t, s, "web", due)
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: true}); err != nil {
		t.Fatal(err)
	}
	pendingID := registerJob(t, s, servertest.Job("late", "service", 1, 100, 64))
	before := dump(t, s.Store().Snapshot())
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s = startDurable(t, dir, placer)
	sameState(t, before, dump(t, s.Store().Snapshot()))
	if !s.Broker().Paused() {
		t.Fatal("the broker's pause was not restored")
	}
	if b := s.Blocked().Blocked("default", "big"); b == nil || b.ID != blockedID {
		t.Fatalf("blocked eval not re-blocked: %+v", b)
	}
	delayed := s.Broker().DelayedEvals()
	if len(delayed) != 1 || delayed[0].Eval.ID != delayedID || !delayed[0].Due.Equal(due) {
		t.Fatalf("delayed evals %+v, want %s due %v", delayed, delayedID, due)
	}
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{}); err != nil {
		t.Fatal(err)
	}
	if e := servertest.WaitForEval(t, s, pendingID); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("restored pending eval ended %s", e.Status)
	}
	// A restored periodic job still launches.
	if _, _, err := s.ForcePeriodicRun("default", "cron"); err != nil {
		t.Fatal(err)
	}
}

// TestDurable_RestartRetriesBlockedEvalThatMissedItsUnblock: capacity grew
// and the blocked eval was unblocked, but the server stopped before the
// eval ran, so the state still says blocked. The new leader knows from the
// state that the eval's view is older than the change, and runs it.
func TestDurable_RestartRetriesBlockedEvalThatMissedItsUnblock(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, placer)
	registerNode(t, s, 0, 1000)
	blockedID := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("big", "service", 2, 800, 64))).BlockedEval
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{PauseEvalBroker: true}); err != nil {
		t.Fatal(err)
	}
	registerNode(t, s, 1, 1000)
	servertest.WaitForPhase(t, s, blockedID, sdk.EvalPhaseQueued)
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s = startDurable(t, dir, placer)
	if s.Blocked().Blocked("default", "big") != nil {
		t.Fatal("the eval that missed its unblock was blocked again")
	}
	if _, err := s.SetSchedulerConfig(&sdk.SchedulerConfiguration{}); err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, blockedID, sdk.EvalStatusComplete)
}

// initDataDir makes a data dir with some state and a snapshot, and stops
// its server.
func initDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := startDurable(t, dir, placer)
	registerNode(t, s, 0, 4000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	if err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("api", "service", 1, 100, 64)))
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "raft", "snapshots"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no snapshot in %s: %v", dir, err)
	}
	return filepath.Join(dir, "raft", "snapshots", ents[len(ents)-1].Name())
}

func withBolt(t *testing.T, dir string, fn func(b *raftboltdb.BoltStore)) {
	t.Helper()
	b, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft", "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fn(b)
}

// TestDurable_BadDataDirIsRefused: every way a data dir can be broken gives
// its own error, never a panic and never a fresh, empty state.
func TestDurable_BadDataDirIsRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T) string
		want  error
	}{
		{"raft log missing", func(t *testing.T) string {
			dir := initDataDir(t)
			must(t, os.Remove(filepath.Join(dir, "raft", "raft.db")))
			return dir
		}, server.ErrDataDirMissingState},
		{"raft log garbage", func(t *testing.T) string {
			dir := initDataDir(t)
			must(t, os.WriteFile(filepath.Join(dir, "raft", "raft.db"), bytes.Repeat([]byte("not a bolt db "), 1000), 0o600))
			return dir
		}, server.ErrDataDirCorrupt},
		{"raft log emptied", func(t *testing.T) string {
			dir := initDataDir(t)
			must(t, os.Remove(filepath.Join(dir, "raft", "raft.db")))
			must(t, os.RemoveAll(filepath.Join(dir, "raft", "snapshots")))
			withBolt(t, dir, func(*raftboltdb.BoltStore) {})
			return dir
		}, server.ErrDataDirMissingState},
		{"raft log emptied beside a snapshot", func(t *testing.T) string {
			dir := initDataDir(t)
			must(t, os.WriteFile(filepath.Join(dir, "raft", "raft.db"), nil, 0o600))
			return dir
		}, server.ErrDataDirMissingState},
		{"raft log truncated", func(t *testing.T) string {
			dir := initDataDir(t)
			must(t, os.Truncate(filepath.Join(dir, "raft", "raft.db"), 4096))
			return dir
		}, server.ErrDataDirCorrupt},
		{"undecodable log entry", func(t *testing.T) string {
			dir := initDataDir(t)
			withBolt(t, dir, func(b *raftboltdb.BoltStore) {
				last, _ := b.LastIndex()
				must(t, b.StoreLog(&raft.Log{Index: last + 1, Term: 1, Type: raft.LogCommand, Data: []byte{0xfe, 1, 2}}))
			})
			return dir
		}, server.ErrDataDirCorrupt},
		{"log gap after the snapshot", func(t *testing.T) string {
			dir := initDataDir(t)
			withBolt(t, dir, func(b *raftboltdb.BoltStore) {
				first, _ := b.FirstIndex()
				last, _ := b.LastIndex()
				must(t, b.DeleteRange(first, last-1))
			})
			return dir
		}, server.ErrDataDirCorrupt},
		{"snapshot data corrupt", func(t *testing.T) string {
			dir := initDataDir(t)
			p := filepath.Join(snapshotDir(t, dir), "state.bin")
			b, err := os.ReadFile(p)
			must(t, err)
			b[len(b)/2] ^= 0xff
			must(t, os.WriteFile(p, b, 0o600))
			return dir
		}, server.ErrDataDirCorrupt},
		{"snapshot metadata unreadable", func(t *testing.T) string {
			dir := initDataDir(t)
			must(t, os.WriteFile(filepath.Join(snapshotDir(t, dir), "meta.json"), []byte("{"), 0o600))
			return dir
		}, server.ErrDataDirCorrupt},
		{"data dir metadata corrupt", func(t *testing.T) string {
			dir := initDataDir(t)
			must(t, os.WriteFile(filepath.Join(dir, "drover-data.json"), []byte("garbage"), 0o600))
			return dir
		}, server.ErrDataDirCorrupt},
		{"newer format", func(t *testing.T) string {
			dir := initDataDir(t)
			b, _ := json.Marshal(map[string]any{"Format": 99})
			must(t, os.WriteFile(filepath.Join(dir, "drover-data.json"), b, 0o600))
			return dir
		}, server.ErrDataDirUnusable},
		{"someone else's directory", func(t *testing.T) string {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o600))
			return dir
		}, server.ErrDataDirUnusable},
		{"a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "file")
			must(t, os.WriteFile(p, nil, 0o600))
			return p
		}, server.ErrDataDirUnusable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			s, err := servertest.Start(t, durableConfig(dir), servertest.Func(t, 1, placer))
			if !errors.Is(err, tc.want) {
				if s != nil {
					t.Fatalf("started on a broken data dir (state: %d jobs), want %v", len(s.Store().Snapshot().Jobs("")), tc.want)
				}
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDurable_LockedDataDirIsRefused: a second server on a data dir in use
// is refused.
func TestDurable_LockedDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	startDurable(t, dir, placer)
	_, err := servertest.Start(t, durableConfig(dir), servertest.Func(t, 1, placer))
	if !errors.Is(err, server.ErrDataDirLocked) {
		t.Fatalf("err = %v, want ErrDataDirLocked", err)
	}
}

// TestDurable_NewDataDirIsCreated: a path that does not exist becomes a
// data dir, marked as initialized once raft state exists.
func TestDurable_NewDataDirIsCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s := startDurable(t, dir, placer)
	registerNode(t, s, 0, 1000)
	must(t, s.Shutdown())
	b, err := os.ReadFile(filepath.Join(dir, "drover-data.json"))
	must(t, err)
	var meta struct{ Format int }
	must(t, json.Unmarshal(b, &meta))
	if meta.Format != 1 {
		t.Fatalf("metadata %s", b)
	}
	s = startDurable(t, dir, placer)
	if len(s.Store().Snapshot().Nodes()) != 1 {
		t.Fatal("state lost")
	}
}

// TestFSM_Check_RefusesGarbage: the entry check used on start refuses
// undecodable entries and accepts encoded requests.
func TestFSM_Check_RefusesGarbage(t *testing.T) {
	good, err := fsm.Encode(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{{ID: "e"}}})
	must(t, err)
	if err := fsm.Check(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, {0}, {0xfe}, good[:len(good)-2], append(slices.Clone(good), 0x01)} {
		if err := fsm.Check(bad); !errors.Is(err, fsm.ErrBadEntry) {
			t.Errorf("Check(%x) = %v", bad, err)
		}
	}
}

// TestDurable_OperatorSnapshotRestore saves an operator snapshot, changes
// the state, restores the snapshot and checks that the state is the saved
// one, that the leader's machinery runs on it (the blocked eval is tracked
// again; a new job is scheduled) and that a restart keeps it. A damaged
// snapshot is refused and changes nothing.
func TestDurable_OperatorSnapshotRestore(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, placer)
	registerNode(t, s, 0, 1000)
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", "service", 1, 100, 64)))
	blockedID := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("big", "service", 2, 800, 64))).BlockedEval
	saved, err := s.SaveSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := saved.Write(&file); err != nil {
		t.Fatal(err)
	}
	want := dump(t, s.Store().Snapshot())

	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("later", "service", 1, 100, 64)))
	purge, _, err := s.DeregisterJob("default", "big", true)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, purge)
	// The state settles (the purged job's blocked eval ends too) before it
	// is compared.
	servertest.WaitFor(t, "the purged job's evals to end", func() bool {
		for _, e := range s.Store().Snapshot().EvalsByJob("default", "big") {
			if !e.TerminalStatus() {
				return false
			}
		}
		return true
	})
	changed := dump(t, s.Store().Snapshot())

	damaged := bytes.Clone(file.Bytes())
	damaged[len(damaged)/2] ^= 0xff
	if err := s.RestoreSnapshot(bytes.NewReader(damaged)); !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("damaged snapshot: %v, want ErrInvalid", err)
	}
	var foreign bytes.Buffer // a sound archive around a state that is not one
	garbage := "not a drover state"
	if err := snapshot.Write(&foreign, snapshot.Meta{ID: "x", Index: 9, Size: int64(len(garbage))}, strings.NewReader(garbage)); err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreSnapshot(&foreign); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), "bad header") {
		t.Fatalf("archive of a foreign state: %v, want ErrInvalid naming the bad header", err)
	}
	// A sound archive whose index raft could not restore at: past what
	// raft's next index can follow (it would wrap to 0 and hang the
	// restore), or below the state's own index.
	arc, err := snapshot.Read(bytes.NewReader(file.Bytes()), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, index := range []uint64{math.MaxUint64, 1} {
		if _, err := arc.State.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		meta := arc.Meta
		meta.Index = index
		var crafted bytes.Buffer
		if err := snapshot.Write(&crafted, meta, arc.State); err != nil {
			t.Fatal(err)
		}
		if err := s.RestoreSnapshot(&crafted); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), "snapshot index") {
			t.Fatalf("archive claiming index %d: %v, want ErrInvalid naming the index", index, err)
		}
	}
	arc.Close()
	sameState(t, changed, dump(t, s.Store().Snapshot()))

	if err := s.RestoreSnapshot(bytes.NewReader(file.Bytes())); err != nil {
		t.Fatal(err)
	}
	sameState(t, want, dump(t, s.Store().Snapshot()))
	if b := s.Blocked().Blocked("default", "big"); b == nil || b.ID != blockedID {
		t.Fatalf("after restore, the blocked eval is not tracked: %+v", b)
	}
	if e := servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("next", "service", 1, 100, 64))); e.Status != sdk.EvalStatusComplete {
		t.Fatalf("a job registered after the restore: eval %s", e.Status)
	}
	restored := dump(t, s.Store().Snapshot())
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	s = startDurable(t, dir, placer)
	sameState(t, restored, dump(t, s.Store().Snapshot()))
}
