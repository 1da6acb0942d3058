package feasible

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// TestDeviceCompare: device constraints compare attributes as Nomad's
// checkAttributeConstraint does, units converted (plugins/shared/structs:
// Attribute.Compare). QA found "11 GiB" > "9000 MiB" refused: a GPU job
// asking in MiB for memory a node reports in GiB did not place.
func TestDeviceCompare(t *testing.T) {
	d := &sdk.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "1080ti", Instances: []*sdk.NodeDevice{
		{ID: "a0", Healthy: true}, {ID: "a1"}}, Attributes: map[string]string{
		"memory": "11 GiB", "bandwidth": "484 GB/s", "clock": "1.5 GHz", "power": "250 W", "cores": "3584",
		"ratio": "0.5", "ecc": "true", "arch": "pascal",
	}}
	ch := NewChecker()
	cases := []struct {
		l, op, r string
		want     bool
	}{
		{"${device.attr.memory}", ">", "9000 MiB", true},
		{"${device.attr.memory}", "=", "11264 MiB", true},
		{"${device.attr.memory}", "<", "12000 MB", true},
		{"${device.attr.memory}", ">=", "12 GiB", false},
		{"${device.attr.memory}", "<=", "11 GiB", true},
		{"${device.attr.memory}", "!=", "11264MiB", false},
		{"${device.attr.memory}", ">", "1 GB/s", false}, // bytes against bytes a second: not comparable
		{"${device.attr.memory}", ">", "9000", false},   // a unit against none
		{"${device.attr.memory}", "!=", "9000", false},
		{"${device.attr.bandwidth}", ">", "400 GiB/s", true},
		{"${device.attr.clock}", ">", "1400 MHz", true},
		{"${device.attr.clock}", "<", "1501 MHz", true},
		{"${device.attr.power}", "<", "300000 mW", true},
		{"${device.attr.power}", "=", "0.25 kW", true},
		{"${device.attr.cores}", ">", "1000", true},
		{"${device.attr.cores}", ">", "999.5", true},
		{"${device.attr.cores}", ">", "abc", false}, // a number against a string
		{"${device.attr.ratio}", "<", "1", true},
		{"${device.attr.ecc}", "=", "true", true},
		{"${device.attr.arch}", "=", "pascal", true},
		{"${device.attr.arch}", "<", "volta", true},
		{"${device.model}", "=", "1080ti", true},
		{"${device.attr.missing}", "=", "1 GiB", false},
		{"${device.attr.missing}", "!=", "1 GiB", true},
		{"${device.attr.arch}", "regexp", "^pas", true},
		{"${device.attr.memory}", "is_set", "", true},
		{"${device.ids}", "=", "a0,a1", true},
		{"${device.ids}", "set_contains", "a1", true}, // unhealthy instances too, as Nomad
		{"${device.ids}", "set_contains_any", "b0,a0", true},
		{"${device.ids}", "set_contains", "b0", false},
		{"${device.attr.cores}", "regexp", "^35", true}, // as written; Nomad matches only strings
	}
	for _, c := range cases {
		if got := ch.deviceCompare(c.op, c.l, c.r, d); got != c.want {
			t.Errorf("%s %s %q = %v, want %v", c.l, c.op, c.r, got, c.want)
		}
	}
}

func TestParseAttribute(t *testing.T) {
	cases := []struct {
		in   string
		want attribute
	}{
		{"11 GiB", attribute{kind: attrInt, i: 11, unit: units["GiB"]}},
		{"11GiB", attribute{kind: attrInt, i: 11, unit: units["GiB"]}},
		{"1.5 GHz", attribute{kind: attrFloat, f: 1.5, unit: units["GHz"]}},
		{"484 GB/s", attribute{kind: attrInt, i: 484, unit: units["GB/s"]}},
		{"5 MB", attribute{kind: attrInt, i: 5, unit: units["MB"]}},
		{"42", attribute{kind: attrInt, i: 42}},
		{"-3.25", attribute{kind: attrFloat, f: -3.25}},
		{"true", attribute{kind: attrBool, b: true}},
		{"12 apples", attribute{kind: attrString, s: "12 apples"}},
		{"GiB", attribute{kind: attrString, s: "GiB"}},
		{"", attribute{kind: attrString}},
	}
	for _, c := range cases {
		if got := parseAttribute(c.in); got != c.want {
			t.Errorf("parseAttribute(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}
