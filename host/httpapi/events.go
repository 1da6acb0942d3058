package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/events"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// EventHeartbeat is how often an idle event stream sends "{}", as Nomad's
// (which sends one at the start too).
const EventHeartbeat = 30 * time.Second

var eventTopics = []string{events.TopicJob, events.TopicEvaluation, events.TopicAllocation, events.TopicDeployment, events.TopicNode,
	events.TopicService, events.TopicACLToken, events.TopicACLPolicy, events.TopicACLRole, events.TopicACLAuthMethod,
	events.TopicACLBindingRule, events.TopicNodePool, events.TopicAll}

// eventStream serves GET /v1/event/stream as Nomad does: newline-delimited
// JSON, one {"Index": N, "Events": [...]} per committed write with events
// the request wants, and {} at the start and every EventHeartbeat while
// idle.
//
// Query: topic=Topic:Key (repeatable; Key "*" or left out: every key; no
// topic: everything), index=N (events at N and later, as far back as the
// buffer goes; 0, the default, all it has, as Nomad's), namespace (default
// "default", "*" for all).
func (a *API) eventStream(w http.ResponseWriter, r *http.Request) (any, error) {
	b := a.srv.Events()
	if b == nil {
		return nil, errorf(http.StatusNotImplemented, "the event stream is off (server event_buffer_size = 0)")
	}
	req := events.Request{Topics: map[string][]string{}, Namespace: requestNamespace(r)}
	for _, t := range r.URL.Query()["topic"] {
		topic, key, _ := strings.Cut(t, ":")
		if strings.Contains(key, ":") { // as Nomad's: no key has one
			return nil, errorf(http.StatusBadRequest, "Invalid key value pair for topic, topic: %s", t) // Nomad's words
		}
		if !slices.Contains(eventTopics, topic) {
			return nil, errorf(http.StatusBadRequest, "unknown event topic %q in topic=%q (topics: %s)", topic, t, strings.Join(eventTopics, ", "))
		}
		if key == "" {
			key = "*"
		}
		req.Topics[topic] = append(req.Topics[topic], key)
	}
	if len(req.Topics) == 0 {
		req.Topics[events.TopicAll] = []string{"*"}
	}
	if z := authzOf(r); z != nil {
		if err := eventsAllowed(z.acl, req); err != nil {
			return nil, err
		}
	}
	if v := r.URL.Query().Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "index=%q is not an index", v)
		}
		req.Index = n
	}
	sub := b.Subscribe(req)
	ctx, stop, send := a.startStream(w, r)
	defer stop()
	if !send(struct{}{}) {
		return streamed, nil
	}
	// The heartbeat is due EventHeartbeat after the stream last sent
	// something, whatever came meanwhile that this token may not read.
	last := time.Now()
	for {
		wait, cancel := context.WithDeadline(ctx, last.Add(a.heartbeat))
		batch, err := sub.Next(wait)
		cancel()
		// The token is resolved again for each batch: as Nomad's, a
		// stream ends when its token is deleted or expires, or when its
		// policies change so that it may no longer read what it asked
		// for; and what it may read decides which events it is sent.
		current, valid := a.currentACL(r)
		if !valid {
			send(map[string]string{"Error": "ACL token expired or deleted"})
			return streamed, nil
		}
		if current != nil && eventsAllowed(current, req) != nil {
			send(map[string]string{"Error": "Permission denied: the ACL token's policies changed"})
			return streamed, nil
		}
		if err == nil && current != nil {
			if batch = readableEvents(current, batch); batch == nil {
				continue
			}
		}
		var out any = batch
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			out = struct{}{} // heartbeat
		case ctx.Err() != nil:
			return streamed, nil // the client left, or the agent stops
		default:
			send(map[string]string{"Error": err.Error()})
			return streamed, nil
		}
		if !send(out) {
			return streamed, nil // the client is gone
		}
		last = time.Now()
	}
}

// eventsAllowed checks each topic asked for against a token's ACL, as
// Nomad's event stream does: every topic ("*"), the ACL topics and node
// pools need a management token, node events node read, the others read-job in the
// request's namespace (for "*", in some namespace: the events of the
// others are left out, readableEvents).
func eventsAllowed(a *acl.ACL, req events.Request) error {
	for topic := range req.Topics {
		var ok bool
		switch topic {
		case events.TopicAll:
			ok = a.IsManagement()
		case events.TopicNode:
			ok = a.AllowNodeRead()
		case events.TopicACLToken, events.TopicACLPolicy, events.TopicACLRole, events.TopicACLAuthMethod, events.TopicACLBindingRule,
			events.TopicNodePool:
			ok = a.IsManagement()
		default:
			ok = a.AllowNamespaceOperation(req.Namespace, acl.NamespaceCapabilityReadJob)
		}
		if !ok {
			return errPermissionDenied
		}
	}
	return nil
}

// presentEvent gives an event's object the shape the API's reads answer it
// in: a node or allocation with Nomad's legacy resource fields, as Nomad's
// events have them (its state store keeps them), an ACL token, policy or
// role as the ACL endpoints answer it (a token's role names as snap has
// them). The broker calls it once per event (events.Broker.SetPresenter);
// the objects are the state's, so the payload is replaced, not changed.
func presentEvent(ev *events.Event, snap *state.Snapshot) {
	p := ev.Payload
	switch ev.Topic {
	case events.TopicNode:
		ev.Payload = map[string]any{"Node": withLegacyNode(p["Node"].(*sdk.Node))}
	case events.TopicAllocation:
		ev.Payload = map[string]any{"Allocation": withLegacyAlloc(p["Allocation"].(*sdk.Allocation))}
	case events.TopicACLToken:
		ev.Payload = map[string]any{"ACLToken": tokenOut(snap, p["ACLToken"].(*state.ACLToken))} // SecretID "": the broker emptied it
	case events.TopicACLPolicy:
		ev.Payload = map[string]any{"ACLPolicy": policyOut(p["ACLPolicy"].(*state.ACLPolicy))}
	case events.TopicACLRole:
		ev.Payload = map[string]any{"ACLRole": roleOut(p["ACLRole"].(*state.ACLRole))}
	case events.TopicACLAuthMethod:
		// Without the OIDC client secret, which Nomad's events carry:
		// event streams end up in logs and sinks; the method's read
		// answers it to a management token.
		m := authMethodOut(p["AuthMethod"].(*state.ACLAuthMethod))
		m.Config.OIDCClientSecret = ""
		ev.Payload = map[string]any{"AuthMethod": m}
	case events.TopicACLBindingRule:
		ev.Payload = map[string]any{"ACLBindingRule": bindingRuleOut(p["ACLBindingRule"].(*state.ACLBindingRule))}
	case events.TopicNodePool:
		ev.Payload = map[string]any{"NodePool": nodePoolOut(p["NodePool"].(*state.NodePool))}
	}
}

// readableEvents is batch without the events of namespaces where a does
// not hold read-job (nil when none is left): a stream of every namespace
// ("*") is sent only those a token may read. Events of no namespace
// (nodes) were allowed by their topic.
func readableEvents(a *acl.ACL, batch *events.Batch) *events.Batch {
	if batch == nil || a.IsManagement() {
		return batch
	}
	kept := make([]events.Event, 0, len(batch.Events))
	for _, ev := range batch.Events {
		if ev.Namespace == "" || a.AllowNamespaceOperationIn(ev.Namespace, acl.NamespaceCapabilityReadJob) {
			kept = append(kept, ev)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out := *batch
	out.Events = kept
	return &out
}
