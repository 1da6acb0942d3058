// Package jobspec parses jobspecs written in Nomad's HCL job language into
// Drover jobs, and canonicalizes and validates jobs however they arrive.
// Every parse error is an HCL diagnostic with file, line and column.
package jobspec

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

type fileSpec struct {
	Job    *jobSpec `hcl:"job,block"`
	Remain hcl.Body `hcl:",remain"`
}

type jobSpec struct {
	ID          string            `hcl:"id,label"`
	Name        *string           `hcl:"name,optional"`
	Type        *string           `hcl:"type,optional"`
	Priority    *int              `hcl:"priority,optional"`
	Region      *string           `hcl:"region,optional"`
	Namespace   *string           `hcl:"namespace,optional"`
	NodePool    *string           `hcl:"node_pool,optional"`
	AllAtOnce   *bool             `hcl:"all_at_once,optional"`
	Datacenters []string          `hcl:"datacenters,optional"`
	Scheduler   *string           `hcl:"scheduler,optional"`
	Constraints []*constraintSpec `hcl:"constraint,block"`
	Meta        *bodySpec         `hcl:"meta,block"`
	Groups      []*groupSpec      `hcl:"group,block"`
}

type groupSpec struct {
	Name        string            `hcl:"name,label"`
	Count       *int              `hcl:"count,optional"`
	Constraints []*constraintSpec `hcl:"constraint,block"`
	Meta        *bodySpec         `hcl:"meta,block"`
	Tasks       []*taskSpec       `hcl:"task,block"`
}

type taskSpec struct {
	Name        string            `hcl:"name,label"`
	Driver      string            `hcl:"driver,optional"`
	User        *string           `hcl:"user,optional"`
	Config      *bodySpec         `hcl:"config,block"`
	Env         *bodySpec         `hcl:"env,block"`
	Constraints []*constraintSpec `hcl:"constraint,block"`
	Resources   *resourcesSpec    `hcl:"resources,block"`
	Meta        *bodySpec         `hcl:"meta,block"`
}

type resourcesSpec struct {
	CPU         *int `hcl:"cpu,optional"`
	Cores       *int `hcl:"cores,optional"`
	MemoryMB    *int `hcl:"memory,optional"`
	MemoryMaxMB *int `hcl:"memory_max,optional"`
	DiskMB      *int `hcl:"disk,optional"`
}

type constraintSpec struct {
	Attribute *string `hcl:"attribute,optional"`
	Operator  *string `hcl:"operator,optional"`
	Value     *string `hcl:"value,optional"`
	// Shorthands, as Nomad accepts them.
	Version        *string   `hcl:"version,optional"`
	Semver         *string   `hcl:"semver,optional"`
	Regexp         *string   `hcl:"regexp,optional"`
	DistinctHosts  *bool     `hcl:"distinct_hosts,optional"`
	SetContains    *string   `hcl:"set_contains,optional"`
	DistinctProp   *string   `hcl:"distinct_property,optional"`
	SetContainsAny *string   `hcl:"set_contains_any,optional"`
	SetContainsAll *string   `hcl:"set_contains_all,optional"`
	DefRange       hcl.Range `hcl:",def_range"`
}

// bodySpec captures a block of free-form attributes (meta, env, config).
type bodySpec struct {
	Body hcl.Body `hcl:",remain"`
}

// Parse parses a jobspec. filename is used in diagnostics.
func Parse(filename string, src []byte) (*sdk.Job, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, diags
	}
	ctx := &hcl.EvalContext{Variables: runtimeVariables(f.Body)}
	var spec fileSpec
	diags = append(diags, gohcl.DecodeBody(f.Body, ctx, &spec)...)
	if diags.HasErrors() {
		return nil, diags
	}
	if spec.Job == nil {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing job block",
			Detail: "A jobspec must contain one job block.", Subject: f.Body.MissingItemRange().Ptr()})
	}
	job, d := spec.Job.toJob(ctx)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}
	return job, diags
}

