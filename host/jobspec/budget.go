package jobspec

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"go.yaml.in/yaml/v3"
)

// A jobspec is a small program: for expressions, templates, locals,
// dynamic blocks and functions can build values without bound from a few
// lines. Nested for expressions over range(1024), a local that doubles
// another twenty times, or format("%999999999d", 1) would each take the
// process parsing it (an agent, for /v1/jobs/parse) out of memory. So one
// parse's evaluation spends from a budget: every value an expression
// builds is counted, each time it is used, and the parse fails with one
// located error when the budget runs out.
//
// What is counted is where a value is used to build another, so that
// what is built is bounded by what was counted:
//   - the collection of a for expression and every key, value and
//     condition it computes;
//   - the arguments of a function, the parts of a template and the
//     operands of an operator;
//   - the results of a conditional and the source of a splat;
//   - every value an attribute evaluates to, and every block decoded (a
//     dynamic block copies one per element);
//   - what a function would build beyond its arguments (format's padding,
//     join's separators, replace's replacements, indent's spaces,
//     bcrypt's rounds, yamldecode's aliases, jsondecode's copies), before
//     it builds it.
//
// A value shared by several (a local used twice, the aliases of a YAML
// anchor) is counted at each use: the count is what copying it would
// cost, which is what jsonencode or a template does.

// evalBudget is what one parse's evaluation may spend, in bytes as
// valueCost counts them. The example jobspecs spend 40 KiB; a job of a
// hundred groups of ten tasks, each task with config, resources and env
// blocks, 14 MiB.
const evalBudget = 64 << 20

const (
	// perValue is what each value counts beyond its string bytes.
	perValue = 32
	// perEval is what each evaluation counts beyond its value: a for
	// expression's iteration makes a scope of its own, for one.
	perEval = 256
	// perBlock is what each block decoded counts.
	perBlock = 4 << 10
)

// budget is what is left of one parse's evaluation budget.
type budget struct {
	left int64
	// over is the error, located where the budget ran out.
	over *hcl.Diagnostic
	// why is set when a function refused to build something, to be told
	// where the call is by the expression around it.
	why string
	// read is what the parse has given hcl to lex and parse (size.go).
	read syntaxRead
}

func newBudget(n int64) *budget { return &budget{left: n} }

// spent reports whether the budget has run out. Once it has, expressions
// evaluate to unknown values, which cost nothing more, and the parse's
// only error is b.over.
func (b *budget) spent() bool { return b.left < 0 }

// spend takes n from the budget for what was evaluated at rng, and
// reports whether the budget holds.
func (b *budget) spend(n int64, rng hcl.Range) bool {
	if !b.spent() {
		b.left -= min(n, b.left+1)
	}
	if b.spent() {
		b.locate(rng)
		return false
	}
	return true
}

// spendValue spends what v costs, evaluated at rng.
func (b *budget) spendValue(v cty.Value, rng hcl.Range) bool {
	if b.spent() {
		b.locate(rng)
		return false
	}
	cost, ok := valueCost(v, b.left)
	if !ok {
		b.refuse(tooLargeNumber(rng))
		return false
	}
	return b.spend(perEval+cost, rng)
}

// refuse ends the evaluation with d, the parse's only error as the
// budget's is: what was evaluated is refused whatever the budget.
func (b *budget) refuse(d *hcl.Diagnostic) {
	if b.over == nil {
		b.over = d
	}
	b.left = -1
}

// spendBuilding spends n for what the function name would build beyond
// its arguments; it reports whether the function may build it.
func (b *budget) spendBuilding(name string, n int64) bool {
	if b.spent() {
		return false
	}
	if n <= b.left {
		b.left -= n
		return true
	}
	b.left = -1
	b.why = fmt.Sprintf("%s would build %s. ", name, sizeText(n))
	return false
}

// locate records rng as where the budget ran out, the first time.
func (b *budget) locate(rng hcl.Range) {
	if b.over != nil {
		return
	}
	b.over = &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Jobspec evaluation too large",
		Detail: b.why + fmt.Sprintf("Evaluating this takes the jobspec past the %d MiB its evaluation may build: "+
			"every value an expression builds counts, each time it is used (a for expression counts its collection "+
			"and every result, a template each part, a dynamic block every block it makes).", evalBudget>>20),
		Subject: rng.Ptr()}
}

// verdict returns the parse's diagnostics: diags, or only the budget's
// error when it ran out (the errors after it are its consequences:
// expressions evaluated to unknown values). start locates it in the
// jobspec if nothing else did.
func (b *budget) verdict(diags hcl.Diagnostics, start hcl.Range) hcl.Diagnostics {
	if !b.spent() {
		return diags
	}
	b.locate(start)
	return hcl.Diagnostics{b.over}
}

