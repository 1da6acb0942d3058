package feasible

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// FuzzParsePortRanges: any input parses or fails cleanly, and what parses
// is a list of valid ports.
func FuzzParsePortRanges(f *testing.F) {
	for _, s := range []string{"22", "22,80", "8000-8100", " 1 - 3 ,5", "", "-", "70000", "5-1", "a,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if len(spec) > 64 { // keep ranges small: 0-65535 is valid but slow to list
			return
		}
		ports, err := ParsePortRanges(spec)
		if err != nil {
			return
		}
		for _, p := range ports {
			if p < 0 || p > maxPort {
				t.Fatalf("%q parsed to port %d", spec, p)
			}
		}
	})
}

// FuzzChecker: no operand and no pair of values panics, and "!=" is the
// negation of "=" when both sides are set.
func FuzzChecker(f *testing.F) {
	f.Add("=", "linux", "linux")
	f.Add("regexp", "host-1", "^host-[0-9]+$")
	f.Add("semver", "1.2.3", ">= 1.0.0")
	f.Add("version", "1.2", "~> 1.1")
	f.Add("set_contains_any", "a,b", "b,c")
	f.Fuzz(func(t *testing.T, op, l, r string) {
		ch := NewChecker()
		n := &sdk.Node{Attributes: map[string]string{"x": l}}
		c := &sdk.Constraint{LTarget: "${attr.x}", RTarget: r, Operand: op}
		ch.Meets(c, n)
		if strings.HasPrefix(r, "${") {
			return
		}
		eq := ch.Meets(&sdk.Constraint{LTarget: "${attr.x}", RTarget: r, Operand: "="}, n)
		ne := ch.Meets(&sdk.Constraint{LTarget: "${attr.x}", RTarget: r, Operand: "!="}, n)
		if eq == ne {
			t.Fatalf("= and != agree on %q vs %q", l, r)
		}
	})
}
