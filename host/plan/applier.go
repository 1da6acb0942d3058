package plan

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/rs/zerolog"
)

// ErrStaleToken is returned for a plan whose eval is not outstanding under
// the plan's token.
var ErrStaleToken = errors.New("plan: evaluation token is not outstanding")

// RaftApplier commits an encoded log entry and returns its index.
type RaftApplier interface {
	ApplyEntry(data []byte) (uint64, error)
}

// TokenChecker tells which delivery of an eval is outstanding (the broker).
type TokenChecker interface {
	Outstanding(evalID string) (string, bool)
}

// Applier drains the plan queue. It verifies plan N+1 while plan N is
// being committed: N+1 is judged against the latest state with N's result
// laid over it (an overlay, no copy of the state), and is committed only
// after N. If N fails to commit, or a node changed meanwhile, N+1 is judged
// again against the real state.
type Applier struct {
	queue  *Queue
	store  *state.Store
	raft   RaftApplier
	tokens TokenChecker
	limits verify.Limits
	now    func() time.Time
	newID  func() string
	log    zerolog.Logger
	// Metrics receives how long plans take to verify and commit and which
	// nodes they are refused (Nomad's plan.* metrics); set it before Run.
	Metrics *metrics.Metrics
}

// NewApplier returns an applier. now and newID may be nil (the real clock,
// random UUIDs).
func NewApplier(q *Queue, store *state.Store, raft RaftApplier, tokens TokenChecker, limits verify.Limits,
	now func() time.Time, newID func() string, log zerolog.Logger) *Applier {
	if now == nil {
		now = time.Now
	}
	if newID == nil {
		newID = NewID
	}
	conf := metrics.DefaultConfig("")
	conf.EnableRuntimeMetrics = false // or New starts a sampler that never stops
	discard, _ := metrics.New(conf, &metrics.BlackholeSink{})
	return &Applier{queue: q, store: store, raft: raft, tokens: tokens, limits: limits, now: now, newID: newID, log: log,
		Metrics: discard}
}

