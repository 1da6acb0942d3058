package jobspec

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"
)

// Numbers are bounded. go-cty's numbers are big.Floats whose exponent may
// reach 2^31, and what a number costs is not in its size but in its
// digits: "${1e10000000}", fourteen bytes, is a string of ten million
// digits that took 16 seconds to write out (1e600000000, hours), and
// reading a number from a string of a million digits ("${s}" + 0,
// parseint, format("%d", s), a variable's value) takes seconds, as the
// time grows with the square of the digits. So a number of more than
// maxNumberDigits digits, written out in full, is refused: in the syntax
// (a literal), in a value an expression evaluates to where it is metered
// (budget.go), in a string a number would be read from, there and in
// variables' values, and before parseint, jsondecode or yamldecode build
// one.

// maxNumberDigits bounds the digits of a number, written out in full: its
// magnitude is within 10^±2000, and a string read as a number has at most
// 2000 digits (a 4096-bit RSA modulus has 1234).
const maxNumberDigits = 2000

// maxNumberBits is maxNumberDigits as a binary exponent.
const maxNumberBits = maxNumberDigits * 3322 / 1000

// numberTooLarge reports whether f, written out in full, has more than
// maxNumberDigits digits (or zeros after the point).
func numberTooLarge(f *big.Float) bool {
	if f.IsInf() {
		return false
	}
	exp := f.MantExp(nil)
	return exp > maxNumberBits || exp < -maxNumberBits
}

// numberTextTooLong reports whether s is a number, as go-cty reads one from
// a string ("-12.5e3", "1p10"), with more than maxNumberDigits significant
// digits or an exponent that takes it past them.
func numberTextTooLong(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	// digits counts from the first that is not 0: zeros before it cost
	// nothing to read ("%08d" pads with them).
	digits, point, seen := 0, false, false
	for ; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' {
			seen = true
			if digits > 0 || c != '0' {
				digits++
			}
		} else if c == '.' && !point {
			point = true
		} else {
			break
		}
	}
	if !seen {
		return false
	}
	if i == len(s) {
		return digits > maxNumberDigits
	}
	limit := maxNumberDigits
	switch s[i] {
	case 'e', 'E':
	case 'p', 'P':
		limit = maxNumberBits
	default:
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	exp := 0
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		exp = min(exp*10+int(s[i]-'0'), 1<<30)
	}
	return digits > maxNumberDigits || exp > limit
}

// tooLargeNumber is the error for a number past maxNumberDigits at rng.
func tooLargeNumber(rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Number too large",
		Detail: fmt.Sprintf("A number here, or a string read as one, has more than %d digits written out in full; "+
			"writing out or reading numbers that long takes the parsing process minutes.", maxNumberDigits),
		Subject: rng.Ptr()}
}

// numbersWithin reports whether every number within v, and every string
// within it that a number could be read from, is within maxNumberDigits.
func numbersWithin(v cty.Value) bool {
	ok := true
	_ = cty.Walk(v, func(_ cty.Path, v cty.Value) (bool, error) {
		v, _ = v.Unmark()
		switch {
		case !v.IsKnown() || v.IsNull():
		case v.Type() == cty.Number && numberTooLarge(v.AsBigFloat()),
			v.Type() == cty.String && numberTextTooLong(v.AsString()):
			ok = false
		}
		return ok, nil
	})
	return ok
}

// checkNumberTokens refuses number literals, and string literals that a
// number could be read from (an index, x["1e9"]), past maxNumberDigits.
func checkNumberTokens(tokens hclsyntax.Tokens) hcl.Diagnostics {
	for _, tok := range tokens {
		switch tok.Type {
		case hclsyntax.TokenNumberLit, hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit:
			if numberTextTooLong(string(tok.Bytes)) {
				return hcl.Diagnostics{tooLargeNumber(tok.Range)}
			}
		}
	}
	return nil
}

// yamlNumberTooLong reports whether n, a YAML scalar, is a plain one that
// yamldecode would read as a number past maxNumberDigits.
func yamlNumberTooLong(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 &&
		numberTextTooLong(n.Value)
}
