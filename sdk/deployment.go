package sdk

import "time"

// Deployment tracks the rollout of one job version.
type Deployment struct {
	ID                 string                      `msg:",omitempty"`
	Namespace          string                      `msg:",omitempty"`
	JobID              string                      `msg:",omitempty"`
	JobVersion         uint64                      `msg:",omitempty"`
	JobModifyIndex     uint64                      `msg:",omitempty"`
	JobSpecModifyIndex uint64                      `msg:",omitempty"`
	JobCreateIndex     uint64                      `msg:",omitempty"`
	IsMultiregion      bool                        `msg:",omitempty"`
	TaskGroups         map[string]*DeploymentState `msg:",omitempty"`
	Status             string                      `msg:",omitempty"`
	StatusDescription  string                      `msg:",omitempty"`
	EvalPriority       int                         `msg:",omitempty"`
	CreateIndex        uint64                      `msg:",omitempty"`
	ModifyIndex        uint64                      `msg:",omitempty"`
	CreateTime         int64                       `msg:",omitempty"`
	ModifyTime         int64                       `msg:",omitempty"`
}

// Active reports whether the deployment is still rolling.
func (d *Deployment) Active() bool { return DeploymentStatusActive(d.Status) }

// RequiresPromotion reports whether a group has canaries not yet promoted.
func (d *Deployment) RequiresPromotion() bool {
	for _, s := range d.TaskGroups {
		if s.DesiredCanaries > 0 && !s.Promoted {
			return true
		}
	}
	return false
}

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
	AutoRevert        bool          `msg:",omitempty"`
	AutoPromote       bool          `msg:",omitempty"`
	ProgressDeadline  time.Duration `msg:",omitempty"`
	RequireProgressBy time.Time     `msg:",omitempty"`
	Promoted          bool          `msg:",omitempty"`
	PlacedCanaries    []string      `msg:",omitempty"`
	DesiredCanaries   int           `msg:",omitempty"`
	DesiredTotal      int           `msg:",omitempty"`
	PlacedAllocs      int           `msg:",omitempty"`
	HealthyAllocs     int           `msg:",omitempty"`
	UnhealthyAllocs   int           `msg:",omitempty"`
}

// DeploymentStatusUpdate changes a deployment's status within a plan.
type DeploymentStatusUpdate struct {
	DeploymentID      string `msg:",omitempty"`
	Status            string `msg:",omitempty"`
	StatusDescription string `msg:",omitempty"`
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
// the deployment: one more placed, a canary listed, and, for the group's
// first, the progress deadline started from now. As in Nomad, later
// placements (replacements of failed allocations among them) do not push
// it out: only healthy allocations do (CountHealth). It reports whether d
// changed.
func (d *Deployment) CountPlacement(a *Allocation, now time.Time) bool {
	s := d.TaskGroups[a.TaskGroup]
	if s == nil || a.DeploymentID != d.ID {
		return false
	}
	s.PlacedAllocs++
	if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
		s.PlacedCanaries = append(s.PlacedCanaries, a.ID)
	}
	if s.ProgressDeadline > 0 && s.RequireProgressBy.IsZero() {
		s.RequireProgressBy = now.Add(s.ProgressDeadline)
	}
	return true
}

// CountHealth records in d (which the caller owns) that an allocation of
// the deployment went from health before to health after (as reported in
// AllocDeploymentStatus); a newly healthy allocation pushes the progress
// deadline out to now plus the group's progress_deadline, if that is
// later. An allocation counts in one of the two at most: a
// healthy one found unhealthy later (as in Nomad), or an unhealthy one an
// operator then marks healthy, moves over. It reports whether d changed.
func (d *Deployment) CountHealth(a *Allocation, before, after *AllocDeploymentStatus, now time.Time) bool {
	s := d.TaskGroups[a.TaskGroup]
	if s == nil || a.DeploymentID != d.ID {
		return false
	}
	changed := false
	if !before.IsHealthy() && after.IsHealthy() {
		if before.IsUnhealthy() {
			s.UnhealthyAllocs--
		}
		s.HealthyAllocs++
		if by := now.Add(s.ProgressDeadline); s.ProgressDeadline > 0 && by.After(s.RequireProgressBy) {
			s.RequireProgressBy = by
		}
		changed = true
	}
	if !before.IsUnhealthy() && after.IsUnhealthy() {
		if before.IsHealthy() {
			s.HealthyAllocs--
		}
		s.UnhealthyAllocs++
		changed = true
	}
	return changed
}
