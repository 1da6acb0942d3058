package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/broker"
	"github.com/drover-sched/drover/host/plan"
	"github.com/drover-sched/drover/sdk"
	"github.com/tinylib/msgp/msgp"
)

// evalHost is what a worker needs of the leader's machinery: the broker,
// the plan queue and eval writes. On the leader its workers use it in
// process (localHost); the workers of a follower reach the leader's over
// its RPC address (remoteHost), as Nomad's followers do, so every server
// schedules while the leader alone decides what commits.
type evalHost interface {
	// Dequeue waits for an eval of the given types; it returns a nil eval
	// when none came in time. waitIndex is the index the state must reach
	// before the eval is scheduled.
	Dequeue(ctx context.Context, types []string) (eval *sdk.Evaluation, token string, waitIndex uint64, err error)
	Ack(evalID, token string) error
	// Nack hands the eval back; reason goes to its history.
	Nack(evalID, token, reason string) error
	OutstandingReset(evalID, token string) error
	// SubmitPlan queues a plan and waits for its result. The eval's nack
	// timer is paused meanwhile, on the leader, and resumed there whatever
	// becomes of the worker that sent it (as Nomad's Plan.Submit).
	SubmitPlan(ctx context.Context, p *sdk.Plan) (*sdk.PlanResult, error)
	// ApplyEvals commits evals written by the holder of evalID's token
	// (which it checks, and whose nack timer it resets).
	ApplyEvals(ctx context.Context, evalID, token string, evals []*sdk.Evaluation) error
	// GarbageCollect deletes what a core eval's collection asks, checked
	// against the leader's state and the thresholds.
	GarbageCollect(ctx context.Context, evalID, token string, th sdk.GCThresholds, req *sdk.GCRequest) error
}

// localHost is the leader's own machinery.
type localHost struct{ s *Server }

func (h localHost) Dequeue(ctx context.Context, types []string) (*sdk.Evaluation, string, uint64, error) {
	e, token, err := h.s.broker.Dequeue(ctx, types)
	if err != nil {
		return nil, "", 0, err
	}
	return e, token, waitIndex(h.s.store.Snapshot(), e), nil
}

func (h localHost) Ack(evalID, token string) error { return h.s.broker.Ack(evalID, token) }

func (h localHost) Nack(evalID, token, reason string) error {
	h.s.phases.fail(evalID, reason)
	return h.s.broker.Nack(evalID, token)
}

func (h localHost) OutstandingReset(evalID, token string) error {
	return h.s.broker.OutstandingReset(evalID, token)
}

func (h localHost) SubmitPlan(ctx context.Context, p *sdk.Plan) (res *sdk.PlanResult, err error) {
	s := h.s
	// The plan queue may take long: the nack timer waits meanwhile.
	if err := s.broker.PauseNackTimeout(p.EvalID, p.EvalToken); err != nil {
		return nil, err
	}
	defer func() {
		if rerr := s.broker.ResumeNackTimeout(p.EvalID, p.EvalToken); err == nil && rerr != nil {
			res, err = nil, rerr
		}
	}()
	s.phases.set(p.EvalID, sdk.EvalPhaseApplying, s.now())
	defer s.phases.set(p.EvalID, sdk.EvalPhaseScheduling, s.now())
	return s.applier.Submit(ctx, p)
}

func (h localHost) GarbageCollect(_ context.Context, evalID, token string, th sdk.GCThresholds, req *sdk.GCRequest) error {
	if err := h.s.broker.OutstandingReset(evalID, token); err != nil {
		return err
	}
	return h.s.garbageCollect(h.s.store.Snapshot(), th, req)
}

func (h localHost) ApplyEvals(ctx context.Context, evalID, token string, evals []*sdk.Evaluation) error {
	if err := h.s.broker.OutstandingReset(evalID, token); err != nil {
		return err
	}
	return h.s.evalBatch.apply(ctx, evals)
}

// Paths of the leader's endpoints for followers' workers (RPC address
// only).
const (
	evalPathPrefix = "/internal/eval/"
	// dequeueWait is how long the leader holds a follower's dequeue.
	dequeueWait = time.Second
)

// Headers of those endpoints.
const (
	tokenHeader     = "X-Drover-Eval-Token"
	waitIndexHeader = "X-Drover-Wait-Index"
	errCodeHeader   = "X-Drover-Error"
)

// Error codes across the wire, so a follower's worker sees the errors the
// leader's would.
const (
	codeStale       = "stale" // the eval's token is no longer outstanding
	codeInvalidPlan = "invalid-plan"
	codeUnavailable = "unavailable" // not the leader, broker or queue off
	codeDisabled    = "disabled"
	codeDeadline    = "deadline"
	codeInvalidEval = "invalid-eval"
)

