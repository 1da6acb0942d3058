package server

import (
	"context"
	"strconv"
	"time"

	"github.com/drover-sched/drover/host/broker"
	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/sdk"
)

// Leader duty periods.
const (
	failedEvalUnblockInterval = time.Minute
	cancelableReapInterval    = 5 * time.Second
	maxCancelBatch            = 500
)

// establishLeadership turns on the leader's machinery: the broker, the
// blocked tracker and the plan queue; it rebuilds their contents from the
// state (pending evals are enqueued, delayed ones go back on the delay heap
// through their Wait/WaitUntil, blocked ones are re-blocked), then starts the
// applier, the reapers, the timers and finally the workers.
func (s *Server) establishLeadership() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaderStop != nil {
		return nil
	}
	// Everything before this barrier is applied to our state.
	if err := s.raftLayer.raft.Barrier(s.cfg.RaftApplyTimeout).Error(); err != nil {
		return err
	}
	s.broker.SetEnabled(true)
	s.blocked.SetEnabled(true)
	s.plans.SetEnabled(true)
	snap := s.store.Snapshot()
	var restored []*sdk.Evaluation
	for _, e := range snap.Evals() {
		if e.ShouldEnqueue() || e.ShouldBlock() {
			restored = append(restored, e)
		}
	}
	s.EvalsCommitted(restored)

	ctx, cancel := context.WithCancel(context.Background())
	s.leaderStop = cancel
	run := func(f func(context.Context)) {
		s.leaderDone.Add(1)
		go func() {
			defer s.leaderDone.Done()
			f(ctx)
		}()
	}
	run(s.broker.Run)
	run(s.applier.Run)
	run(s.reapFailedEvals)
	run(s.reapDuplicateBlockedEvals)
	run(s.reapCancelableEvals)
	run(s.periodicUnblockFailed)
	run(s.heartbeats.run)
	run(s.scheduleCoreEvals)
	for i := 0; i < s.cfg.NumWorkers; i++ {
		w := newWorker(s, i)
		run(w.run)
	}
	s.log.Info().Int("workers", s.cfg.NumWorkers).Int("restored_evals", len(restored)).Msg("leadership established")
	return nil
}

// revokeLeadership stops the leader's machinery and drops its queues.
func (s *Server) revokeLeadership() {
	s.mu.Lock()
	stop := s.leaderStop
	s.leaderStop = nil
	s.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	s.plans.SetEnabled(false)
	s.broker.SetEnabled(false)
	s.blocked.SetEnabled(false)
	s.leaderDone.Wait()
}

// reapFailedEvals drains the broker's failed queue: each eval there used up
// its deliveries; it becomes failed and, unless it is a core eval, gets a
// failed-follow-up eval after baseline + random jitter (seed 002:
// pending -> failed, failed -> pending with PreviousEval/NextEval set).
func (s *Server) reapFailedEvals(ctx context.Context) {
	for {
		e, token, err := s.broker.Dequeue(ctx, []string{broker.FailedQueue})
		if err != nil {
			return
		}
		failed := e.Copy()
		failed.Status = sdk.EvalStatusFailed
		failed.StatusDescription = "evaluation reached delivery limit (" + strconv.Itoa(s.cfg.Broker.DeliveryLimit) + ")"
		if why := s.phases.lastFailure(e.ID); why != "" {
			failed.StatusDescription += "; last failure: " + why
		}
		failed.ModifyTime = s.now().UnixNano()
		evals := []*sdk.Evaluation{failed}
		if e.Type != sdk.JobTypeCore {
			wait := s.cfg.FailedEvalFollowupBaseline
			if j := s.cfg.FailedEvalFollowupJitter; j > 0 {
				wait += time.Duration(s.randInt64(int64(j)))
			}
			follow := e.CreateFailedFollowUpEval(newID(), wait)
			follow.CreateTime, follow.ModifyTime = failed.ModifyTime, failed.ModifyTime
			failed.NextEval = follow.ID
			evals = append(evals, follow)
		}
		if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: evals}); err != nil {
			s.log.Error().Err(err).Str("eval_id", e.ID).Msg("failed to mark eval failed")
			_ = s.broker.Nack(e.ID, token)
			continue
		}
		_ = s.broker.Ack(e.ID, token)
	}
}

// reapDuplicateBlockedEvals cancels blocked evals the tracker found to be
// duplicates (seed 002: blocked -> canceled).
func (s *Server) reapDuplicateBlockedEvals(ctx context.Context) {
	for {
		dups, wake := s.blocked.Duplicates()
		if len(dups) > 0 {
			now := s.now().UnixNano()
			out := make([]*sdk.Evaluation, 0, len(dups))
			for _, d := range dups {
				c := d.Copy()
				c.Status = sdk.EvalStatusCanceled
				c.StatusDescription = "evaluation superseded by a newer blocked or successful evaluation of the job"
				c.ModifyTime = now
				out = append(out, c)
			}
			if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: out}); err != nil {
				s.log.Error().Err(err).Msg("failed to cancel duplicate blocked evals")
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
	}
}

// reapCancelableEvals cancels, in batches, the pending evals the broker
// found superseded by a newer eval of the same job.
func (s *Server) reapCancelableEvals(ctx context.Context) {
	t := time.NewTicker(cancelableReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			batch := s.broker.Cancelable(maxCancelBatch)
			if len(batch) == 0 {
				break
			}
			now := s.now().UnixNano()
			out := make([]*sdk.Evaluation, 0, len(batch))
			for _, e := range batch {
				c := e.Copy()
				c.Status = sdk.EvalStatusCanceled
				c.StatusDescription = "canceled after a more recent evaluation was processed"
				c.ModifyTime = now
				out = append(out, c)
			}
			if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: out}); err != nil {
				s.log.Error().Err(err).Msg("failed to cancel superseded evals")
			}
		}
	}
}

// periodicUnblockFailed retries max-plan-attempts evals periodically.
func (s *Server) periodicUnblockFailed(ctx context.Context) {
	t := time.NewTicker(failedEvalUnblockInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.blocked.UnblockFailed()
		}
	}
}

func (s *Server) randInt64(n int64) int64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Int64N(n)
}
