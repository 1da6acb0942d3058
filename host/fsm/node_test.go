package fsm

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// As Nomad's state store: an entry that makes a draining node eligible is
// refused (the servers check first, but a drain may start in between), and
// an eligibility change records its event without touching
// StatusUpdatedAt, from which the heartbeats count a disconnected node's
// window.
func TestNodeEligibility_RefusedWhileDrainingAndRecordsItsEvent(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	apply := func(index uint64, typ MessageType, msg entry) error {
		t.Helper()
		data, err := Encode(typ, msg)
		if err != nil {
			t.Fatal(err)
		}
		err, _ = f.Apply(&raft.Log{Index: index, Data: data}).(error)
		return err
	}
	at := time.Unix(1_700_000_000, 0).UTC()
	if err := apply(1, NodeRegisterRequestType, &NodeRegisterRequest{Node: &sdk.Node{ID: "n1", Status: sdk.NodeStatusReady,
		SchedulingEligibility: sdk.NodeSchedulingEligible, StatusUpdatedAt: at.Unix()}}); err != nil {
		t.Fatal(err)
	}
	later := at.Add(time.Minute)
	err := apply(2, NodeUpdateEligibilityRequestType, &NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: sdk.NodeSchedulingIneligible,
		UpdatedAt: later.Unix(), Event: &sdk.NodeEvent{Message: "Node marked as ineligible for scheduling", Subsystem: "Cluster", Timestamp: later}})
	if err != nil {
		t.Fatal(err)
	}
	n := store.Snapshot().Node("n1")
	last := n.Events[len(n.Events)-1]
	if n.SchedulingEligibility != sdk.NodeSchedulingIneligible || last.Message != "Node marked as ineligible for scheduling" ||
		last.Subsystem != "Cluster" || last.CreateIndex != 2 || n.StatusUpdatedAt != at.Unix() {
		t.Fatalf("marked ineligible: eligibility %s, last event %+v, StatusUpdatedAt %d (want %d)",
			n.SchedulingEligibility, last, n.StatusUpdatedAt, at.Unix())
	}

	if err := apply(3, NodeUpdateDrainRequestType, &NodeUpdateDrainRequest{NodeID: "n1",
		DrainStrategy: &sdk.DrainStrategy{Deadline: time.Hour, StartedAt: later}, UpdatedAt: later.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	err = apply(4, NodeUpdateEligibilityRequestType, &NodeUpdateEligibilityRequest{NodeID: "n1", Eligibility: sdk.NodeSchedulingEligible,
		UpdatedAt: later.Unix(), Event: &sdk.NodeEvent{Message: "Node marked as eligible for scheduling", Subsystem: "Cluster", Timestamp: later}})
	if !errors.Is(err, ErrNodeDraining) {
		t.Fatalf("a draining node made eligible: %v, want ErrNodeDraining", err)
	}
	if n := store.Snapshot().Node("n1"); n.SchedulingEligibility != sdk.NodeSchedulingIneligible || n.ModifyIndex != 3 {
		t.Fatalf("after the refused entry: eligibility %s, ModifyIndex %d", n.SchedulingEligibility, n.ModifyIndex)
	}
}
