package jobspec

import (
	"fmt"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// What hcl is given. The evaluation budget (budget.go) bounds what a
// jobspec's expressions build, but hcl's lexer and parser cost far more
// than the source they read, before any of it is evaluated. Measured with
// runtime.MemStats.TotalAlloc on jobspec.Parse (Go 1.26, hcl v2.25.0, one
// core of a 2-core machine):
//
//	jobspec                                  bytes     tokens   allocated    time
//	a hundred groups of ten tasks (below)    143 KB     59,009     107 MiB  0.16 s
//	a tenth of it                             14 KB      5,909       9 MiB  0.02 s
//	"[1,1,1,..."                             256 KiB   262,142     318 MiB  0.30 s
//	                                           1 MiB      1.0 M   1,477 MiB  1.2 s
//	                                           4 MiB      4.2 M   5,700 MiB  7.0 s
//	"a=1\n" repeated (262,143 errors)        1 MiB      1.0 M   1,445 MiB  1.1 s
//	"@" repeated (one error per byte)        1 MiB      1.0 M   1,576 MiB  0.8 s
//	                                           4 MiB      4.2 M   6,089 MiB  3.5 s
//
// So about 1.2 to 1.6 KiB per token, valid or not, and a dense jobspec
// has a token per byte: hcl's lexer alone (hclsyntax.LexConfig, which
// checkSyntax runs) allocates 560 bytes a token, 585 MiB for a dense MiB
// and 8.5 GiB for the 16 MiB the HTTP API takes. A diagnostic costs no
// more than a token, and hcl makes at most about one a token, so the
// token count bounds them too.
//
// hcl also joins a template's consecutive literal parts (the lines of a
// heredoc, or of a string HCL's JSON syntax reads as a template, and the
// pieces "$${" and "%%{" escapes split a string into) one at a time,
// copying everything before each: S bytes in L parts cost about S×L/2.
// A heredoc of 1 MiB in 12,000 lines of 87 bytes allocates 6,094 MiB
// (2 s), one of 256 KiB 393 MiB; 64 KiB of empty heredoc lines 2,283
// MiB; a quoted string of 1 MiB of "$${" 118 GiB (2 minutes), as does a
// JSON string of 1 MiB of "x\n".
//
// Hence three limits per parse, counted across its files (the jobspec,
// variable files, the API's Variables), checked before hcl parses each:
//   - maxSourceBytes, before anything is lexed: at a token a byte, the
//     lexing it allows allocates some 585 MiB. It is Nomad's default
//     job_max_source_size, past which Nomad keeps no job source either.
//     Nomad's API JSON (DecodeJSON, 52 bytes allocated a byte, no hcl)
//     is not counted: a job of that form is far larger than its jobspec.
//   - maxTokens, once lexed: a dense jobspec of that many costs some 350
//     MiB and 0.3 s to parse; it is four times the tokens of a job of a
//     hundred groups of ten tasks.
//   - maxTemplateJoins, the bytes hcl copies joining template parts,
//     about what joining allocates, and 0.15 s: a template of 200 KiB in
//     lines of 80 bytes passes it (one of 140 KiB in lines of 37 bytes
//     does not: TestParse_LongBodiesAreNotNested).
//
// BenchmarkParse_WhatHCLCosts measures the first and the costliest of
// these with the limits in place (go test ./host/jobspec -run XXX -bench
// WhatHCLCosts -benchtime 5x): the thousand tasks parse in 107 MiB and
// 0.12 s, a dense MiB is refused after 584 MiB and 0.47 s, 256 KiB of
// "$${" after 48 MiB and 0.05 s.
//
// With them, the costliest jobspecs are a dense MiB, which lexing alone
// refuses after allocating 585 MiB (790 MiB when every byte is an
// invalid character, whose diagnostics the lexer makes), in 0.8 s, and a
// dense 256 KiB, which parses to errors for 320 MiB.
const (
	maxSourceBytes   = 1 << 20
	maxTokens        = 256 << 10
	maxTemplateJoins = 256 << 20
	// perJoin is what each join counts beyond the bytes copied: hcl
	// moves the template's later parts down a slot each time.
	perJoin = 16
)

// syntaxRead is what one parse has given hcl so far.
type syntaxRead struct {
	bytes, tokens, joins int64
}

// readBytes counts src, a source about to be lexed, and refuses it if
// the parse's sources pass maxSourceBytes, located at the first byte past.
func (s *syntaxRead) readBytes(src []byte, filename string) hcl.Diagnostics {
	before := s.bytes
	s.bytes += int64(len(src))
	if s.bytes <= maxSourceBytes {
		return nil
	}
	off := int(max(maxSourceBytes-before, 0))
	for off > 0 && !utf8.RuneStart(src[off]) {
		off-- // the character that passes it
	}
	rng := offsetRange(src, filename, off)
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Jobspec too large",
		Detail: fmt.Sprintf("The jobspec's sources are %s, %s past the %s a jobspec may be (its variable files "+
			"included); the rest is not read.", countText(s.bytes, "byte"), countText(s.bytes-maxSourceBytes, "byte"),
			sizeText(maxSourceBytes)),
		Subject: rng.Ptr()}}
}

