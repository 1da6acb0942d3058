package main

import (
	"testing"
)

// system reconcile summaries succeeds and prints nothing, as Nomad's;
// without a management token it is refused.
func TestSystemReconcileSummariesCommand(t *testing.T) {
	_, addr, root := nsAgent(t)
	if out, errOut := mustRun(t, 0, addr, root, "system", "reconcile", "summaries"); out != "" || errOut != "" {
		t.Errorf("output %q, errors %q", out, errOut)
	}
	_, errOut := mustRun(t, 1, addr, "", "system", "reconcile", "summaries")
	checkContains(t, "without a token", errOut, "Error: running system summary reconciliation: API error (403)")
	_, errOut = mustRun(t, 1, addr, root, "system", "reconcile", "summaries", "x")
	checkContains(t, "with an argument", errOut, "This command takes no arguments")
}
