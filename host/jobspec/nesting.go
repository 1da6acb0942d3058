package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// maxNesting bounds how deep a jobspec's syntax may nest. hcl parses, and
// everything after it walks, expressions recursively: a few hundred
// kilobytes of "[[[[...", "!!!!..." or "1+1+1+..." nest a syntax tree
// deep enough to overflow the goroutine's stack, which no recover catches:
// it would take the parsing process down (the agent, for /v1/jobs/parse).
// Jobspecs nest a few dozen levels.
const maxNesting = 1000

// nesting measures how deep tokens nest their syntax tree, at most. Each
// bracket, brace, parenthesis, template or quote open adds a level, and so
// does each open %{if} or %{for} directive until its %{endif} or %{endfor}
// (hcl nests the directives within it). Within one element of a level (a
// list's, arguments', or a body's or an object's, whose elements new lines
// end too) each operator adds a level, as its operands are a level below
// it, and so does each step that wraps the expression before it: an index
// ([i], [*]) or an attribute after one (hcl nests each in the last, so that
// x[i][i][i]... and x[*][*]... nest as 1+1+1+... does). Elsewhere, within
// parentheses, brackets or an interpolation, hcl reads an expression
// across new lines, and so does the count. lines says whether new lines
// end an element outside any bracket (in a file's body; not in an
// expression or template). It returns the first token past limit.
func nesting(tokens hclsyntax.Tokens, limit int, lines bool) (hclsyntax.Token, bool) {
	type level struct {
		ops int // operators and wrapping steps of the current element
		// lines: new lines end an element here.
		lines bool
		// directive is an open %{if} or %{for}; opens and closes mark a
		// %{ } that opens or closes one.
		directive, opens, closes bool
	}
	levels := []level{{lines: lines}}
	depth := 0 // len(levels)-1 plus the sum of ops
	top := func() *level { return &levels[len(levels)-1] }
	push := func(l level) {
		levels = append(levels, l)
		depth++
	}
	pop := func() level {
		l := *top()
		levels = levels[:len(levels)-1]
		depth -= 1 + l.ops
		return l
	}
	step := func() {
		top().ops++
		depth++
	}
	// prev is the last token of the current element, Newline at its start:
	// a "[" or "." after a term is a step.
	prev := hclsyntax.TokenNewline
	for i, tok := range tokens {
		typ := tok.Type
		if typ == hclsyntax.TokenComment {
			// A line comment takes the new line that ends it.
			if !bytes.HasSuffix(tok.Bytes, []byte("\n")) {
				continue
			}
			typ = hclsyntax.TokenNewline
		}
		switch typ {
		case hclsyntax.TokenOBrack:
			if endsTerm(prev) {
				step()
			}
			push(level{})
		case hclsyntax.TokenOBrace:
			// A block's or an object's braces, unless they hold a for
			// expression, which hcl reads across new lines.
			push(level{lines: !startsFor(tokens[i+1:])})
		case hclsyntax.TokenOParen, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp:
			push(level{})
		case hclsyntax.TokenTemplateControl:
			next := nextIdent(tokens[i+1:])
			push(level{opens: next == "if" || next == "for", closes: next == "endif" || next == "endfor"})
		case hclsyntax.TokenTemplateSeqEnd:
			if len(levels) > 1 {
				if l := pop(); l.opens {
					push(level{directive: true})
				} else if l.closes && top().directive {
					pop()
				}
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
			hclsyntax.TokenCHeredoc:
			// Directives left open end with their template.
			for len(levels) > 1 && top().directive {
				pop()
			}
			if len(levels) > 1 {
				pop()
			}
		case hclsyntax.TokenComma:
			depth -= top().ops
			top().ops = 0
		case hclsyntax.TokenNewline:
			if !top().lines {
				continue // not the end of an element: prev stays
			}
			depth -= top().ops
			top().ops = 0
		case hclsyntax.TokenDot:
			if isClose(prev) {
				step()
			}
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash,
			hclsyntax.TokenPercent, hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang,
			hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
			hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenQuestion, hclsyntax.TokenColon,
			hclsyntax.TokenFatArrow, hclsyntax.TokenEllipsis:
			step()
		}
		prev = typ
		if depth > limit {
			return tok, true
		}
	}
	return hclsyntax.Token{}, false
}

// isClose reports whether a token closes a term: an attribute after it
// wraps the term (after an identifier or a number, it extends a traversal).
func isClose(t hclsyntax.TokenType) bool {
	switch t {
	case hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCBrace, hclsyntax.TokenCQuote,
		hclsyntax.TokenCHeredoc:
		return true
	}
	return false
}

// endsTerm reports whether a token may end a term, so that a "[" after it
// indexes the term ("in [" counts too, harmlessly).
func endsTerm(t hclsyntax.TokenType) bool {
	return isClose(t) || t == hclsyntax.TokenIdent || t == hclsyntax.TokenNumberLit || t == hclsyntax.TokenStar
}

// nextIdent is the identifier that tokens start with, ignoring new lines
// and comments, or "".
func nextIdent(tokens hclsyntax.Tokens) string {
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenNewline, hclsyntax.TokenComment:
			continue
		case hclsyntax.TokenIdent:
			return string(t.Bytes)
		}
		return ""
	}
	return ""
}

// startsFor reports whether tokens start a for expression.
func startsFor(tokens hclsyntax.Tokens) bool { return nextIdent(tokens) == "for" }

// tooDeep is the error for syntax nesting past maxNesting at rng.
func tooDeep(rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Nesting too deep",
		Detail: fmt.Sprintf("The jobspec nests brackets, templates or operators more than %d levels deep here; "+
			"a syntax tree that deep could exhaust the parser's stack.", maxNesting),
		Subject: rng.Ptr()}
}

