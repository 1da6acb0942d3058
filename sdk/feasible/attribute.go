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

var (
	units       = map[string]*unit{}
	unitsByName []string // longest first, as ParseAttribute matches suffixes
)

func init() {
	add := func(base string, inverse bool, pairs ...any) {
		for i := 0; i < len(pairs); i += 2 {
			u := &unit{name: pairs[i].(string), base: base, multiplier: pairs[i+1].(int64), inverse: inverse}
			units[u.name] = u
			unitsByName = append(unitsByName, u.name)
		}
	}
	k := int64(1000)
	add("byte", false, "KiB", int64(1)<<10, "MiB", int64(1)<<20, "GiB", int64(1)<<30, "TiB", int64(1)<<40,
		"PiB", int64(1)<<50, "EiB", int64(1)<<60,
		"kB", k, "KB", k, "MB", k*k, "GB", k*k*k, "TB", k*k*k*k, "PB", k*k*k*k*k, "EB", k*k*k*k*k*k)
	add("byte/s", false, "KiB/s", int64(1)<<10, "MiB/s", int64(1)<<20, "GiB/s", int64(1)<<30, "TiB/s", int64(1)<<40,
		"PiB/s", int64(1)<<50, "EiB/s", int64(1)<<60,
		"kB/s", k, "KB/s", k, "MB/s", k*k, "GB/s", k*k*k, "TB/s", k*k*k*k, "PB/s", k*k*k*k*k, "EB/s", k*k*k*k*k*k)
	add("hertz", false, "MHz", k*k, "GHz", k*k*k)
	add("watt", true, "mW", k)
	add("watt", false, "W", int64(1), "kW", k, "MW", k*k, "GW", k*k*k)
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