// sizeText is n bytes in words.
func sizeText(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// valueCost is what v counts: perValue for it and each value within it,
// plus the bytes of its strings and of its keys. It stops counting once
// past limit, so that counting costs no more than the budget it checks.
// It reports false if v holds a number, or a string a number could be
// read from, past maxNumberDigits (numbers.go).
func valueCost(v cty.Value, limit int64) (int64, bool) {
	var cost int64
	ok := true
	var walk func(v cty.Value)
	walk = func(v cty.Value) {
		cost += perValue
		v, _ = v.Unmark()
		switch {
		case !v.IsKnown() || v.IsNull():
		case v.Type() == cty.Number:
			ok = ok && !numberTooLarge(v.AsBigFloat())
		case v.Type() == cty.String:
			cost += int64(len(v.AsString()))
			ok = ok && !numberTextTooLong(v.AsString())
		case v.CanIterateElements():
			for it := v.ElementIterator(); cost <= limit && it.Next(); {
				k, e := it.Element()
				if k.Type() == cty.String {
					cost += int64(len(k.AsString()))
				}
				walk(e)
			}
		}
	}
	walk(v)
	return cost, ok
}

// metered is an expression whose value is spent from a budget each time
// it is evaluated. Once the budget has run out it evaluates to an
// unknown value without evaluating the expression. It is a parenthesised
// expression to hcl's walks, so that they still see the expression
// within (hclsyntax.Variables looks for references so).
type metered struct {
	*hclsyntax.ParenthesesExpr
	b *budget
}

func (m *metered) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if m.b.spent() {
		m.b.locate(m.Range())
		return cty.DynamicVal, nil
	}
	v, diags := m.Expression.Value(ctx)
	if !m.b.spendValue(v, m.Range()) {
		return cty.DynamicVal, nil
	}
	return v, diags
}

// UnwrapExpression lets hcl's static analysis (type expressions, a
// dynamic block's iterator, convert's type argument) see the expression.
func (m *metered) UnwrapExpression() hcl.Expression { return m.Expression }

// meter makes the expressions in the tree under n spend from b, in place:
// each whose value another is built from is wrapped (metered). Metering a
// tree again changes nothing.
func (b *budget) meter(n hclsyntax.Node) {
	_ = hclsyntax.Walk(n, meterWalker{b})
}

type meterWalker struct{ b *budget }

func (w meterWalker) Enter(hclsyntax.Node) hcl.Diagnostics { return nil }

// Exit wraps the node's children once they have been walked.
func (w meterWalker) Exit(n hclsyntax.Node) hcl.Diagnostics {
	m := func(e *hclsyntax.Expression) {
		if *e == nil {
			return
		}
		if _, done := (*e).(*metered); !done {
			*e = &metered{ParenthesesExpr: &hclsyntax.ParenthesesExpr{Expression: *e, SrcRange: (*e).Range()}, b: w.b}
		}
	}
	switch e := n.(type) {
	case *hclsyntax.ForExpr:
		m(&e.CollExpr)
		m(&e.KeyExpr)
		m(&e.ValExpr)
		m(&e.CondExpr)
	case *hclsyntax.FunctionCallExpr:
		for i := range e.Args {
			m(&e.Args[i])
		}
	case *hclsyntax.TemplateExpr:
		for i, p := range e.Parts {
			// A literal costs nothing to evaluate, and hcl tells a
			// string literal by its one literal part.
			if _, lit := p.(*hclsyntax.LiteralValueExpr); !lit {
				m(&e.Parts[i])
			}
		}
	case *hclsyntax.TemplateJoinExpr:
		m(&e.Tuple)
	case *hclsyntax.BinaryOpExpr:
		m(&e.LHS)
		m(&e.RHS)
	case *hclsyntax.ConditionalExpr:
		m(&e.TrueResult)
		m(&e.FalseResult)
	case *hclsyntax.SplatExpr:
		m(&e.Source)
	// Where hcl reads a number from a string, or writes one out.
	case *hclsyntax.IndexExpr:
		m(&e.Key)
	case *hclsyntax.UnaryOpExpr:
		m(&e.Val)
	case *hclsyntax.ObjectConsKeyExpr:
		// A naked traversal is a keyword, or an error hcl reports so.
		if _, naked := e.Wrapped.(*hclsyntax.ScopeTraversalExpr); !naked {
			m(&e.Wrapped)
		}
	}
	return nil
}

