package feasible

import (
	"cmp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// attribute is a device attribute, or a literal a device constraint
// compares one with, as Nomad reads them (plugins/shared/structs'
// ParseAttribute): an integer or a float with an optional unit, a bool, or
// a string. Values with units compare after conversion ("11 GiB" > "9000
// MiB"), and only with values of the same base (bytes, bytes a second,
// hertz, watts).
type attribute struct {
	kind attributeKind
	s    string
	b    bool
	i    int64
	f    float64
	unit *unit
}

type attributeKind uint8

const (
	attrString attributeKind = iota
	attrBool
	attrInt
	attrFloat
)

// unit is a unit Nomad's device attributes know.
type unit struct {
	name, base string
	multiplier int64
	inverse    bool // the value is divided by multiplier (mW)
}

// unitTable is Nomad's (plugins/shared/structs/units.go).
var unitTable = []unit{
	{"KiB", "byte", 1 << 10, false}, {"MiB", "byte", 1 << 20, false}, {"GiB", "byte", 1 << 30, false},
	{"TiB", "byte", 1 << 40, false}, {"PiB", "byte", 1 << 50, false}, {"EiB", "byte", 1 << 60, false},
	{"kB", "byte", 1e3, false}, {"KB", "byte", 1e3, false}, {"MB", "byte", 1e6, false}, {"GB", "byte", 1e9, false},
	{"TB", "byte", 1e12, false}, {"PB", "byte", 1e15, false}, {"EB", "byte", 1e18, false},
	{"KiB/s", "byte/s", 1 << 10, false}, {"MiB/s", "byte/s", 1 << 20, false}, {"GiB/s", "byte/s", 1 << 30, false},
	{"TiB/s", "byte/s", 1 << 40, false}, {"PiB/s", "byte/s", 1 << 50, false}, {"EiB/s", "byte/s", 1 << 60, false},
	{"kB/s", "byte/s", 1e3, false}, {"KB/s", "byte/s", 1e3, false}, {"MB/s", "byte/s", 1e6, false},
	{"GB/s", "byte/s", 1e9, false}, {"TB/s", "byte/s", 1e12, false},
	{"PB/s", "byte/s", 1e15, false}, {"EB/s", "byte/s", 1e18, false},
	{"MHz", "hertz", 1e6, false}, {"GHz", "hertz", 1e9, false},
	{"mW", "watt", 1e3, true}, {"W", "watt", 1, false}, {"kW", "watt", 1e3, false}, {"MW", "watt", 1e6, false},
	{"GW", "watt", 1e9, false},
}

var (
	units       = map[string]*unit{}
	unitsByName []string // longest first, as ParseAttribute matches suffixes
)

func init() {
	for i := range unitTable {
		u := &unitTable[i]
		units[u.name], unitsByName = u, append(unitsByName, u.name)
	}
	sort.SliceStable(unitsByName, func(i, j int) bool { return len(unitsByName[i]) > len(unitsByName[j]) })
}

// parseAttribute reads s as Nomad's ParseAttribute does: a known unit
// suffix (longest first) after an integer or a float, else a bool, else a
// string.
func parseAttribute(s string) attribute {
	num := s
	var u *unit
	if s != "" && unicode.IsLetter(rune(s[len(s)-1])) {
		for _, name := range unitsByName {
			if strings.HasSuffix(s, name) {
				u, num = units[name], strings.TrimSpace(strings.TrimSuffix(s, name))
				break
			}
		}
	}
	if s != "" {
		if i, err := strconv.ParseInt(num, 10, 64); err == nil {
			return attribute{kind: attrInt, i: i, unit: u}
		}
		if f, err := strconv.ParseFloat(num, 64); err == nil {
			return attribute{kind: attrFloat, f: f, unit: u}
		}
		if b, err := strconv.ParseBool(s); err == nil {
			return attribute{kind: attrBool, b: b}
		}
	}
	return attribute{kind: attrString, s: s}
}

// compare compares a with b as Nomad's Attribute.Compare: -1, 0 or 1, and
// false when they are not comparable (a unit against none, units of other
// bases, a string against a number). Bools are 0 when equal and 1 when not.
func (a attribute) compare(b attribute) (int, bool) {
	switch {
	case a.unit != nil && b.unit != nil:
		if a.unit.base != b.unit.base {
			return 0, false
		}
	case a.unit != nil || b.unit != nil:
		return 0, false
	}
	switch {
	case a.kind == attrString && b.kind == attrString:
		return strings.Compare(a.s, b.s), true
	case a.kind == attrBool && b.kind == attrBool:
		if a.b == b.b {
			return 0, true
		}
		return 1, true
	case a.kind == attrInt && b.kind == attrInt:
		return cmp.Compare(a.int(), b.int()), true
	case a.numeric() && b.numeric():
		return cmp.Compare(a.float(), b.float()), true
	}
	return 0, false
}

func (a attribute) numeric() bool { return a.kind == attrInt || a.kind == attrFloat }

// int is an integer attribute in its unit's base.
func (a attribute) int() int64 {
	switch {
	case a.unit == nil:
		return a.i
	case a.unit.inverse:
		return a.i / a.unit.multiplier
	}
	return a.i * a.unit.multiplier
}

// float is a number attribute in its unit's base.
func (a attribute) float() float64 {
	v := a.f
	if a.kind == attrInt {
		v = float64(a.i)
	}
	switch {
	case a.unit == nil:
		return v
	case a.unit.inverse:
		return v / float64(a.unit.multiplier)
	}
	return v * float64(a.unit.multiplier)
}