func errorCode(err error) string {
	switch {
	case errors.Is(err, plan.ErrStaleToken), errors.Is(err, broker.ErrTokenMismatch),
		errors.Is(err, broker.ErrNotOutstanding), errors.Is(err, broker.ErrNackTimeout):
		return codeStale
	case errors.Is(err, sdk.ErrPlanInvalid):
		return codeInvalidPlan
	case errors.Is(err, sdk.ErrInvalidEval):
		return codeInvalidEval
	case errors.Is(err, broker.ErrDisabled):
		return codeDisabled
	case errors.Is(err, context.DeadlineExceeded):
		return codeDeadline
	case errors.Is(err, plan.ErrQueueDisabled), errors.Is(err, ErrNotLeader), errors.Is(err, errBatcherStopped),
		errors.Is(err, context.Canceled):
		return codeUnavailable
	}
	return ""
}

func errorFromCode(code, msg string) error {
	switch code {
	case codeStale:
		return fmt.Errorf("%w: leader: %s", broker.ErrTokenMismatch, msg)
	case codeInvalidPlan:
		return fmt.Errorf("%w: leader: %s", sdk.ErrPlanInvalid, msg)
	case codeInvalidEval:
		return fmt.Errorf("%w: leader: %s", sdk.ErrInvalidEval, msg)
	case codeDisabled:
		return fmt.Errorf("%w: leader: %s", broker.ErrDisabled, msg)
	case codeUnavailable:
		return fmt.Errorf("%w: leader: %s", ErrNotLeader, msg)
	case codeDeadline:
		return fmt.Errorf("%w: leader: %s", context.DeadlineExceeded, msg)
	}
	return fmt.Errorf("server: leader: %s", msg)
}

