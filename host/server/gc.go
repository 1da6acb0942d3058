package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// hasCorePlugin reports whether some plugin serves core evaluations; without
// one, core evals would only pile up in the broker.
func (s *Server) hasCorePlugin() bool {
	_, err := s.plugins.ForEval(&sdk.Evaluation{Type: sdk.JobTypeCore}, nil)
	return err == nil
}

func (s *Server) coreEval(jobID string) *sdk.Evaluation {
	now := s.now().UnixNano()
	return &sdk.Evaluation{ID: newID(), Namespace: sdk.CoreJobNamespace, Priority: sdk.CoreJobPriority,
		Type: sdk.JobTypeCore, TriggeredBy: sdk.EvalTriggerScheduled, JobID: jobID,
		Status: sdk.EvalStatusPending, CreateTime: now, ModifyTime: now}
}

// scheduleCoreEvals creates the periodic core evals, each kind on its own
// ticker as Nomad's leader (schedulePeriodic) does: eval-gc every
// EvalGCInterval, job-gc every JobGCInterval (job_gc_interval), node-gc
// every NodeGCInterval and deployment-gc every DeploymentGCInterval. A
// kind of collection whose previous eval is still open gets no new one: a
// slow or failing core plugin must not pile evals up. Expired ACL tokens
// are deleted every ACLTokenGCInterval by the server itself (Nomad's core
// scheduler's token GC): no plugin sees tokens.
func (s *Server) scheduleCoreEvals(ctx context.Context) {
	ticker := func(every time.Duration) <-chan time.Time {
		if every <= 0 {
			return nil // never
		}
		t := time.NewTicker(every)
		context.AfterFunc(ctx, t.Stop)
		return t.C
	}
	evalGC, jobGC := ticker(s.cfg.EvalGCInterval), ticker(s.cfg.JobGCInterval)
	nodeGC, deploymentGC := ticker(s.cfg.NodeGCInterval), ticker(s.cfg.DeploymentGCInterval)
	var tokenGC <-chan time.Time
	if s.cfg.ACLEnabled {
		tokenGC = ticker(s.cfg.ACLTokenGCInterval)
	}
	for {
		var kind string
		select {
		case <-ctx.Done():
			return
		case <-evalGC:
			kind = sdk.CoreJobEvalGC
		case <-jobGC:
			kind = sdk.CoreJobJobGC
		case <-nodeGC:
			kind = sdk.CoreJobNodeGC
		case <-deploymentGC:
			kind = sdk.CoreJobDeploymentGC
		case <-tokenGC:
			if _, err := s.collectExpiredACLTokens(); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("failed to delete expired ACL tokens")
			}
			if err := s.collectExpiredOneTimeTokens(); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("failed to delete expired one-time tokens")
			}
			continue
		}
		if !s.hasCorePlugin() || openCoreEval(s.store.Snapshot(), kind) {
			continue
		}
		if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{s.coreEval(kind)}}); err != nil {
			s.log.Error().Err(err).Str("collection", kind).Msg("failed to create a core eval")
		}
	}
}

// openCoreEval reports whether a core eval of kind is pending or blocked:
// in CoreJobNamespace, or in the default namespace where servers before
// it created them (a cluster being upgraded may hold one still open).
func openCoreEval(snap *state.Snapshot, kind string) bool {
	for _, ns := range []string{sdk.CoreJobNamespace, sdk.DefaultNamespace} {
		for _, e := range snap.EvalsByJob(ns, kind) {
			if e.Type == sdk.JobTypeCore && !e.TerminalStatus() {
				return true
			}
		}
	}
	return false
}

// ForceGC asks the core scheduler to collect everything terminal now,
// whatever its age; expired ACL tokens are deleted first, as Nomad's
// forced collection does (a failure there, such as a token deleted
// meanwhile, is logged and the collection goes on, as the periodic one).
func (s *Server) ForceGC() (string, uint64, error) {
	if _, err := s.collectExpiredACLTokens(); err != nil {
		s.log.Warn().Err(err).Msg("failed to delete expired ACL tokens")
	}
	if err := s.collectExpiredOneTimeTokens(); err != nil {
		s.log.Warn().Err(err).Msg("failed to delete expired one-time tokens")
	}
	if !s.hasCorePlugin() {
		return "", 0, badRequest(errors.New("no core scheduler plugin is loaded"))
	}
	e := s.coreEval(sdk.CoreJobForceGC)
	index, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: []*sdk.Evaluation{e}})
	return e.ID, index, err
}

