package main

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

// monitor follows an evaluation until it ends, as Nomad's monitor does:
// status changes, then the allocations placed and those that could not be.
type monitor struct {
	*meta
	cl *client.Client
}

func newMonitor(m *meta, cl *client.Client) *monitor { return &monitor{meta: m, cl: cl} }

func (m *monitor) say(format string, args ...any) {
	m.ui.Output(fmt.Sprintf("    %s: %s", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...)))
}

// monitor returns the command's exit code.
func (m *monitor) monitor(evalID string) int {
	m.ui.Output(fmt.Sprintf("==> %s: Monitoring evaluation %q", time.Now().Format(time.RFC3339), shortID(evalID)))
	var index uint64
	lastStatus := ""
	var eval httpapi.EvalResponse
	for {
		path := fmt.Sprintf("/v1/evaluation/%s?index=%d&wait=5s", url.PathEscape(evalID), index)
		idx, err := m.cl.Get(bg, path, &eval)
		if err != nil {
			return m.errorf("reading evaluation: %v", err)
		}
		index = idx
		if eval.Status != lastStatus {
			if lastStatus == "" {
				m.say("Evaluation triggered by job %q", eval.JobID)
			}
			m.say("Evaluation status changed: %q -> %q", lastStatus, eval.Status)
			lastStatus = eval.Status
		}
		if eval.Status != sdk.EvalStatusPending {
			break
		}
	}
	var allocs []*sdk.AllocationListStub
	if _, err := m.cl.Get(bg, "/v1/evaluation/"+url.PathEscape(evalID)+"/allocations", &allocs); err != nil {
		return m.errorf("reading allocations: %v", err)
	}
	sort.Slice(allocs, func(i, k int) bool { return allocs[i].Name < allocs[k].Name })
	for _, a := range allocs {
		m.say("Allocation %q created: node %q, group %q", shortID(a.ID), shortID(a.NodeID), a.TaskGroup)
	}
	queued := 0
	for _, n := range eval.QueuedAllocations {
		queued += n
	}
	m.say("Evaluation %q finished with status %q: %d placed, %d queued", shortID(evalID), eval.Status, len(allocs), queued)
	code := exitOK
	if len(eval.FailedTGAllocs) > 0 {
		code = exitPlacement
		m.ui.Output("==> Failed to place all allocations:")
		groups := make([]string, 0, len(eval.FailedTGAllocs))
		for g := range eval.FailedTGAllocs {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			mt := eval.FailedTGAllocs[g]
			m.ui.Output(fmt.Sprintf("    Task Group %q (failed to place %d allocation(s)):", g, mt.CoalescedFailures+1))
			m.ui.Output("      " + strings.Join(explainMetric(mt), "\n      "))
		}
		if eval.BlockedEval != "" {
			m.ui.Output(fmt.Sprintf("    Evaluation %q waiting for additional capacity to place remainder", shortID(eval.BlockedEval)))
		}
	}
	if eval.Status == sdk.EvalStatusFailed {
		m.ui.Error("Evaluation failed: " + eval.StatusDescription)
		return exitError
	}
	return code
}

// explainMetric turns an AllocMetric into Nomad-style lines.
func explainMetric(m *sdk.AllocMetric) []string {
	out := []string{fmt.Sprintf("* Nodes evaluated: %d", m.NodesEvaluated)}
	if m.NodesEvaluated == 0 && m.NodesInPool == 0 {
		out = append(out, "* No nodes were eligible for evaluation")
	}
	for _, k := range sortedKeys(m.ConstraintFiltered) {
		out = append(out, fmt.Sprintf("* Constraint %q: %d nodes excluded by filter", k, m.ConstraintFiltered[k]))
	}
	for _, k := range sortedKeys(m.DimensionExhausted) {
		out = append(out, fmt.Sprintf("* Dimension %q exhausted on %d nodes", k, m.DimensionExhausted[k]))
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
