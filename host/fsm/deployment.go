package fsm

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// Deployment accounting, kept by the FSM as Nomad's state store keeps it:
// a deployment's per-group counts (placed, canaries, healthy, unhealthy)
// and its progress deadline change in the same transaction as the
// allocations they count, so the scheduler and the deployment watcher
// always read counts that match the allocations.

// countPlacements counts new allocations in their deployments.
func countPlacements(tx *state.Txn, fresh []*sdk.Allocation, now int64) error {
	return updateDeployments(tx, fresh, func(d *sdk.Deployment, a *sdk.Allocation) bool {
		return d.CountPlacement(a, time.Unix(0, now))
	})
}

// countHealth counts an allocation's health change in its deployment.
func countHealth(tx *state.Txn, old, a *sdk.Allocation, now int64) error {
	if a.DeploymentID == "" {
		return nil
	}
	return updateDeployments(tx, []*sdk.Allocation{a}, func(d *sdk.Deployment, a *sdk.Allocation) bool {
		return d.CountHealth(a, old.DeploymentStatus, a.DeploymentStatus, time.Unix(0, now))
	})
}

// updateDeployments applies count to the deployment of each allocation,
// writing each changed deployment once.
func updateDeployments(tx *state.Txn, allocs []*sdk.Allocation, count func(*sdk.Deployment, *sdk.Allocation) bool) error {
	changed := map[string]*sdk.Deployment{}
	var order []string
	for _, a := range allocs {
		d := changed[a.DeploymentID]
		if d == nil {
			cur := tx.Deployment(a.DeploymentID)
			if cur == nil {
				continue
			}
			d = cur.Copy()
		}
		if count(d, a) && changed[a.DeploymentID] == nil {
			changed[a.DeploymentID] = d
			order = append(order, a.DeploymentID)
		}
	}
	for _, id := range order {
		if err := tx.UpsertDeployment(changed[id]); err != nil {
			return err
		}
	}
	return nil
}

// reportedHealth is the deployment status a node's report leaves: its
// health, and the canary mark the scheduler set (nodes report health, not
// canary status).
func reportedHealth(old, reported *sdk.AllocDeploymentStatus, index uint64) *sdk.AllocDeploymentStatus {
	c := *reported
	c.ModifyIndex = index // when the health was written, as Nomad keeps it
	if old != nil && old.Canary {
		c.Canary = true
	}
	return &c
}

func applyDeploymentPromote(tx *state.Txn, req *DeploymentPromoteRequest, fx *effects) error {
	cur := tx.Deployment(req.DeploymentID)
	if cur == nil {
		return fmt.Errorf("%w: deployment %s", state.ErrNotFound, req.DeploymentID)
	}
	d := cur.Copy()
	for name, s := range d.TaskGroups {
		if len(req.Groups) == 0 || slices.Contains(req.Groups, name) {
			if s.DesiredCanaries > 0 {
				s.Promoted = true
			}
			// As Nomad's: the rollout that follows has its own deadline.
			if s.ProgressDeadline > 0 && !s.RequireProgressBy.IsZero() {
				s.RequireProgressBy = time.Unix(0, req.UpdatedAt).Add(s.ProgressDeadline)
			}
		}
	}
	// The description says the deployment runs once nothing awaits
	// promotion (a paused one stays paused), as Nomad's.
	if d.Status == sdk.DeploymentStatusRunning && !d.RequiresPromotion() {
		d.StatusDescription = sdk.DeploymentDescriptionRunning
	}
	d.ModifyTime = req.UpdatedAt
	if err := tx.UpsertDeployment(d); err != nil {
		return err
	}
	// Promoted canaries are canaries no more: a replacement of one is
	// placed as any allocation of the group, as Nomad's state store
	// clears the mark of each healthy canary it promotes.
	for _, name := range slices.Sorted(maps.Keys(d.TaskGroups)) { // the same order on every server
		s := d.TaskGroups[name]
		if !s.Promoted || cur.TaskGroups[name].Promoted {
			continue
		}
		for _, id := range s.PlacedCanaries {
			old := tx.Alloc(id)
			if old == nil || old.TerminalStatus() || !old.DeploymentStatus.IsHealthy() || !old.DeploymentStatus.Canary {
				continue
			}
			a := *old
			ds := *old.DeploymentStatus
			ds.Canary, ds.ModifyIndex = false, tx.Index()
			a.DeploymentStatus = &ds
			a.AllocModifyIndex = tx.Index()
			if err := tx.UpsertAllocOver(&a, old); err != nil {
				return err
			}
		}
	}
	if req.Eval != nil {
		return upsertEvals(tx, []*sdk.Evaluation{req.Eval}, fx)
	}
	return nil
}
