package jobspec

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Environment variable prefixes that set input variables:
// NOMAD_VAR_image=nginx sets var.image, as in Nomad; DROVER_VAR_ does the
// same and wins over NOMAD_VAR_.
const (
	NomadVarEnvPrefix  = "NOMAD_VAR_"
	DroverVarEnvPrefix = "DROVER_VAR_"
)

// variable is one declared input variable.
type variable struct {
	name string
	// typ is the type constraint: declared, or inferred from a primitive
	// default (see inferType), or cty.DynamicPseudoType.
	typ cty.Type
	// inferred is set when typ comes from the default, not a type argument.
	inferred bool
	// structured is set when values given as text (-var, the environment)
	// are HCL expressions rather than strings: for collection and structural
	// types, declared or those of the default.
	structured bool
	def        cty.Value // cty.NilVal when there is no default
	val        cty.Value // the value set from outside; cty.NilVal when unset
	from       string    // where val came from, for messages
	decl       hcl.Range
	// defRange and valRange are where def and val are written: the
	// default's expression, a variable file's; decl for values no file
	// holds (-var, the environment). Problems with a value point there.
	defRange, valRange hcl.Range
	// validations are the variable's validation blocks.
	validations []*validation
}

type validation struct {
	condition hcl.Expression
	message   string
	decl      hcl.Range
}

// value returns the variable's value: set from outside, or its default.
func (v *variable) value() cty.Value {
	if v.val != cty.NilVal {
		return v.val
	}
	return v.def
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

// badDefault stands for a default that could not be evaluated or
// converted, already reported: the variable has a default, of no known
// value, so it is not also reported as unset.
var badDefault = cty.DynamicVal

// declareVariables reads the variable and variables blocks of a file.
func declareVariables(blocks hcl.Blocks, vars map[string]*variable) hcl.Diagnostics {
	var diags hcl.Diagnostics
	declare := func(name string, rng hcl.Range) *variable {
		if prev, ok := vars[name]; ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate variable",
				Detail: fmt.Sprintf("Variable %q is already declared at %s.", name, prev.decl), Subject: rng.Ptr()})
			return nil
		}
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable name",
				Detail:  "A variable name must start with a letter or underscore and may contain only letters, digits, underscores and dashes.",
				Subject: rng.Ptr()})
			return nil
		}
		v := &variable{name: name, typ: cty.DynamicPseudoType, def: cty.NilVal, val: cty.NilVal, decl: rng}
		vars[name] = v
		return v
	}
	for _, b := range blocks {
		switch b.Type {
		case "variables":
			attrs, ds := b.Body.JustAttributes()
			diags = append(diags, ds...)
			for _, a := range sortedAttrs(attrs) {
				if v := declare(a.Name, a.NameRange); v != nil {
					def, ds := a.Expr.Value(nil)
					diags = append(diags, ds...)
					v.def, v.defRange = badDefault, a.Expr.Range()
					if !ds.HasErrors() {
						v.def = def
						v.inferType(def)
					}
				}
			}
		case "variable":
			v := declare(b.Labels[0], b.LabelRanges[0])
			if v == nil {
				continue
			}
			content, ds := b.Body.Content(variableSchema)
			diags = append(diags, ds...)
			if a, ok := content.Attributes["type"]; ok {
				// An exact type, as in Nomad: "any" is refused.
				ty, ds := typeexpr.Type(a.Expr)
				diags = append(diags, ds...)
				if !ds.HasErrors() {
					v.typ = ty
					v.structured = !ty.IsPrimitiveType()
				}
			}
			if a, ok := content.Attributes["default"]; ok {
				def, ds := a.Expr.Value(nil)
				diags = append(diags, ds...)
				v.def, v.defRange = badDefault, a.Expr.Range()
				if !ds.HasErrors() && !numbersWithin(def) {
					diags = append(diags, tooLargeNumber(a.Expr.Range()))
				} else if !ds.HasErrors() {
					conv, err := convert.Convert(def, v.typ)
					if err != nil {
						diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid default value for variable",
							Detail:  fmt.Sprintf("The default value of %q does not match its type: %s.", v.name, errText(err)),
							Subject: a.Expr.Range().Ptr()})
					} else {
						v.def = conv
						if _, typed := content.Attributes["type"]; !typed {
							v.inferType(conv)
						}
					}
				}
			}
			for _, vb := range content.Blocks {
				vc, ds := vb.Body.Content(validationSchema)
				diags = append(diags, ds...)
				if ds.HasErrors() {
					continue
				}
				var msg string
				if ds := gohclString(vc.Attributes["error_message"], &msg); ds.HasErrors() {
					diags = append(diags, ds...)
					continue
				}
				if ds := checkValidationMessage(msg, vc.Attributes["error_message"]); ds.HasErrors() {
					diags = append(diags, ds...)
					continue
				}
				diags = append(diags, checkValidationRefs(v.name, vc.Attributes["condition"])...)
				v.validations = append(v.validations, &validation{condition: vc.Attributes["condition"].Expr,
					message: msg, decl: vb.DefRange})
			}
		}
	}
	return diags
}

