package fsm

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// The cluster's ID is written once: a second leader's entry (two raced
// after a cluster formed) changes nothing, and the hook hears the first.
func TestFSM_ClusterIDIsWrittenOnce(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	var heard []string
	f.SetClusterHook(func(m *state.ClusterMeta) { heard = append(heard, m.ClusterID) })
	for i, id := range []string{"first", "second"} {
		data, err := Encode(ClusterMetaRequestType, &ClusterMetaRequest{ClusterID: id, CreateTime: int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if res := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}); res != nil {
			t.Fatal(res)
		}
	}
	if m := store.Snapshot().ClusterMeta(); m == nil || m.ClusterID != "first" {
		t.Fatalf("cluster meta %+v", m)
	}
	if !slices.Equal(heard, []string{"first", "first"}) {
		t.Fatalf("hook heard %v", heard)
	}
}