// meteredFunctions makes the functions that can build far more than
// their arguments spend what they would build before building it. It
// returns fns, changed.
func meteredFunctions(fns map[string]function.Function, b *budget) map[string]function.Function {
	plain := func(f func([]cty.Value) int64) func([]cty.Value) (int64, error) {
		return func(args []cty.Value) (int64, error) { return f(args), nil }
	}
	building := map[string]func(args []cty.Value) (int64, error){
		"format":        plain(func(args []cty.Value) int64 { return padding(args[0]) }),
		"formatlist":    plain(formatListBuilding),
		"indent":        plain(indentBuilding),
		"join":          plain(joinBuilding),
		"replace":       plain(replaceBuilding),
		"regex_replace": plain(regexReplaceBuilding),
		"bcrypt":        plain(bcryptBuilding),
		"yamldecode":    yamlBuilding,
		"jsondecode":    jsonBuilding,
		"parseint":      parseIntBuilding,
	}
	for name, cost := range building {
		f := fns[name]
		fns[name] = function.New(&function.Spec{
			Description: f.Description(),
			Params:      f.Params(),
			VarParam:    f.VarParam(),
			// Spent before the type, which for yamldecode is the type of
			// the value built, and takes as long to find.
			Type: func(args []cty.Value) (cty.Type, error) {
				n, err := cost(args)
				if err != nil {
					return cty.DynamicPseudoType, function.NewArgError(0, err)
				}
				if !b.spendBuilding(name, n) {
					return cty.DynamicPseudoType, nil
				}
				return f.ReturnTypeForValues(args)
			},
			Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
				if b.spent() {
					return cty.UnknownVal(ret), nil
				}
				return f.Call(args)
			},
		})
	}
	return fns
}

// known returns v as a known, non-null value of its own (unmarked), or
// reports that it is not one.
func known(v cty.Value) (cty.Value, bool) {
	v, _ = v.Unmark()
	return v, v.IsKnown() && !v.IsNull()
}

// str is v's string, or "" when it is not a known string.
func str(v cty.Value) string {
	if v, ok := known(v); ok && v.Type() == cty.String {
		return v.AsString()
	}
	return ""
}

// whole is v as a whole number, saturating at about 2^62, or 0 when it is
// not a known number.
func whole(v cty.Value) int64 {
	v, ok := known(v)
	if !ok || v.Type() != cty.Number {
		return 0
	}
	f := v.AsBigFloat()
	if f.Cmp(big.NewFloat(1<<62)) > 0 {
		return 1 << 62
	}
	n, _ := f.Int64()
	return n
}

// mul is a*b, saturating at about 2^62 (both are non-negative).
func mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// padding is what a format string's widths and precisions may add
// ("%10d", "%.3f", "%-8s" add 10, 3 and 8): each verb's, summed.
func padding(format cty.Value) int64 {
	s := str(format)
	var total int64
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		i++
		if i < len(s) && s[i] == '%' {
			continue
		}
		for i < len(s) && strings.IndexByte("-+# 0", s[i]) >= 0 {
			i++
		}
		if i < len(s) && s[i] == '[' { // an argument index, %[2]s
			for i < len(s) && s[i] != ']' {
				i++
			}
			i++
		}
		for i < len(s) && (s[i] == '.' || s[i] >= '0' && s[i] <= '9') {
			var n int64
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				n = min(n*10+int64(s[i]-'0'), 1<<40)
				i++
			}
			total = min(total+n, 1<<62)
			if i < len(s) && s[i] == '.' {
				i++
			}
		}
		i-- // the verb
	}
	return total
}

// formatListBuilding: formatlist applies its format once per element of
// its list arguments (once if none is a list).
func formatListBuilding(args []cty.Value) int64 {
	n := int64(1)
	for _, a := range args[1:] {
		if a, ok := known(a); ok && (a.Type().IsListType() || a.Type().IsTupleType()) {
			n = max(n, int64(a.LengthInt()))
		}
	}
	return mul(n, int64(len(str(args[0])))+padding(args[0]))
}

// indentBuilding: indent adds its spaces to every line but the first.
func indentBuilding(args []cty.Value) int64 {
	return mul(max(whole(args[0]), 0), int64(strings.Count(str(args[1]), "\n")))
}

// joinBuilding: join puts its separator between every two elements.
func joinBuilding(args []cty.Value) int64 {
	var n int64
	for _, l := range args[1:] {
		if l, ok := known(l); ok && l.CanIterateElements() {
			n += int64(l.LengthInt())
		}
	}
	return mul(n, int64(len(str(args[0]))))
}

// replaceBuilding: replace puts its replacement at each occurrence (an
// empty substring occurs between every two characters).
func replaceBuilding(args []cty.Value) int64 {
	s, sub := str(args[0]), str(args[1])
	n := int64(strings.Count(s, sub))
	return mul(n, int64(len(str(args[2]))))
}

