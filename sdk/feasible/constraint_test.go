package feasible

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestChecker_Meets(t *testing.T) {
	n := &sdk.Node{ID: "n1", Name: "host-1", Datacenter: "dc1", NodeClass: "gpu",
		Attributes: map[string]string{"kernel.name": "linux", "os.version": "12.4", "cpu.numcores": "8", "tags": "a,b,c"},
		Meta:       map[string]string{"rack": "r1"}}
	cases := []struct {
		name string
		c    sdk.Constraint
		want bool
	}{
		{"equal attr", sdk.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}, true},
		{"equal mismatch", sdk.Constraint{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: "="}, false},
		{"not equal", sdk.Constraint{LTarget: "${meta.rack}", RTarget: "r2", Operand: "!="}, true},
		{"not equal missing attr", sdk.Constraint{LTarget: "${meta.zone}", RTarget: "z", Operand: "!="}, true},
		{"equal missing attr", sdk.Constraint{LTarget: "${meta.zone}", RTarget: "z", Operand: "="}, false},
		{"node fields", sdk.Constraint{LTarget: "${node.datacenter}", RTarget: "dc1", Operand: "="}, true},
		{"node class", sdk.Constraint{LTarget: "${node.class}", RTarget: "gpu", Operand: "="}, true},
		{"regexp", sdk.Constraint{LTarget: "${node.unique.name}", RTarget: "^host-[0-9]+$", Operand: "regexp"}, true},
		{"bad regexp", sdk.Constraint{LTarget: "${node.unique.name}", RTarget: "([", Operand: "regexp"}, false},
		{"version", sdk.Constraint{LTarget: "${attr.os.version}", RTarget: ">= 12.0, < 13", Operand: "version"}, true},
		{"version fails", sdk.Constraint{LTarget: "${attr.os.version}", RTarget: "> 12.5", Operand: "version"}, false},
		{"numeric >", sdk.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "4", Operand: ">"}, true},
		{"numeric <= (not lexical)", sdk.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "10", Operand: "<="}, true},
		{"set_contains", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "a,c", Operand: "set_contains"}, true},
		{"set_contains_any", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "x,c", Operand: "set_contains_any"}, true},
		{"set_contains_any none", sdk.Constraint{LTarget: "${attr.tags}", RTarget: "x,y", Operand: "set_contains_any"}, false},
		{"is_set", sdk.Constraint{LTarget: "${meta.rack}", Operand: "is_set"}, true},
		{"is_not_set", sdk.Constraint{LTarget: "${meta.rack}", Operand: "is_not_set"}, false},
		{"unknown operator", sdk.Constraint{LTarget: "a", RTarget: "a", Operand: "~"}, false},
	}
	ch := NewChecker()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ch.Meets(&tc.c, n); got != tc.want {
				t.Fatalf("Meets(%s) = %v, want %v", tc.c.String(), got, tc.want)
			}
		})
	}
}

func TestDatacenterMatches(t *testing.T) {
	cases := []struct {
		dcs  []string
		dc   string
		want bool
	}{
		{nil, "dc1", true}, {[]string{"dc1"}, "dc1", true}, {[]string{"dc1"}, "dc2", false},
		{[]string{"dc*"}, "dc2", true}, {[]string{"*"}, "eu-west", true}, {[]string{"us-*"}, "eu-west", false},
	}
	for _, tc := range cases {
		if got := DatacenterMatches(tc.dcs, tc.dc); got != tc.want {
			t.Errorf("DatacenterMatches(%v, %q) = %v, want %v", tc.dcs, tc.dc, got, tc.want)
		}
	}
}
