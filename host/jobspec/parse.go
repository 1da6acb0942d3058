package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

// Config is what one parse reads.
type Config struct {
	// Path names the jobspec in diagnostics; file functions resolve
	// relative paths from its directory.
	Path string
	// Body is the jobspec: HCL, HCL's JSON syntax, or Nomad's API JSON.
	Body []byte
	// Vars are -var arguments, "name=value".
	Vars []string
	// VarFiles are -var-file paths, read in order (later ones win).
	VarFiles []string
	// VarContent is the content of one more variable file, read last before
	// Vars (the API's Variables).
	VarContent string
	// Env is the environment, for NOMAD_VAR_name=value and
	// DROVER_VAR_name=value.
	Env []string
	// AllowFS lets the jobspec call file(), fileset() and the other file
	// system functions (the CLI allows them; the server does not).
	AllowFS bool
	// IgnoreUndeclaredVars makes a value for a variable the jobspec does
	// not declare (in a variable file, VarContent or Vars) a warning rather
	// than an error. Nomad's /v1/jobs/parse endpoint ignores such values,
	// so that one set of variables can serve several jobs; `nomad job run`
	// and Drover's CLI refuse them.
	IgnoreUndeclaredVars bool
}

// Parsed is a parsed jobspec.
type Parsed struct {
	// Job is the job, as submitted (not canonicalised).
	Job *Job
	// Sources holds every file read, by name, for diagnostics.
	Sources map[string][]byte
	// ranges locates parts of the job (Path keys) in the sources.
	ranges map[string]hcl.Range
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "job", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "variables"},
		{Type: "locals"},
	},
}

// Parse parses a jobspec. Every problem is a diagnostic located in its
// file; the job is nil when there are errors.
func Parse(cfg Config) (*Parsed, hcl.Diagnostics) {
	b := newBudget(evalBudget)
	p, diags := parse(cfg, b)
	if diags = b.verdict(diags, hcl.Range{Filename: cfg.Path, Start: hcl.InitialPos, End: hcl.InitialPos}); diags.HasErrors() {
		p.Job = nil
	}
	return p, diags
}

// parse is Parse, spending its evaluation from b.
func parse(cfg Config, b *budget) (*Parsed, hcl.Diagnostics) {
	p := &Parsed{Sources: map[string][]byte{cfg.Path: cfg.Body}, ranges: map[string]hcl.Range{}}
	if isAPIJSON(cfg.Body) {
		job, diags := DecodeJSON(cfg.Path, cfg.Body)
		p.Job = job
		if r := apiJSONRanges(cfg.Path, cfg.Body); r != nil {
			p.ranges = r
		}
		return p, diags
	}
	file, diags := parseSource(cfg.Path, cfg.Body, b)
	if diags.HasErrors() {
		return p, diags
	}
	var varFiles []*hcl.File
	for _, path := range cfg.VarFiles {
		src, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variable file",
				Detail: err.Error()})
			continue
		}
		p.Sources[path] = src
		f, ds := parseSource(path, src, b)
		diags = append(diags, ds...)
		varFiles = append(varFiles, f)
	}
	if cfg.VarContent != "" {
		const name = "<variables>"
		p.Sources[name] = []byte(cfg.VarContent)
		f, ds := parseSource(name, []byte(cfg.VarContent), b)
		diags = append(diags, ds...)
		varFiles = append(varFiles, f)
	}
	if diags.HasErrors() {
		return p, diags
	}

	content, ds := file.Body.Content(fileSchema)
	diags = append(diags, ds...)
	vars := map[string]*variable{}
	// Variable blocks are read as the job is (keepRuntimeVars) so that
	// their validation conditions spend from the budget in HCL's JSON
	// syntax too; a condition refers to nothing but its variable
	// (checkValidationRefs), so none of its references is a runtime one.
	diags = append(diags, declareVariables(keepRuntimeVars(content.Blocks, cfg.Body, b), vars)...)
	undeclared := hcl.DiagError
	if cfg.IgnoreUndeclaredVars {
		undeclared = hcl.DiagWarning
	}
	diags = append(diags, setVariables(vars, cfg.Env, varFiles, cfg.Vars, undeclared, b)...)
	ctx := &hcl.EvalContext{
		Functions: meteredFunctions(functions(filepath.Dir(cfg.Path), cfg.AllowFS), b),
		Variables: map[string]cty.Value{},
	}
	varObj, ds := variableValues(vars, ctx)
	diags = append(diags, ds...)
	ctx.Variables["var"] = varObj
	_, ds = evalLocals(keepRuntimeVars(content.Blocks.OfType("locals"), cfg.Body, b), ctx)
	diags = append(diags, ds...)
	if diags.HasErrors() {
		return p, diags
	}

	jobs := content.Blocks.OfType("job")
	switch len(jobs) {
	case 0:
		return p, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing job block",
			Detail: "A jobspec must contain one job block.", Subject: file.Body.MissingItemRange().Ptr()})
	case 1:
	default:
		return p, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate job block",
			Detail:  fmt.Sprintf("A jobspec holds one job; another was defined at %s.", jobs[0].DefRange),
			Subject: jobs[1].DefRange.Ptr()})
	}
	d := newDecoder(ctx, file, b)
	job := d.decodeJob(keepRuntimeVars(jobs, cfg.Body, b)[0])
	diags = append(diags, d.diags...)
	p.ranges = d.ranges
	if diags.HasErrors() {
		return p, diags
	}
	p.Job = job
	return p, diags
}