// inferType gives a variable declared without a type the type its default
// implies, as Nomad does: a variable whose default is 3 is a number, so
// -var n=5 sets the number 5, not the string "5" (var.n == 5 holds, and
// task configs see a number). A collection or object default makes values
// given as text HCL expressions (-var 'tags=["a"]' is a list), but does not
// constrain their shape: Nomad would require a list of exactly as many
// elements as the default has, which is an accident of HCL's tuple types.
func (v *variable) inferType(def cty.Value) {
	switch ty := def.Type(); {
	case def.IsNull():
	case ty.IsPrimitiveType():
		v.typ, v.inferred = ty, true
	default:
		v.structured = true
	}
}

// checkValidationRefs requires a validation condition to refer to its own
// variable and to no other.
func checkValidationRefs(name string, a *hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	self := false
	for _, t := range a.Expr.Variables() {
		if t.RootName() != "var" || len(t) < 2 {
			continue
		}
		if ta, ok := t[1].(hcl.TraverseAttr); ok {
			if ta.Name != name {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference in variable validation",
					Detail:  fmt.Sprintf("The condition for variable %q can only refer to the variable itself, var.%s.", name, name),
					Subject: t.SourceRange().Ptr()})
			} else {
				self = true
			}
		}
	}
	if !self {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable validation condition",
			Detail: fmt.Sprintf("The condition for variable %q must refer to var.%s.", name, name), Subject: a.Expr.Range().Ptr()})
	}
	return diags
}

// checkValidationMessage requires a validation's error_message to look
// like a sentence, as Nomad does, since it is quoted in a longer message:
// not empty, not starting with a lower-case letter, ending with ".", "?"
// or "!".
func checkValidationMessage(msg string, a *hcl.Attribute) hcl.Diagnostics {
	const summary = "Invalid validation error message"
	if msg == "" {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary,
			Detail: "An empty string is not a valid nor useful error message.", Subject: a.Expr.Range().Ptr()}}
	}
	first, _ := utf8.DecodeRuneInString(msg)
	last, _ := utf8.DecodeLastRuneInString(msg)
	if unicode.IsLetter(first) && !unicode.IsUpper(first) || !strings.ContainsRune(".?!", last) {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary,
			Detail: "Validation error message must be at least one full sentence starting with an uppercase letter " +
				"(if the alphabet permits it) and ending with a period or question mark.",
			Subject: a.Expr.Range().Ptr()}}
	}
	return nil
}

func gohclString(a *hcl.Attribute, out *string) hcl.Diagnostics {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return diags
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value",
			Detail: "A string is required.", Subject: a.Expr.Range().Ptr()})
	}
	*out = s.AsString()
	return diags
}

