// Package events is the server's event stream (Nomad's /v1/event/stream):
// every committed raft entry that changed jobs, evaluations, allocations,
// deployments, nodes or ACL objects becomes a batch of events at its
// index, which subscribers filter by topic, key and namespace.
//
// Publishing is cheap, as it happens on every commit: the broker keeps
// the state snapshot at the entry's index and the journal's list of what
// changed, and builds the events only when a subscriber reads them (once
// per entry). Each event carries the object as it was at its index (the
// snapshot is immutable), or for a purged job, a removed node or a deleted
// ACL object, as it was just before.
//
// The broker keeps the last Size entries. A subscriber that falls further
// behind than that loses its place: its stream ends with ErrFellBehind,
// and it resubscribes from an index it chooses, as Nomad's clients do
// after an error.
package events

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/drover-sched/drover/host/services"
	"github.com/drover-sched/drover/host/state"
)

// Topics, as Nomad names them.
const (
	TopicJob        = "Job"
	TopicEvaluation = "Evaluation"
	TopicAllocation = "Allocation"
	TopicDeployment = "Deployment"
	TopicNode       = "Node"
	TopicService    = "Service"
	TopicAll        = "*"
	// The ACL topics, whose events only a management token may read.
	TopicACLToken       = "ACLToken"
	TopicACLPolicy      = "ACLPolicy"
	TopicACLRole        = "ACLRole"
	TopicACLAuthMethod  = "ACLAuthMethod"
	TopicACLBindingRule = "ACLBindingRule"
	// Node pools: only a management token may read them either, as in
	// Nomad (whose stream cannot leave out the pools a token may not see).
	TopicNodePool = "NodePool"
)

// Event types, as Nomad names them: each says which kind of write made the
// event, and every object that write changed gets it (the evaluation a job
// registration creates is a JobRegistered event of the Evaluation topic).
const (
	TypeNodeRegistration              = "NodeRegistration"
	TypeNodeDeregistration            = "NodeDeregistration"
	TypeNodeDrain                     = "NodeDrain" // drain and eligibility
	TypeNodeEvent                     = "NodeStreamEvent"
	TypeJobRegistered                 = "JobRegistered"
	TypeJobDeregistered               = "JobDeregistered"
	TypeEvalUpdated                   = "EvaluationUpdated"
	TypeAllocationUpdated             = "AllocationUpdated"
	TypeAllocationUpdateDesiredStatus = "AllocationUpdateDesiredStatus"
	TypePlanResult                    = "PlanResult"
	TypeDeploymentUpdate              = "DeploymentStatusUpdate"
	TypeDeploymentPromotion           = "DeploymentPromotion"
	TypeDeploymentAllocHealth         = "DeploymentAllocHealth"
	// Service events say what the write did to the service registrations
	// of the allocations it changed (their registration as their node
	// reports them running, their removal as they stop or their node goes
	// down), whatever the write was.
	TypeServiceRegistration   = "ServiceRegistration"
	TypeServiceDeregistration = "ServiceDeregistration"
	// ACL events say whether the object is there after the write or gone
	// (aclTypes).
	TypeACLTokenUpserted       = "ACLTokenUpserted"
	TypeACLTokenDeleted        = "ACLTokenDeleted"
	TypeACLPolicyUpserted      = "ACLPolicyUpserted"
	TypeACLPolicyDeleted       = "ACLPolicyDeleted"
	TypeACLRoleUpserted        = "ACLRoleUpserted"
	TypeACLRoleDeleted         = "ACLRoleDeleted"
	TypeACLAuthMethodUpserted  = "ACLAuthMethodUpserted"
	TypeACLAuthMethodDeleted   = "ACLAuthMethodDeleted"
	TypeACLBindingRuleUpserted = "ACLBindingRuleUpserted"
	TypeACLBindingRuleDeleted  = "ACLBindingRuleDeleted"
	TypeNodePoolUpserted       = "NodePoolUpserted"
	TypeNodePoolDeleted        = "NodePoolDeleted"
)