// parseSource parses HCL or, when it starts with "{", HCL's JSON syntax,
// once it knows the source is not too large for hcl (size.go), nor its
// syntax nested too deep (nesting.go), nor a number in it too long
// (numbers.go). The
// expressions of HCL's syntax tree spend from b when evaluated (those
// of the JSON syntax do when jsonValue parses them).
func parseSource(path string, src []byte, b *budget) (*hcl.File, hcl.Diagnostics) {
	if trimmed := bytes.TrimSpace(src); len(trimmed) > 0 && trimmed[0] == '{' {
		if diags := checkJSONSyntax(src, path, &b.read); diags.HasErrors() {
			return nil, diags
		}
		return hcljson.Parse(src, path)
	}
	if diags := checkSyntax(src, path, hcl.InitialPos, hclsyntax.LexConfig, true, &b.read); diags.HasErrors() {
		return nil, diags
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.Pos{Line: 1, Column: 1})
	if body, ok := f.Body.(*hclsyntax.Body); ok {
		b.meter(body)
	}
	return f, diags
}

// SourceFormat names the format of a jobspec's source as Nomad's job
// submissions do: "json" for Nomad's API JSON, "hcl2" otherwise (HCL, or
// HCL's JSON syntax).
func SourceFormat(src []byte) string {
	if isAPIJSON(src) {
		return "json"
	}
	return "hcl2"
}

// isAPIJSON reports whether src is Nomad's API JSON rather than a jobspec
// in HCL's JSON syntax: a JSON object with "Job", "ID" or "TaskGroups" and
// none of the jobspec's top-level blocks.
func isAPIJSON(src []byte) bool {
	trimmed := bytes.TrimSpace(src)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(trimmed, &top) != nil {
		return false
	}
	for _, k := range []string{"job", "variable", "variables", "locals"} {
		if _, ok := top[k]; ok {
			return false
		}
	}
	for _, k := range []string{"Job", "ID", "TaskGroups", "Name"} {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

// decodeJob decodes the job block. Beyond Nomad's API job it reads
// Drover's scheduler attribute, tasks written directly in the job (each
// becomes a group of its own, as in Nomad), a job-level vault block (the
// default for tasks without one) and the consul_token and vault_token
// attributes of Nomad 1.6 jobspecs (kept in the job as its API JSON keeps
// them). Dynamic blocks are expanded first.
func (d *decoder) decodeJob(b *hcl.Block) *Job {
	job := &Job{}
	p := Path(nil)
	d.record(p, b.DefRange)
	body := b.Body
	if d.hasDynamicBlocks(b) {
		body = dynblock.Expand(body, d.ctx)
	}
	content := d.decodeStruct(body, reflect.ValueOf(&job.Job).Elem(), p, extras{
		attrs:  []hcl.AttributeSchema{{Name: "scheduler"}, {Name: "consul_token"}, {Name: "vault_token"}},
		blocks: []hcl.BlockHeaderSchema{{Type: "task", LabelNames: []string{"name"}}, {Type: "vault"}},
	})
	if a, ok := content.Attributes["scheduler"]; ok {
		var s string
		if d.setAttr(a, reflect.ValueOf(&s).Elem(), p.Attr("scheduler")) {
			job.Scheduler = &s
		}
	}
	for name, field := range map[string]**string{"consul_token": &job.ConsulToken, "vault_token": &job.VaultToken} {
		if a, ok := content.Attributes[name]; ok {
			var s string
			if d.setAttr(a, reflect.ValueOf(&s).Elem(), p.Attr(name)) {
				*field = &s
			}
		}
	}
	var lone []*api.TaskGroup
	for _, tb := range content.Blocks.OfType("task") {
		t := &api.Task{}
		d.decodeBlock(tb, reflect.ValueOf(t).Elem(), p.Block("task", tb.Labels[0]))
		lone = append(lone, &api.TaskGroup{Name: ptr(t.Name), Tasks: []*api.Task{t}})
	}
	job.TaskGroups = append(lone, job.TaskGroups...)
	if vault := d.extraVault(content, p); vault != nil {
		for _, tg := range job.TaskGroups {
			for _, t := range tg.Tasks {
				if t.Vault == nil {
					t.Vault = vault
				}
			}
		}
	}
	if job.ID == nil {
		job.ID = ptr(b.Labels[0])
		d.record(p.Attr("id"), b.LabelRanges[0])
	}
	if job.Name == nil {
		job.Name = ptr(b.Labels[0])
		d.record(p.Attr("name"), b.LabelRanges[0])
	}
	return job
}

// hasDynamicBlocks reports whether the block holds a dynamic block
// anywhere.
func (d *decoder) hasDynamicBlocks(b *hcl.Block) bool {
	body, ok := d.syntax[b.DefRange]
	if !ok {
		return true // JSON syntax: let dynblock look
	}
	found := false
	_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		if blk, ok := n.(*hclsyntax.Block); ok && blk.Type == "dynamic" {
			found = true
		}
		return nil
	})
	return found
}

// keepRuntimeVars returns blocks whose expressions keep the runtime
// variables they refer to as written (runtimeBody); src is their file.
func keepRuntimeVars(blocks hcl.Blocks, src []byte, b *budget) hcl.Blocks {
	out := make(hcl.Blocks, len(blocks))
	for i, blk := range blocks {
		wrapped := *blk
		wrapped.Body = runtimeBody{body: blk.Body, src: src, b: b}
		out[i] = &wrapped
	}
	return out
}
