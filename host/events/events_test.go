package events

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/services"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// cluster is a store whose writes are published to a broker as the FSM
// publishes them.
type cluster struct {
	t     *testing.T
	store *state.Store
	b     *Broker
	index uint64
}

func newCluster(t *testing.T, size int) *cluster {
	s, err := state.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, store: s, b: New(size)}
}

func (c *cluster) write(typ string, fn func(tx *state.Txn) error) uint64 {
	c.t.Helper()
	c.index++
	if err := c.store.Write(c.index, fn); err != nil {
		c.t.Fatal(err)
	}
	changes, _ := c.store.Journal().Between(c.index-1, c.index)
	c.b.Publish(typ, c.store.Snapshot(), changes)
	return c.index
}

func (c *cluster) register(ns, id string) uint64 {
	return c.write(TypeJobRegistered, func(tx *state.Txn) error {
		if err := tx.UpsertJob(&sdk.Job{Namespace: ns, ID: id, Type: sdk.JobTypeService}); err != nil {
			return err
		}
		return tx.UpsertEval(&sdk.Evaluation{ID: "eval-" + id, Namespace: ns, JobID: id, Status: sdk.EvalStatusPending})
	})
}

func next(t *testing.T, s *Subscription) *Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func none(t *testing.T, s *Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if b, err := s.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want nothing, got %+v, %v", b, err)
	}
}

func TestBroker_EventsOfAWrite(t *testing.T) {
	c := newCluster(t, 10)
	all := c.b.Subscribe(Request{Topics: map[string][]string{TopicAll: {"*"}}, Namespace: "*"})
	idx := c.register("default", "web")
	c.write(TypePlanResult, func(tx *state.Txn) error {
		return tx.UpsertAlloc(&sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", DeploymentID: "d1", NodeID: "n1",
			Job: &sdk.Job{ID: "web"}})
	})

	b := next(t, all)
	if b.Index != idx || len(b.Events) != 2 {
		t.Fatalf("first batch: %+v, want the job and its eval at %d", b, idx)
	}
	job, eval := b.Events[0], b.Events[1]
	if job.Topic != TopicJob || job.Type != TypeJobRegistered || job.Key != "web" || job.Namespace != "default" || job.Index != idx ||
		job.Payload["Job"].(*sdk.Job).ID != "web" {
		t.Fatalf("job event: %+v", job)
	}
	if eval.Topic != TopicEvaluation || eval.Type != TypeJobRegistered || eval.Key != "eval-web" ||
		len(eval.FilterKeys) != 2 || eval.FilterKeys[0] != "web" || eval.FilterKeys[1] != "" {
		t.Fatalf("eval event: %+v, want FilterKeys [web \"\"] (its job and no deployment, as Nomad's)", eval)
	}
	alloc := next(t, all).Events[0]
	a := alloc.Payload["Allocation"].(*sdk.Allocation)
	if alloc.Topic != TopicAllocation || alloc.Type != TypePlanResult || len(alloc.FilterKeys) != 2 || a.Job != nil || a.NodeID != "n1" {
		t.Fatalf("alloc event: %+v (payload %+v), want the allocation without its job, filtered by job and deployment", alloc, a)
	}
	none(t, all)
}

func TestBroker_SubscriptionsFilter(t *testing.T) {
	c := newCluster(t, 10)
	sub := func(ns string, topics map[string][]string) *Subscription {
		return c.b.Subscribe(Request{Topics: topics, Namespace: ns})
	}
	webJobs := sub("default", map[string][]string{TopicJob: {"web"}})
	byJob := sub("default", map[string][]string{TopicEvaluation: {"web"}}) // a filter key
	prod := sub("prod", map[string][]string{TopicAll: {"*"}})
	nodes := sub("prod", map[string][]string{TopicNode: nil})

	c.register("default", "api")
	web := c.register("default", "web")
	api := c.register("prod", "api")
	node := c.write(TypeNodeRegistration, func(tx *state.Txn) error { return tx.UpsertNode(&sdk.Node{ID: "n1", Status: sdk.NodeStatusReady}) })

	if b := next(t, webJobs); b.Index != web || len(b.Events) != 1 || b.Events[0].Topic != TopicJob {
		t.Fatalf("Job:web: %+v", b)
	}
	none(t, webJobs)
	if b := next(t, byJob); b.Index != web || len(b.Events) != 1 || b.Events[0].Key != "eval-web" {
		t.Fatalf("Evaluation:web (by the eval's job): %+v", b)
	}
	if b := next(t, prod); b.Index != api || len(b.Events) != 2 {
		t.Fatalf("namespace prod: %+v", b)
	}
	if b := next(t, prod); b.Index != node || b.Events[0].Topic != TopicNode {
		t.Fatalf("a node event has no namespace and reaches every one: %+v", b)
	}
	if b := next(t, nodes); b.Index != node {
		t.Fatalf("Node: %+v", b)
	}
}

