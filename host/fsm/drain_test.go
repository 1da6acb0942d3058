package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// A node's LastDrain follows its drain as Nomad's updateNodeDrainImpl
// keeps it: set when the drain starts, its UpdatedAt and status changed
// by each change of the drain, and the operator's Meta kept until a
// request gives some. The entries go through their encoding, as raft
// applies them.
func TestNodeDrain_LastDrainFollowsTheDrain(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_700_000_000+int64(s), 0).UTC() }
	drain := func(s int, ds *sdk.DrainStrategy, meta map[string]string, complete bool) *NodeUpdateDrainRequest {
		return &NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: ds, Meta: meta, Complete: complete, UpdatedAt: at(s).UnixNano()}
	}
	strategy := &sdk.DrainStrategy{Deadline: time.Hour, StartedAt: at(1)}
	who := map[string]string{"message": "kernel upgrade"}
	type want struct {
		status           string
		started, updated time.Time
		meta             map[string]string
	}
	steps := []struct {
		name string
		req  *NodeUpdateDrainRequest
		want *want // nil: no LastDrain
	}{
		{"a cancel while not draining records nothing", drain(0, nil, who, false), nil},
		{"the drain starts", drain(1, strategy, who, false), &want{"draining", at(1), at(1), who}},
		{"an update keeps the start and the meta", drain(2, strategy, nil, false), &want{"draining", at(1), at(2), who}},
		{"an update with meta replaces it", drain(3, strategy, map[string]string{"message": "new"}, false),
			&want{"draining", at(1), at(3), map[string]string{"message": "new"}}},
		{"the drain completes", drain(4, nil, nil, true), &want{"complete", at(1), at(4), map[string]string{"message": "new"}}},
		{"a new drain starts afresh", drain(5, strategy, nil, false), &want{"draining", at(5), at(5), nil}},
		{"a cancel", drain(6, nil, nil, false), &want{"canceled", at(5), at(6), nil}},
		{"a cancel while not draining keeps the last drain", drain(7, nil, who, false), &want{"canceled", at(5), at(6), nil}},
	}
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	apply := func(index uint64, typ MessageType, msg entry) {
		t.Helper()
		data, err := Encode(typ, msg)
		if err != nil {
			t.Fatal(err)
		}
		if err, _ := f.Apply(&raft.Log{Index: index, Data: data}).(error); err != nil {
			t.Fatal(err)
		}
	}
	apply(1, NodeRegisterRequestType, &NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: sdk.NodeStatusReady}})
	for i, st := range steps {
		apply(uint64(i+2), NodeUpdateDrainRequestType, st.req)
		ld := store.Snapshot().Node("n1").LastDrain
		if st.want == nil {
			if ld != nil {
				t.Fatalf("%s: LastDrain %v, want none", st.name, ld)
			}
			continue
		}
		w := st.want
		var meta map[string]string
		if m, ok := ld["Meta"].(map[string]any); ok {
			meta = map[string]string{}
			for k, v := range m {
				meta[k] = fmt.Sprint(v)
			}
		}
		started, _ := ld["StartedAt"].(time.Time)
		updated, _ := ld["UpdatedAt"].(time.Time)
		if ld["Status"] != w.status || !started.Equal(w.started) || !updated.Equal(w.updated) ||
			fmt.Sprint(meta) != fmt.Sprint(w.meta) || ld["AccessorID"] != "" {
			t.Fatalf("%s: LastDrain %v, want status %s started %v updated %v meta %v", st.name, ld, w.status, w.started, w.updated, w.meta)
		}
	}
}

// A drain that started before LastDrain was recorded at the start (the
// node's LastDrain is the previous drain's) gets one from its strategy
// when it changes.
func TestNodeDrain_LastDrainOfADrainStartedBeforeItWasRecorded(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	started := time.Unix(1_700_000_000, 0).UTC()
	n := &sdk.Node{ID: "n1", Status: sdk.NodeStatusReady, DrainStrategy: &sdk.DrainStrategy{StartedAt: started},
		LastDrain: sdk.Opaque{"Status": "complete", "StartedAt": started.Add(-time.Hour), "Meta": map[string]any{"old": "x"}}}
	if err := store.Write(1, func(tx *state.Txn) error { return tx.UpsertNode(n) }); err != nil {
		t.Fatal(err)
	}
	if err := f.ApplyDecoded(2, &NodeUpdateDrainRequest{NodeID: "n1", Complete: true, UpdatedAt: started.Add(time.Minute).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	ld := store.Snapshot().Node("n1").LastDrain
	if s, _ := ld["StartedAt"].(time.Time); ld["Status"] != "complete" || !s.Equal(started) || ld["Meta"] != nil {
		t.Fatalf("LastDrain %v, want complete, started at %v, no meta", ld, started)
	}
}

// An update of a drain keeps the drain's start as the state has it, even
// when the request, decided from an older snapshot, names another.
func TestNodeDrain_AnUpdateKeepsTheStart(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	start, later := time.Unix(1_700_000_000, 0).UTC(), time.Unix(1_700_000_100, 0).UTC()
	for i, msg := range []entry{
		&NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: "ready", Datacenter: "dc1"}},
		&NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: &sdk.DrainStrategy{Deadline: time.Hour, StartedAt: start}, UpdatedAt: start.UnixNano()},
		&NodeUpdateDrainRequest{NodeID: "n1", DrainStrategy: &sdk.DrainStrategy{Deadline: 2 * time.Hour, StartedAt: later}, UpdatedAt: later.UnixNano()},
	} {
		if err := f.ApplyDecoded(uint64(i+1), msg); err != nil {
			t.Fatal(err)
		}
	}
	if ds := store.Snapshot().Node("n1").DrainStrategy; !ds.StartedAt.Equal(start) || ds.Deadline != 2*time.Hour {
		t.Fatalf("drain strategy %+v, want the update's deadline from the first start", ds)
	}
}