// Event is one object's change, in Nomad's shape.
type Event struct {
	Topic     string
	Type      string
	Key       string
	Namespace string
	// FilterKeys are the other keys a subscription may name to get the
	// event: the job and deployment of an evaluation or allocation (the
	// deployment "" without one: Nomad's always has both), the job of a
	// deployment, the name of an ACL role, the auth method of a binding
	// rule.
	FilterKeys []string
	Index      uint64
	// Payload holds the object under its kind's name: {"Job": ...}
	// (with "Deleted": true for a purged job),
	// {"Evaluation": ...}, {"Allocation": ...} (without its job),
	// {"Deployment": ...}, {"Node": ...}, {"ACLToken": ...} (without its
	// secret), {"ACLPolicy": ...}, {"ACLRole": ...}, {"AuthMethod": ...},
	// {"ACLBindingRule": ...}.
	Payload map[string]any
}

// Batch is the events of one index.
type Batch struct {
	Index  uint64
	Events []Event
}

// ErrFellBehind ends a subscription that the broker's buffer no longer
// covers.
var ErrFellBehind = errors.New("events: the subscriber fell behind the event buffer; resubscribe from a later index")

// DefaultSize is how many committed entries the broker keeps, as Nomad's
// event_buffer_size.
const DefaultSize = 100

// entry is one commit, its events built on first read.
type entry struct {
	index   uint64
	typ     string // the event type of the entry's message
	snap    *state.Snapshot
	prev    *state.Snapshot // the state before, for objects the entry removed
	changes []state.Change
	once    sync.Once
	events  []Event
}

// Broker buffers committed entries and hands them to subscribers.
type Broker struct {
	mu      sync.Mutex
	size    int
	buf     []*entry // oldest first
	dropped uint64   // the newest index dropped from buf
	prev    *state.Snapshot
	publish chan struct{} // closed and replaced at every publish
	// present shapes each event once, when its entry's events are built
	// (SetPresenter).
	present Presenter
}

// Presenter shapes an event for subscribers (Broker.SetPresenter). snap is
// the state at the event's index, for what the API shows with an object
// that the object does not hold (the names of a token's roles).
type Presenter func(ev *Event, snap *state.Snapshot)

// SetPresenter has every event built from now on passed to fn once, before
// any subscriber gets it: the API gives payloads its answers' shape there,
// once for all subscribers. fn may replace an event's Payload, not change
// the objects in it (they are the state's).
func (b *Broker) SetPresenter(fn Presenter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.present = fn
}

// New returns a broker keeping the last size entries (DefaultSize if 0).
func New(size int) *Broker {
	if size <= 0 {
		size = DefaultSize
	}
	return &Broker{size: size, publish: make(chan struct{})}
}

// Publish records that the entry at snap's index, of the given event type
// (Type, "" for entries that make no events), changed what changes lists.
// Entries must come in index order, each with the snapshot just after it.
func (b *Broker) Publish(typ string, snap *state.Snapshot, changes []state.Change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.prev
	b.prev = snap
	if typ == "" || len(changes) == 0 {
		return
	}
	b.buf = append(b.buf, &entry{index: snap.Index(), typ: typ, snap: snap, prev: prev, changes: changes})
	if over := len(b.buf) - b.size; over > 0 {
		b.dropped = b.buf[over-1].index
		clear(b.buf[:over])
		b.buf = b.buf[over:]
	}
	close(b.publish)
	b.publish = make(chan struct{})
}

// Reset forgets what was published (the state was restored): open
// subscriptions carry on with what comes next.
func (b *Broker) Reset(snap *state.Snapshot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.buf)
	b.buf, b.prev = b.buf[:0], snap
}

// Request is what a subscriber wants.
type Request struct {
	// Topics maps a topic (or "*") to the keys wanted ("*" or none: all).
	Topics map[string][]string
	// Index: events at this index and later. Older than the buffer, or 0,
	// starts at its oldest entry, as Nomad's (a subscriber that wants only
	// what comes next asks for the state's index + 1).
	Index uint64
	// Namespace filters namespaced events ("*": every namespace). Node
	// events have none and always pass.
	Namespace string
}

