package main

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

// monitor follows an evaluation until it ends, as Nomad's monitor does: its
// status changes and quasi-statuses (queued, scheduling, applying) as they
// happen, the allocations it placed, what it could not place and why, and
// the evaluations it leads to (a blocked eval waiting for capacity, the
// next step of a rolling update).
type monitor struct {
	*meta
	cl *client.Client
	// wait bounds each blocking query.
	wait time.Duration
	// deployment is the deployment the last followed eval worked for.
	deployment string
}

// follow monitors the evaluation a write created, or, detached (or when
// the write created none), prints its ID.
func (m *meta) follow(cl *client.Client, evalID string, detach bool) int {
	if evalID == "" || detach {
		m.ui.Output("Evaluation ID: " + evalID)
		return exitOK
	}
	return newMonitor(m, cl).monitor(evalID)
}

func newMonitor(m *meta, cl *client.Client) *monitor {
	return &monitor{meta: m, cl: cl, wait: 10 * time.Second}
}

func (m *monitor) say(at time.Time, format string, args ...any) {
	m.ui.Output(fmt.Sprintf("    %s: %s", at.Format(time.RFC3339), fmt.Sprintf(format, args...)))
}

// monitor returns the command's exit code: exitPlacement when some
// allocations could not be placed, exitError when the eval failed.
func (m *monitor) monitor(evalID string) int {
	code := exitOK
	for evalID != "" {
		next, c := m.one(evalID)
		if c > code {
			code = c
		}
		evalID = next
	}
	return code
}

// one follows one eval; it returns the eval to follow next, if any.
func (m *monitor) one(evalID string) (string, int) {
	m.ui.Output(fmt.Sprintf("==> %s: Monitoring evaluation %q", m.clock().Format(time.RFC3339), shortID(evalID)))
	var index uint64
	lastStatus, phases := "", 0
	// The eval's history holds its statuses and quasi-statuses as the
	// leader saw them, so that an eval done before the first read still
	// shows how it went; a status the history lacks (another leader's) is
	// seen from read to read.
	changed := func(at time.Time, status string) {
		if lastStatus != "" && status != lastStatus {
			m.say(at, "Evaluation status changed: %q -> %q", lastStatus, status)
		}
		lastStatus = status
	}
	var e httpapi.EvalResponse
	for first := true; ; first = false {
		path := fmt.Sprintf("/v1/evaluation/%s?index=%d&wait=%s", url.PathEscape(evalID), index, m.wait)
		meta, err := m.cl.Get(bg, path, &e)
		if err != nil {
			return "", m.errorf("reading evaluation %s: %v", shortID(evalID), err)
		}
		index = meta.Index
		if first {
			m.say(m.clock(), "Evaluation triggered by job %q", e.JobID)
		}
		for _, h := range e.History[min(phases, len(e.History)):] {
			switch h.Phase {
			case sdk.EvalPhaseQueued, sdk.EvalPhaseDelayed, sdk.EvalPhaseScheduling, sdk.EvalPhaseApplying:
				m.say(h.Time, "Evaluation is %s", h.Phase)
			default:
				changed(h.Time, h.Phase)
			}
		}
		phases = len(e.History)
		changed(m.clock(), e.Status)
		if e.TerminalStatus() || e.Status == sdk.EvalStatusBlocked {
			break
		}
	}
	return m.conclude(&e)
}