// serveEval answers the followers' workers: /internal/eval/{op}.
func (s *Server) serveEval(w http.ResponseWriter, r *http.Request) {
	fail := func(err error) {
		w.Header().Set(errCodeHeader, errorCode(err))
		http.Error(w, err.Error(), http.StatusConflict)
	}
	if !s.IsLeader() {
		fail(ErrNotLeader)
		return
	}
	h := localHost{s}
	q := r.URL.Query()
	id, token := q.Get("eval"), q.Get("token")
	body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	if err != nil {
		fail(err)
		return
	}
	op := strings.TrimPrefix(r.URL.Path, evalPathPrefix)
	switch op {
	case "dequeue":
		ctx, cancel := context.WithTimeout(r.Context(), dequeueWait)
		defer cancel()
		e, tok, widx, err := h.Dequeue(ctx, strings.Split(q.Get("types"), ","))
		if errors.Is(err, context.DeadlineExceeded) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if err != nil {
			fail(err)
			return
		}
		out, err := e.MarshalMsg(nil)
		if err == nil && r.Context().Err() != nil {
			err = r.Context().Err()
		}
		if err == nil {
			w.Header().Set(tokenHeader, tok)
			w.Header().Set(waitIndexHeader, strconv.FormatUint(widx, 10))
			_, err = w.Write(out)
		}
		if err != nil {
			// The follower's worker left (or the answer broke): hand the
			// eval back now rather than at its nack timeout.
			_ = h.Nack(e.ID, tok, "the follower's worker did not take it: "+err.Error())
		}
		return
	case "ack":
		err = h.Ack(id, token)
	case "nack":
		err = h.Nack(id, token, string(body))
	case "reset":
		err = h.OutstandingReset(id, token)
	case "plan":
		var p sdk.Plan
		if _, err := p.UnmarshalMsg(body); err != nil {
			fail(fmt.Errorf("%w: undecodable plan: %v", sdk.ErrPlanInvalid, err))
			return
		}
		res, err := h.SubmitPlan(r.Context(), &p)
		if err != nil {
			fail(err)
			return
		}
		out, err := res.MarshalMsg(nil)
		if err != nil {
			fail(err)
			return
		}
		_, _ = w.Write(out)
		return
	case "gc":
		var req sdk.GCRequest
		if _, derr := req.UnmarshalMsg(body); derr != nil {
			fail(fmt.Errorf("%w: undecodable collection: %v", sdk.ErrInvalidEval, derr))
			return
		}
		th, derr := thresholdsFromQuery(q)
		if derr != nil {
			fail(derr)
			return
		}
		err = h.GarbageCollect(r.Context(), id, token, th, &req)
	case "apply":
		evals, derr := decodeEvals(body)
		if derr != nil {
			fail(derr)
			return
		}
		err = h.ApplyEvals(r.Context(), id, token, evals)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		fail(err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// The thresholds of a collection, as query parameters (nanoseconds).
var thresholdParams = []string{"eval", "batch_eval", "job", "node", "deployment"}

func thresholdsQuery(q url.Values, th sdk.GCThresholds) {
	for i, d := range []time.Duration{th.Eval, th.BatchEval, th.Job, th.Node, th.Deployment} {
		q.Set("gc_"+thresholdParams[i], strconv.FormatInt(int64(d), 10))
	}
}

func thresholdsFromQuery(q url.Values) (sdk.GCThresholds, error) {
	var th sdk.GCThresholds
	for i, dst := range []*time.Duration{&th.Eval, &th.BatchEval, &th.Job, &th.Node, &th.Deployment} {
		n, err := strconv.ParseInt(q.Get("gc_"+thresholdParams[i]), 10, 64)
		if err != nil || n < 0 {
			return th, fmt.Errorf("%w: bad collection threshold %s", sdk.ErrInvalidEval, thresholdParams[i])
		}
		*dst = time.Duration(n)
	}
	return th, nil
}

func encodeEvals(evals []*sdk.Evaluation) ([]byte, error) {
	out := msgp.AppendArrayHeader(nil, uint32(len(evals)))
	for _, e := range evals {
		var err error
		if out, err = e.MarshalMsg(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeEvals(b []byte) ([]*sdk.Evaluation, error) {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return nil, fmt.Errorf("undecodable evals: %w", err)
	}
	evals := make([]*sdk.Evaluation, 0, n)
	for range n {
		e := &sdk.Evaluation{}
		if b, err = e.UnmarshalMsg(b); err != nil {
			return nil, fmt.Errorf("undecodable evals: %w", err)
		}
		evals = append(evals, e)
	}
	return evals, nil
}

// remoteHost is the leader's machinery seen from a follower.
type remoteHost struct {
	s      *Server
	client *http.Client
}

func newRemoteHost(s *Server) remoteHost {
	return remoteHost{s: s, client: &http.Client{Transport: s.rpcTransport()}}
}

// call sends one request to the leader's /internal/eval/{op}; a non-nil
// answer is the response (the caller closes its body).
func (h remoteHost) call(ctx context.Context, op string, q url.Values, body []byte) (*http.Response, error) {
	leader := h.s.Leader()
	if leader == "" || h.s.IsLeader() {
		return nil, fmt.Errorf("%w: no leader to reach", ErrNotLeader)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+leader+evalPathPrefix+op+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("server: call to the leader: %w", cerr)
		}
		return nil, fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
		resp.Body.Close()
		return nil, errorFromCode(resp.Header.Get(errCodeHeader), strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// simpleTimeout bounds an op that answers nothing but success or an error;
// they are sent even while the worker stops (a nack on the way out).
const simpleTimeout = 10 * time.Second

// simple sends an op that answers nothing but success or an error.
func (h remoteHost) simple(op, evalID, token string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), simpleTimeout)
	defer cancel()
	resp, err := h.call(ctx, op, url.Values{"eval": {evalID}, "token": {token}}, body)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (h remoteHost) Dequeue(ctx context.Context, types []string) (*sdk.Evaluation, string, uint64, error) {
	// The poll is not cut short when the worker stops: the leader may be
	// handing it an eval, which only this worker could give back (process
	// nacks it). It ends within dequeueWait; a leader that is gone without
	// closing the connection must not hold the worker much longer.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dequeueWait+5*time.Second)
	defer cancel()
	resp, err := h.call(ctx, "dequeue", url.Values{"types": {strings.Join(types, ",")}}, nil)
	if err != nil {
		return nil, "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil, "", 0, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", 0, err
	}
	e := &sdk.Evaluation{}
	if _, err := e.UnmarshalMsg(b); err != nil {
		return nil, "", 0, fmt.Errorf("server: undecodable eval from the leader: %w", err)
	}
	widx, err := strconv.ParseUint(resp.Header.Get(waitIndexHeader), 10, 64)
	token := resp.Header.Get(tokenHeader)
	if err != nil || token == "" {
		// Not an answer to schedule from; the eval goes back at its nack
		// timeout.
		return nil, "", 0, fmt.Errorf("server: the leader's dequeue answer lacks its token or wait index")
	}
	return e, token, widx, nil
}

func (h remoteHost) Ack(evalID, token string) error { return h.simple("ack", evalID, token, nil) }

func (h remoteHost) Nack(evalID, token, reason string) error {
	h.s.phases.fail(evalID, reason)
	return h.simple("nack", evalID, token, []byte(reason))
}

func (h remoteHost) OutstandingReset(evalID, token string) error {
	return h.simple("reset", evalID, token, nil)
}

func (h remoteHost) SubmitPlan(ctx context.Context, p *sdk.Plan) (*sdk.PlanResult, error) {
	b, err := p.MarshalMsg(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sdk.ErrPlanInvalid, err)
	}
	resp, err := h.call(ctx, "plan", url.Values{"eval": {p.EvalID}}, b)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	res := &sdk.PlanResult{}
	if _, err := res.UnmarshalMsg(out); err != nil {
		return nil, fmt.Errorf("server: undecodable plan result from the leader: %w", err)
	}
	return res, nil
}

func (h remoteHost) GarbageCollect(ctx context.Context, evalID, token string, th sdk.GCThresholds, req *sdk.GCRequest) error {
	b, err := req.MarshalMsg(nil)
	if err != nil {
		return err
	}
	q := url.Values{"eval": {evalID}, "token": {token}}
	thresholdsQuery(q, th)
	resp, err := h.call(ctx, "gc", q, b)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func (h remoteHost) ApplyEvals(ctx context.Context, evalID, token string, evals []*sdk.Evaluation) error {
	b, err := encodeEvals(evals)
	if err != nil {
		return err
	}
	resp, err := h.call(ctx, "apply", url.Values{"eval": {evalID}, "token": {token}}, b)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
