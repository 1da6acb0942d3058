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

// nesting measures how deep tokens nest their syntax tree, at most: each
// bracket, brace, parenthesis, template or quote open adds a level, and so
// does each operator within one element of a list, of arguments or of a
// body (an operator's operands are a level below it; commas and new lines
// start a new element). It returns the first token past limit.
func nesting(tokens hclsyntax.Tokens, limit int) (hclsyntax.Token, bool) {
	// ops[i] counts the operators of the current element at open level i.
	ops := []int{0}
	depth := 0 // len(ops)-1 plus the sum of ops
	for _, tok := range tokens {
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			ops = append(ops, 0)
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
			hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			if len(ops) > 1 {
				depth -= 1 + ops[len(ops)-1]
				ops = ops[:len(ops)-1]
			}
		case hclsyntax.TokenComma, hclsyntax.TokenNewline:
			depth -= ops[len(ops)-1]
			ops[len(ops)-1] = 0
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash,
			hclsyntax.TokenPercent, hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang,
			hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq,
			hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq, hclsyntax.TokenQuestion, hclsyntax.TokenColon,
			hclsyntax.TokenFatArrow, hclsyntax.TokenEllipsis:
			ops[len(ops)-1]++
			depth++
		}
		if depth > limit {
			return tok, true
		}
	}
	return hclsyntax.Token{}, false
}

// tooDeep is the error for syntax nesting past maxNesting at rng.
func tooDeep(rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Nesting too deep",
		Detail: fmt.Sprintf("The jobspec nests brackets, templates or operators more than %d levels deep here; "+
			"a syntax tree that deep could exhaust the parser's stack.", maxNesting),
		Subject: rng.Ptr()}
}

// checkNesting refuses HCL source (a file, or an expression or template
// as lex reads it) that nests past maxNesting, before hcl parses it.
func checkNesting(src []byte, filename string, start hcl.Pos,
	lex func([]byte, string, hcl.Pos) (hclsyntax.Tokens, hcl.Diagnostics)) hcl.Diagnostics {
	tokens, _ := lex(src, filename, start)
	if tok, deep := nesting(tokens, maxNesting); deep {
		return hcl.Diagnostics{tooDeep(tok.Range)}
	}
	return nil
}

// checkJSONNesting refuses a jobspec in HCL's JSON syntax that nests past
// maxNesting: its arrays and objects, plus, within each string, the
// template or expression hcl may parse from it (a string is a template,
// or an expression where a type or a traversal is expected). JSON that
// does not decode is left for hcl to report.
func checkJSONNesting(src []byte, filename string) hcl.Diagnostics {
	dec := json.NewDecoder(bytes.NewReader(src))
	depth := 0
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '[' || t == '{' {
				depth++
			} else {
				depth--
			}
			if depth > maxNesting {
				return hcl.Diagnostics{tooDeep(offsetRange(src, filename, int(before)))}
			}
		case string:
			if !bytes.ContainsAny([]byte(t), "[{(!-+*/%&|=<>?:") {
				continue
			}
			for _, lex := range []func([]byte, string, hcl.Pos) (hclsyntax.Tokens, hcl.Diagnostics){
				hclsyntax.LexTemplate, hclsyntax.LexExpression} {
				tokens, _ := lex([]byte(t), filename, hcl.InitialPos)
				if _, deep := nesting(tokens, maxNesting-depth); deep {
					return hcl.Diagnostics{tooDeep(offsetRange(src, filename, int(before)))}
				}
			}
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
