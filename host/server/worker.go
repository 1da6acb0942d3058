package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-sched/drover/host/broker"
	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/plan"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// Worker limits.
const (
	// snapshotWaitTimeout bounds the wait for the state to reach an eval.
	snapshotWaitTimeout = 5 * time.Second
	// DefaultPluginTimeout bounds one eval in a plugin unless the plugin's
	// configuration says otherwise; it stays under the nack timeout.
	DefaultPluginTimeout = 30 * time.Second
)

// worker dequeues evals and runs them through their job's scheduler plugin.
type worker struct {
	s   *Server
	id  int
	log zerolog.Logger
}

func newWorker(s *Server, id int) *worker {
	return &worker{s: s, id: id, log: s.log.With().Int("worker", id).Logger()}
}

func (w *worker) run(ctx context.Context) {
	for {
		eval, token, err := w.s.broker.Dequeue(ctx, w.s.plugins.Types())
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, broker.ErrDisabled) {
				return
			}
			continue
		}
		w.process(ctx, eval, token)
	}
}

func (w *worker) process(ctx context.Context, eval *sdk.Evaluation, token string) {
	s := w.s
	s.phases.set(eval.ID, sdk.EvalPhaseScheduling, s.now())
	log := w.log.With().Str("eval_id", eval.ID).Str("job_id", eval.JobID).Str("triggered_by", eval.TriggeredBy).Logger()
	nack := func(err error) {
		log.Warn().Err(err).Msg("evaluation nacked")
		s.phases.fail(eval.ID, err.Error())
		if nerr := s.broker.Nack(eval.ID, token); nerr != nil {
			log.Warn().Err(nerr).Msg("nack failed")
		}
	}
	wctx, cancel := context.WithTimeout(ctx, snapshotWaitTimeout)
	snap, err := s.store.WaitForIndex(wctx, eval.ModifyIndex)
	cancel()
	if err != nil {
		nack(err)
		return
	}
	job := snap.Job(eval.Namespace, eval.JobID)
	entry, err := s.plugins.ForEval(eval, job)
	if err != nil {
		nack(err)
		return
	}
	timeout := DefaultPluginTimeout
	if entry.Timeout > 0 {
		timeout = entry.Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	config := entry.Config
	var planner runtime.Planner
	p := &evalPlanner{s: s, eval: eval, token: token}
	planner = p
	if eval.Type == sdk.JobTypeCore {
		config = s.coreConfig(config)
		planner = &corePlanner{p}
	}
	call := &runtime.Call{Eval: eval, Token: token, Now: s.now(), State: snap, Planner: planner, Config: config, Log: log}
	if err := entry.Plugin.Process(pctx, call); err != nil {
		nack(err)
		return
	}
	if !p.concluded {
		nack(fmt.Errorf("%w: plugin[%s] returned without updating or reblocking eval %s", runtime.ErrPluginFailed, entry.Plugin.Info().Name, eval.ID))
		return
	}
	if err := s.broker.Ack(eval.ID, token); err != nil {
		log.Warn().Err(err).Msg("ack failed")
	}
}

// evalPlanner is the host side of one eval's planner calls. It checks what
// a plugin asks before it becomes a raft entry: a plugin may update only its
// own eval, create evals only for its own job, chained to its eval.
type evalPlanner struct {
	s     *Server
	eval  *sdk.Evaluation
	token string
	// concluded is set once the plugin updated or reblocked its eval.
	concluded bool
}

var _ runtime.Planner = (*evalPlanner)(nil)

func invalidEval(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sdk.ErrInvalidEval, fmt.Sprintf(format, args...))
}

// hostErr maps host failures to the sentinels plugins can test.
func hostErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, plan.ErrStaleToken), errors.Is(err, broker.ErrTokenMismatch), errors.Is(err, broker.ErrNotOutstanding):
		return fmt.Errorf("%w: %v", sdk.ErrStaleToken, err)
	case errors.Is(err, plan.ErrInvalidPlan):
		return fmt.Errorf("%w: %v", sdk.ErrPlanInvalid, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %v", sdk.ErrDeadline, err)
	case errors.Is(err, plan.ErrQueueDisabled), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: %v", sdk.ErrUnavailable, err)
	}
	return err
}