// Submit queues a plan and waits for its verdict.
func (a *Applier) Submit(ctx context.Context, p *sdk.Plan) (*sdk.PlanResult, error) {
	defer a.Metrics.MeasureSince([]string{"plan", "submit"}, time.Now())
	ch, err := a.queue.Enqueue(p)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.Result, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// commit is a plan result on its way through raft.
type commit struct {
	done  chan struct{}
	index uint64
	err   error
	// viewBase is the index of the state the applier's view (the state
	// plus this plan) is laid over.
	viewBase uint64
}

func (c *commit) wait() *commit {
	<-c.done
	return c
}

func (c *commit) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// evaluation is a plan judged against one view of the state.
type evaluation struct {
	result *sdk.PlanResult
	req    *fsm.ApplyPlanResultsRequest
	entry  []byte // req encoded, nil if nothing to commit
	err    error
}

// Run applies plans until ctx ends. It waits for the plan being committed
// before it returns.
func (a *Applier) Run(ctx context.Context) {
	var inflight *commit
	// view is the state plus the inflight plan, while it commits.
	var view verify.State
	defer func() {
		if inflight != nil {
			inflight.wait()
		}
	}()
	for {
		p, err := a.queue.dequeue(ctx)
		if err != nil {
			return
		}
		if inflight != nil && inflight.finished() {
			inflight, view = nil, nil
		}
		if tok, ok := a.tokens.Outstanding(p.plan.EvalID); !ok || tok != p.plan.EvalToken {
			p.reply <- Response{Err: fmt.Errorf("%w: eval %s", ErrStaleToken, p.plan.EvalID)}
			continue
		}
		snap := view
		if snap == nil {
			snap = a.store.Snapshot()
		}
		ev := a.evaluate(snap, p.plan)
		if inflight != nil && (ev.err != nil || ev.entry != nil || ev.result != nil && ev.result.RefreshIndex != 0) {
			// Commit after the plan before, and judge again on the real
			// state if that plan failed or a node or a CSI volume changed
			// meanwhile. A
			// plan refused as invalid is judged again too: the view lags
			// the state by everything committed since the plan before was
			// judged, and the plan's eval or job version may be newer.
			prev := inflight.wait()
			inflight, view = nil, nil
			if ev.err != nil || prev.err != nil || a.changedSince(prev) {
				ev = a.evaluate(a.store.Snapshot(), p.plan)
			} else if ev.result != nil && ev.result.RefreshIndex != 0 {
				ev.result.RefreshIndex = max(ev.result.RefreshIndex, prev.index)
			}
		}
		if ev.err != nil || ev.entry == nil {
			if ev.err != nil {
				// Logged here, once the verdict is final: a plan refused
				// against the view may yet be accepted on the state.
				a.log.Warn().Err(ev.err).Str("eval_id", p.plan.EvalID).Msg("plan rejected")
			}
			p.reply <- Response{Result: ev.result, Err: ev.err}
			continue
		}
		// The view is the state before the commit, with the commit laid
		// over it.
		base := a.store.Snapshot()
		inflight = a.dispatch(p, ev)
		view, inflight.viewBase = newOverlay(base, ev.req), base.Index()
	}
}

// evaluate validates and evaluates p against snap and encodes what to
// commit.
//
// A plan that makes verification panic (a shape verify.Plan does not catch yet)
// is rejected with the panic as its reason: the applier keeps running.
func (a *Applier) evaluate(snap verify.State, p *sdk.Plan) (ev evaluation) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Str("eval_id", p.EvalID).Msg("plan verification panicked")
			ev = evaluation{err: fmt.Errorf("%w: verification failed: %v", sdk.ErrPlanInvalid, r)}
		}
	}()
	defer a.Metrics.MeasureSince([]string{"plan", "evaluate"}, time.Now())
	if err := verify.Plan(snap, p, a.limits); err != nil {
		return evaluation{err: err} // Run logs the verdict
	}
	result, req := Evaluate(snap, p, a.now().UnixNano(), a.newID)
	for _, n := range result.RejectedNodes {
		a.Metrics.IncrCounterWithLabels([]string{"plan", "node_rejected"}, 1, []metrics.Label{{Name: "node_id", Value: n}})
	}
	if req == nil {
		return evaluation{result: result}
	}
	entry, err := fsm.Encode(fsm.ApplyPlanResultsRequestType, req)
	if err != nil {
		return evaluation{err: fmt.Errorf("plan: encode: %w", err)}
	}
	return evaluation{result: result, req: req, entry: entry}
}

// dispatch commits ev through raft in the background and answers p when
// the commit is done.
func (a *Applier) dispatch(p *pending, ev evaluation) *commit {
	c := &commit{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		start := time.Now()
		index, err := a.raft.ApplyEntry(ev.entry)
		a.Metrics.MeasureSince([]string{"plan", "apply"}, start)
		c.index, c.err = index, err
		if err != nil {
			p.reply <- Response{Err: fmt.Errorf("plan: apply: %w", err)}
			return
		}
		res := ev.result
		res.AllocIndex = index
		if res.RefreshIndex != 0 {
			// Refresh past our own commit, or the scheduler would place
			// again what was just committed.
			res.RefreshIndex = index
		}
		p.reply <- Response{Result: res}
	}()
	return c
}

// changedSince reports whether a node or a CSI volume changed between the
// state c was judged against and now, other than by c itself. Only those
// changes can make a plan judged against a view that includes c unsafe:
// allocations change otherwise only by becoming terminal, which frees
// room and claims, while a volume registered again may offer fewer
// access modes.
func (a *Applier) changedSince(c *commit) bool {
	j, now := a.store.Journal(), a.store.LatestIndex()
	return j.ChangedBetween(state.KindNode, c.viewBase, now, c.index) ||
		j.ChangedBetween(state.KindCSIVolume, c.viewBase, now, c.index)
}