// coreConfig is the configuration handed to the core scheduler: the
// server's GC thresholds, overridden by the plugin's own config.
func (s *Server) coreConfig(plugin map[string]string) map[string]string {
	out := map[string]string{
		sdk.ConfigEvalGCThreshold:       s.cfg.EvalGCThreshold.String(),
		sdk.ConfigBatchEvalGCThreshold:  s.cfg.BatchEvalGCThreshold.String(),
		sdk.ConfigJobGCThreshold:        s.cfg.JobGCThreshold.String(),
		sdk.ConfigNodeGCThreshold:       s.cfg.NodeGCThreshold.String(),
		sdk.ConfigDeploymentGCThreshold: s.cfg.DeploymentGCThreshold.String(),
	}
	for k, v := range plugin {
		out[k] = v
	}
	return out
}

// gcThresholdsFor reads the thresholds of a core eval from the core
// scheduler's configuration (coreConfig); a forced collection has none.
func gcThresholdsFor(kind string, config map[string]string) (sdk.GCThresholds, error) {
	if kind == sdk.CoreJobForceGC {
		return sdk.GCThresholds{}, nil
	}
	th, err := sdk.GCThresholdsFrom(config)
	if err != nil {
		return th, fmt.Errorf("server: core scheduler config %w", err)
	}
	return th, nil
}

// garbageCollect checks that everything in req is safe to delete in snap
// (the latest state) and old enough by th at the server's time, and deletes
// it through raft. It rejects the whole request, naming the first object
// that is not collectable.
func (s *Server) garbageCollect(snap *state.Snapshot, th sdk.GCThresholds, req *sdk.GCRequest) error {
	if req.Empty() {
		return nil
	}
	if err := checkCollectable(snap, req, th, s.now()); err != nil {
		return fmt.Errorf("%w: %v", sdk.ErrInvalidEval, err)
	}
	_, err := s.Apply(fsm.GarbageCollectRequestType, &fsm.GarbageCollectRequest{
		Evals: req.Evals, Allocs: req.Allocs, Jobs: req.Jobs, Nodes: req.Nodes, Deployments: req.Deployments})
	return err
}