// Subscription reads batches in index order.
type Subscription struct {
	b    *Broker
	req  Request
	next uint64 // the lowest index still to deliver
}

// Subscribe starts a subscription.
func (b *Broker) Subscribe(req Request) *Subscription {
	s := &Subscription{b: b, req: req, next: req.Index}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case req.Index == 0 && len(b.buf) == 0 && b.prev != nil:
		// Nothing buffered: what comes next. After a restore the state's
		// index may be below what was dropped: start past both.
		s.next = max(b.prev.Index(), b.dropped) + 1
	case req.Index <= b.dropped:
		s.next = b.dropped + 1 // the oldest the buffer has
	}
	return s
}

// Next returns the next batch with events the subscription wants,
// waiting for one until ctx ends.
func (s *Subscription) Next(ctx context.Context) (*Batch, error) {
	for {
		e, wait, err := s.b.after(s.next)
		if err != nil {
			return nil, err
		}
		if e == nil {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-wait:
				continue
			}
		}
		s.next = e.index + 1
		s.b.mu.Lock()
		present := s.b.present
		s.b.mu.Unlock()
		var out []Event
		for _, ev := range e.build(present) {
			if s.wants(&ev) {
				out = append(out, ev)
			}
		}
		if len(out) > 0 {
			return &Batch{Index: e.index, Events: out}, nil
		}
	}
}

// after returns the oldest buffered entry at index or later, or a channel
// closed at the next publish when there is none yet.
func (b *Broker) after(index uint64) (*entry, <-chan struct{}, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if index <= b.dropped {
		return nil, nil, ErrFellBehind // entries it has not seen were dropped
	}
	if i := sort.Search(len(b.buf), func(i int) bool { return b.buf[i].index >= index }); i < len(b.buf) {
		return b.buf[i], nil, nil
	}
	return nil, b.publish, nil
}

func (s *Subscription) wants(ev *Event) bool {
	if ev.Namespace != "" && s.req.Namespace != "*" && ev.Namespace != s.req.Namespace {
		return false
	}
	for _, topic := range []string{ev.Topic, TopicAll} {
		keys, ok := s.req.Topics[topic]
		if !ok {
			continue
		}
		if len(keys) == 0 {
			return true
		}
		for _, k := range keys {
			if k == "*" || k == ev.Key {
				return true
			}
			for _, fk := range ev.FilterKeys {
				if k == fk {
					return true
				}
			}
		}
	}
	return false
}

// nodeWrite holds the event types of node writes. Drover writes the
// evaluations a node change causes with it; Nomad writes them in an
// entry of their own just after (its createNodeEvals), so their events
// are EvaluationUpdated ones, which is what a subscriber watching
// evaluations expects.
var nodeWrite = map[string]bool{TypeNodeRegistration: true, TypeNodeDeregistration: true, TypeNodeEvent: true, TypeNodeDrain: true}

// build makes the entry's events (once), each passed to present (if set).
func (e *entry) build(present Presenter) []Event {
	e.once.Do(func() {
		seen := make(map[state.Change]bool, len(e.changes))
		compared := map[string]bool{} // the allocations whose registrations were compared
		for _, c := range e.changes {
			if seen[c] { // an object the write touched twice
				continue
			}
			seen[c] = true
			if ev, ok := e.event(c); ok {
				ev.Index = e.index
				if ev.Type == "" {
					ev.Type = e.typ
				}
				if ev.Topic == TopicEvaluation && nodeWrite[e.typ] {
					ev.Type = TypeEvalUpdated
				}
				if present != nil {
					present(&ev, e.snap)
				}
				e.events = append(e.events, ev)
			}
			for _, ev := range e.serviceEvents(c, compared) {
				ev.Index = e.index
				if present != nil {
					present(&ev, e.snap)
				}
				e.events = append(e.events, ev)
			}
		}
		e.snap, e.prev, e.changes = nil, nil, nil // the events hold what they need
	})
	return e.events
}

