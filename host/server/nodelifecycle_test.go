package server_test

import (
	"errors"
	"fmt"
	"strings"
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

// As Nomad's Node.Register: registering again keeps the status the servers
// hold (a node re-registering "down" loses nothing; a restarted agent
// registering "initializing" stays ready), and only a heartbeat, Nomad's
// UpdateStatus, moves a node on: an initializing one becomes ready with
// the evals a transition to ready makes.
func TestRegisterNode_KeepsTheStatusTheServersHold(t *testing.T) {
	s := servertest.New(t, nil, nil)
	n := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", sdk.JobTypeService, 1, 100, 64)))
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("sys", sdk.JobTypeSystem, 1, 100, 64)))
	setRunning(t, s, s.Store().Snapshot().AllocsByNode(n.ID)...)

	for _, status := range []string{sdk.NodeStatusDown, sdk.NodeStatusInit, sdk.NodeStatusDisconnected} {
		again := servertest.Node(0, 8000, 8192)
		again.Status = status
		_, w, err := s.RegisterNode(again)
		if err != nil {
			t.Fatal(err)
		}
		if got := nodeStatus(s, n.ID); got != sdk.NodeStatusReady || len(w.EvalIDs) > 0 {
			t.Fatalf("registered again as %s: node %s, evals %v", status, got, w.EvalIDs)
		}
	}
	for _, a := range s.Store().Snapshot().AllocsByNode(n.ID) {
		if a.TerminalStatus() || a.ClientStatus != sdk.AllocClientStatusRunning {
			t.Fatalf("allocation %s of %s: desired %s, client %s", a.ID, a.JobID, a.DesiredStatus, a.ClientStatus)
		}
	}

	fresh := servertest.Node(1, 8000, 8192)
	fresh.Status = sdk.NodeStatusInit
	if _, _, err := s.RegisterNode(fresh); err != nil {
		t.Fatal(err)
	}
	if got := nodeStatus(s, fresh.ID); got != sdk.NodeStatusInit {
		t.Fatalf("a new node registered initializing is %s", got)
	}
	_, w, err := s.NodeHeartbeat(fresh.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeStatus(s, fresh.ID); got != sdk.NodeStatusReady || len(w.EvalIDs) != 1 || w.Index == 0 {
		t.Fatalf("an initializing node's heartbeat: node %s, evals %v at %d (want ready, the system job's eval)", got, w.EvalIDs, w.Index)
	}
	if e := s.Store().Snapshot().Eval(w.EvalIDs[0]); e.JobID != "sys" || e.TriggeredBy != sdk.EvalTriggerNodeUpdate || e.NodeID != fresh.ID {
		t.Fatalf("eval %+v", e)
	}
	if _, w, err := s.NodeHeartbeat(fresh.ID); err != nil || w.Index != 0 {
		t.Fatalf("a ready node's heartbeat wrote at %d: %v", w.Index, err)
	}
}

// As Nomad's Node.UpdateAlloc: a node the servers hold down or
// disconnected may not report its allocations until it heartbeats. A
// disconnected node's report would otherwise reconnect its unknown
// allocation (which the scheduler marks unknown again, restarting its
// lost_after window), and a down node's would run a lost allocation on a
// down node.
func TestUpdateAllocsFromClient_RefusedFromAnUnresponsiveNode(t *testing.T) {
	s := disconnectRig(t, time.Minute)
	snap := s.Store().Snapshot()
	unknown := snap.AllocsByJob("default", "tolerant")[0]
	for _, a := range snap.AllocsByJob("default", "tolerant") {
		if a.NodeID == "node-0000" {
			unknown = a
		}
	}
	lost := snap.AllocsByJob("default", "plain")[0]
	for _, a := range snap.AllocsByJob("default", "plain") {
		if a.NodeID == "node-0001" {
			lost = a
		}
	}
	for _, tc := range []struct {
		name   string
		alloc  *sdk.Allocation
		status string
	}{
		{"disconnected", unknown, sdk.AllocClientStatusUnknown},
		{"down", lost, sdk.AllocClientStatusLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evals := len(s.Store().Snapshot().Evals())
			_, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: tc.alloc.ID, ClientStatus: sdk.AllocClientStatusRunning}})
			if !errors.Is(err, server.ErrForbidden) || !strings.Contains(err.Error(), "not allowed to update allocs while in status "+nodeStatus(s, tc.alloc.NodeID)) {
				t.Fatalf("report from a %s node: %v, want ErrForbidden", tc.name, err)
			}
			after := s.Store().Snapshot()
			if got := after.Alloc(tc.alloc.ID); got.ClientStatus != tc.status || len(after.Evals()) != evals {
				t.Fatalf("after the refused report: client status %s (want %s), %d evals (want %d)", got.ClientStatus, tc.status, len(after.Evals()), evals)
			}
		})
	}
	// Once it heartbeats, the node is ready and reports again.
	if _, _, err := s.NodeHeartbeat("node-0000"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: unknown.ID, ClientStatus: sdk.AllocClientStatusRunning}}); err != nil {
		t.Fatalf("report after the heartbeat: %v", err)
	}
}

