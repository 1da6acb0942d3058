package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-sched/drover/host/broker"
	"github.com/drover-sched/drover/host/plan"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/verify"
	"github.com/rs/zerolog"
)

// Worker limits.
const (
	// snapshotWaitTimeout bounds the wait for the state to reach an eval's
	// wait index.
	snapshotWaitTimeout = 5 * time.Second
	// DefaultPluginTimeout bounds one eval in a plugin unless the plugin's
	// configuration says otherwise; it stays under the nack timeout.
	DefaultPluginTimeout = 30 * time.Second
)

// worker dequeues evals and runs them through their job's scheduler plugin.
type worker struct {
	s    *Server
	id   int
	log  zerolog.Logger
	host evalHost
	// remote says the worker runs on a follower and reaches the leader's
	// broker and plan queue over the network.
	remote bool
}

// newWorker returns one of the leader's workers.
func newWorker(s *Server, id int) *worker {
	return &worker{s: s, id: id, log: s.log.With().Int("worker", id).Logger(), host: localHost{s}}
}

// newRemoteWorker returns a worker of a clustered server: it schedules
// while the server follows, and idles while it leads (its local workers
// run then).
func newRemoteWorker(s *Server, id int, host remoteHost) *worker {
	return &worker{s: s, id: id, log: s.log.With().Int("worker", id).Bool("remote", true).Logger(), host: host, remote: true}
}

// remoteRetry is how long a follower's worker waits after the leader could
// not be reached, and how often an idle one looks whether it follows.
const remoteRetry = 250 * time.Millisecond

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		if w.remote && (w.s.IsLeader() || w.s.Leader() == "") {
			if !sleepCtx(ctx, remoteRetry) {
				return
			}
			continue
		}
		eval, token, widx, err := w.host.Dequeue(ctx, w.s.plugins.Types())
		switch {
		case eval != nil:
			// Even when stopping: process nacks it then.
			if !w.process(ctx, eval, token, widx) && w.remote && !sleepCtx(ctx, snapshotWaitTimeout) {
				// This replica lags: taking more evals would only spend
				// their deliveries.
				return
			}
			continue
		case ctx.Err() != nil:
			return
		case err != nil && !w.remote && errors.Is(err, broker.ErrDisabled):
			return
		case err != nil:
			if w.remote && !sleepCtx(ctx, remoteRetry) {
				return
			}
			continue
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// waitIndex is the index the state must reach before eval is scheduled:
// the highest modify index of any eval of its job (as Nomad's), so the
// scheduler sees what earlier evals of the job did, blocked ones included.
func waitIndex(snap *state.Snapshot, eval *sdk.Evaluation) uint64 {
	idx := eval.ModifyIndex
	for _, e := range snap.EvalsByJob(eval.Namespace, eval.JobID) {
		idx = max(idx, e.ModifyIndex)
	}
	return idx
}

// process schedules one eval; it reports false if the state did not reach
// the eval's wait index in time.
func (w *worker) process(ctx context.Context, eval *sdk.Evaluation, token string, widx uint64) bool {
	s := w.s
	log := w.log.With().Str("eval_id", eval.ID).Str("job_id", eval.JobID).Str("triggered_by", eval.TriggeredBy).Logger()
	plugin := "" // known once the eval's plugin is
	nack := func(err error) {
		s.metrics.IncrCounterWithLabels([]string{"worker", "eval_nacked"}, 1, schedulerLabels(eval.Type, plugin))
		log.Warn().Err(err).Msg("evaluation nacked")
		if nerr := w.host.Nack(eval.ID, token, err.Error()); nerr != nil {
			log.Warn().Err(nerr).Msg("nack failed")
		}
	}
	wctx, cancel := context.WithTimeout(ctx, snapshotWaitTimeout)
	start := time.Now()
	snap, err := s.store.WaitForIndex(wctx, widx)
	s.metrics.MeasureSince([]string{"worker", "wait_for_index"}, start)
	cancel()
	if err != nil {
		nack(err)
		return ctx.Err() != nil // a lagging replica, unless stopping
	}
	// The stored eval is the truth; one already concluded (canceled as a
	// duplicate, collected) is not scheduled again.
	stored := snap.Eval(eval.ID)
	if stored == nil || stored.TerminalStatus() {
		if err := w.host.Ack(eval.ID, token); err != nil {
			log.Warn().Err(err).Msg("ack failed")
		}
		return true
	}
	eval = stored
	job := snap.Job(eval.Namespace, eval.JobID)
	entry, err := s.plugins.ForEval(eval, job)
	if err != nil {
		nack(err)
		return true
	}
	plugin = entry.Plugin.Info().Name
	timeout := DefaultPluginTimeout
	if entry.Timeout > 0 {
		timeout = entry.Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	config := entry.Config
	p := &evalPlanner{s: s, host: w.host, eval: eval, token: token, snapIndex: snap.Index(), created: map[string]string{}}
	var planner runtime.Planner = p
	if eval.Type == sdk.JobTypeCore {
		config = s.coreConfig(config)
		th, err := gcThresholdsFor(eval.JobID, config)
		if err != nil {
			nack(err)
			return true
		}
		planner = &corePlanner{p, th}
	}
	call := &runtime.Call{Eval: eval, Token: token, Now: s.now(), State: snap, Planner: planner, Config: config, Log: log}
	start = time.Now()
	err = entry.Plugin.Process(pctx, call)
	s.metrics.MeasureSinceWithLabels([]string{"worker", "invoke_scheduler", eval.Type}, start, schedulerLabels(eval.Type, plugin))
	if err != nil {
		nack(err)
		return true
	}
	if !p.concluded {
		nack(fmt.Errorf("%w: plugin[%s] returned without updating or reblocking eval %s", runtime.ErrPluginFailed, entry.Plugin.Info().Name, eval.ID))
		return true
	}
	if err := w.host.Ack(eval.ID, token); err != nil {
		log.Warn().Err(err).Msg("ack failed")
	}
	return true
}

// evalPlanner is the host side of one eval's planner calls. It checks what
// a plugin asks before it becomes a raft entry: a plugin may update only its
// own eval and only to a final status, and may create evals only for its own
// job, chained to its eval (PreviousEval); the eval's BlockedEval and
// NextEval may name only evals it created, of the right kind. The host
// stamps every eval the plugin writes with the index of the state the
// plugin saw (SnapshotIndex), which the blocked tracker relies on.
type evalPlanner struct {
	s     *Server
	host  evalHost
	eval  *sdk.Evaluation
	token string
	// snapIndex is the index of the state the plugin sees, raised when a
	// partly committed plan refreshed it.
	snapIndex uint64
	// created maps the evals this eval created to their status.
	created map[string]string
	// concluded is set once the plugin updated or reblocked its eval.
	concluded bool
}

var _ runtime.Planner = (*evalPlanner)(nil)

// hostErr maps host failures to the sentinels plugins can test.
func hostErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, plan.ErrStaleToken), errors.Is(err, broker.ErrTokenMismatch),
		errors.Is(err, broker.ErrNotOutstanding), errors.Is(err, broker.ErrNackTimeout):
		return fmt.Errorf("%w: %v", sdk.ErrStaleToken, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %v", sdk.ErrDeadline, err)
	case errors.Is(err, plan.ErrQueueDisabled), errors.Is(err, context.Canceled),
		errors.Is(err, ErrNotLeader), errors.Is(err, errBatcherStopped):
		return fmt.Errorf("%w: %v", sdk.ErrUnavailable, err)
	}
	return err
}

