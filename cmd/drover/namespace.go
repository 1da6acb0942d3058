package main

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// The namespace commands, as Nomad 1.6's (command/namespace_*.go): apply,
// list, status, inspect and delete the namespaces jobs and variables live
// in, against /v1/namespace(s) and Nomad's JSON.

const namespaceGroupHelp = `Usage: drover namespace <subcommand> [options] [args]

  Creates, lists, reads and deletes namespaces, which keep jobs and what
  they own (allocations, evaluations, deployments, variables, services)
  apart from those of other namespaces. The namespace "default" always
  exists.

  Create or update a namespace:

      $ drover namespace apply -description "My new namespace" <name>
      $ drover namespace apply <spec-file>

  List namespaces:

      $ drover namespace list

  View the status of a namespace:

      $ drover namespace status <name>

  Delete a namespace:

      $ drover namespace delete <name>`

// apiNamespace is a namespace as Nomad 1.6's API shows and takes one. Its
// NodePoolConfiguration is Nomad Enterprise's: Drover's server shows none
// and refuses one.
type apiNamespace struct {
	Name                  string
	Description           string
	Quota                 string
	Capabilities          *namespaceCapabilities
	NodePoolConfiguration *api.NamespaceNodePoolConfiguration
	Meta                  map[string]string
	CreateIndex           uint64
	ModifyIndex           uint64
}

// namespaceCapabilities are the task drivers a namespace's jobs may use:
// those enabled (none: any), but those disabled.
type namespaceCapabilities struct {
	EnabledTaskDrivers  []string
	DisabledTaskDrivers []string
}

// namespacesPath lists the namespaces, by name prefix with ?prefix=.
const namespacesPath = "/v1/namespaces"

// namespacePath is the API path of the namespace name.
func namespacePath(name string) string { return "/v1/namespace/" + url.PathEscape(name) }

// byPrefix reads the list at list?prefix=prefix and returns the object
// whose name is prefix, or the only one listed; when several are listed
// and none is named prefix, it returns them as possible instead. Neither
// is set when none is listed.
func byPrefix[T any](cl *client.Client, list, prefix string, name func(*T) string) (match *T, possible []*T, err error) {
	var items []*T
	if _, err := cl.Get(bg, list+"?prefix="+url.QueryEscape(prefix), &items); err != nil {
		return nil, nil, err
	}
	if len(items) == 1 {
		return items[0], nil, nil
	}
	for _, it := range items {
		if name(it) == prefix {
			return it, nil, nil
		}
	}
	return nil, items, nil
}

// namespaceByPrefix finds the namespace a status or inspect names, as
// Nomad's CLI does: by exact name or unique prefix. It prints Nomad's
// message when there is no such namespace or several.
func (m *meta) namespaceByPrefix(cl *client.Client, prefix string) (*apiNamespace, bool) {
	ns, possible, err := byPrefix(cl, namespacesPath, prefix, func(ns *apiNamespace) string { return ns.Name })
	switch {
	case err != nil:
		m.errorf("retrieving namespaces: %v", err)
		return nil, false
	case len(possible) > 0:
		m.ui.Error("Prefix matched multiple namespaces\n\n" + formatNamespaces(possible))
		return nil, false
	case ns == nil:
		m.errorf("Namespace %q matched no namespaces", prefix)
		return nil, false
	}
	return ns, true
}

// formatNamespaces renders namespaces as Nomad's list does: by name, a
// name and a description each.
func formatNamespaces(namespaces []*apiNamespace) string {
	if len(namespaces) == 0 {
		return "No namespaces found"
	}
	namespaces = slices.Clone(namespaces)
	slices.SortFunc(namespaces, func(a, b *apiNamespace) int { return strings.Compare(a.Name, b.Name) })
	rows := [][]string{{"Name", "Description"}}
	for _, ns := range namespaces {
		rows = append(rows, []string{ns.Name, orNone(ns.Description)})
	}
	return formatTable(rows)
}

// printNamespace prints a namespace as Nomad's namespace status does: its
// fields ("*" enabled drivers: any), then its metadata and node pool
// configuration if it has them.
func (m *meta) printNamespace(ns *apiNamespace) {
	enabled, disabled := "*", ""
	if c := ns.Capabilities; c != nil {
		if len(c.EnabledTaskDrivers) > 0 {
			enabled = strings.Join(c.EnabledTaskDrivers, ",")
		}
		disabled = strings.Join(c.DisabledTaskDrivers, ",")
	}
	m.kv("Name", ns.Name,
		"Description", orNone(ns.Description),
		"Quota", orNone(ns.Quota),
		"EnabledDrivers", enabled,
		"DisabledDrivers", orNone(disabled))
	if len(ns.Meta) > 0 {
		fmt.Fprintln(m.out, "\nMetadata")
		m.kv(metaPairs(ns.Meta)...)
	}
	if npc := ns.NodePoolConfiguration; npc != nil {
		fmt.Fprintln(m.out, "\nNode Pool Configuration")
		pairs := []string{"Default", orNone(npc.Default)}
		if len(npc.Allowed) > 0 {
			pairs = append(pairs, "Allowed", strings.Join(npc.Allowed, ", "))
		}
		if len(npc.Denied) > 0 {
			pairs = append(pairs, "Denied", strings.Join(npc.Denied, ", "))
		}
		m.kv(pairs...)
	}
}

