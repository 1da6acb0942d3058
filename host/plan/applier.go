package plan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// ErrStaleToken is returned for a plan whose eval is not outstanding under
// the plan's token.
var ErrStaleToken = errors.New("plan: evaluation token is not outstanding")

// RaftApplier commits a log entry and returns its index.
type RaftApplier interface {
	Apply(t fsm.MessageType, msg msgp.Marshaler) (uint64, error)
}

// TokenChecker tells which delivery of an eval is outstanding (the broker).
type TokenChecker interface {
	Outstanding(evalID string) (string, bool)
}

// Applier drains the plan queue.
type Applier struct {
	queue  *Queue
	store  *state.Store
	raft   RaftApplier
	tokens TokenChecker
	limits Limits
	now    func() time.Time
	log    zerolog.Logger
}

// NewApplier returns an applier.
func NewApplier(q *Queue, store *state.Store, raft RaftApplier, tokens TokenChecker, limits Limits, now func() time.Time, log zerolog.Logger) *Applier {
	if now == nil {
		now = time.Now
	}
	return &Applier{queue: q, store: store, raft: raft, tokens: tokens, limits: limits, now: now, log: log}
}

// Submit queues a plan and waits for its verdict.
func (a *Applier) Submit(ctx context.Context, p *sdk.Plan) (*sdk.PlanResult, error) {
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

// Run applies plans until ctx ends.
func (a *Applier) Run(ctx context.Context) {
	for {
		p, err := a.queue.dequeue(ctx)
		if err != nil {
			return
		}
		res, err := a.apply(p.plan)
		p.reply <- Response{Result: res, Err: err}
	}
}

func (a *Applier) apply(p *sdk.Plan) (*sdk.PlanResult, error) {
	if tok, ok := a.tokens.Outstanding(p.EvalID); !ok || tok != p.EvalToken {
		return nil, fmt.Errorf("%w: eval %s", ErrStaleToken, p.EvalID)
	}
	snap := a.store.Snapshot()
	if err := Validate(snap, p, a.limits); err != nil {
		a.log.Warn().Err(err).Str("eval_id", p.EvalID).Msg("plan rejected")
		return nil, err
	}
	result, req := Evaluate(snap, p, a.now().UnixNano(), NewID)
	if req == nil {
		return result, nil
	}
	index, err := a.raft.Apply(fsm.ApplyPlanResultsRequestType, req)
	if err != nil {
		return nil, fmt.Errorf("plan: apply: %w", err)
	}
	result.AllocIndex = index
	if result.RefreshIndex != 0 {
		// Refresh past our own commit, or the scheduler would place again
		// what was just committed.
		result.RefreshIndex = index
	}
	return result, nil
}