func (p *evalPlanner) SubmitPlan(ctx context.Context, pl *sdk.Plan) (*sdk.PlanResult, runtime.StateSource, error) {
	s := p.s
	start := time.Now()
	res, err := p.host.SubmitPlan(ctx, pl)
	s.metrics.MeasureSince([]string{"worker", "submit_plan"}, start)
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
	p.snapIndex = snap.Index()
	return res, snap, nil
}

func (p *evalPlanner) apply(ctx context.Context, evals ...*sdk.Evaluation) error {
	now := p.s.now()
	for _, e := range evals {
		e.ModifyTime = now.UnixNano()
		if e.CreateTime == 0 {
			e.CreateTime = now.UnixNano()
		}
		// A delay is kept as a deadline, so it survives a restart.
		if e.Wait > 0 && e.WaitUntil.IsZero() {
			e.WaitUntil = now.Add(e.Wait)
		}
		e.SnapshotIndex = p.snapIndex
	}
	return hostErr(p.host.ApplyEvals(ctx, p.eval.ID, p.token, evals))
}

func (p *evalPlanner) UpdateEval(ctx context.Context, e *sdk.Evaluation) error {
	c, err := verify.EvalUpdate(p.eval, e, p.created)
	if err != nil {
		return err
	}
	if err := p.apply(ctx, c); err != nil {
		return err
	}
	p.concluded = true
	return nil
}

func (p *evalPlanner) CreateEval(ctx context.Context, e *sdk.Evaluation) error {
	if err := verify.MayCreate(len(p.created)); err != nil {
		return err
	}
	c, err := verify.NewEval(p.eval, e)
	if err != nil {
		return err
	}
	if old := p.s.store.Snapshot().Eval(e.ID); old != nil {
		// Created by an earlier delivery of this eval: already there, and
		// done (verify.Recreated).
		if err := verify.Recreated(p.eval, old, e); err != nil {
			return err
		}
		p.created[e.ID] = e.Status
		return nil
	}
	// A blocked eval is not charged: the blocked-evals tracker keeps one
	// per job and cancels the others, so blocked evals cannot multiply.
	if c.Status != sdk.EvalStatusBlocked {
		if err := p.s.evalBudget.take(sdk.NamespacedID{Namespace: c.Namespace, ID: c.JobID}, p.s.now()); err != nil {
			return err
		}
	}
	if err := p.apply(ctx, c); err != nil {
		return err
	}
	p.created[c.ID] = c.Status
	return nil
}

// corePlanner is the planner of core evaluations: it adds garbage
// collection, which no other eval may ask for.
type corePlanner struct {
	*evalPlanner
	thresholds sdk.GCThresholds
}

var _ runtime.Collector = corePlanner{}

// GarbageCollect implements runtime.Collector.
func (c corePlanner) GarbageCollect(ctx context.Context, req *sdk.GCRequest) error {
	return hostErr(c.host.GarbageCollect(ctx, c.eval.ID, c.token, c.thresholds, req))
}

func (p *evalPlanner) ReblockEval(ctx context.Context, e *sdk.Evaluation) error {
	c, err := verify.Reblock(p.eval, p.s.store.Snapshot().Eval(e.ID), e)
	if err != nil {
		return err
	}
	if err := p.apply(ctx, c); err != nil {
		return err
	}
	p.concluded = true
	return nil
}
