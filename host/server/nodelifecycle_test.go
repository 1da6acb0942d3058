package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
)

func lastNodeEvent(s *server.Server, id string) *sdk.NodeEvent {
	ev := s.Store().Snapshot().Node(id).Events
	if len(ev) == 0 {
		return nil
	}
	return ev[len(ev)-1]
}

// As Nomad's Node.UpdateEligibility: a change adds a "Cluster" node event,
// the eligibility the node has already writes nothing, and a draining node
// cannot be made eligible (it would drain eligible, and stay eligible
// after the drain).
func TestUpdateNodeEligibility_AsNomad(t *testing.T) {
	s := servertest.New(t, nil, nil)
	n := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	statusAt := s.Store().Snapshot().Node(n.ID).StatusUpdatedAt
	for _, tc := range []struct {
		name, eligibility, event string
		write                    bool
	}{
		{"ineligible", sdk.NodeSchedulingIneligible, "Node marked as ineligible for scheduling", true},
		{"ineligible again", sdk.NodeSchedulingIneligible, "Node marked as ineligible for scheduling", false},
		{"eligible", sdk.NodeSchedulingEligible, "Node marked as eligible for scheduling", true},
		{"eligible again", sdk.NodeSchedulingEligible, "Node marked as eligible for scheduling", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Store().Snapshot().Node(n.ID)
			w, err := s.UpdateNodeEligibility(n.ID, tc.eligibility)
			if err != nil {
				t.Fatal(err)
			}
			after := s.Store().Snapshot().Node(n.ID)
			if !tc.write {
				if w.Index != 0 || after.ModifyIndex != before.ModifyIndex || len(after.Events) != len(before.Events) {
					t.Fatalf("unchanged eligibility: index %d, ModifyIndex %d -> %d, %d -> %d events",
						w.Index, before.ModifyIndex, after.ModifyIndex, len(before.Events), len(after.Events))
				}
				return
			}
			e := lastNodeEvent(s, n.ID)
			if after.SchedulingEligibility != tc.eligibility || e.Message != tc.event || e.Subsystem != "Cluster" ||
				e.CreateIndex != w.Index {
				t.Fatalf("eligibility %s, last event %+v at index %d", after.SchedulingEligibility, e, w.Index)
			}
			// Not set, unlike Nomad: the heartbeats count a disconnected
			// node's window from it.
			if after.StatusUpdatedAt != statusAt {
				t.Fatalf("StatusUpdatedAt moved from %d to %d", statusAt, after.StatusUpdatedAt)
			}
		})
	}

	if _, err := s.UpdateNodeDrain(n.ID, &server.DrainSpec{Deadline: time.Hour}, false, nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.UpdateNodeEligibility(n.ID, sdk.NodeSchedulingEligible)
	if !errors.Is(err, server.ErrInvalid) {
		t.Fatalf("a draining node made eligible: %v, want ErrInvalid", err)
	}
	if got := s.Store().Snapshot().Node(n.ID); got.SchedulingEligibility != sdk.NodeSchedulingIneligible || got.DrainStrategy == nil {
		t.Fatalf("after the refusal: eligibility %s, drain %+v", got.SchedulingEligibility, got.DrainStrategy)
	}
	// Ineligible it is already: a no-op, even while draining.
	if w, err := s.UpdateNodeEligibility(n.ID, sdk.NodeSchedulingIneligible); err != nil || w.Index != 0 {
		t.Fatalf("a draining node made ineligible: index %d, %v", w.Index, err)
	}
}