func (p *evalPlanner) SubmitPlan(ctx context.Context, pl *sdk.Plan) (*sdk.PlanResult, runtime.StateSource, error) {
	s := p.s
	if err := s.broker.OutstandingReset(p.eval.ID, p.token); err != nil {
		return nil, nil, hostErr(err)
	}
	s.phases.set(p.eval.ID, sdk.EvalPhaseApplying, s.now())
	res, err := s.applier.Submit(ctx, pl)
	s.phases.set(p.eval.ID, sdk.EvalPhaseScheduling, s.now())
	if err != nil {
		return nil, nil, hostErr(err)
	}
	if res.RefreshIndex == 0 {
		return res, nil, nil
	}
	snap, err := s.store.WaitForIndex(ctx, res.RefreshIndex)
	if err != nil {
		return nil, nil, hostErr(err)
	}
	return res, snap, nil
}

func (p *evalPlanner) apply(evals ...*sdk.Evaluation) error {
	now := p.s.now().UnixNano()
	for _, e := range evals {
		e.ModifyTime = now
		if e.CreateTime == 0 {
			e.CreateTime = now
		}
	}
	_, err := p.s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: evals})
	return hostErr(err)
}

func (p *evalPlanner) UpdateEval(_ context.Context, e *sdk.Evaluation) error {
	if e.ID != p.eval.ID {
		return invalidEval("a plugin may update only the eval it processes (%s), not %s", p.eval.ID, e.ID)
	}
	if err := p.sameJob(e); err != nil {
		return err
	}
	switch e.Status {
	case sdk.EvalStatusComplete, sdk.EvalStatusFailed, sdk.EvalStatusCanceled:
	default:
		return invalidEval("eval %s may not be updated to status %q", e.ID, e.Status)
	}
	if err := p.apply(e); err != nil {
		return err
	}
	p.concluded = true
	return nil
}

func (p *evalPlanner) sameJob(e *sdk.Evaluation) error {
	if e.Namespace != p.eval.Namespace || e.JobID != p.eval.JobID {
		return invalidEval("eval %s is for job %s/%s, not %s/%s", e.ID, e.Namespace, e.JobID, p.eval.Namespace, p.eval.JobID)
	}
	return nil
}

func (p *evalPlanner) CreateEval(_ context.Context, e *sdk.Evaluation) error {
	if e.ID == "" || e.ID == p.eval.ID {
		return invalidEval("a new eval needs a new ID")
	}
	if err := p.sameJob(e); err != nil {
		return err
	}
	if p.s.store.Snapshot().Eval(e.ID) != nil {
		return invalidEval("eval %s already exists", e.ID)
	}
	if e.Status != sdk.EvalStatusPending && e.Status != sdk.EvalStatusBlocked {
		return invalidEval("a new eval must be pending or blocked, not %q", e.Status)
	}
	if e.PreviousEval != p.eval.ID {
		return invalidEval("a follow-up eval must name %s as its PreviousEval", p.eval.ID)
	}
	if e.Type == "" {
		e.Type = p.eval.Type
	}
	e.CreateTime = 0
	return p.apply(e)
}

// corePlanner is the planner of core evaluations: it adds garbage
// collection, which no other eval may ask for.
type corePlanner struct{ *evalPlanner }

var _ runtime.Collector = corePlanner{}

// GarbageCollect implements runtime.Collector.
func (c corePlanner) GarbageCollect(_ context.Context, req *sdk.GCRequest) error {
	return hostErr(c.s.garbageCollect(c.s.store.Snapshot(), req))
}

func (p *evalPlanner) ReblockEval(_ context.Context, e *sdk.Evaluation) error {
	if e.ID != p.eval.ID {
		return invalidEval("a plugin may reblock only the eval it processes (%s), not %s", p.eval.ID, e.ID)
	}
	if err := p.sameJob(e); err != nil {
		return err
	}
	stored := p.s.store.Snapshot().Eval(e.ID)
	if stored == nil || stored.Status != sdk.EvalStatusBlocked {
		return invalidEval("eval %s is not blocked and cannot be reblocked", e.ID)
	}
	e.Status = sdk.EvalStatusBlocked
	if err := p.apply(e); err != nil {
		return err
	}
	p.concluded = true
	return nil
}