// metaPairs are a metadata map's key and value pairs, by key, for kv.
func metaPairs(meta map[string]string) []string {
	pairs := make([]string, 0, 2*len(meta))
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		pairs = append(pairs, k, orNone(meta[k]))
	}
	return pairs
}

// The schemas of an HCL namespace specification, as Nomad's namespace
// apply reads one: what it holds, what its capabilities and
// node_pool_config blocks hold.
var (
	namespaceSpecSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "name"}, {Name: "description"}, {Name: "quota"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}, {Type: "capabilities"}, {Type: "node_pool_config"}},
	}
	namespaceCapabilitiesSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "enabled_task_drivers"}, {Name: "disabled_task_drivers"}},
	}
	namespaceNodePoolConfigSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "default"}, {Name: "allowed"}, {Name: "denied"}},
	}
)

// parseNamespaceSpec parses a namespace specification: the API's JSON
// with asJSON, HCL otherwise (HCL's JSON syntax for a JSON file):
//
//	name        = "prod"
//	description = "Production"
//	meta {
//	  owner = "sre"
//	}
//	capabilities {
//	  enabled_task_drivers  = ["docker", "exec"]
//	  disabled_task_drivers = ["raw_exec"]
//	}
func parseNamespaceSpec(f *specFile, asJSON bool) (*apiNamespace, error) {
	ns := &apiNamespace{}
	if asJSON {
		if err := f.decodeJSON("namespace", ns); err != nil {
			return nil, err
		}
		return ns, nil
	}
	body, err := f.hclBody()
	if err != nil {
		return nil, err
	}
	content, diags := body.Content(namespaceSpecSchema)
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	diags = decodeAttrs(content, map[string]any{"name": &ns.Name, "description": &ns.Description, "quota": &ns.Quota})
	metaBlock, more := oneBlock(content, "meta")
	diags = append(diags, more...)
	ns.Meta, more = decodeMap(metaBlock)
	diags = append(diags, more...)
	capsBlock, more := oneBlock(content, "capabilities")
	diags = append(diags, more...)
	if capsBlock != nil {
		ns.Capabilities = &namespaceCapabilities{}
		caps, more := capsBlock.Body.Content(namespaceCapabilitiesSchema)
		diags = append(append(diags, more...), decodeAttrs(caps, map[string]any{
			"enabled_task_drivers":  &ns.Capabilities.EnabledTaskDrivers,
			"disabled_task_drivers": &ns.Capabilities.DisabledTaskDrivers})...)
	}
	npBlock, more := oneBlock(content, "node_pool_config")
	diags = append(diags, more...)
	if npBlock != nil {
		ns.NodePoolConfiguration = &api.NamespaceNodePoolConfiguration{}
		np, more := npBlock.Body.Content(namespaceNodePoolConfigSchema)
		diags = append(append(diags, more...), decodeAttrs(np, map[string]any{
			"default": &ns.NodePoolConfiguration.Default,
			"allowed": &ns.NodePoolConfiguration.Allowed,
			"denied":  &ns.NodePoolConfiguration.Denied})...)
	}
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	return ns, nil
}

type namespaceApplyCommand struct{ *meta }

func (c *namespaceApplyCommand) Synopsis() string { return "Create or update a namespace" }

