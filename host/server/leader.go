package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/broker"
	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// Leader duty settings.
const (
	// cancelableReapInterval is how often superseded evals are canceled
	// even if the broker did not signal (Nomad's 5 s).
	cancelableReapInterval = 5 * time.Second
	// maxReapBatch bounds the evals one reaper entry cancels.
	maxReapBatch = 500
)

// establishLeadership turns on the leader's machinery and rebuilds its
// contents from the state before any worker runs: after a raft barrier (so
// every committed entry is applied), writing the scheduler configuration
// the cluster starts with if the state has none and making namespaces and
// node pools written objects if they are not (makeRefsExplicit), it enables
// the broker, the blocked tracker and the plan queue; re-enqueues pending
// evals (those with a WaitUntil go back on the delay heap), re-blocks
// blocked ones (after restoring the unblock index of each node class from
// the state, so an eval blocked on a view older than a capacity change is
// retried), restores the broker's pause; then starts the eval batcher, the
// plan applier, the reapers, the timers and finally the workers.
func (s *Server) establishLeadership() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leaderStop != nil {
		return nil
	}
	if err := s.raftLayer.raft.Barrier(s.cfg.RaftApplyTimeout).Error(); err != nil {
		return err
	}
	s.ensureSchedulerConfig()
	// A server alone does it before any job is registered under it; in a
	// cluster, the gate asks the other servers, which may take seconds:
	// not while holding s.mu.
	refsExplicit := s.rpc == nil && s.makeRefsExplicit()
	s.broker.SetEnabled(true)
	s.blocked.SetEnabled(true)
	s.plans.SetEnabled(true)
	snap := s.store.Snapshot()
	s.broker.SetPaused(snap.SchedulerConfig().PauseEvalBroker)
	pending, blocked := s.restoreEvals(snap)

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
	// Updates sent after the last term's batchers drained (a worker that
	// held a token of that term) must not commit in this one.
	s.evalBatch.drain()
	for i := 0; i < evalBatchInflight; i++ {
		run(s.evalBatch.run)
	}
	run(s.applier.Run)
	run(s.reapFailedEvals)
	run(s.reapDuplicateBlockedEvals)
	run(s.reapCancelableEvals)
	run(s.periodicUnblockFailed)
	run(s.heartbeats.run)
	run(s.scheduleCoreEvals)
	run(s.drainer)
	run(s.watchDeployments)
	run(s.periodic.run)
	run(s.rekeyVariables)
	run(s.expireVariableLocks)
	run(s.runAutopilot)
	if !s.cfg.Dev {
		run(s.ensureClusterID)
	}
	if !refsExplicit {
		run(s.ensureRefsExplicit)
	}
	for i := 0; i < s.cfg.NumWorkers; i++ {
		w := newWorker(s, i)
		run(w.run)
	}
	s.log.Info().Int("workers", s.cfg.NumWorkers).Int("pending_evals", pending).Int("blocked_evals", blocked).
		Uint64("index", snap.Index()).Msg("leadership established")
	return nil
}

// restoreEvals hands the open evals of snap to the broker and the tracker.
func (s *Server) restoreEvals(snap *state.Snapshot) (pending, blocked int) {
	var open []*sdk.Evaluation
	for _, e := range snap.Evals() {
		switch {
		case e.ShouldEnqueue():
			pending++
		case e.ShouldBlock():
			blocked++
		default:
			continue
		}
		open = append(open, e)
	}
	if blocked > 0 {
		for class, index := range unblockIndexes(snap) {
			s.blocked.SetUnblockIndex(class, index)
		}
	}
	now := s.now()
	for _, e := range open {
		s.evalCommitted(e, now)
	}
	return pending, blocked
}

