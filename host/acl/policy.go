package acl

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Policy dispositions, the values of a block's policy argument. When
// policies merge, the most permissive wins, except that deny always wins.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyList  = "list"  // plugin only
	PolicyWrite = "write" // all but plugin
	PolicyScale = "scale" // namespace only
)

// Namespace capabilities, as Nomad names them. A namespace's policy
// grants a set of them (see Parse); capabilities adds more.
const (
	NamespaceCapabilityDeny                 = "deny"
	NamespaceCapabilityListJobs             = "list-jobs"
	NamespaceCapabilityParseJob             = "parse-job"
	NamespaceCapabilityReadJob              = "read-job"
	NamespaceCapabilitySubmitJob            = "submit-job"
	NamespaceCapabilityDispatchJob          = "dispatch-job"
	NamespaceCapabilityReadLogs             = "read-logs"
	NamespaceCapabilityReadFS               = "read-fs"
	NamespaceCapabilityAllocExec            = "alloc-exec"
	NamespaceCapabilityAllocNodeExec        = "alloc-node-exec"
	NamespaceCapabilityAllocLifecycle       = "alloc-lifecycle"
	NamespaceCapabilitySentinelOverride     = "sentinel-override"
	NamespaceCapabilityCSIRegisterPlugin    = "csi-register-plugin"
	NamespaceCapabilityCSIWriteVolume       = "csi-write-volume"
	NamespaceCapabilityCSIReadVolume        = "csi-read-volume"
	NamespaceCapabilityCSIListVolume        = "csi-list-volume"
	NamespaceCapabilityCSIMountVolume       = "csi-mount-volume"
	NamespaceCapabilityListScalingPolicies  = "list-scaling-policies"
	NamespaceCapabilityReadScalingPolicy    = "read-scaling-policy"
	NamespaceCapabilityReadJobScaling       = "read-job-scaling"
	NamespaceCapabilityScaleJob             = "scale-job"
	NamespaceCapabilitySubmitRecommendation = "submit-recommendation"
)

// Node pool capabilities.
const (
	NodePoolCapabilityDeny   = "deny"
	NodePoolCapabilityRead   = "read"
	NodePoolCapabilityWrite  = "write"
	NodePoolCapabilityDelete = "delete"
)

// Host volume capabilities.
const (
	HostVolumeCapabilityDeny           = "deny"
	HostVolumeCapabilityMountReadOnly  = "mount-readonly"
	HostVolumeCapabilityMountReadWrite = "mount-readwrite"
)

// Variables capabilities, granted per path of a namespace.
const (
	VariablesCapabilityList    = "list"
	VariablesCapabilityRead    = "read"
	VariablesCapabilityWrite   = "write"
	VariablesCapabilityDestroy = "destroy"
	VariablesCapabilityDeny    = "deny"
)

// Policy is a parsed policy: its rules, with each block's policy already
// expanded into the capabilities it grants. A block left out leaves its
// field empty ("" for node, agent, operator, quota and plugin).
type Policy struct {
	Namespaces  []*NamespacePolicy
	NodePools   []*NodePoolPolicy
	HostVolumes []*HostVolumePolicy

	Node, Agent, Operator, Quota, Plugin string
}

// NamespacePolicy is a namespace block. Name is a namespace's name or a
// glob ("*" matches any run of characters) of names.
type NamespacePolicy struct {
	Name   string
	Policy string
	// Capabilities are those written, then those Policy grants.
	Capabilities []string
	Variables    *VariablesPolicy // nil without a variables block
}

// VariablesPolicy is a namespace's variables block.
type VariablesPolicy struct {
	Paths []*VariablesPathPolicy
}

// VariablesPathPolicy is a variables block's path block: the capabilities
// on the variables whose paths PathSpec (a path or a glob of paths) names.
type VariablesPathPolicy struct {
	PathSpec     string
	Capabilities []string
}

// NodePoolPolicy is a node_pool block; Name is a pool's name or a glob.
type NodePoolPolicy struct {
	Name         string
	Policy       string
	Capabilities []string // as written, then those Policy grants
}

// HostVolumePolicy is a host_volume block; Name is a volume's name or a glob.
type HostVolumePolicy struct {
	Name         string
	Policy       string
	Capabilities []string // as written, then those Policy grants
}

