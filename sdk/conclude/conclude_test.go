package conclude

import (
	"maps"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestAdjustQueued(t *testing.T) {
	alloc := func(id, tg string) *sdk.Allocation { return &sdk.Allocation{ID: id, TaskGroup: tg, NodeID: "n-" + id} }
	a1, a2, b1 := alloc("a1", "web"), alloc("a2", "web"), alloc("b1", "db")
	updated := alloc("u1", "web") // an in-place update: committed, not placed
	placed := []*sdk.Allocation{a1, a2, b1}
	lists := func(as ...*sdk.Allocation) map[string][]*sdk.Allocation {
		m := map[string][]*sdk.Allocation{}
		for _, a := range as {
			m[a.NodeID] = append(m[a.NodeID], a)
		}
		return m
	}
	cases := []struct {
		name   string
		result *sdk.PlanResult
		want   map[string]int
	}{
		{"no result", nil, map[string]int{"web": 2, "db": 1, "cache": 0}},
		{"whole commit", &sdk.PlanResult{Whole: true, NodeAllocation: lists(a1, a2, b1, updated)},
			map[string]int{"web": 0, "db": 0, "cache": 0}},
		{"everything, listed", &sdk.PlanResult{NodeAllocation: lists(a1, a2, b1, updated)},
			map[string]int{"web": 0, "db": 0, "cache": 0}},
		{"part of it", &sdk.PlanResult{NodeAllocation: lists(a2, updated), RefreshIndex: 9},
			map[string]int{"web": 1, "db": 1, "cache": 0}},
		{"nothing", &sdk.PlanResult{RefreshIndex: 9}, map[string]int{"web": 2, "db": 1, "cache": 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			queued := map[string]int{"web": 2, "db": 1, "cache": 0}
			AdjustQueued(c.result, placed, queued)
			if !maps.Equal(queued, c.want) {
				t.Fatalf("queued = %v, want %v", queued, c.want)
			}
		})
	}
}