// checkSyntax refuses HCL source (a file, or an expression or template
// as lex reads it) that takes the parse past its bytes, tokens or
// template joins (size.go, counted in read), nests past maxNesting, or
// writes a number past maxNumberDigits (numbers.go), before hcl parses
// it. lines is set for a file, whose body new lines divide (see nesting).
func checkSyntax(src []byte, filename string, start hcl.Pos,
	lex func([]byte, string, hcl.Pos) (hclsyntax.Tokens, hcl.Diagnostics), lines bool, read *syntaxRead) hcl.Diagnostics {
	if diags := read.readBytes(src, filename); diags.HasErrors() {
		return diags
	}
	tokens, _ := lex(src, filename, start)
	// Nesting first: it is what a test of a limit would most want
	// to hear of, and it is cheap.
	if tok, deep := nesting(tokens, maxNesting, lines); deep {
		return hcl.Diagnostics{tooDeep(tok.Range)}
	}
	if diags := read.readTokens(tokens, int64(len(tokens))); diags.HasErrors() {
		return diags
	}
	if diags := read.readJoins(tokens, false); diags.HasErrors() {
		return diags
	}
	return checkNumberTokens(tokens)
}

// checkJSONSyntax refuses a jobspec in HCL's JSON syntax that writes a
// number past maxNumberDigits, or nests past maxNesting: its arrays and
// objects, plus, within each string, the
// template hcl may parse from it, or for the value of a "type" (a
// variable's), the expression: hcl parses a string as an expression only
// where a type is expected (a traversal, where a keyword or a dynamic
// block's iterator is, does not nest). Other strings are not counted as
// expressions, whose new lines do not end an element: a script's lines of
// "--flag /usr/bin/x" would add up. JSON that does not decode is left for
// hcl to report.
//
// It counts what hcl is given in read as checkSyntax does: the bytes, the
// JSON tokens and those of the templates hcl may parse from its strings
// (any with a new line, "$" or "%" may split into parts hcl joins), and
// what joining their parts copies.
func checkJSONSyntax(src []byte, filename string, read *syntaxRead) hcl.Diagnostics {
	if diags := read.readBytes(src, filename); diags.HasErrors() {
		return diags
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	// opens holds, for each array or object open, whether it is an
	// object whose next string is a key.
	type open struct{ object, wantKey bool }
	var opens []open
	// key is the key of the value being read, in an object.
	key := ""
	// value notes that a value has been read.
	value := func() {
		if len(opens) > 0 && opens[len(opens)-1].object {
			opens[len(opens)-1].wantKey = true
		}
	}
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if read.tokens++; read.tokens > maxTokens {
			return hcl.Diagnostics{tooManyTokens(read.tokens+countJSONTokens(dec), offsetRange(src, filename, int(before)))}
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '[' || t == '{' {
				opens = append(opens, open{object: t == '{', wantKey: t == '{'})
			} else {
				opens = opens[:len(opens)-1]
				value()
			}
			if len(opens) > maxNesting {
				return hcl.Diagnostics{tooDeep(offsetRange(src, filename, int(before)))}
			}
		case string:
			isKey := len(opens) > 0 && opens[len(opens)-1].wantKey
			isType := !isKey && len(opens) > 0 && opens[len(opens)-1].object && key == "type"
			if isKey {
				key = t
				opens[len(opens)-1].wantKey = false
			} else {
				value()
			}
			if !bytes.ContainsAny([]byte(t), "[{(!-+*/%&|=<>?:$\n") {
				continue
			}
			lexes := []func([]byte, string, hcl.Pos) (hclsyntax.Tokens, hcl.Diagnostics){hclsyntax.LexTemplate}
			if isType {
				lexes = append(lexes, hclsyntax.LexExpression)
			}
			// Located at the string: its tokens' ranges are in it.
			at := offsetRange(src, filename, int(before))
			lexed := make([]hclsyntax.Tokens, len(lexes))
			for i, lex := range lexes {
				lexed[i], _ = lex([]byte(t), filename, hcl.InitialPos)
				if _, deep := nesting(lexed[i], maxNesting-len(opens), false); deep {
					return hcl.Diagnostics{tooDeep(at)}
				}
			}
			for i, tokens := range lexed {
				if read.tokens += int64(len(tokens)); read.tokens > maxTokens {
					return hcl.Diagnostics{tooManyTokens(read.tokens+countJSONTokens(dec), at)}
				}
				if diags := read.readJoins(tokens, i == 0); diags.HasErrors() {
					diags[0].Subject = at.Ptr()
					return diags
				}
			}
		case json.Number:
			if numberTextTooLong(string(t)) {
				return hcl.Diagnostics{tooLargeNumber(offsetRange(src, filename, int(before)))}
			}
			value()
		default:
			value()
		}
	}
}

// offsetRange is the range of the byte at offset in src (skipping the
// separators json.Decoder's offsets start at).
func offsetRange(src []byte, filename string, offset int) hcl.Range {
	for offset < len(src) && bytes.IndexByte([]byte(" \t\r\n,:"), src[offset]) >= 0 {
		offset++
	}
	pos := hcl.InitialPos
	for _, c := range src[:min(offset, len(src))] {
		pos.Byte++
		pos.Column++
		if c == '\n' {
			pos.Line++
			pos.Column = 1
		}
	}
	end := pos
	end.Byte++
	end.Column++
	return hcl.Range{Filename: filename, Start: pos, End: end}
}

// countJSONTokens counts the tokens dec has left, to say by how much a
// jobspec passed maxTokens (they cost a few bytes each to count, none to
// keep), stopping at the first error.
func countJSONTokens(dec *json.Decoder) int64 {
	var n int64
	for {
		if _, err := dec.Token(); err != nil {
			return n
		}
		n++
	}
}