// Which values each block takes, in the order error messages list them.
var (
	namespacePolicies = []string{PolicyDeny, PolicyRead, PolicyWrite, PolicyScale}
	levelPolicies     = []string{PolicyDeny, PolicyRead, PolicyWrite}
	pluginPolicies    = []string{PolicyDeny, PolicyRead, PolicyList}

	namespaceCapabilities = []string{
		NamespaceCapabilityDeny, NamespaceCapabilityListJobs, NamespaceCapabilityParseJob,
		NamespaceCapabilityReadJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
		NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
		NamespaceCapabilityAllocNodeExec, NamespaceCapabilityAllocLifecycle,
		NamespaceCapabilitySentinelOverride, NamespaceCapabilityCSIRegisterPlugin,
		NamespaceCapabilityCSIWriteVolume, NamespaceCapabilityCSIReadVolume,
		NamespaceCapabilityCSIListVolume, NamespaceCapabilityCSIMountVolume,
		NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob,
		NamespaceCapabilitySubmitRecommendation,
	}
	nodePoolCapabilities = []string{
		NodePoolCapabilityDeny, NodePoolCapabilityRead, NodePoolCapabilityWrite, NodePoolCapabilityDelete,
	}
	hostVolumeCapabilities = []string{
		HostVolumeCapabilityDeny, HostVolumeCapabilityMountReadOnly, HostVolumeCapabilityMountReadWrite,
	}
	variablesCapabilities = []string{
		VariablesCapabilityList, VariablesCapabilityRead, VariablesCapabilityWrite,
		VariablesCapabilityDestroy, VariablesCapabilityDeny,
	}
)

// What each policy grants, as Nomad 1.6 expands it: write is read and
// scale and more, but not alloc-node-exec, csi-register-plugin or
// sentinel-override, which only capabilities grant.
var (
	namespaceRead = []string{
		NamespaceCapabilityListJobs, NamespaceCapabilityParseJob, NamespaceCapabilityReadJob,
		NamespaceCapabilityCSIListVolume, NamespaceCapabilityCSIReadVolume,
		NamespaceCapabilityReadJobScaling, NamespaceCapabilityListScalingPolicies,
		NamespaceCapabilityReadScalingPolicy,
	}
	namespaceGrants = map[string][]string{
		PolicyDeny: {NamespaceCapabilityDeny},
		PolicyRead: namespaceRead,
		PolicyWrite: append(slices.Clip(namespaceRead),
			NamespaceCapabilityScaleJob, NamespaceCapabilitySubmitJob, NamespaceCapabilityDispatchJob,
			NamespaceCapabilityReadLogs, NamespaceCapabilityReadFS, NamespaceCapabilityAllocExec,
			NamespaceCapabilityAllocLifecycle, NamespaceCapabilityCSIMountVolume,
			NamespaceCapabilityCSIWriteVolume, NamespaceCapabilitySubmitRecommendation),
		PolicyScale: {
			NamespaceCapabilityListScalingPolicies, NamespaceCapabilityReadScalingPolicy,
			NamespaceCapabilityReadJobScaling, NamespaceCapabilityScaleJob,
		},
	}
	nodePoolGrants = map[string][]string{
		PolicyDeny:  {NodePoolCapabilityDeny},
		PolicyRead:  {NodePoolCapabilityRead},
		PolicyWrite: {NodePoolCapabilityRead, NodePoolCapabilityWrite, NodePoolCapabilityDelete},
	}
	hostVolumeGrants = map[string][]string{
		PolicyDeny:  {HostVolumeCapabilityDeny},
		PolicyRead:  {HostVolumeCapabilityMountReadOnly},
		PolicyWrite: {HostVolumeCapabilityMountReadOnly, HostVolumeCapabilityMountReadWrite},
	}
)

// ruleKind is what a namespace, node_pool or host_volume block takes.
type ruleKind struct {
	name                   string         // the block, as messages name it
	validName              *regexp.Regexp // names and globs of names, as Nomad checks them
	nameChars              string         // which characters validName takes, but "*"
	policies, capabilities []string
	grants                 map[string][]string
}