// readTokens counts tokens, lexed from one source, and refuses them if
// the parse's tokens pass maxTokens, located at the first token past.
func (s *syntaxRead) readTokens(tokens []hclsyntax.Token, n int64) hcl.Diagnostics {
	before := s.tokens
	s.tokens += n
	if s.tokens <= maxTokens {
		return nil
	}
	i := min(int(maxTokens-before), len(tokens)-1)
	return hcl.Diagnostics{tooManyTokens(s.tokens, tokens[max(i, 0)].Range)}
}

func tooManyTokens(n int64, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Jobspec too long",
		Detail: fmt.Sprintf("The jobspec has %s, %s past the %s a jobspec may have (its variable files "+
			"included); parsing each costs over a kilobyte.", countText(n, "token"), countText(n-maxTokens, "token"),
			countText(maxTokens, "token")),
		Subject: rng.Ptr()}
}

// readJoins counts what hcl would copy joining the template parts of
// tokens (templateJoins), lexed in a template if template is set, and
// refuses them past maxTemplateJoins, located at the part that passed it.
func (s *syntaxRead) readJoins(tokens hclsyntax.Tokens, template bool) hcl.Diagnostics {
	before := s.joins
	cost, at := templateJoins(tokens, template, maxTemplateJoins-before)
	s.joins = min(before+cost, 1<<62)
	if at == nil {
		return nil
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Template too long",
		Detail: fmt.Sprintf("hcl joins a template's lines (and the pieces $${ and %%%%{ split it into) one at a time, "+
			"copying all before each, so that a template of S bytes in L lines copies about S×L/2 bytes: the "+
			"jobspec's templates would copy %s, %s past the %s they may. Read a template this long from a file "+
			"(a template block's source, or file() on the command line), or split it.",
			sizeText(s.joins), sizeText(s.joins-maxTemplateJoins), sizeText(maxTemplateJoins)),
		Subject: at.Ptr()}}
}

// templateJoins is what hcl copies joining the consecutive literal parts
// of the templates in tokens (meldConsecutiveStringLiterals): at each
// literal after a literal, the bytes of the run so far, plus perJoin. It
// returns where the cost passed limit, if it did, and counts on to the
// end. template says whether tokens were lexed as a template (LexTemplate)
// rather than as a file or an expression.
func templateJoins(tokens hclsyntax.Tokens, template bool, limit int64) (int64, *hcl.Range) {
	type ctx struct {
		template bool
		run      int64 // bytes of the current run of literals
		lit      bool  // the last part was a literal
	}
	stack := []ctx{{template: template}}
	var cost int64
	var at *hcl.Range
	for _, tok := range tokens {
		top := &stack[len(stack)-1]
		switch tok.Type {
		case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			stack = append(stack, ctx{template: true})
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			if len(stack) > 1 && top.template {
				stack = stack[:len(stack)-1]
			}
		case hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			top.run, top.lit = 0, false
			stack = append(stack, ctx{})
		case hclsyntax.TokenTemplateSeqEnd:
			if len(stack) > 1 && !top.template {
				stack = stack[:len(stack)-1]
			}
		case hclsyntax.TokenQuotedLit, hclsyntax.TokenStringLit:
			if !top.template {
				continue
			}
			top.run += int64(len(tok.Bytes))
			if top.lit {
				cost = min(cost+top.run+perJoin, 1<<62)
				if at == nil && cost > limit {
					at = tok.Range.Ptr()
				}
			}
			top.lit = true
		}
	}
	return cost, at
}

// countText is n things in words: "1,048,576 bytes".
func countText(n int64, thing string) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n != 1 {
		thing += "s"
	}
	return s + " " + thing
}