// regexReplaceBuilding: regex_replace puts its replacement at each match,
// at most one more than the string has bytes, and each $reference in it
// repeats a part of its match (the matches do not overlap).
func regexReplaceBuilding(args []cty.Value) int64 {
	s, repl := int64(len(str(args[0]))), str(args[2])
	return mul(s+1, int64(len(repl))) + mul(int64(strings.Count(repl, "$")), s)
}

// bcryptBuilding counts bcrypt's 2^cost rounds (its default cost is 10):
// a kibibyte each, so that cost 10 counts 1 MiB and cost 16 all of the
// budget.
func bcryptBuilding(args []cty.Value) int64 {
	cost := int64(10)
	if len(args) > 1 {
		cost = whole(args[1])
	}
	if cost < 0 || cost > 31 {
		return 0 // bcrypt refuses it
	}
	return mul(1<<cost, 1024)
}

// yamlBuilding: yamldecode builds every alias as a copy of its anchor's
// value, so that a few lines of anchors aliasing anchors ten times each
// stand for billions of values. It counts the value as built, each node
// once per path to it, from the document's graph (read here by yaml's own
// parser, which keeps aliases as links). A document that parser refuses
// counts nothing, as yamldecode refuses it too, except one nested past
// the parser's 10,000 levels: go-cty-yaml's decoder recurses once per
// level, and a few MiB of "[" would overflow its stack, which no recover
// catches.
func yamlBuilding(args []cty.Value) (int64, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(str(args[0])), &doc); err != nil {
		if strings.Contains(err.Error(), "exceeded max depth") {
			return 0, fmt.Errorf("the document nests too deep: %w", err)
		}
		return 0, nil
	}
	sizes := map[*yaml.Node]int64{}
	tooLong := false
	var size func(n *yaml.Node) int64
	size = func(n *yaml.Node) int64 {
		if n == nil {
			return 0
		}
		if s, ok := sizes[n]; ok {
			return s
		}
		sizes[n] = 0 // an alias within its own anchor (yamldecode refuses it)
		tooLong = tooLong || yamlNumberTooLong(n)
		s := perValue + int64(len(n.Value)) + size(n.Alias)
		for _, c := range n.Content {
			s = min(s+size(c), 1<<62)
		}
		sizes[n] = s
		return s
	}
	s := size(&doc)
	if tooLong {
		return 0, fmt.Errorf("a number has more than %d digits", maxNumberDigits)
	}
	return s, nil
}

// parseIntBuilding: parseint reads a number of as many bits as its digits
// stand for, and takes as long as their square to: one past
// maxNumberDigits is refused (numbers.go).
func parseIntBuilding(args []cty.Value) (int64, error) {
	base := whole(args[1])
	if base < 2 || base > 62 {
		return 0, nil // parseint refuses it
	}
	if float64(len(str(args[0])))*math.Log2(float64(base)) > maxNumberBits {
		return 0, fmt.Errorf("the number would have more than %d digits", maxNumberDigits)
	}
	return 0, nil
}

// maxJSONNesting bounds how deep a document jsondecode decodes may nest,
// as encoding/json bounds its own.
const maxJSONNesting = 10000

// jsonBuilding: jsondecode copies each element of an array or object out
// of the document (go-cty reads it as raw JSON, then decodes that), so
// that each byte is copied once for every array or object it is within: a
// document of a few KiB of "[" around a long string builds gigabytes, and
// takes minutes. It counts the copies, from the brackets and braces outside
// strings (as deep as the decoder goes, or deeper in a document that is not
// JSON, which jsondecode refuses). A document nested past maxJSONNesting is
// refused: the decoder recurses once per level, and a few MiB of "[" would
// overflow its stack, which no recover catches.
func jsonBuilding(args []cty.Value) (int64, error) {
	doc := str(args[0])
	var depth, total int64
	inString, digits := false, 0
	for i := 0; i < len(doc); i++ {
		if c := doc[i]; !inString && (c >= '0' && c <= '9' || c == '.') {
			if digits++; digits > maxNumberDigits {
				return 0, fmt.Errorf("a number has more than %d digits", maxNumberDigits)
			}
		} else {
			digits = 0
		}
		switch c := doc[i]; {
		case inString && c == '\\':
			i++ // the byte escaped
			total += depth
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			if depth++; depth > maxJSONNesting {
				return 0, fmt.Errorf("the document nests more than %d levels deep", maxJSONNesting)
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
		total = min(total+depth, 1<<62)
	}
	return total, nil
}