// Node pools may have underscores in their names, namespaces and host
// volumes may not.
var (
	namespaceKind = &ruleKind{
		name:      "namespace",
		validName: regexp.MustCompile(`^[a-zA-Z0-9-*]{1,128}$`), nameChars: `letters, digits, "-"`,
		policies: namespacePolicies, capabilities: namespaceCapabilities, grants: namespaceGrants,
	}
	nodePoolKind = &ruleKind{
		name:      "node pool",
		validName: regexp.MustCompile(`^[a-zA-Z0-9-_*]{1,128}$`), nameChars: `letters, digits, "-", "_"`,
		policies: levelPolicies, capabilities: nodePoolCapabilities, grants: nodePoolGrants,
	}
	hostVolumeKind = &ruleKind{
		name:      "host volume",
		validName: namespaceKind.validName, nameChars: namespaceKind.nameChars,
		policies: levelPolicies, capabilities: hostVolumeCapabilities, grants: hostVolumeGrants,
	}
)

// The language's schema. Content refuses what it does not name, so an
// unknown block or argument, or a label missing, is an error at its place.
var (
	policySchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "namespace", LabelNames: []string{"name"}},
		{Type: "node_pool", LabelNames: []string{"name"}},
		{Type: "host_volume", LabelNames: []string{"name"}},
		{Type: "node"}, {Type: "agent"}, {Type: "operator"}, {Type: "quota"}, {Type: "plugin"},
	}}
	namespaceSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "policy"}, {Name: "capabilities"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "variables"}},
	}
	ruleSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "policy"}, {Name: "capabilities"}},
	}
	levelSchema     = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "policy", Required: true}}}
	variablesSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "path", LabelNames: []string{"path"}}}}
	pathSchema      = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "capabilities"}}}
)

// Error is Parse's error: what is wrong with the rules, each problem
// located in them.
type Error struct {
	Diagnostics hcl.Diagnostics
}

// maxShownProblems bounds how many problems Error renders: rules of a
// few hundred kilobytes may hold tens of thousands, each line of which
// lists what would be valid, and the message goes back to the client.
const maxShownProblems = 20

// Error renders each problem on a line as "file:line:col: summary;
// detail", the first maxShownProblems of them.
func (e *Error) Error() string {
	lines := make([]string, 0, min(len(e.Diagnostics), maxShownProblems+1))
	for i, d := range e.Diagnostics {
		if i == maxShownProblems {
			lines = append(lines, fmt.Sprintf("(and %d more problems)", len(e.Diagnostics)-i))
			break
		}
		s := d.Summary
		if d.Subject != nil {
			s = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, s)
		}
		if d.Detail != "" {
			s += "; " + d.Detail
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// Parse reads rules written in Nomad's ACL policy language, in HCL's
// native syntax; filename ("rules" if empty) names them in errors. It
// refuses, as Nomad does, a policy or capability that its block does not
// take, a name that is neither a valid name nor a glob of names, a
// variables block without paths, and rules with no block at all; and,
// where Nomad's lenient decoder ignored them, unknown blocks and
// arguments and a repeated node, agent, operator, quota or plugin block.
// Each namespace, node_pool and host_volume block's capabilities end with
// those its policy grants, and a variables path's read grants list, as
// Nomad expands them. The error, an *Error, names the line and column of
// each problem.
func Parse(filename, rules string) (*Policy, error) {
	if filename == "" {
		filename = "rules"
	}
	src := []byte(rules)
	if diags := checkTokens(filename, src); diags.HasErrors() {
		return nil, &Error{diags}
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, &Error{diags}
	}
	p, diags := decodePolicy(f.Body)
	if diags.HasErrors() {
		// In the order of the rules, not of the checks.
		slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int {
			return cmp.Compare(offset(a), offset(b))
		})
		return nil, &Error{diags}
	}
	return p, nil
}

func offset(d *hcl.Diagnostic) int {
	if d.Subject == nil {
		return 0
	}
	return d.Subject.Start.Byte
}

// maxDepth bounds how deep brackets and braces nest. hcl parses them
// recursively, and a few hundred kilobytes of "[[[[" would overflow the
// stack, which no recover catches; the language needs four levels.
const maxDepth = 32

// checkTokens refuses the tokens the language has no use for, before hcl
// parses them: its values are strings and lists of strings, so operators,
// templates, function calls and the like can only be mistakes, and
// refusing them leaves no operator chain ("!!!!...", "1+1+...") for hcl's
// recursive parser to overflow the stack on. It also bounds nesting.
func checkTokens(filename string, src []byte) hcl.Diagnostics {
	tokens, diags := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return diags
	}
	depth := 0
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack:
			if depth++; depth > maxDepth {
				return hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Nesting too deep",
					Detail:   fmt.Sprintf("Brackets and braces nest more than %d levels deep.", maxDepth),
					Subject:  t.Range.Ptr(),
				}}
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack:
			depth--
		case hclsyntax.TokenIdent, hclsyntax.TokenEqual, hclsyntax.TokenComma,
			hclsyntax.TokenOQuote, hclsyntax.TokenCQuote, hclsyntax.TokenQuotedLit,
			hclsyntax.TokenNumberLit, hclsyntax.TokenNewline, hclsyntax.TokenComment, hclsyntax.TokenEOF:
		default:
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Unexpected %q", t.Bytes),
				Detail:   "A policy holds blocks whose arguments are strings or lists of strings.",
				Subject:  t.Range.Ptr(),
			}}
		}
	}
	return nil
}

