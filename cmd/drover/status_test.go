package main

import (
	"testing"

	"github.com/drover-sched/drover/host/server/servertest"
)

// drover status: without an identifier, the job list; with one, the status
// command of what it names, found by /v1/search; several contexts
// matching is "Multiple matches", none "Unable to resolve ID".
func TestStatusCommand(t *testing.T) {
	s, addr, root := nsAgent(t)
	out, _ := mustRun(t, 0, addr, root, "status")
	if out != "No running jobs\n" {
		t.Errorf("status on an empty cluster: %q", out)
	}
	for i := range 2 {
		if _, _, err := s.RegisterNode(servertest.Node(i, 4000, 8192)); err != nil {
			t.Fatal(err)
		}
	}
	eval := jobWithEval(t, s, "web")
	snap := s.Store().Snapshot()
	allocs := snap.AllocsByJob("default", "web")
	if len(allocs) != 2 {
		t.Fatalf("%d allocations, want 2", len(allocs))
	}

	out, _ = mustRun(t, 0, addr, root, "status")
	checkContains(t, "status", out, "ID   Type     Priority  Status", "web  service")
	out, _ = mustRun(t, 0, addr, root, "status", "we")
	checkKVs(t, out, "ID", "web", "Type", "service")
	out, _ = mustRun(t, 0, addr, root, "status", "-verbose", "node-0001")
	checkKVs(t, out, "ID", "node-0001", "Name", "node-0001")
	out, _ = mustRun(t, 0, addr, root, "status", eval.ID)
	checkKVs(t, out, "ID", eval.ID[:8], "Job ID", "web", "Status", "complete")
	out, _ = mustRun(t, 0, addr, root, "status", "-verbose", eval.ID[:12])
	checkKVs(t, out, "ID", eval.ID)
	out, _ = mustRun(t, 0, addr, root, "status", allocs[0].ID)
	checkKVs(t, out, "ID", allocs[0].ID[:8], "Job ID", "web", "Name", allocs[0].Name)
	servertest.Namespaces(t, s, "prod-east")
	out, _ = mustRun(t, 0, addr, root, "status", "prod")
	checkKVs(t, out, "Name", "prod-east")

	// "default" is both a namespace and a node pool: exact matches in two
	// contexts.
	_, errOut := mustRun(t, 1, addr, root, "status", "default")
	if want := "Multiple matches found for id \"default\"\n\nNamespaces:\ndefault\n\nNode_pools:\ndefault\n"; errOut != want {
		t.Errorf("status default:\n%s\nwant:\n%s", errOut, want)
	}
	// "node-000" is the prefix of two nodes.
	_, errOut = mustRun(t, 1, addr, root, "status", "node-000")
	checkContains(t, "status of an ambiguous prefix", errOut, "Multiple matches found for id \"node-000\"", "\nNodes:\nnode-0000, node-0001\n")
	_, errOut = mustRun(t, 1, addr, root, "status", "nothing-has-this-id")
	checkContains(t, "status of nothing", errOut, `Unable to resolve ID: "nothing-has-this-id"`)
	// A node pool alone is found but has no status command, as in Nomad.
	servertest.NodePools(t, s, "gpu")
	_, errOut = mustRun(t, 1, addr, root, "status", "gpu")
	checkContains(t, "status of a node pool", errOut, `Unable to resolve ID: "gpu"`)
	_, errOut = mustRun(t, 1, addr, root, "status", "a", "b")
	checkContains(t, "status with two arguments", errOut, "This command takes either no arguments or one")
	// The token is passed on: without one, the search finds nothing it may
	// not see, and the job list is refused.
	_, errOut = mustRun(t, 1, addr, "", "status")
	checkContains(t, "status without a token", errOut, "403")
}

// The exact match wins over prefixes; one context with one match is
// taken; several contexts, or several IDs, are ambiguous.
func TestStatusMatch(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		matches  map[string][]string
		want     string
		ok       bool
	}{
		{"nothing", "web", map[string][]string{"jobs": {}, "nodes": nil}, "", true},
		{"one prefix match", "we", map[string][]string{"jobs": {"web"}, "nodes": {}}, "jobs", true},
		{"an exact match beats prefixes elsewhere", "web", map[string][]string{"jobs": {"web", "web-2"}, "evals": {"web0"}}, "jobs", true},
		{"two IDs in one context", "web", map[string][]string{"jobs": {"web-1", "web-2"}}, "", false},
		{"one ID in each of two contexts", "a", map[string][]string{"jobs": {"ab"}, "evals": {"abc"}}, "", false},
		{"two exact matches", "a", map[string][]string{"namespaces": {"a"}, "node_pools": {"a"}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := statusMatch(tc.id, tc.matches)
			if got != tc.want || ok != tc.ok {
				t.Errorf("statusMatch = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