// unblockIndexes computes, per computed node class, the last index at which
// capacity on nodes of that class may have grown: a node's last change or
// an allocation on it ending.
func unblockIndexes(snap *state.Snapshot) map[string]uint64 {
	out := map[string]uint64{}
	classOf := map[string]string{}
	for _, n := range snap.Nodes() {
		classOf[n.ID] = n.ComputedClass
		if n.Ready() {
			out[n.ComputedClass] = max(out[n.ComputedClass], n.ModifyIndex)
		}
	}
	for _, a := range snap.Allocs() {
		if !a.TerminalStatus() {
			continue
		}
		if class, ok := classOf[a.NodeID]; ok {
			out[class] = max(out[class], a.ModifyIndex)
		}
	}
	return out
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

// maxSummary bounds a failure's summary in an eval's description.
const maxSummary = 500

// summary is the first line of a failure, as an eval's description says
// it: one line, as Nomad's, while the whole (a plugin's panic and its
// stack, a trap and the plugin's stderr) is in the log of each nack.
func summary(why string) string {
	line, _, cut := strings.Cut(why, "\n")
	if len(line) > maxSummary {
		line, cut = line[:maxSummary], true
	}
	if cut {
		line = strings.ToValidUTF8(line, "") + " (more in the agent's log)"
	}
	return line
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
		now := s.now()
		failed := e.Copy()
		failed.Status = sdk.EvalStatusFailed
		failed.StatusDescription = "evaluation reached delivery limit (" + strconv.Itoa(s.cfg.Broker.DeliveryLimit) + ")"
		if why := s.phases.lastFailure(e.ID); why != "" {
			failed.StatusDescription += "; last failure: " + summary(why)
		}
		failed.ModifyTime = now.UnixNano()
		evals := []*sdk.Evaluation{failed}
		if e.Type != sdk.JobTypeCore {
			follow := e.CreateFailedFollowUpEval(newID(), s.followUpDelay())
			follow.WaitUntil = now.Add(follow.Wait)
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

// followUpDelay is the wait of a failed-follow-up eval: the baseline plus a
// random share of the jitter, so failed evals do not all come back at once.
func (s *Server) followUpDelay() time.Duration {
	wait := s.cfg.FailedEvalFollowupBaseline
	if j := s.cfg.FailedEvalFollowupJitter; j > 0 {
		wait += time.Duration(s.randInt64(int64(j)))
	}
	return wait
}

// reapDuplicateBlockedEvals cancels blocked evals the tracker found to be
// duplicates or moot (seed 002: blocked -> canceled). A duplicate is
// described as Nomad's reapDupBlockedEvaluations does; a moot one (which
// Nomad leaves blocked in the state) says why it is canceled.
func (s *Server) reapDuplicateBlockedEvals(ctx context.Context) {
	for {
		dups, retired, wake := s.blocked.Duplicates()
		for len(dups) > 0 {
			n := min(len(dups), maxReapBatch)
			s.cancelEvalsWhy(dups[:n], func(e *sdk.Evaluation) string {
				return fmt.Sprintf("existing blocked evaluation exists for job %q", e.JobID)
			})
			dups = dups[n:]
		}
		for len(retired) > 0 {
			n := min(len(retired), maxReapBatch)
			s.cancelEvals(retired[:n], "evaluation superseded by a later evaluation of the job that completed without placement failures")
			retired = retired[n:]
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
		case <-s.broker.CancelableWake():
		}
		for {
			batch := s.broker.Cancelable(maxReapBatch)
			if len(batch) == 0 {
				break
			}
			s.cancelEvals(batch, "canceled after more recent eval was processed")
		}
	}
}

// cancelEvals marks evals canceled in one raft entry; evals that concluded
// meanwhile are left as they are.
func (s *Server) cancelEvals(evals []*sdk.Evaluation, why string) {
	s.cancelEvalsWhy(evals, func(*sdk.Evaluation) string { return why })
}

// cancelEvalsWhy is cancelEvals with a reason per eval.
func (s *Server) cancelEvalsWhy(evals []*sdk.Evaluation, why func(*sdk.Evaluation) string) {
	now := s.now().UnixNano()
	snap := s.store.Snapshot()
	out := make([]*sdk.Evaluation, 0, len(evals))
	for _, e := range evals {
		stored := snap.Eval(e.ID)
		if stored == nil || stored.TerminalStatus() {
			continue
		}
		c := stored.Copy()
		c.Status = sdk.EvalStatusCanceled
		c.StatusDescription = why(stored)
		c.ModifyTime = now
		out = append(out, c)
	}
	if len(out) == 0 {
		return
	}
	if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: out}); err != nil {
		s.log.Error().Err(err).Int("evals", len(out)).Msg("failed to cancel evals")
	}
}

// periodicUnblockFailed retries max-plan-attempts evals periodically.
func (s *Server) periodicUnblockFailed(ctx context.Context) {
	t := time.NewTicker(s.cfg.FailedEvalUnblockInterval)
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
