package mirror

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestAllocSet_EqualsMap puts and deletes at random, across the switch
// from the small sorted slice to the map and back to few members, and
// checks the set against a plain map after every step.
func TestAllocSet_EqualsMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 50; round++ {
		var s allocSet
		want := map[string]*sdk.Allocation{}
		ids := 4 + r.IntN(3*smallSet)
		for step := 0; step < 400; step++ {
			id := fmt.Sprintf("a-%03d", r.IntN(ids))
			if r.IntN(3) == 0 {
				s.del(id)
				delete(want, id)
			} else {
				a := &sdk.Allocation{ID: id, Name: fmt.Sprint(step)}
				s.put(a)
				want[id] = a
			}
			got := s.list()
			if s.len() != len(want) || len(got) != len(want) {
				t.Fatalf("round %d step %d: len %d, list %d, want %d", round, step, s.len(), len(got), len(want))
			}
			if !slices.IsSortedFunc(got, func(a, b *sdk.Allocation) int { return strings.Compare(a.ID, b.ID) }) {
				t.Fatalf("round %d step %d: list not sorted", round, step)
			}
			for _, a := range got {
				if want[a.ID] != a {
					t.Fatalf("round %d step %d: %s is %v, want %v", round, step, a.ID, a, want[a.ID])
				}
			}
		}
	}
}