// decoder gathers the problems of a policy's blocks.
type decoder struct {
	diags hcl.Diagnostics
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	})
}

func decodePolicy(body hcl.Body) (*Policy, hcl.Diagnostics) {
	content, diags := body.Content(policySchema)
	d := &decoder{diags: diags}
	p := &Policy{}
	levels := map[string]*string{
		"node": &p.Node, "agent": &p.Agent, "operator": &p.Operator, "quota": &p.Quota, "plugin": &p.Plugin,
	}
	seen := map[string]*hcl.Block{}
	for _, b := range content.Blocks {
		switch b.Type {
		case "namespace":
			p.Namespaces = append(p.Namespaces, d.namespace(b))
		case "node_pool", "host_volume":
			content, diags := b.Body.Content(ruleSchema)
			d.diags = append(d.diags, diags...)
			if b.Type == "node_pool" {
				name, policy, caps := d.rule(b, content.Attributes, nodePoolKind)
				p.NodePools = append(p.NodePools, &NodePoolPolicy{Name: name, Policy: policy, Capabilities: caps})
			} else {
				name, policy, caps := d.rule(b, content.Attributes, hostVolumeKind)
				p.HostVolumes = append(p.HostVolumes, &HostVolumePolicy{Name: name, Policy: policy, Capabilities: caps})
			}
		default:
			// A second such block is refused rather than merged or
			// dropped: which one the writer meant is for them to say.
			if first := seen[b.Type]; first != nil {
				d.errorf(b.DefRange, fmt.Sprintf("Duplicate %s block", b.Type),
					"The %s block was already defined at %s.", b.Type, rangeStart(first.DefRange))
				continue
			}
			seen[b.Type] = b
			valid := levelPolicies
			if b.Type == "plugin" {
				valid = pluginPolicies
			}
			content, diags := b.Body.Content(levelSchema)
			d.diags = append(d.diags, diags...)
			if a := content.Attributes["policy"]; a != nil {
				*levels[b.Type] = d.policy(a, b.Type, valid)
			}
		}
	}
	if len(content.Blocks) == 0 && !d.diags.HasErrors() {
		d.errorf(hcl.Range{Filename: body.MissingItemRange().Filename, Start: hcl.InitialPos, End: hcl.InitialPos},
			"Empty policy", "A policy needs at least one rule: a namespace, node_pool, host_volume, node, agent, operator, quota or plugin block.")
	}
	return p, d.diags
}