func (c *namespaceApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace apply [options] <input>

  Creates or updates a namespace (PUT /v1/namespace). <input> is a
  specification file, "-" for standard input, or the name of the
  namespace: a namespace that exists keeps what the options do not
  change. A specification is HCL (HCL's JSON syntax for a *.json file or
  a JSON object), or the API's JSON with -json, and replaces the whole
  namespace:

      name        = "prod"
      description = "Production"
      meta {
        owner = "sre"
      }
      capabilities {
        enabled_task_drivers  = ["docker", "exec"]
        disabled_task_drivers = ["raw_exec"]
      }

  The namespace "default" can be updated but not renamed. Needs a
  management token.
` + noNamespaceOptions + `

Apply options:

  -description=TEXT
                   The namespace's description (with a name only).
  -quota=NAME      The quota to attach to the namespace (with a name
                   only; quotas are Nomad Enterprise's, which Drover's
                   server refuses).
  -json            Read the specification as the API's JSON (what
                   namespace inspect prints).`)
}

func (c *namespaceApplyCommand) Run(args []string) int {
	fs := c.flags("namespace apply", false)
	description := fs.String("description", "", "")
	quota := fs.String("quota", "", "")
	asJSON := fs.Bool("json", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <input>") {
		return exitError
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	input := fs.Arg(0)
	var ns *apiNamespace
	if fi, err := os.Stat(input); input == "-" || (err == nil && !fi.IsDir()) {
		if given["description"] || given["quota"] {
			c.ui.Warn("Flags are ignored when a file is specified!")
		}
		f, err := c.readSpecFile(input)
		if err != nil {
			return c.errorf("reading the namespace specification: %v", err)
		}
		if ns, err = parseNamespaceSpec(f, *asJSON); err != nil {
			hint := ""
			if !*asJSON && f.isJSON() {
				hint = "A namespace in the API's JSON, as namespace inspect prints one, is read with -json."
			}
			return c.printSpecError("Error parsing the namespace specification", err, hint)
		}
	} else {
		if input == "" {
			return c.errorf("Namespace name required")
		}
		ns = &apiNamespace{}
		if _, err := cl.Get(bg, namespacePath(input), ns); client.IsNotFound(err) {
			ns = &apiNamespace{Name: input}
		} else if err != nil {
			return c.errorf("looking up namespace %q: %v", input, err)
		}
		if given["description"] {
			ns.Description = *description
		}
		if given["quota"] {
			ns.Quota = *quota
		}
	}
	if ns.Name == "" {
		return c.errorf("Namespace name required")
	}
	if _, err := cl.Put(bg, "/v1/namespace", ns, nil); err != nil {
		return c.errorf("applying namespace %q: %v", ns.Name, err)
	}
	c.ui.Output(fmt.Sprintf("Successfully applied namespace %q!", ns.Name))
	return exitOK
}

type namespaceListCommand struct{ *meta }

func (c *namespaceListCommand) Synopsis() string { return "List namespaces" }

func (c *namespaceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace list [options]

  Lists the namespaces (GET /v1/namespaces), by name: name and
  description. With ACLs, a management token lists them all, another
  token those it holds a capability in.
` + noNamespaceOptions + `

List options:
` + formatOptions)
}

func (c *namespaceListCommand) Run(args []string) int {
	fs := c.flags("namespace list", true)
	tmpl := fs.String("t", "", "")
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	var namespaces []*apiNamespace
	if _, err := cl.Get(bg, namespacesPath, &namespaces); err != nil {
		return c.errorf("retrieving namespaces: %v", err)
	}
	// Nomad's client orders what it lists by creation, newest first,
	// which is the order -json and -t see; its table is by name.
	byCreation := slices.Clone(namespaces)
	slices.SortStableFunc(byCreation, func(a, b *apiNamespace) int { return cmp.Compare(b.CreateIndex, a.CreateIndex) })
	if code, printed := c.printJSONOrTemplate(*tmpl, byCreation); printed {
		return code
	}
	c.ui.Output(formatNamespaces(namespaces))
	return exitOK
}

type namespaceStatusCommand struct{ *meta }

func (c *namespaceStatusCommand) Synopsis() string { return "Display a namespace's status" }

func (c *namespaceStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace status [options] <namespace>

  Shows the namespace whose name, or a unique prefix of it, is given: its
  description, quota, the task drivers its jobs may use ("*": any) and
  those they may not, and its metadata. With ACLs, the token needs a
  capability in the namespace, or management.
` + noNamespaceOptions + `

Status options:
` + formatOptions)
}

func (c *namespaceStatusCommand) Run(args []string) int {
	fs := c.flags("namespace status", true)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <namespace>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	ns, ok := c.namespaceByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, ns); printed {
		return code
	}
	c.printNamespace(ns)
	return exitOK
}

type namespaceInspectCommand struct{ *meta }

func (c *namespaceInspectCommand) Synopsis() string { return "Inspect a namespace" }

func (c *namespaceInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace inspect [options] <namespace>

  Prints the namespace whose name, or a unique prefix of it, is given, in
  the API's JSON (which namespace apply -json reads back). With ACLs, the
  token needs a capability in the namespace, or management.
` + noNamespaceOptions + `

Inspect options:

  -t=TMPL          Go template to render the namespace with instead.`)
}

func (c *namespaceInspectCommand) Run(args []string) int {
	fs := c.flags("namespace inspect", false)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <namespace>") {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	ns, ok := c.namespaceByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	c.json = *tmpl == ""
	code, _ := c.printJSONOrTemplate(*tmpl, ns)
	return code
}

type namespaceDeleteCommand struct{ *meta }

func (c *namespaceDeleteCommand) Synopsis() string { return "Delete a namespace" }

func (c *namespaceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace delete [options] <namespace>

  Deletes the namespace <namespace> (DELETE /v1/namespace/<namespace>).
  A namespace that has jobs that are not stopped and done, or variables,
  cannot be deleted, nor can "default". Needs a management token.
` + noNamespaceOptions)
}

func (c *namespaceDeleteCommand) Run(args []string) int {
	return c.deleteByName(args, "namespace delete", c.Help(), "<namespace>", namespacePath, "namespace", "Successfully deleted namespace %q!")
}