// checkCollectable enforces what may be deleted, by the rules of Nomad's
// core scheduler: terminal evals whose allocations are all terminal and
// no longer run;
// terminal allocations that no longer run on their node (allocGCEligible);
// jobs that are over (sdk.JobGCEligible) with no live allocation and no
// open eval; down nodes with no live allocation; deployments that are no
// longer active and that no live allocation names — each older than its
// threshold (its last change, by the times the state holds: eval and
// allocation modify times, the job's submit time and its evals' and
// allocations' modify times, the node's last status change, the
// deployment's modify time).
//
// An eval or allocation is held to the batch eval threshold if its job is
// a batch job and to the eval threshold otherwise, or to the job threshold
// if that is shorter and its job is over (sdk.JobGCEligible) and was
// submitted that long ago: job GC collects a job's evals and allocations
// by the job threshold, and a large collection may name them in an earlier
// request than the job.
func checkCollectable(snap *state.Snapshot, req *sdk.GCRequest, th sdk.GCThresholds, now time.Time) error {
	// A zero threshold (a forced collection) asks no age, not even that the
	// time has passed by this clock: a former leader may have run ahead.
	young := func(unixNano int64, threshold time.Duration) bool {
		return threshold > 0 && now.Sub(time.Unix(0, unixNano)) < threshold
	}
	evalThreshold := func(ns, jobID, typ string) time.Duration {
		t := th.Eval
		if typ == sdk.JobTypeBatch {
			t = th.BatchEval
		}
		if j := snap.Job(ns, jobID); j != nil && sdk.JobGCEligible(j) && !young(j.SubmitTime, th.Job) {
			t = min(t, th.Job)
		}
		return t
	}
	for _, id := range req.Allocs {
		a := snap.Alloc(id)
		if a == nil {
			continue
		}
		if !a.TerminalStatus() {
			return fmt.Errorf("allocation %s is not terminal", id)
		}
		if a.ClientStatus == sdk.AllocClientStatusRunning {
			return fmt.Errorf("allocation %s still runs on its node", id)
		}
		var typ string
		if a.Job != nil {
			typ = a.Job.Type
		} else if e := snap.Eval(a.EvalID); e != nil {
			typ = e.Type
		}
		if t := evalThreshold(a.Namespace, a.JobID, typ); young(a.ModifyTime, t) {
			return fmt.Errorf("allocation %s changed less than %s ago", id, t)
		}
	}
	for _, id := range req.Evals {
		e := snap.Eval(id)
		if e == nil {
			continue
		}
		if !e.TerminalStatus() {
			return fmt.Errorf("evaluation %s is %s, not terminal", id, e.Status)
		}
		if t := evalThreshold(e.Namespace, e.JobID, e.Type); young(e.ModifyTime, t) {
			return fmt.Errorf("evaluation %s changed less than %s ago", id, t)
		}
		for _, a := range snap.AllocsByEval(id) {
			if !a.TerminalStatus() || a.ClientStatus == sdk.AllocClientStatusRunning {
				return fmt.Errorf("evaluation %s has live allocation %s", id, a.ID)
			}
		}
	}
	for _, j := range req.Jobs {
		job := snap.Job(j.Namespace, j.ID)
		if job == nil {
			continue
		}
		if !sdk.JobGCEligible(job) {
			return fmt.Errorf("job %s is not over (%s, stop %v)", j, job.Status, job.Stop)
		}
		if young(job.SubmitTime, th.Job) {
			return fmt.Errorf("job %s was submitted less than %s ago", j, th.Job)
		}
		for _, a := range snap.AllocsByJob(j.Namespace, j.ID) {
			if !a.TerminalStatus() || a.ClientStatus == sdk.AllocClientStatusRunning {
				return fmt.Errorf("job %s has live allocation %s", j, a.ID)
			}
			if young(a.ModifyTime, th.Job) {
				return fmt.Errorf("job %s has allocation %s that changed less than %s ago", j, a.ID, th.Job)
			}
		}
		for _, e := range snap.EvalsByJob(j.Namespace, j.ID) {
			if !e.TerminalStatus() {
				return fmt.Errorf("job %s has open evaluation %s", j, e.ID)
			}
			if young(e.ModifyTime, th.Job) {
				return fmt.Errorf("job %s has evaluation %s that changed less than %s ago", j, e.ID, th.Job)
			}
		}
	}
	for _, id := range req.Nodes {
		n := snap.Node(id)
		if n == nil {
			continue
		}
		if n.Status != sdk.NodeStatusDown {
			return fmt.Errorf("node %s is %s, not down", id, n.Status)
		}
		if young(n.StatusUpdatedAt*int64(time.Second), th.Node) {
			return fmt.Errorf("node %s changed status less than %s ago", id, th.Node)
		}
		for _, a := range snap.AllocsByNode(id) {
			if !a.TerminalStatus() {
				return fmt.Errorf("node %s has live allocation %s", id, a.ID)
			}
		}
	}
	for _, id := range req.Deployments {
		d := snap.Deployment(id)
		if d == nil {
			continue
		}
		if d.Active() {
			return fmt.Errorf("deployment %s is still %s", id, d.Status)
		}
		if young(d.ModifyTime, th.Deployment) {
			return fmt.Errorf("deployment %s changed less than %s ago", id, th.Deployment)
		}
		for _, a := range snap.AllocsByDeployment(id) {
			if !a.TerminalStatus() {
				return fmt.Errorf("deployment %s has live allocation %s", id, a.ID)
			}
		}
	}
	return nil
}

// DeleteEvals deletes evaluations (not their allocations), as Nomad's eval
// delete does: a way out of a flood of evals that should never run. The
// core scheduler's eval GC collects the allocations left behind. The
// eval broker must be paused (scheduler configuration), so that no worker
// holds one of them; an eval the broker still queues is dropped when it is
// dequeued, as it no longer exists.
func (s *Server) DeleteEvals(ids []string) (uint64, error) {
	snap := s.store.Snapshot()
	if !snap.SchedulerConfig().PauseEvalBroker {
		return 0, badRequest(errors.New("the eval broker must be paused to delete evaluations (operator scheduler set-config -pause-eval-broker=true)"))
	}
	for _, id := range ids {
		if snap.Eval(id) == nil {
			return 0, fmt.Errorf("%w: evaluation %q", ErrNotFound, id)
		}
	}
	if len(ids) == 0 {
		return snap.Index(), nil
	}
	return s.Apply(fsm.EvalDeleteRequestType, &fsm.EvalDeleteRequest{Evals: ids})
}