func (j *jobSpec) toJob(ctx *hcl.EvalContext) (*sdk.Job, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	job := &sdk.Job{ID: j.ID, Name: deref(j.Name, j.ID), Type: deref(j.Type, ""), Priority: deref(j.Priority, 0),
		Region: deref(j.Region, ""), Namespace: deref(j.Namespace, ""), NodePool: deref(j.NodePool, ""),
		AllAtOnce: deref(j.AllAtOnce, false), Datacenters: j.Datacenters, Scheduler: deref(j.Scheduler, "")}
	var d hcl.Diagnostics
	job.Constraints, d = constraints(j.Constraints)
	diags = append(diags, d...)
	job.Meta, d = stringMap(ctx, j.Meta)
	diags = append(diags, d...)
	for _, g := range j.Groups {
		tg := &sdk.TaskGroup{Name: g.Name, Count: deref(g.Count, 1)}
		tg.Constraints, d = constraints(g.Constraints)
		diags = append(diags, d...)
		tg.Meta, d = stringMap(ctx, g.Meta)
		diags = append(diags, d...)
		for _, t := range g.Tasks {
			task := &sdk.Task{Name: t.Name, Driver: t.Driver, User: deref(t.User, "")}
			task.Constraints, d = constraints(t.Constraints)
			diags = append(diags, d...)
			task.Env, d = stringMap(ctx, t.Env)
			diags = append(diags, d...)
			task.Meta, d = stringMap(ctx, t.Meta)
			diags = append(diags, d...)
			task.Config, d = opaque(ctx, t.Config)
			diags = append(diags, d...)
			if r := t.Resources; r != nil {
				task.Resources = &sdk.Resources{CPU: deref(r.CPU, 0), Cores: deref(r.Cores, 0),
					MemoryMB: deref(r.MemoryMB, 0), MemoryMaxMB: deref(r.MemoryMaxMB, 0), DiskMB: deref(r.DiskMB, 0)}
			}
			tg.Tasks = append(tg.Tasks, task)
		}
		job.TaskGroups = append(job.TaskGroups, tg)
	}
	return job, diags
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func constraints(specs []*constraintSpec) ([]*sdk.Constraint, hcl.Diagnostics) {
	var out []*sdk.Constraint
	var diags hcl.Diagnostics
	for _, c := range specs {
		sc := &sdk.Constraint{LTarget: deref(c.Attribute, ""), RTarget: deref(c.Value, ""), Operand: deref(c.Operator, "=")}
		set := func(op string, v *string) {
			if v != nil {
				sc.Operand, sc.RTarget = op, *v
			}
		}
		set(sdk.ConstraintVersion, c.Version)
		set(sdk.ConstraintSemver, c.Semver)
		set(sdk.ConstraintRegex, c.Regexp)
		set(sdk.ConstraintSetContains, c.SetContains)
		set(sdk.ConstraintSetContainsAny, c.SetContainsAny)
		set(sdk.ConstraintSetContainsAll, c.SetContainsAll)
		if c.DistinctProp != nil {
			sc.Operand, sc.LTarget = sdk.ConstraintDistinctProperty, *c.DistinctProp
		}
		if c.DistinctHosts != nil && *c.DistinctHosts {
			sc.Operand = sdk.ConstraintDistinctHosts
		}
		switch sc.Operand {
		case sdk.ConstraintEqual, "==", "is", sdk.ConstraintNotEqual, "not", sdk.ConstraintGreater,
			sdk.ConstraintGreaterEqual, sdk.ConstraintLess, sdk.ConstraintLessEqual, sdk.ConstraintRegex,
			sdk.ConstraintVersion, sdk.ConstraintSemver, sdk.ConstraintSetContains, sdk.ConstraintSetContainsAll,
			sdk.ConstraintSetContainsAny, sdk.ConstraintAttributeIsSet, sdk.ConstraintAttributeIsNotSet,
			sdk.ConstraintDistinctHosts, sdk.ConstraintDistinctProperty:
		default:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown constraint operator",
				Detail: fmt.Sprintf("Operator %q is not a constraint operator.", sc.Operand), Subject: c.DefRange.Ptr()})
			continue
		}
		out = append(out, sc)
	}
	return out, diags
}

func attrs(ctx *hcl.EvalContext, b *bodySpec) (map[string]cty.Value, hcl.Diagnostics) {
	if b == nil {
		return nil, nil
	}
	as, diags := b.Body.JustAttributes()
	if diags.HasErrors() {
		return nil, diags
	}
	out := make(map[string]cty.Value, len(as))
	for name, a := range as {
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		out[name] = v
	}
	return out, diags
}

func stringMap(ctx *hcl.EvalContext, b *bodySpec) (map[string]string, hcl.Diagnostics) {
	vals, diags := attrs(ctx, b)
	if len(vals) == 0 {
		return nil, diags
	}
	as, _ := b.Body.JustAttributes()
	out := make(map[string]string, len(vals))
	for name, v := range vals {
		s, err := ctyString(v)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value",
				Detail: fmt.Sprintf("%s must be a string, number or bool: %v", name, err), Subject: as[name].Expr.Range().Ptr()})
			continue
		}
		out[name] = s
	}
	return out, diags
}

func opaque(ctx *hcl.EvalContext, b *bodySpec) (sdk.Opaque, hcl.Diagnostics) {
	vals, diags := attrs(ctx, b)
	if len(vals) == 0 {
		return nil, diags
	}
	out := sdk.Opaque{}
	for name, v := range vals {
		out[name] = ctyToGo(v)
	}
	return out, diags
}