// conclude reports what a finished eval did.
func (m *monitor) conclude(e *httpapi.EvalResponse) (string, int) {
	if e.DeploymentID != "" {
		m.deployment = e.DeploymentID
	}
	var allocs []*sdk.AllocationListStub
	if _, err := m.cl.Get(bg, "/v1/evaluation/"+url.PathEscape(e.ID)+"/allocations", &allocs); err != nil {
		return "", m.errorf("reading the evaluation's allocations: %v", err)
	}
	sort.Slice(allocs, func(i, k int) bool { return allocs[i].Name < allocs[k].Name })
	placed, updated := 0, 0
	for _, a := range allocs {
		if a.DesiredStatus != sdk.AllocDesiredStatusRun {
			continue
		}
		verb := "created"
		if a.CreateIndex < e.CreateIndex {
			verb = "modified" // an in-place update of an older allocation
			updated++
		} else {
			placed++
		}
		m.say(m.clock(), "Allocation %q %s: node %q, group %q", shortID(a.ID), verb, shortID(a.NodeID), a.TaskGroup)
	}
	queued := 0
	for _, n := range e.QueuedAllocations {
		queued += n
	}
	summary := fmt.Sprintf("%d placed, %d queued", placed, queued)
	if updated > 0 {
		summary += fmt.Sprintf(", %d updated in place", updated)
	}
	m.ui.Output(fmt.Sprintf("==> %s: Evaluation %q finished with status %q: %s",
		m.clock().Format(time.RFC3339), shortID(e.ID), e.Status, summary))
	code := exitOK
	if len(e.FailedTGAllocs) > 0 {
		code = exitPlacement
		m.ui.Output("==> Failed to place all allocations:")
		m.ui.Output(placementFailures(e.FailedTGAllocs, "    "))
	}
	if e.BlockedEval != "" {
		m.ui.Output(fmt.Sprintf("    Evaluation %q waiting for additional capacity to place remainder", shortID(e.BlockedEval)))
	}
	switch e.Status {
	case sdk.EvalStatusFailed:
		m.ui.Error("Evaluation failed: " + e.StatusDescription)
		return "", exitError
	case sdk.EvalStatusCanceled:
		m.ui.Output("    Evaluation was canceled: " + e.StatusDescription)
	}
	if e.NextEval != "" {
		m.ui.Output(fmt.Sprintf("    Next evaluation %q follows (rolling update)", shortID(e.NextEval)))
		return e.NextEval, code
	}
	return "", code
}

// placementFailures explains, per group, why allocations could not be
// placed, as Nomad does.
func placementFailures(failed map[string]*sdk.AllocMetric, indent string) string {
	var b strings.Builder
	for i, g := range sortedKeys(failed) {
		if i > 0 {
			b.WriteString("\n")
		}
		mt := failed[g]
		noun := "allocation"
		if mt.CoalescedFailures > 0 {
			noun += "s"
		}
		fmt.Fprintf(&b, "%sTask Group %q (failed to place %d %s):", indent, g, mt.CoalescedFailures+1, noun)
		for _, line := range explainMetric(mt) {
			fmt.Fprintf(&b, "\n%s  %s", indent, line)
		}
	}
	return b.String()
}

// explainMetric turns an AllocMetric into Nomad-style lines.
func explainMetric(m *sdk.AllocMetric) []string {
	var out []string
	if m.NodesEvaluated == 0 {
		out = append(out, "* No nodes were eligible for evaluation")
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("* No nodes are available in datacenter %q", dc))
		}
	}
	for _, k := range sortedKeys(m.ClassFiltered) {
		out = append(out, fmt.Sprintf("* Class %q: %d nodes excluded by filter", k, m.ClassFiltered[k]))
	}
	for _, k := range sortedKeys(m.ConstraintFiltered) {
		out = append(out, fmt.Sprintf("* Constraint %q: %d nodes excluded by filter", k, m.ConstraintFiltered[k]))
	}
	if m.NodesExhausted > 0 {
		out = append(out, fmt.Sprintf("* Resources exhausted on %d nodes", m.NodesExhausted))
	}
	for _, k := range sortedKeys(m.ClassExhausted) {
		out = append(out, fmt.Sprintf("* Class %q exhausted on %d nodes", k, m.ClassExhausted[k]))
	}
	for _, k := range sortedKeys(m.DimensionExhausted) {
		out = append(out, fmt.Sprintf("* Dimension %q exhausted on %d nodes", k, m.DimensionExhausted[k]))
	}
	for _, q := range m.QuotaExhausted {
		out = append(out, fmt.Sprintf("* Quota limit hit %q", q))
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
