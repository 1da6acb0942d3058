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

// FuzzAttributeCompare: any two values parse without a panic, and
// comparing is symmetric: a against b is the opposite of b against a, and
// comparable either both ways or neither (bools aside, which Nomad orders
// only by equality).
func FuzzAttributeCompare(f *testing.F) {
	f.Add("11 GiB", "9000 MiB")
	f.Add("1.5 GHz", "1400MHz")
	f.Add("250 W", "300000 mW")
	f.Add("42", "41.5")
	f.Add("true", "false")
	f.Add("pascal", "volta")
	f.Fuzz(func(t *testing.T, l, r string) {
		a, b := parseAttribute(l), parseAttribute(r)
		ab, okab := a.compare(b)
		ba, okba := b.compare(a)
		if okab != okba {
			t.Fatalf("%q vs %q comparable %v one way, %v the other", l, r, okab, okba)
		}
		if okab && a.kind != attrBool && ab != -ba {
			t.Fatalf("%q vs %q: %d one way, %d the other", l, r, ab, ba)
		}
	})
}
