package jobspec

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// hook decodes one block type whose rules the struct tags cannot express.
type hook func(d *decoder, body hcl.Body, v reflect.Value, p Path)

func hookFor(t reflect.Type) hook {
	switch t {
	case reflect.TypeOf(api.Constraint{}):
		return decodeConstraint
	case reflect.TypeOf(api.Affinity{}):
		return decodeAffinity
	case reflect.TypeOf(api.TaskGroup{}):
		return decodeGroup
	case reflect.TypeOf(api.Task{}):
		return decodeTask
	case reflect.TypeOf(api.NetworkResource{}):
		return decodeNetwork
	case reflect.TypeOf(api.PeriodicConfig{}):
		return decodePeriodic
	case reflect.TypeOf(api.Template{}):
		return decodeTemplate
	case reflect.TypeOf(api.Vault{}):
		return decodeVault
	}
	return nil
}

// Constraint operators with a shorthand attribute of their own name
// (`version = ">= 1.2"` is `operator = "version"`, `value = ">= 1.2"`).
var constraintShorthands = []string{
	api.ConstraintVersion, api.ConstraintSemver, api.ConstraintRegex,
	api.ConstraintSetContains, api.ConstraintSetContainsAll, api.ConstraintSetContainsAny,
}

// decodeConstraint reads a constraint block: attribute, operator and value,
// or one of the shorthands, as Nomad reads it (the operator defaults to =).
func decodeConstraint(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	c := v.Addr().Interface().(*api.Constraint)
	attrs := []string{"attribute", "operator", "value", api.ConstraintDistinctHosts, api.ConstraintDistinctProperty}
	attrs = append(attrs, constraintShorthands...)
	content := d.attributes(body, attrs)
	str := func(name string) string {
		var s string
		if a, ok := content.Attributes[name]; ok {
			d.setAttr(a, reflect.ValueOf(&s).Elem(), p.Attr(name))
		}
		return s
	}
	c.LTarget, c.Operand, c.RTarget = str("attribute"), str("operator"), str("value")
	for _, op := range constraintShorthands {
		if s := str(op); s != "" {
			c.Operand, c.RTarget = op, s
			d.shorthand(content.Attributes[op], p, "value")
		}
	}
	if a, ok := content.Attributes[api.ConstraintDistinctHosts]; ok {
		var b bool
		if d.setAttr(a, reflect.ValueOf(&b).Elem(), p.Attr(api.ConstraintDistinctHosts)) {
			c.Operand, c.RTarget = api.ConstraintDistinctHosts, fmt.Sprint(b)
			d.shorthand(a, p, "value")
		}
	}
	if s := str(api.ConstraintDistinctProperty); s != "" {
		c.Operand, c.LTarget = api.ConstraintDistinctProperty, s
		d.shorthand(content.Attributes[api.ConstraintDistinctProperty], p, "attribute")
	}
	if c.Operand == "" {
		c.Operand = "="
	}
}

// decodeAffinity reads an affinity block like a constraint, plus weight.
func decodeAffinity(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	a := v.Addr().Interface().(*api.Affinity)
	content := d.attributes(body, append([]string{"attribute", "operator", "value", "weight"}, constraintShorthands...))
	str := func(name string) string {
		var s string
		if at, ok := content.Attributes[name]; ok {
			d.setAttr(at, reflect.ValueOf(&s).Elem(), p.Attr(name))
		}
		return s
	}
	a.LTarget, a.Operand, a.RTarget = str("attribute"), str("operator"), str("value")
	for _, op := range constraintShorthands {
		if s := str(op); s != "" {
			a.Operand, a.RTarget = op, s
			d.shorthand(content.Attributes[op], p, "value")
		}
	}
	if at, ok := content.Attributes["weight"]; ok {
		d.setAttr(at, reflect.ValueOf(&a.Weight).Elem(), p.Attr("weight"))
	}
	if a.Operand == "" {
		a.Operand = "="
	}
}

// shorthand records a shorthand attribute (version = ">= 1") as the
// operator and the value (or attribute) it stands for, so problems with
// either point at it.
func (d *decoder) shorthand(a *hcl.Attribute, p Path, target string) {
	d.record(p.Attr("operator"), a.NameRange)
	d.record(p.Attr(target), a.Expr.Range())
}

// attributes reads a body that may hold only the named attributes.
func (d *decoder) attributes(body hcl.Body, names []string) *hcl.BodyContent {
	schema := &hcl.BodySchema{}
	for _, n := range names {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: n})
	}
	content, diags := body.Content(schema)
	d.add(diags...)
	return content
}