// The evaluations a node write creates are EvaluationUpdated events, as
// Nomad writes them in an EvalUpdate entry after the node's.
func TestBroker_NodeWriteEvalsAreEvaluationUpdated(t *testing.T) {
	c := newCluster(t, 10)
	s := c.b.Subscribe(Request{Topics: map[string][]string{TopicAll: nil}, Namespace: "*"})
	for _, typ := range []string{TypeNodeRegistration, TypeNodeEvent, TypeNodeDrain, TypeNodeDeregistration} {
		idx := c.write(typ, func(tx *state.Txn) error {
			if typ == TypeNodeDeregistration {
				if err := tx.DeleteNode("n1"); err != nil {
					return err
				}
			} else if err := tx.UpsertNode(&sdk.Node{ID: "n1", Status: sdk.NodeStatusReady}); err != nil {
				return err
			}
			return tx.UpsertEval(&sdk.Evaluation{ID: "eval-" + typ, Namespace: "default", JobID: "sys", NodeID: "n1",
				TriggeredBy: sdk.EvalTriggerNodeUpdate, Status: sdk.EvalStatusPending})
		})
		b := next(t, s)
		if b.Index != idx || len(b.Events) != 2 {
			t.Fatalf("%s: %+v, want the node and its eval at %d", typ, b, idx)
		}
		if node, eval := b.Events[0], b.Events[1]; node.Topic != TopicNode || node.Type != typ ||
			eval.Topic != TopicEvaluation || eval.Type != TypeEvalUpdated {
			t.Fatalf("%s: node event %s %s, eval event %s %s; want %s and %s", typ, node.Topic, node.Type, eval.Topic, eval.Type, typ, TypeEvalUpdated)
		}
	}
}

func TestBroker_PurgedJobCarriesItsLastState(t *testing.T) {
	c := newCluster(t, 10)
	reg := c.register("default", "web")
	s := c.b.Subscribe(Request{Topics: map[string][]string{TopicJob: nil}, Index: reg + 1, Namespace: "default"})
	idx := c.write(TypeJobDeregistered, func(tx *state.Txn) error { return tx.DeleteJob("default", "web") })
	b := next(t, s)
	if b.Index != idx || b.Events[0].Type != TypeJobDeregistered || b.Events[0].Payload["Job"].(*sdk.Job).ID != "web" ||
		b.Events[0].Payload["Deleted"] != true {
		t.Fatalf("purge: %+v", b)
	}
}

func TestBroker_IndexAndFallingBehind(t *testing.T) {
	c := newCluster(t, 3)
	var idx []uint64
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		idx = append(idx, c.register("default", id))
	}
	topics := map[string][]string{TopicJob: nil}
	// From an index the buffer still has, and from one it dropped (the
	// oldest it has), as Nomad's stream does.
	if b := next(t, c.b.Subscribe(Request{Topics: topics, Index: idx[3], Namespace: "default"})); b.Index != idx[3] {
		t.Fatalf("from index %d: %+v", idx[3], b)
	}
	if b := next(t, c.b.Subscribe(Request{Topics: topics, Index: 1, Namespace: "default"})); b.Index != idx[2] {
		t.Fatalf("from index 1: %+v, want the oldest buffered (%d)", b, idx[2])
	}
	// From 0 (no index): all the buffer has, then what comes next, as
	// Nomad's stream starts at its buffer's head.
	fresh := c.b.Subscribe(Request{Topics: topics, Namespace: "default"})
	for _, want := range idx[2:] {
		if b := next(t, fresh); b.Index != want {
			t.Fatalf("from 0: %+v, want the buffered %d", b, want)
		}
	}
	none(t, fresh)
	f := c.register("default", "f")
	if b := next(t, fresh); b.Index != f {
		t.Fatalf("from 0, after the buffer: %+v, want %d", b, f)
	}
	// A subscriber that read one batch, then fell three writes behind.
	slow := c.b.Subscribe(Request{Topics: topics, Index: f, Namespace: "default"})
	next(t, slow)
	for _, id := range []string{"g", "h", "i", "j"} {
		c.register("default", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := slow.Next(ctx); !errors.Is(err, ErrFellBehind) {
		t.Fatalf("slow subscriber: %v, want ErrFellBehind", err)
	}
}

func TestBroker_WritesWithoutEventsAreSkipped(t *testing.T) {
	c := newCluster(t, 10)
	s := c.b.Subscribe(Request{Topics: map[string][]string{TopicAll: nil}, Namespace: "*"})
	c.write("", func(tx *state.Txn) error { return tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "gc"}) })
	c.write(TypeEvalUpdated, func(tx *state.Txn) error { return nil }) // changed nothing
	idx := c.register("default", "web")
	if b := next(t, s); b.Index != idx {
		t.Fatalf("first batch at %d, want %d", b.Index, idx)
	}
}

func TestBroker_OneEventPerObjectAndWrite(t *testing.T) {
	c := newCluster(t, 10)
	s := c.b.Subscribe(Request{Topics: map[string][]string{TopicJob: nil}, Namespace: "*"})
	c.write(TypeJobRegistered, func(tx *state.Txn) error {
		for i := 0; i < 2; i++ {
			if err := tx.UpsertJob(&sdk.Job{Namespace: "default", ID: "web", Priority: 50 + i}); err != nil {
				return err
			}
		}
		return nil
	})
	if b := next(t, s); len(b.Events) != 1 || b.Events[0].Payload["Job"].(*sdk.Job).Priority != 51 {
		t.Fatalf("a job written twice in one write: %+v", b.Events)
	}
}

