package state

import (
	"fmt"
	"iter"
	"slices"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// The Each readers yield what their collecting twins return, in the same
// order, and stop when the caller does.
func TestReader_EachYieldsWhatTheListHas(t *testing.T) {
	s, _ := NewStore()
	err := s.Write(1, func(tx *Txn) error {
		for i, ns := range []string{"prod", "default", "prod", "dev"} {
			id := fmt.Sprintf("job-%d", 3-i)
			if err := tx.UpsertJob(&sdk.Job{Namespace: ns, ID: id, Type: "batch"}); err != nil {
				return err
			}
			if err := tx.UpsertAlloc(&sdk.Allocation{ID: fmt.Sprintf("a%d", 3-i), Namespace: ns, JobID: id, NodeID: "n"}); err != nil {
				return err
			}
			if err := tx.UpsertNode(&sdk.Node{ID: fmt.Sprintf("n%d", 3-i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	ids := slices.Collect[string]
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"every job", ids(mapSeq(snap.EachJob("*"), func(j *sdk.Job) string { return j.Namespace + "/" + j.ID })),
			mapList(snap.Jobs("*"), func(j *sdk.Job) string { return j.Namespace + "/" + j.ID })},
		{"one namespace's jobs", ids(mapSeq(snap.EachJob("prod"), func(j *sdk.Job) string { return j.ID })),
			mapList(snap.Jobs("prod"), func(j *sdk.Job) string { return j.ID })},
		{"allocations", ids(mapSeq(snap.EachAlloc(), func(a *sdk.Allocation) string { return a.ID })),
			mapList(snap.Allocs(), func(a *sdk.Allocation) string { return a.ID })},
		{"nodes", ids(mapSeq(snap.EachNode(), func(n *sdk.Node) string { return n.ID })),
			mapList(snap.Nodes(), func(n *sdk.Node) string { return n.ID })},
	} {
		if len(tc.want) == 0 || !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	n := 0
	for range snap.EachAlloc() {
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("stopped after %d", n)
	}
}

func mapSeq[T any](seq iter.Seq[T], f func(T) string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for v := range seq {
			if !yield(f(v)) {
				return
			}
		}
	}
}

func mapList[T any](vs []T, f func(T) string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, f(v))
	}
	return out
}
