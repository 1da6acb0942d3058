package main

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestPreemptionRows(t *testing.T) {
	stub := func(i int, job string) *sdk.AllocationListStub {
		return &sdk.AllocationListStub{ID: fmt.Sprintf("alloc-%02d", i), JobID: job, Namespace: "default", TaskGroup: "g",
			NodeID: "node-123456789"}
	}
	few := []*sdk.AllocationListStub{stub(1, "a"), stub(2, "b")}
	if got := preemptionRows(few, false); len(got) != 3 || got[1][0] != "alloc-01" || got[2][1] != "b" || got[1][3] != "node-123" {
		t.Errorf("few: %q", got)
	}
	var many []*sdk.AllocationListStub
	for i := range 12 {
		many = append(many, stub(i, []string{"a", "b", "a"}[i%3]))
	}
	got := preemptionRows(many, false)
	want := [][]string{{"Job ID", "Namespace", "Preemptions"}, {"a", "default", "8"}, {"b", "default", "4"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("many: %q, want %q", got, want)
	}
	if got := preemptionRows(many, true); len(got) != 13 {
		t.Errorf("many, verbose: %d rows, want 13", len(got))
	}
}
