package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

func TestSnapshot_RoundTripKeepsEverything(t *testing.T) {
	src, _ := state.NewStore()
	job := &sdk.Job{Namespace: "default", ID: "web", Type: "service", Priority: 70,
		TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 2, Tasks: []*sdk.Task{{Name: "t", Driver: "docker",
			Config: sdk.Opaque{"image": "nginx", "ports": []any{"http"}}}}}}}
	write := func(i uint64, fn func(*state.Txn) error) {
		if err := src.Write(i, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(1, func(tx *state.Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"})
	})
	write(2, func(tx *state.Txn) error { return tx.UpsertJob(job) })
	v0 := src.Snapshot().Job("default", "web")
	write(3, func(tx *state.Txn) error {
		return tx.UpsertAlloc(&sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", Job: v0, NodeID: "n1", EvalID: "e1",
			DesiredStatus: "run", ClientStatus: "running"})
	})
	j2 := *job
	j2.Priority = 80
	write(4, func(tx *state.Txn) error { return tx.UpsertJob(&j2) })
	write(5, func(tx *state.Txn) error {
		return tx.UpsertEval(&sdk.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Status: "complete"})
	})
	write(6, func(tx *state.Txn) error {
		return tx.SetSchedulerConfig(&sdk.SchedulerConfiguration{SchedulerAlgorithm: "spread"})
	})

	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	dst, _ := state.NewStore()
	if err := restore(dst, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	snap := dst.Snapshot()
	if snap.Index() != 6 {
		t.Errorf("index = %d, want 6", snap.Index())
	}
	if j := snap.Job("default", "web"); j == nil || j.Priority != 80 || j.Version != 1 {
		t.Fatalf("job not restored: %+v", j)
	}
	a := snap.Alloc("a1")
	if a == nil || a.Job == nil || a.Job.Version != 0 || a.Job.Priority != 70 {
		t.Fatalf("alloc not restored with its own job version: %+v", a)
	}
	if got := a.Job.TaskGroups[0].Tasks[0].Config["image"]; got != "nginx" {
		t.Errorf("task config lost: %v", got)
	}
	if snap.Eval("e1") == nil || snap.Node("n1") == nil {
		t.Error("eval or node missing")
	}
	if snap.SchedulerConfig().SchedulerAlgorithm != "spread" {
		t.Error("scheduler config lost")
	}
	if snap.TableIndex(state.TableJobs) != 4 {
		t.Errorf("jobs table index = %d, want 4", snap.TableIndex(state.TableJobs))
	}
}

func TestSnapshot_CorruptIsRefused(t *testing.T) {
	src, _ := state.NewStore()
	_ = src.Write(1, func(tx *state.Txn) error { return tx.UpsertNode(&sdk.Node{ID: "n1"}) })
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, src.Snapshot()); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	cases := map[string][]byte{
		"empty":     nil,
		"bad magic": append([]byte("nope"), good[4:]...),
		"truncated": good[:len(good)-3],
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dst, _ := state.NewStore()
			err := restore(dst, bytes.NewReader(b))
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("err = %v, want ErrCorruptSnapshot", err)
			}
		})
	}
}
