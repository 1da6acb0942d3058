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

// coreJobs are the periodic collections the leader asks the core
// scheduler for.
var coreJobs = []string{sdk.CoreJobEvalGC, sdk.CoreJobJobGC, sdk.CoreJobNodeGC, sdk.CoreJobDeploymentGC}

// hasCorePlugin reports whether some plugin serves core evaluations; without
// one, core evals would only pile up in the broker.
func (s *Server) hasCorePlugin() bool {
	_, err := s.plugins.ForEval(&sdk.Evaluation{Type: sdk.JobTypeCore}, nil)
	return err == nil
}

func (s *Server) coreEval(jobID string) *sdk.Evaluation {
	now := s.now().UnixNano()
	return &sdk.Evaluation{ID: newID(), Namespace: sdk.DefaultNamespace, Priority: sdk.CoreJobPriority,
		Type: sdk.JobTypeCore, TriggeredBy: sdk.EvalTriggerScheduled, JobID: jobID,
		Status: sdk.EvalStatusPending, CreateTime: now, ModifyTime: now}
}

// scheduleCoreEvals creates the periodic core evals every GC interval.
func (s *Server) scheduleCoreEvals(ctx context.Context) {
	if s.cfg.EvalGCInterval <= 0 {
		return
	}
	t := time.NewTicker(s.cfg.EvalGCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.hasCorePlugin() {
			continue
		}
		evals := make([]*sdk.Evaluation, 0, len(coreJobs))
		for _, j := range coreJobs {
			evals = append(evals, s.coreEval(j))
		}
		if _, err := s.Apply(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: evals}); err != nil {
			s.log.Error().Err(err).Msg("failed to create core evals")
		}
	}
}

// ForceGC asks the core scheduler to collect everything terminal now,
// whatever its age.
func (s *Server) ForceGC() (string, uint64, error) {
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
		sdk.ConfigJobGCThreshold:        s.cfg.JobGCThreshold.String(),
		sdk.ConfigNodeGCThreshold:       s.cfg.NodeGCThreshold.String(),
		sdk.ConfigDeploymentGCThreshold: s.cfg.DeploymentGCThreshold.String(),
	}
	for k, v := range plugin {
		out[k] = v
	}
	return out
}

// garbageCollect checks that everything in req is safe to delete in snap
// (the latest state) and deletes it through raft. It rejects the whole
// request, naming the first object that is not collectable.
func (s *Server) garbageCollect(snap *state.Snapshot, req *sdk.GCRequest) error {
	if req.Empty() {
		return nil
	}
	if err := checkCollectable(snap, req); err != nil {
		return fmt.Errorf("%w: %v", sdk.ErrInvalidEval, err)
	}
	_, err := s.Apply(fsm.GarbageCollectRequestType, &fsm.GarbageCollectRequest{
		Evals: req.Evals, Allocs: req.Allocs, Jobs: req.Jobs, Nodes: req.Nodes, Deployments: req.Deployments})
	return err
}

// checkCollectable enforces what may be deleted: terminal evals whose
// allocations are all terminal or collected too; terminal allocations;
// stopped or dead jobs with no live allocation and no open eval; down
// nodes with no live allocation; deployments that are no longer active.
func checkCollectable(snap *state.Snapshot, req *sdk.GCRequest) error {
	allocs := map[string]bool{}
	for _, id := range req.Allocs {
		a := snap.Alloc(id)
		if a == nil {
			continue
		}
		if !a.TerminalStatus() {
			return fmt.Errorf("allocation %s is not terminal", id)
		}
		allocs[id] = true
	}
	for _, id := range req.Evals {
		e := snap.Eval(id)
		if e == nil {
			continue
		}
		if !e.TerminalStatus() {
			return fmt.Errorf("evaluation %s is %s, not terminal", id, e.Status)
		}
		for _, a := range snap.AllocsByEval(id) {
			if !a.TerminalStatus() {
				return fmt.Errorf("evaluation %s has live allocation %s", id, a.ID)
			}
		}
	}
	for _, j := range req.Jobs {
		job := snap.Job(j.Namespace, j.ID)
		if job == nil {
			continue
		}
		if !job.Stop && job.Status != sdk.JobStatusDead {
			return fmt.Errorf("job %s is neither stopped nor dead", j)
		}
		for _, a := range snap.AllocsByJob(j.Namespace, j.ID) {
			if !a.TerminalStatus() {
				return fmt.Errorf("job %s has live allocation %s", j, a.ID)
			}
		}
		for _, e := range snap.EvalsByJob(j.Namespace, j.ID) {
			if !e.TerminalStatus() {
				return fmt.Errorf("job %s has open evaluation %s", j, e.ID)
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
		for _, a := range snap.AllocsByNode(id) {
			if !a.TerminalStatus() {
				return fmt.Errorf("node %s has live allocation %s", id, a.ID)
			}
		}
	}
	for _, id := range req.Deployments {
		if d := snap.Deployment(id); d != nil && d.Active() {
			return fmt.Errorf("deployment %s is still %s", id, d.Status)
		}
	}
	return nil
}