// event is the event of one change. Removed evaluations, allocations and
// deployments (garbage collection) make none, as in Nomad; a purged job, a
// removed node and a deleted ACL object carry their last state.
func (e *entry) event(c state.Change) (Event, bool) {
	switch c.Kind {
	case state.KindJob:
		ns, id, _ := strings.Cut(c.Key, "\x00")
		payload := map[string]any{}
		j := e.snap.Job(ns, id)
		if j == nil && e.prev != nil {
			// Purged: later Nomad versions say so with "Deleted", which
			// Nomad's client reads (Event.DeregisteredJob).
			j, payload["Deleted"] = e.prev.Job(ns, id), true
		}
		if j == nil {
			return Event{}, false
		}
		payload["Job"] = j
		return Event{Topic: TopicJob, Key: j.ID, Namespace: j.Namespace, Payload: payload}, true
	case state.KindEval:
		ev := e.snap.Eval(c.Key)
		if ev == nil {
			return Event{}, false
		}
		return Event{Topic: TopicEvaluation, Key: ev.ID, Namespace: ev.Namespace,
			FilterKeys: []string{ev.JobID, ev.DeploymentID}, Payload: map[string]any{"Evaluation": ev}}, true
	case state.KindAlloc:
		a := e.snap.Alloc(c.Key)
		if a == nil {
			return Event{}, false
		}
		c := *a
		c.Job = nil // as Nomad's: the job is its own topic
		return Event{Topic: TopicAllocation, Key: a.ID, Namespace: a.Namespace,
			FilterKeys: []string{a.JobID, a.DeploymentID}, Payload: map[string]any{"Allocation": &c}}, true
	case state.KindDeployment:
		d := e.snap.Deployment(c.Key)
		if d == nil {
			return Event{}, false
		}
		return Event{Topic: TopicDeployment, Key: d.ID, Namespace: d.Namespace,
			FilterKeys: []string{d.JobID}, Payload: map[string]any{"Deployment": d}}, true
	case state.KindNode:
		n := e.snap.Node(c.Key)
		if n == nil && e.prev != nil {
			n = e.prev.Node(c.Key)
		}
		if n == nil {
			return Event{}, false
		}
		return Event{Topic: TopicNode, Key: n.ID, Payload: map[string]any{"Node": n}}, true
	}
	return e.aclEvent(c)
}

// aclTypes are each ACL topic's event types: of an object written, and of
// one deleted.
var aclTypes = map[string]struct{ upserted, deleted string }{
	TopicACLToken:       {TypeACLTokenUpserted, TypeACLTokenDeleted},
	TopicACLPolicy:      {TypeACLPolicyUpserted, TypeACLPolicyDeleted},
	TopicACLRole:        {TypeACLRoleUpserted, TypeACLRoleDeleted},
	TopicACLAuthMethod:  {TypeACLAuthMethodUpserted, TypeACLAuthMethodDeleted},
	TopicACLBindingRule: {TypeACLBindingRuleUpserted, TypeACLBindingRuleDeleted},
	TopicNodePool:       {TypeNodePoolUpserted, TypeNodePoolDeleted},
}

// aclEvent is the event of a change to an ACL object: its upsert, with the
// object as the entry left it, or its deletion, with its last state. Its
// type says which, read from the state rather than from the write (for
// the writes Nomad has, the same): the binding rules an auth method's
// deletion takes along (Nomad's stay) are ACLBindingRuleDeleted.
func (e *entry) aclEvent(c state.Change) (Event, bool) {
	if ev, ok := aclObjectEvent(e.snap, c); ok {
		ev.Type = aclTypes[ev.Topic].upserted
		return ev, true
	}
	if e.prev != nil {
		if ev, ok := aclObjectEvent(e.prev, c); ok {
			ev.Type = aclTypes[ev.Topic].deleted
			return ev, true
		}
	}
	return Event{}, false
}

