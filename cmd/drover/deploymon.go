package main

import (
	"fmt"
	"net/url"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// followDeployment watches a deployment after the evaluation that started
// it, as Nomad's `job run` does: every change of status and of each
// group's placed, healthy and unhealthy counts, until the deployment ends,
// is paused, or waits for a manual promotion of healthy canaries. It
// returns exitOK unless the deployment failed (exitError).
func (m *monitor) followDeployment(id string) int {
	m.ui.Output(fmt.Sprintf("==> %s: Monitoring deployment %q", m.clock().Format(time.RFC3339), shortID(id)))
	var index uint64
	var last *sdk.Deployment
	for {
		var d sdk.Deployment
		meta, err := m.cl.Get(bg, fmt.Sprintf("/v1/deployment/%s?index=%d&wait=%s", url.PathEscape(id), index, m.wait), &d)
		if err != nil {
			return m.errorf("reading deployment %s: %v", shortID(id), err)
		}
		index = meta.Index
		m.reportDeployment(last, &d)
		last = &d
		switch {
		case d.Status == sdk.DeploymentStatusSuccessful:
			m.ui.Output(fmt.Sprintf("==> %s: Deployment %q successful", m.clock().Format(time.RFC3339), shortID(id)))
			return exitOK
		case d.Status == sdk.DeploymentStatusFailed:
			m.ui.Error(fmt.Sprintf("Deployment %q failed: %s", shortID(id), d.StatusDescription))
			return exitError
		case d.Status == sdk.DeploymentStatusCancelled:
			m.ui.Output(fmt.Sprintf("==> Deployment %q was cancelled: %s", shortID(id), d.StatusDescription))
			return exitOK
		case d.Status == sdk.DeploymentStatusPaused:
			m.ui.Output(fmt.Sprintf("==> Deployment %q is paused; `drover deployment resume %s` resumes it", shortID(id), shortID(id)))
			return exitOK
		case awaitsPromotion(&d):
			m.ui.Output(fmt.Sprintf("==> Deployment %q: canaries are healthy and wait for a manual promotion: `drover deployment promote %s`",
				shortID(id), shortID(id)))
			return exitOK
		}
	}
}

// reportDeployment says what changed from before to d (everything when
// before is nil).
func (m *monitor) reportDeployment(before, d *sdk.Deployment) {
	if before == nil || before.Status != d.Status || before.StatusDescription != d.StatusDescription {
		m.say(m.clock(), "Deployment status %q: %s", d.Status, d.StatusDescription)
	}
	for _, g := range sortedKeys(d.TaskGroups) {
		st := d.TaskGroups[g]
		if before != nil {
			if old := before.TaskGroups[g]; old != nil && old.PlacedAllocs == st.PlacedAllocs &&
				old.HealthyAllocs == st.HealthyAllocs && old.UnhealthyAllocs == st.UnhealthyAllocs && old.Promoted == st.Promoted {
				continue
			}
		}
		line := fmt.Sprintf("Group %q: %d of %d placed, %d healthy, %d unhealthy", g, st.PlacedAllocs, st.DesiredTotal,
			st.HealthyAllocs, st.UnhealthyAllocs)
		if st.DesiredCanaries > 0 {
			line += fmt.Sprintf(" (%d canaries, promoted: %t)", st.DesiredCanaries, st.Promoted)
		}
		m.say(m.clock(), "%s", line)
	}
}

// awaitsPromotion reports whether a running deployment can go no further
// by itself: every group with unpromoted canaries has them all healthy, and
// one of those groups does not promote automatically.
func awaitsPromotion(d *sdk.Deployment) bool {
	if d.Status != sdk.DeploymentStatusRunning {
		return false
	}
	manual := false
	for _, st := range d.TaskGroups {
		if st.DesiredCanaries == 0 || st.Promoted {
			continue
		}
		if st.HealthyAllocs < st.DesiredCanaries {
			return false
		}
		manual = manual || !st.AutoPromote
	}
	return manual
}
