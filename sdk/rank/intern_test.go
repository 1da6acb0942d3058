package rank

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestScorerNames_DecodeWithoutAllocating keeps sdk's list of interned
// strings in step with the scorer names every placement's metric carries.
func TestScorerNames_DecodeWithoutAllocating(t *testing.T) {
	for _, name := range []string{ScorerBinpack, ScorerJobAntiAffinity, ScorerReschedulePenalty,
		ScorerAffinity, ScorerSpread, ScorerNormalized} {
		enc, err := (&sdk.NodeScore{Name: name, Score: 0.5}).MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		var s sdk.NodeScore
		if n := testing.AllocsPerRun(50, func() { _, err = s.UnmarshalMsg(enc) }); n != 0 || err != nil || s.Name != name {
			t.Fatalf("%s: %v allocations to decode (%v, %q): add it to sdk's interned strings (sdk/intern.go)", name, n, err, s.Name)
		}
	}
}