// setVariables applies values from the environment, variable files (in
// order) and -var arguments (in order), each overriding the one before.
// A value for a variable the jobspec does not declare is a diagnostic of
// severity undeclared.
func setVariables(vars map[string]*variable, env []string, files []*hcl.File, args []string,
	undeclared hcl.DiagnosticSeverity, b *budget) hcl.Diagnostics {
	var diags hcl.Diagnostics
	set := func(v *variable, val cty.Value, from string, rng hcl.Range) {
		if !numbersWithin(val) {
			// Read as a number by convert, a string would take minutes.
			diags = append(diags, tooLargeNumber(rng))
			return
		}
		conv, err := convert.Convert(val, v.typ)
		if err != nil {
			typ := "its type"
			if v.inferred {
				typ = "the type of its default, " + v.typ.FriendlyName()
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail:  fmt.Sprintf("The value of %q from %s does not match %s: %s.", v.name, from, typ, errText(err)),
				Subject: rng.Ptr()})
			return
		}
		v.val, v.from, v.valRange = conv, from, rng
	}
	for _, prefix := range []string{NomadVarEnvPrefix, DroverVarEnvPrefix} {
		for _, kv := range env {
			rest, ok := strings.CutPrefix(kv, prefix)
			if !ok {
				continue
			}
			name, raw, ok := strings.Cut(rest, "=")
			v := vars[name]
			if !ok || v == nil {
				continue // the environment may hold variables for other jobs
			}
			from := fmt.Sprintf("the environment (%s%s)", prefix, name)
			val, ds := v.literalValue(raw, "<"+prefix+name+">", b)
			diags = append(diags, ds...)
			if !ds.HasErrors() {
				set(v, val, from, v.decl)
			}
		}
	}
	for _, f := range files {
		content, _, _ := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "variable", LabelNames: []string{"name"}}}})
		if len(content.Blocks) > 0 {
			b := content.Blocks[0]
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Variable declaration in a variable file",
				Detail: fmt.Sprintf("A variable file assigns values to variables the jobspec declares; write %s = <value> here, and declare the variable in the jobspec.",
					b.Labels[0]), Subject: b.DefRange.Ptr()})
			continue
		}
		attrs, ds := f.Body.JustAttributes()
		diags = append(diags, ds...)
		for _, a := range sortedAttrs(attrs) {
			v := vars[a.Name]
			if v == nil {
				diags = append(diags, &hcl.Diagnostic{Severity: undeclared, Summary: "Undefined variable",
					Detail:  fmt.Sprintf("The variable file sets %q, which the jobspec does not declare.", a.Name),
					Subject: a.NameRange.Ptr()})
				continue
			}
			val, ds := a.Expr.Value(nil)
			diags = append(diags, ds...)
			if !ds.HasErrors() {
				set(v, val, a.Expr.Range().Filename, a.Expr.Range())
			}
		}
	}
	for _, arg := range args {
		name, raw, ok := strings.Cut(arg, "=")
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var argument",
				Detail: fmt.Sprintf("%q is not of the form name=value.", arg)})
			continue
		}
		v := vars[name]
		if v == nil {
			diags = append(diags, &hcl.Diagnostic{Severity: undeclared, Summary: "Undefined -var variable",
				Detail: fmt.Sprintf("-var sets %q, which the jobspec does not declare; declare it with a variable block.", name)})
			continue
		}
		val, ds := v.literalValue(raw, "<-var "+name+">", b)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			set(v, val, "-var "+name, v.decl)
		}
	}
	return diags
}

// literalValue reads a value of v given as text (-var, environment): as a
// string for string, number, bool and untyped variables (set later converts
// it to v's type), and as an HCL expression for lists, maps and objects,
// whose evaluation spends from b.
func (v *variable) literalValue(raw string, filename string, b *budget) (cty.Value, hcl.Diagnostics) {
	if !v.structured {
		return cty.StringVal(raw), nil
	}
	if diags := checkSyntax([]byte(raw), filename, hcl.InitialPos, hclsyntax.LexExpression, false, &b.read); diags.HasErrors() {
		return cty.NilVal, diags
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	b.meter(expr)
	return expr.Value(nil)
}

// variableValues returns the var object, checking that every variable has
// a value and passes its validations.
func variableValues(vars map[string]*variable, funcsCtx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	vals := make(map[string]cty.Value, len(vars))
	for _, name := range sortedNames(vars) {
		v := vars[name]
		val := v.value()
		if val == cty.NilVal {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Unset variable %q", name),
				Detail:  "The variable has no default; set it with -var, -var-file or " + NomadVarEnvPrefix + name + ".",
				Subject: v.decl.Ptr()})
			vals[name] = cty.DynamicVal
			continue
		}
		vals[name] = val
	}
	obj := cty.ObjectVal(vals)
	for _, name := range sortedNames(vars) {
		v := vars[name]
		if !vals[name].IsKnown() {
			continue
		}
		ctx := funcsCtx.NewChild()
		ctx.Variables = map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{name: vals[name]})}
		for _, vd := range v.validations {
			res, ds := vd.condition.Value(ctx)
			diags = append(diags, ds...)
			if ds.HasErrors() || !res.IsKnown() {
				continue // an unknown result: the budget ran out (its error is the parse's)
			}
			if res.IsNull() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable validation result",
					Detail: "The condition must be true or false, not null.", Subject: vd.condition.Range().Ptr()})
				continue
			}
			// Converted, as in Nomad: "true" and "false" are conditions too.
			res, err := convert.Convert(res, cty.Bool)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable validation result",
					Detail: fmt.Sprintf("The condition must be true or false: %s.", errText(err)), Subject: vd.condition.Range().Ptr()})
				continue
			}
			if res.False() {
				from, at := "its default", v.defRange
				if v.val != cty.NilVal {
					from, at = v.from, v.valRange
				}
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Invalid value for variable %q", name),
					Detail:  fmt.Sprintf("%s\n\nThe value from %s fails the validation at %s.", vd.message, from, vd.decl),
					Subject: at.Ptr()})
			}
		}
	}
	return obj, diags
}