// A restore brings the state's index below what the buffer dropped: a
// subscription from now still starts with what comes next.
func TestBroker_SubscribeAfterARestore(t *testing.T) {
	c := newCluster(t, 2)
	for _, id := range []string{"a", "b", "c", "d"} {
		c.register("default", id)
	}
	if err := c.store.Restore(1, func(tx *state.Txn) error { return nil }); err != nil {
		t.Fatal(err)
	}
	c.b.Reset(c.store.Snapshot())
	s := c.b.Subscribe(Request{Topics: map[string][]string{TopicJob: nil}, Namespace: "default"})
	idx := c.register("default", "e")
	if b := next(t, s); b.Index != idx {
		t.Fatalf("after a restore: %+v, want the write at %d", b, idx)
	}
}

// A presenter shapes each event once, however many subscribers read it.
func TestBroker_PresenterRunsOncePerEvent(t *testing.T) {
	c := newCluster(t, 10)
	calls := 0
	c.b.SetPresenter(func(ev *Event, _ *state.Snapshot) {
		calls++
		ev.Payload = map[string]any{"Shaped": true}
	})
	idx := c.register("default", "web")
	for i := 0; i < 3; i++ {
		b := next(t, c.b.Subscribe(Request{Topics: map[string][]string{TopicJob: nil}, Index: idx, Namespace: "default"}))
		if b.Events[0].Payload["Shaped"] != true {
			t.Fatalf("subscriber %d: %+v", i, b.Events[0])
		}
	}
	if calls != 2 { // the job's event and its evaluation's
		t.Fatalf("the presenter ran %d times for the write's two events", calls)
	}
}

// Service events follow what a write does to registrations, once per
// allocation however many of its changes the write holds: none for a
// change that is not the service's (the allocation's health), a
// registration again when its tags change (an in-place update).
func TestBroker_ServiceEvents(t *testing.T) {
	c := newCluster(t, 10)
	svc := func(tag string) *sdk.Job {
		return &sdk.Job{Namespace: "default", ID: "web", TaskGroups: []*sdk.TaskGroup{{Name: "g",
			Services: []sdk.Opaque{{"Provider": "nomad", "Name": "web", "PortLabel": "80", "Tags": []any{tag}}}}}}
	}
	alloc := func(job *sdk.Job, status string, healthy bool) *sdk.Allocation {
		return &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "web", TaskGroup: "g", NodeID: "n1", Job: job,
			ClientStatus: status, DeploymentStatus: &sdk.AllocDeploymentStatus{Healthy: &healthy}}
	}
	c.write(TypeNodeRegistration, func(tx *state.Txn) error {
		return tx.UpsertNode(&sdk.Node{ID: "n1", Status: sdk.NodeStatusReady, Attributes: map[string]string{"unique.network.ip-address": "10.0.0.1"}})
	})
	sub := c.b.Subscribe(Request{Topics: map[string][]string{TopicService: nil}, Namespace: "*"})
	c.write(TypeAllocationUpdated, func(tx *state.Txn) error {
		return tx.UpsertAlloc(alloc(svc("v1"), sdk.AllocClientStatusPending, false))
	})
	c.write(TypeAllocationUpdated, func(tx *state.Txn) error {
		return tx.UpsertAlloc(alloc(svc("v1"), sdk.AllocClientStatusRunning, false))
	})
	c.write(TypeAllocationUpdated, func(tx *state.Txn) error { return tx.UpsertAlloc(alloc(svc("v1"), sdk.AllocClientStatusRunning, true)) })
	c.write(TypePlanResult, func(tx *state.Txn) error { return tx.UpsertAlloc(alloc(svc("v2"), sdk.AllocClientStatusRunning, true)) })
	c.write(TypeNodeEvent, func(tx *state.Txn) error {
		n := *tx.Node("n1")
		n.Status = sdk.NodeStatusDown
		if err := tx.UpsertNode(&n); err != nil {
			return err
		}
		return tx.UpsertAlloc(alloc(svc("v2"), sdk.AllocClientStatusRunning, false)) // the same allocation in the same write
	})
	for _, want := range []struct {
		index uint64
		typ   string
		tag   string
	}{{3, TypeServiceRegistration, "v1"}, {5, TypeServiceRegistration, "v2"}, {6, TypeServiceDeregistration, "v2"}} {
		b := next(t, sub)
		if len(b.Events) != 1 {
			t.Fatalf("batch at %d: %+v", b.Index, b.Events)
		}
		ev := b.Events[0]
		r, _ := ev.Payload["Service"].(*services.Registration)
		if b.Index != want.index || ev.Type != want.typ || r == nil || r.Tags[0] != want.tag || ev.Key != r.ID || r.Port != 80 {
			t.Fatalf("event at %d: %+v (%+v), want %s of tag %s at %d", b.Index, ev, r, want.typ, want.tag, want.index)
		}
	}
}
