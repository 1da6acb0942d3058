package sdk

import "time"

// Deployment tracks the rollout of one job version.
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	IsMultiregion      bool
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	EvalPriority       int
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// Active reports whether the deployment is still rolling.
func (d *Deployment) Active() bool { return DeploymentStatusActive(d.Status) }

// DeploymentStatusActive reports whether a deployment in status is still
// rolling.
func DeploymentStatusActive(status string) bool {
	switch status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusBlocked,
		DeploymentStatusUnblocking, DeploymentStatusPending:
		return true
	}
	return false
}

// DeploymentState is a deployment's progress in one task group.
type DeploymentState struct {
	AutoRevert        bool
	AutoPromote       bool
	ProgressDeadline  time.Duration
	RequireProgressBy time.Time
	Promoted          bool
	PlacedCanaries    []string
	DesiredCanaries   int
	DesiredTotal      int
	PlacedAllocs      int
	HealthyAllocs     int
	UnhealthyAllocs   int
}

// DeploymentStatusUpdate changes a deployment's status within a plan.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}

// Copy returns a deep copy of the deployment.
func (d *Deployment) Copy() *Deployment {
	if d == nil {
		return nil
	}
	c := *d
	c.TaskGroups = make(map[string]*DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		s := *v
		s.PlacedCanaries = append([]string(nil), v.PlacedCanaries...)
		c.TaskGroups[k] = &s
	}
	return &c
}

// CountPlacement records in d (which the caller owns) a new allocation of
// the deployment: one more placed, a canary listed, and the progress
// deadline pushed out from now. It reports whether d changed.
func (d *Deployment) CountPlacement(a *Allocation, now time.Time) bool {
	s := d.TaskGroups[a.TaskGroup]
	if s == nil || a.DeploymentID != d.ID {
		return false
	}
	s.PlacedAllocs++
	if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
		s.PlacedCanaries = append(s.PlacedCanaries, a.ID)
	}
	if s.ProgressDeadline > 0 {
		s.RequireProgressBy = now.Add(s.ProgressDeadline)
	}
	return true
}

// CountHealth records in d (which the caller owns) that an allocation of
// the deployment went from health before to health after (as reported in
// AllocDeploymentStatus); a newly healthy allocation pushes the progress
// deadline out from now. It reports whether d changed.
func (d *Deployment) CountHealth(a *Allocation, before, after *AllocDeploymentStatus, now time.Time) bool {
	s := d.TaskGroups[a.TaskGroup]
	if s == nil || a.DeploymentID != d.ID {
		return false
	}
	changed := false
	if !before.IsHealthy() && after.IsHealthy() {
		s.HealthyAllocs++
		if s.ProgressDeadline > 0 {
			s.RequireProgressBy = now.Add(s.ProgressDeadline)
		}
		changed = true
	}
	if !before.IsUnhealthy() && after.IsUnhealthy() {
		s.UnhealthyAllocs++
		changed = true
	}
	return changed
}
