package reconcile

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestNextCanaries: canary names as Nomad's NextCanaries picks them: the
// names of the allocations being replaced (below count), then free
// indexes below count, then indexes from count up, never an existing
// canary's. A differential QA run found Drover naming an extra canary
// after a live allocation that stays (g[0], updated in place) where Nomad
// takes g[2].
func TestNextCanaries(t *testing.T) {
	alloc := func(i int) *sdk.Allocation {
		return &sdk.Allocation{ID: fmt.Sprintf("a%d", i), Name: sdk.AllocName("j", "g", i)}
	}
	setOf := func(is ...int) set {
		s := set{}
		for _, i := range is {
			a := alloc(i)
			s[a.ID] = a
		}
		return s
	}
	cases := []struct {
		name                      string
		count, k                  int
		used, canaries, destroyed []int
		want                      string
	}{
		{"the replaced ones' names", 3, 2, []int{0, 1, 2}, nil, []int{2, 0}, "[j.g[0] j.g[2]]"},
		{"then free indexes", 3, 2, []int{0, 2}, nil, []int{2}, "[j.g[2] j.g[1]]"},
		{"then from count up, past a live one that stays", 2, 2, []int{0, 1}, nil, []int{1}, "[j.g[1] j.g[2]]"},
		{"more canaries than the count", 3, 5, []int{0, 1, 2}, nil, nil, "[j.g[3] j.g[4] j.g[5] j.g[6] j.g[7]]"},
		{"not an existing canary's name", 2, 1, []int{0, 1}, []int{1}, []int{1}, "[j.g[2]]"},
		{"a replaced one above the count is not taken", 2, 1, []int{0, 1, 3}, nil, []int{3}, "[j.g[2]]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newNameIndex("j", "g", tc.count, setOf(tc.used...))
			if got := fmt.Sprint(n.nextCanaries(tc.k, setOf(tc.canaries...), setOf(tc.destroyed...))); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