// evalLocals evaluates the locals blocks' attributes; a local may refer to
// variables and to other locals, in any order. Each is evaluated once,
// after the locals it refers to, with those alone as its local object:
// evaluating every pending local again until none progresses, as Nomad
// does, made a chain of locals written in reverse order quadratic, and a
// few MiB of them took minutes. A local that refers to local as a whole
// (jsonencode(local), local[var.name]) sees every local that does not; a
// local in a cycle sees none of the locals in it, and fails, as in Nomad.
func evalLocals(blocks hcl.Blocks, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var all []*hcl.Attribute
	seen := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		attrs, ds := b.Body.JustAttributes()
		diags = append(diags, ds...)
		for _, a := range sortedAttrs(attrs) {
			if prev, ok := seen[a.Name]; ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate local value",
					Detail: fmt.Sprintf("Local %q is already defined at %s.", a.Name, prev.NameRange), Subject: a.NameRange.Ptr()})
				continue
			}
			seen[a.Name] = a
			all = append(all, a)
		}
	}
	// refs are the locals each refers to by name; whole, those that refer
	// to local as a whole.
	refs := make(map[string][]string, len(all))
	whole := map[string]bool{}
	for _, a := range all {
		for _, t := range a.Expr.Variables() {
			if t.RootName() != "local" {
				continue
			}
			if name, ok := localName(t); !ok {
				whole[a.Name] = true
			} else if seen[name] != nil {
				refs[a.Name] = append(refs[a.Name], name)
			}
		}
	}
	vals := map[string]cty.Value{}
	failed := map[string]hcl.Diagnostics{}
	eval := func(a *hcl.Attribute, local cty.Value) {
		ctx.Variables["local"] = local
		if v, ds := a.Expr.Value(ctx); ds.HasErrors() {
			failed[a.Name] = ds
		} else {
			vals[a.Name] = v
		}
	}
	// Depth first, without recursion (a chain may be long), each local
	// after those it refers to; one met again on the way is in a cycle.
	const (
		visiting = iota + 1
		visited
	)
	state := map[string]int{}
	for _, root := range all {
		if whole[root.Name] || state[root.Name] != 0 {
			continue
		}
		type frame struct {
			a    *hcl.Attribute
			next int // of refs[a.Name], the next to visit
		}
		stack := []frame{{a: root}}
		state[root.Name] = visiting
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next < len(refs[f.a.Name]) {
				ref := seen[refs[f.a.Name][f.next]]
				f.next++
				if state[ref.Name] == 0 && !whole[ref.Name] {
					state[ref.Name] = visiting
					stack = append(stack, frame{a: ref})
				}
				continue
			}
			own := map[string]cty.Value{}
			for _, name := range refs[f.a.Name] {
				if v, ok := vals[name]; ok {
					own[name] = v
				}
			}
			eval(f.a, cty.ObjectVal(own))
			state[f.a.Name] = visited
			stack = stack[:len(stack)-1]
		}
	}
	if len(whole) > 0 {
		local := cty.ObjectVal(vals)
		for _, a := range all {
			if whole[a.Name] {
				eval(a, local)
			}
		}
	}
	for _, a := range all {
		diags = append(diags, failed[a.Name]...)
	}
	ctx.Variables["local"] = cty.ObjectVal(vals)
	return ctx.Variables["local"], diags
}

// localName is the name of the local a reference to local refers to
// (local.name, local["name"]), or false for local as a whole.
func localName(t hcl.Traversal) (string, bool) {
	if len(t) < 2 {
		return "", false
	}
	switch step := t[1].(type) {
	case hcl.TraverseAttr:
		return step.Name, true
	case hcl.TraverseIndex:
		if k := step.Key; k.IsKnown() && !k.IsNull() && k.Type() == cty.String {
			return k.AsString(), true
		}
	}
	return "", false
}

func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}

func sortedNames(vars map[string]*variable) []string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