// decodeGroup reads a group. A vault block in a group is the default for
// its tasks; a scaling block needs max and is horizontal.
func decodeGroup(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	tg := v.Addr().Interface().(*api.TaskGroup)
	content := d.decodeStruct(body, v, p, extras{blocks: []hcl.BlockHeaderSchema{{Type: "vault"}}})
	if vault := d.extraVault(content, p); vault != nil {
		for _, t := range tg.Tasks {
			if t.Vault == nil {
				t.Vault = vault
			}
		}
	}
	if s := tg.Scaling; s != nil {
		if s.Type == "" {
			s.Type = "horizontal"
		}
		if s.Max == nil {
			d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing required argument",
				Detail: "A group's scaling block must set max.", Subject: d.rangeOf(p.Attr("scaling")).Ptr()})
		}
		if s.Type != "horizontal" {
			d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid group scaling type",
				Detail:  fmt.Sprintf("A group's scaling policy is horizontal, not %q.", s.Type),
				Subject: d.rangeOf(p.Attr("scaling").Attr("type")).Ptr()})
		}
	}
}

// extraVault decodes the one vault block of content, if any.
func (d *decoder) extraVault(content *hcl.BodyContent, p Path) *api.Vault {
	blocks := content.Blocks.OfType("vault")
	if len(blocks) == 0 || !d.single(blocks) {
		return nil
	}
	vault := &api.Vault{}
	d.decodeBlock(blocks[0], reflect.ValueOf(vault).Elem(), p.Attr("vault"))
	return vault
}

// decodeTask reads a task. Its scaling blocks are labelled "cpu" or "mem"
// (vertical scaling policies), which the struct tags cannot say.
func decodeTask(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	t := v.Addr().Interface().(*api.Task)
	content := d.decodeStruct(body, v, p, extras{
		blocks: []hcl.BlockHeaderSchema{{Type: "scaling", LabelNames: []string{"name"}}},
		skip:   map[string]bool{"scaling": true},
	})
	seen := map[string]bool{}
	for _, b := range content.Blocks.OfType("scaling") {
		label := strings.ToLower(b.Labels[0])
		var typ string
		switch label {
		case "cpu":
			typ = "vertical_cpu"
		case "mem":
			typ = "vertical_mem"
		default:
			d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid scaling policy name",
				Detail: `A task's scaling policy is named "cpu" or "mem".`, Subject: b.LabelRanges[0].Ptr()})
			continue
		}
		if seen[label] {
			d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate scaling %q block", label),
				Detail: fmt.Sprintf("Only one scaling %q block is allowed in a task.", label), Subject: b.DefRange.Ptr()})
			continue
		}
		seen[label] = true
		sp := &api.ScalingPolicy{}
		d.decodeBlock(b, reflect.ValueOf(sp).Elem(), p.Block("scaling", label))
		switch sp.Type {
		case "":
			sp.Type = typ
		case typ:
		default:
			d.add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid scaling policy type",
				Detail:  fmt.Sprintf("The scaling %q policy has type %q, not %q.", label, typ, sp.Type),
				Subject: b.DefRange.Ptr()})
			continue
		}
		t.ScalingPolicies = append(t.ScalingPolicies, sp)
	}
}

// decodeNetwork reads a network block. Ports are written `port "label"`;
// those with a static value are reserved ports, the others dynamic.
func decodeNetwork(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	n := v.Addr().Interface().(*api.NetworkResource)
	d.decodeStruct(body, v, p, extras{})
	var dynamic []api.Port
	for _, port := range n.DynamicPorts {
		if port.Value > 0 {
			n.ReservedPorts = append(n.ReservedPorts, port)
		} else {
			dynamic = append(dynamic, port)
		}
	}
	n.DynamicPorts = dynamic
}

// decodePeriodic reads a periodic block; a cron spec is of type "cron".
func decodePeriodic(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	pc := v.Addr().Interface().(*api.PeriodicConfig)
	d.decodeStruct(body, v, p, extras{})
	if pc.Spec != nil || len(pc.Specs) > 0 {
		pc.SpecType = ptr(api.PeriodicSpecCron)
	}
}

// decodeTemplate reads a template block with the defaults Nomad's parser
// fills in.
func decodeTemplate(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	t := v.Addr().Interface().(*api.Template)
	d.decodeStruct(body, v, p, extras{})
	setDefault(&t.ChangeMode, "restart")
	setDefault(&t.Perms, "0644")
	setDefault(&t.Splay, 5*time.Second)
	setDefault(&t.ErrMissingKey, false)
	if cs := t.ChangeScript; cs != nil {
		if cs.Args == nil {
			cs.Args = []string{}
		}
		setDefault(&cs.Timeout, 5*time.Second)
		setDefault(&cs.FailOnError, false)
	}
}

// decodeVault reads a vault block with the defaults Nomad's parser fills in.
func decodeVault(d *decoder, body hcl.Body, v reflect.Value, p Path) {
	vault := v.Addr().Interface().(*api.Vault)
	d.decodeStruct(body, v, p, extras{})
	setDefault(&vault.Env, true)
	setDefault(&vault.DisableFile, false)
	setDefault(&vault.ChangeMode, "restart")
}

func (d *decoder) rangeOf(p Path) hcl.Range {
	for ; len(p) > 0; p = p[:len(p)-1] {
		if r, ok := d.ranges[p.key()]; ok {
			return r
		}
	}
	return d.ranges[Path(nil).key()]
}

func ptr[T any](v T) *T { return &v }

func setDefault[T any](p **T, v T) {
	if *p == nil {
		*p = &v
	}
}