func rangeStart(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// namespace decodes a namespace block and its variables.
func (d *decoder) namespace(b *hcl.Block) *NamespacePolicy {
	content, diags := b.Body.Content(namespaceSchema)
	d.diags = append(d.diags, diags...)
	name, policy, caps := d.rule(b, content.Attributes, namespaceKind)
	ns := &NamespacePolicy{Name: name, Policy: policy, Capabilities: caps}
	for i, vb := range content.Blocks {
		if i > 0 {
			d.errorf(vb.DefRange, "Duplicate variables block",
				"The variables block of this namespace was already defined at %s.", rangeStart(content.Blocks[0].DefRange))
			continue
		}
		ns.Variables = d.variables(vb)
	}
	return ns
}

// variables decodes a namespace's variables block.
func (d *decoder) variables(b *hcl.Block) *VariablesPolicy {
	content, diags := b.Body.Content(variablesSchema)
	d.diags = append(d.diags, diags...)
	v := &VariablesPolicy{}
	if len(content.Blocks) == 0 && !diags.HasErrors() {
		d.errorf(b.DefRange, "Invalid variables block", "A variables block needs at least one path block.")
	}
	for _, pb := range content.Blocks {
		spec := pb.Labels[0]
		if spec == "" {
			d.errorf(pb.LabelRanges[0], "Invalid variables path", "The path must not be empty.")
		}
		content, diags := pb.Body.Content(pathSchema)
		d.diags = append(d.diags, diags...)
		caps := d.list(content.Attributes["capabilities"], "variables", variablesCapabilities)
		// As Nomad: deny takes every other capability away, and read
		// implies list (reading a path means finding it).
		switch {
		case slices.Contains(caps, VariablesCapabilityDeny):
			caps = []string{VariablesCapabilityDeny}
		case slices.Contains(caps, VariablesCapabilityRead):
			caps = addUnique(caps, VariablesCapabilityList)
		}
		v.Paths = append(v.Paths, &VariablesPathPolicy{PathSpec: spec, Capabilities: caps})
	}
	return v
}

// rule decodes the label, policy and capabilities (attrs) of a
// namespace, node_pool or host_volume block of kind k, and adds to the
// capabilities those the policy grants.
func (d *decoder) rule(b *hcl.Block, attrs hcl.Attributes, k *ruleKind) (name, policy string, caps []string) {
	name = b.Labels[0]
	if !k.validName.MatchString(name) {
		d.errorf(b.LabelRanges[0], fmt.Sprintf("Invalid %s name", k.name),
			"%q is neither a %s name nor a glob of names: 1 to 128 %s and \"*\".", name, k.name, k.nameChars)
	}
	if a := attrs["policy"]; a != nil {
		policy = d.policy(a, k.name, k.policies)
	}
	caps = d.list(attrs["capabilities"], k.name, k.capabilities)
	for _, c := range k.grants[policy] {
		caps = addUnique(caps, c)
	}
	return name, policy, caps
}

// policy decodes a policy argument of a block (what, as messages name it).
func (d *decoder) policy(a *hcl.Attribute, what string, valid []string) string {
	s, ok := d.str(a.Expr)
	if !ok {
		return ""
	}
	if !slices.Contains(valid, s) {
		d.errorf(a.Expr.Range(), fmt.Sprintf("Invalid %s policy", what),
			"%q is not one of %s.", s, quoteAll(valid))
		return ""
	}
	return s
}

// list decodes a capabilities argument (nil: none) of a block (what, as messages name it).
func (d *decoder) list(a *hcl.Attribute, what string, valid []string) []string {
	if a == nil {
		return nil
	}
	exprs, diags := hcl.ExprList(a.Expr)
	d.diags = append(d.diags, diags...)
	var caps []string
	for _, e := range exprs {
		s, ok := d.str(e)
		if !ok {
			continue
		}
		if !slices.Contains(valid, s) {
			d.errorf(e.Range(), fmt.Sprintf("Invalid %s capability", what),
				"%q is not one of %s.", s, quoteAll(valid))
			continue
		}
		caps = addUnique(caps, s)
	}
	return caps
}

// str evaluates a string: a literal, as the language has no variables
// or functions.
func (d *decoder) str(e hcl.Expression) (string, bool) {
	v, diags := e.Value(nil)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return "", false
	}
	if v.IsNull() || !v.IsKnown() || !v.Type().Equals(cty.String) {
		d.errorf(e.Range(), "Incorrect value type", "A string is required here.")
		return "", false
	}
	return v.AsString(), true
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func addUnique(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}
