package sdk

import "testing"

func TestFullCommit_Whole(t *testing.T) {
	plan := &Plan{NodeAllocation: map[string][]*Allocation{"n1": {{ID: "a"}, {ID: "b"}}, "n2": {{ID: "c"}}}}
	// A whole result need not carry the lists: they are the plan's.
	full, expected, actual := (&PlanResult{Whole: true}).FullCommit(plan)
	if !full || expected != 3 || actual != 3 {
		t.Fatalf("whole: full %v, %d/%d", full, actual, expected)
	}
	full, expected, actual = (&PlanResult{NodeAllocation: map[string][]*Allocation{"n1": plan.NodeAllocation["n1"]}}).FullCommit(plan)
	if full || expected != 3 || actual != 2 {
		t.Fatalf("partial: full %v, %d/%d", full, actual, expected)
	}
}