// aclObjectEvent is the event (but its type) of the ACL object a change
// names, as snap has it; false if snap has none, or c names no ACL object.
func aclObjectEvent(snap *state.Snapshot, c state.Change) (Event, bool) {
	switch c.Kind {
	case state.KindACLToken:
		if t := snap.ACLTokenByAccessor(c.Key); t != nil {
			public := *t
			public.SecretID = "" // what a request presents: never in an event
			return Event{Topic: TopicACLToken, Key: t.AccessorID, Payload: map[string]any{"ACLToken": &public}}, true
		}
	case state.KindACLPolicy:
		if p := snap.ACLPolicy(c.Key); p != nil {
			return Event{Topic: TopicACLPolicy, Key: p.Name, Payload: map[string]any{"ACLPolicy": p}}, true
		}
	case state.KindACLRole:
		if r := snap.ACLRoleByID(c.Key); r != nil {
			return Event{Topic: TopicACLRole, Key: r.ID, FilterKeys: []string{r.Name}, Payload: map[string]any{"ACLRole": r}}, true
		}
	case state.KindACLAuthMethod:
		if m := snap.ACLAuthMethod(c.Key); m != nil {
			return Event{Topic: TopicACLAuthMethod, Key: m.Name, Payload: map[string]any{"AuthMethod": m}}, true
		}
	case state.KindACLBindingRule:
		if r := snap.ACLBindingRule(c.Key); r != nil {
			return Event{Topic: TopicACLBindingRule, Key: r.ID, FilterKeys: []string{r.AuthMethod},
				Payload: map[string]any{"ACLBindingRule": r}}, true
		}
	case state.KindNodePool:
		if p := snap.NodePool(c.Key); p != nil {
			return Event{Topic: TopicNodePool, Key: p.Name, Payload: map[string]any{"NodePool": p}}, true
		}
	}
	return Event{}, false
}

// serviceEvents are the changes to service registrations a change makes:
// of an allocation, or of the running allocations of a node (one going
// down takes theirs away). done holds the allocations compared already in
// this entry. A registration is new (ServiceRegistration) if it was not
// there before or differs in more than its indexes; gone
// (ServiceDeregistration) if it is there no longer, with its last state.
func (e *entry) serviceEvents(c state.Change, done map[string]bool) []Event {
	var allocs []string
	switch c.Kind {
	case state.KindAlloc:
		allocs = []string{c.Key}
	case state.KindNode:
		for _, snap := range []*state.Snapshot{e.prev, e.snap} {
			if snap != nil {
				for _, a := range snap.AllocsByNode(c.Key) {
					allocs = append(allocs, a.ID)
				}
			}
		}
	default:
		return nil
	}
	var out []Event
	for _, id := range allocs {
		if done[id] {
			continue
		}
		done[id] = true
		before, after := registrationsOf(e.prev, id), registrationsOf(e.snap, id)
		for _, r := range after {
			if b, ok := before[r.ID]; !ok || !sameRegistration(b, r) {
				out = append(out, serviceEvent(TypeServiceRegistration, r))
			}
		}
		for _, b := range before {
			if _, ok := after[b.ID]; !ok {
				out = append(out, serviceEvent(TypeServiceDeregistration, b))
			}
		}
	}
	slices.SortFunc(out, func(x, y Event) int { return cmp.Or(strings.Compare(x.Key, y.Key), strings.Compare(x.Type, y.Type)) })
	return out
}

func registrationsOf(snap *state.Snapshot, allocID string) map[string]*services.Registration {
	if snap == nil {
		return nil
	}
	a := snap.Alloc(allocID)
	if a == nil {
		return nil
	}
	out := map[string]*services.Registration{}
	for _, r := range services.OfAlloc(snap, a) {
		out[r.ID] = r
	}
	return out
}

// sameRegistration reports whether a and b register the same instance
// alike: an allocation's other changes (its health, its indexes) are not
// the service's.
func sameRegistration(a, b *services.Registration) bool {
	return a.ServiceName == b.ServiceName && a.Address == b.Address && a.Port == b.Port && a.NodeID == b.NodeID &&
		slices.Equal(a.Tags, b.Tags)
}

func serviceEvent(typ string, r *services.Registration) Event {
	return Event{Topic: TopicService, Type: typ, Key: r.ID, Namespace: r.Namespace, FilterKeys: []string{r.JobID, r.ServiceName},
		Payload: map[string]any{"Service": r}}
}