// As Nomad's Node.Register: a node may not register in node pool "all"
// (the pool of every node) nor in a pool whose name Nomad refuses, and
// re-registering with another secret is forbidden.
func TestRegisterNode_RefusesBadPoolsAndAnotherSecret(t *testing.T) {
	s := servertest.New(t, nil, nil)
	for _, tc := range []struct {
		name, pool string
		want       error
	}{
		{"all", "all", server.ErrInvalid},
		{"a space and a bang", "bad pool!", server.ErrInvalid},
		{"too long", strings.Repeat("p", 129), server.ErrInvalid},
		{"a dot", "a.b", server.ErrInvalid},
		{"valid", "gpu_pool-2", nil},
		{"empty is default", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := servertest.Node(0, 8000, 8192)
			n.NodePool = tc.pool
			_, _, err := s.RegisterNode(n)
			if !errors.Is(err, tc.want) || err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.pool)) {
				t.Fatalf("pool %q: %v, want %v naming the pool", tc.pool, err, tc.want)
			}
		})
	}
	n := servertest.Node(1, 8000, 8192)
	n.SecretID = "s3cret"
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	again := servertest.Node(1, 8000, 8192)
	again.SecretID = "wrong"
	if _, _, err := s.RegisterNode(again); !errors.Is(err, server.ErrForbidden) {
		t.Fatalf("registered again with another secret: %v, want ErrForbidden", err)
	}
}

// The node events of the heartbeats are Nomad's: "Node heartbeat missed"
// when a node goes down or disconnected, "Node reregistered by heartbeat"
// when a down node heartbeats again, and none when a disconnected one does.
func TestHeartbeats_NodeEventsAsNomad(t *testing.T) {
	s := disconnectRig(t, time.Minute)
	for _, id := range []string{"node-0000", "node-0001"} {
		if e := lastNodeEvent(s, id); e.Message != "Node heartbeat missed" || e.Subsystem != "Cluster" {
			t.Fatalf("%s (%s): last event %+v", id, nodeStatus(s, id), e)
		}
	}
	disconnected := len(s.Store().Snapshot().Node("node-0000").Events)
	for _, id := range []string{"node-0000", "node-0001"} {
		if _, _, err := s.NodeHeartbeat(id); err != nil {
			t.Fatal(err)
		}
		if st := nodeStatus(s, id); st != sdk.NodeStatusReady {
			t.Fatalf("%s after its heartbeat: %s", id, st)
		}
	}
	if e := lastNodeEvent(s, "node-0001"); e.Message != "Node reregistered by heartbeat" || e.Subsystem != "Cluster" {
		t.Fatalf("the down node's heartbeat: last event %+v", e)
	}
	if n := s.Store().Snapshot().Node("node-0000"); len(n.Events) != disconnected {
		t.Fatalf("the disconnected node's heartbeat added an event: %+v", n.Events[len(n.Events)-1])
	}
}

// EvaluateNode (Nomad's Node.Evaluate) writes node-update evals for the
// jobs with live allocations on the node and the system jobs that could
// run there, and nothing for a node without any.
func TestEvaluateNode_EvaluatesTheNodesJobs(t *testing.T) {
	s := servertest.New(t, nil, nil)
	n := servertest.Node(0, 8000, 8192)
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
	if w, err := s.EvaluateNode(n.ID); err != nil || w.Index != 0 || len(w.EvalIDs) != 0 {
		t.Fatalf("a node without jobs: %+v, %v", w, err)
	}
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("web", sdk.JobTypeService, 1, 100, 64)))
	servertest.WaitForEval(t, s, registerJob(t, s, servertest.Job("sys", sdk.JobTypeSystem, 1, 100, 64)))
	w, err := s.EvaluateNode(n.ID)
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]bool{}
	for _, id := range w.EvalIDs {
		e := s.Store().Snapshot().Eval(id)
		if e.NodeID != n.ID || e.TriggeredBy != sdk.EvalTriggerNodeUpdate || e.CreateIndex != w.Index {
			t.Fatalf("eval %+v (write at %d)", e, w.Index)
		}
		jobs[e.JobID] = true
	}
	if len(w.EvalIDs) != 2 || !jobs["web"] || !jobs["sys"] {
		t.Fatalf("evals of jobs %v", jobs)
	}
	if _, err := s.EvaluateNode("nope"); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("an unknown node: %v", err)
	}
}
