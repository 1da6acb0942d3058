package main

import (
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// The node pool commands, as Nomad 1.6's (command/node_pool_*.go): apply,
// list, info, nodes, jobs, delete and init, against /v1/node/pool(s) and
// Nomad's JSON. A pool is named by its name or a unique prefix of it,
// but for apply and delete.

const nodePoolGroupHelp = `Usage: drover node pool <subcommand> [options] [args]

  Creates, lists, reads and deletes node pools, which partition the nodes:
  a job runs on the nodes of the pool it names. The pools "all" (every
  node) and "default" always exist and cannot be changed; a node that
  registers in a pool that does not exist creates it.

  Write an example node pool specification:

      $ drover node pool init

  Create or update a node pool:

      $ drover node pool apply <path>

  List all node pools:

      $ drover node pool list

  Fetch information on an existing node pool:

      $ drover node pool info <name>

  List the nodes, or the jobs, of a node pool:

      $ drover node pool nodes <name>
      $ drover node pool jobs <name>

  Delete a node pool:

      $ drover node pool delete <name>`

// apiNodePool is a node pool as Nomad 1.6's API shows and takes one. Its
// SchedulerConfiguration is Nomad Enterprise's: Drover's server shows
// none and refuses one.
type apiNodePool struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	SchedulerConfiguration *api.NodePoolSchedulerConfiguration
	CreateIndex            uint64
	ModifyIndex            uint64
}

// nodePoolsPath lists the node pools, by name prefix with ?prefix=.
const nodePoolsPath = "/v1/node/pools"

// nodePoolPath is the API path of the node pool name.
func nodePoolPath(name string) string { return "/v1/node/pool/" + url.PathEscape(name) }

// nodePoolByPrefix finds the pool a command names, as Nomad's CLI does:
// by exact name or unique prefix. It prints Nomad's message when there
// is no such pool or several.
func (m *meta) nodePoolByPrefix(cl *client.Client, prefix string) (*apiNodePool, bool) {
	pool, possible, err := byPrefix(cl, nodePoolsPath, prefix, func(p *apiNodePool) string { return p.Name })
	switch {
	case err != nil:
		m.errorf("retrieving node pool: %v", err)
		return nil, false
	case len(possible) > 0:
		m.ui.Error("Prefix matched multiple node pools\n\n" + formatNodePools(possible))
		return nil, false
	case pool == nil:
		m.errorf("No node pool with prefix %q found", prefix)
		return nil, false
	}
	return pool, true
}

// formatNodePools renders pools as Nomad's list does, in the order given:
// a name and a description each.
func formatNodePools(pools []*apiNodePool) string {
	rows := [][]string{{"Name", "Description"}}
	for _, p := range pools {
		rows = append(rows, []string{p.Name, orNone(p.Description)})
	}
	return formatTable(rows)
}

// The schemas of an HCL node pool specification, as Nomad's node pool
// apply reads one: a node_pool block, what it holds, what its
// scheduler_config holds.
var (
	nodePoolFileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "node_pool", LabelNames: []string{"name"}}}}
	nodePoolSpecSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "description"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}, {Type: "scheduler_config"}},
	}
	nodePoolSchedulerConfigSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "scheduler_algorithm"}, {Name: "memory_oversubscription_enabled"}},
	}
)

// parseNodePoolSpec parses a node pool specification: the API's JSON
// with asJSON, HCL otherwise (HCL's JSON syntax for a JSON file):
//
//	node_pool "prod" {
//	  description = "Production"
//	  meta {
//	    owner = "sre"
//	  }
//	}
func parseNodePoolSpec(f *specFile, asJSON bool) (*apiNodePool, error) {
	pool := &apiNodePool{}
	if asJSON {
		if err := f.decodeJSON("node pool", pool); err != nil {
			return nil, err
		}
		return pool, nil
	}
	body, err := f.hclBody()
	if err != nil {
		return nil, err
	}
	content, diags := body.Content(nodePoolFileSchema)
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	block, diags := oneBlock(content, "node_pool")
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	if block == nil {
		return nil, f.errorAt(body.MissingItemRange(), "Missing node_pool block",
			`A node pool specification is one node_pool "<name>" { ... } block.`)
	}
	pool.Name = block.Labels[0]
	spec, diags := block.Body.Content(nodePoolSpecSchema)
	diags = append(diags, decodeAttrs(spec, map[string]any{"description": &pool.Description})...)
	metaBlock, more := oneBlock(spec, "meta")
	diags = append(diags, more...)
	pool.Meta, more = decodeMap(metaBlock)
	diags = append(diags, more...)
	schedBlock, more := oneBlock(spec, "scheduler_config")
	diags = append(diags, more...)
	if schedBlock != nil {
		sc := &api.NodePoolSchedulerConfiguration{}
		pool.SchedulerConfiguration = sc
		var algorithm string
		attrs, more := schedBlock.Body.Content(nodePoolSchedulerConfigSchema)
		diags = append(append(diags, more...), decodeAttrs(attrs, map[string]any{
			"scheduler_algorithm":             &algorithm,
			"memory_oversubscription_enabled": &sc.MemoryOversubscriptionEnabled})...)
		sc.SchedulerAlgorithm = api.SchedulerAlgorithm(algorithm)
	}
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	return pool, nil
}

// nodePoolListFlags are the paging and filter options of the commands
// that list (list, nodes, jobs), as Nomad's.
type nodePoolListFlags struct {
	filter, pageToken string
	perPage           int
}

// nodePoolListOptions documents nodePoolListFlags; what names what the
// filter applies to.
func nodePoolListOptions(what string) string {
	return `
  -filter=EXPR     A go-bexpr expression the ` + what + ` must match.
  -per-page=N      How many ` + what + ` a page holds (0: all). When there
                   are more, the command that lists the next page is
                   printed after the table; under -json or -t, the next
                   page's token is printed to standard error.
  -page-token=TOK  The page to start at (the token a previous page gave).`
}

func (f *nodePoolListFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.filter, "filter", "", "")
	fs.StringVar(&f.pageToken, "page-token", "", "")
	fs.IntVar(&f.perPage, "per-page", 0, "")
}

// query is the list's query string, "" or "?...".
func (f *nodePoolListFlags) query() string {
	q := url.Values{}
	if f.filter != "" {
		q.Set("filter", f.filter)
	}
	if f.perPage > 0 {
		q.Set("per_page", strconv.Itoa(f.perPage))
	}
	if f.pageToken != "" {
		q.Set("next_token", f.pageToken)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// printNextPage says how to list the next page, if there is one: after
// the table, the command that lists it; under -json or -t, its token on
// standard error, so that standard output holds only the list.
func (m *meta) printNextPage(command string, fs *flag.FlagSet, token string, formatted bool) {
	switch {
	case token == "":
	case formatted:
		m.ui.Warn("Next page token: " + token)
	default:
		m.ui.Output("\nResults have been paginated. To get the next page run:\n\n" + nextPageCommand(command, fs, token))
	}
}

type nodePoolApplyCommand struct{ *meta }

func (c *nodePoolApplyCommand) Synopsis() string { return "Create or update a node pool" }

func (c *nodePoolApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node pool apply [options] <input>

  Creates or updates the node pool a specification file (or "-", standard
  input) gives (PUT /v1/node/pools). A specification is HCL (node pool
  init writes an example; HCL's JSON syntax for a *.json file or a JSON
  object), or the API's JSON with -json:

      node_pool "prod" {
        description = "Production"
        meta {
          owner = "sre"
        }
      }

  The pools "all" and "default" cannot be changed. With ACLs, the token
  needs the write capability of a node_pool policy for the pool.
` + noNamespaceOptions + `

Apply options:

  -json            Read the specification as the API's JSON (what node
                   pool info -json prints).`)
}

func (c *nodePoolApplyCommand) Run(args []string) int {
	fs := c.flags("node pool apply", false)
	asJSON := fs.Bool("json", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <input>") {
		return exitError
	}
	f, err := c.readSpecFile(fs.Arg(0))
	if err != nil {
		return c.errorf("reading the node pool specification: %v", err)
	}
	pool, err := parseNodePoolSpec(f, *asJSON)
	if err != nil {
		hint := ""
		if !*asJSON && f.isJSON() {
			hint = "A node pool in the API's JSON, as node pool init -out=json writes one, is read with -json."
		}
		return c.printSpecError("Error parsing the node pool specification", err, hint)
	}
	if pool.Name == "" {
		return c.errorf("applying node pool: missing node pool name")
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	if _, err := cl.Put(bg, nodePoolsPath, pool, nil); err != nil {
		return c.errorf("applying node pool %q: %v", pool.Name, err)
	}
	c.ui.Output(fmt.Sprintf("Successfully applied node pool %q!", pool.Name))
	return exitOK
}

type nodePoolListCommand struct{ *meta }

func (c *nodePoolListCommand) Synopsis() string { return "List node pools" }

func (c *nodePoolListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node pool list [options]

  Lists the node pools (GET /v1/node/pools), by name: name and
  description. With ACLs, the pools listed are those the token may read.
` + noNamespaceOptions + `

List options:
` + formatOptions + nodePoolListOptions("node pools"))
}

func (c *nodePoolListCommand) Run(args []string) int {
	fs := c.flags("node pool list", true)
	tmpl := fs.String("t", "", "")
	var lf nodePoolListFlags
	lf.register(fs)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	var pools []*apiNodePool
	meta, err := cl.Get(bg, nodePoolsPath+lf.query(), &pools)
	if err != nil {
		return c.errorf("querying node pools: %v", err)
	}
	code, printed := c.printJSONOrTemplate(*tmpl, pools)
	if !printed {
		c.ui.Output(formatNodePools(pools))
	}
	if code == exitOK {
		c.printNextPage("drover node pool list", fs, meta.NextToken, printed)
	}
	return code
}

type nodePoolInfoCommand struct{ *meta }

func (c *nodePoolInfoCommand) Synopsis() string {
	return "Fetch information about an existing node pool"
}

func (c *nodePoolInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node pool info [options] <node-pool>

  Shows the node pool whose name, or a unique prefix of it, is given: its
  description, metadata and scheduler configuration. With ACLs, the token
  needs the read capability of a node_pool policy for the pool.
` + noNamespaceOptions + `

Info options:
` + formatOptions)
}

func (c *nodePoolInfoCommand) Run(args []string) int {
	fs := c.flags("node pool info", true)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <node-pool>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	pool, ok := c.nodePoolByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, pool); printed {
		return code
	}
	c.kv("Name", pool.Name, "Description", orNone(pool.Description))
	c.ui.Output("\nMetadata")
	if len(pool.Meta) > 0 {
		c.kv(metaPairs(pool.Meta)...)
	} else {
		c.ui.Output("No metadata")
	}
	c.ui.Output("\nScheduler Configuration")
	if sc := pool.SchedulerConfiguration; sc != nil {
		pairs := []string{"Scheduler Algorithm", orNone(string(sc.SchedulerAlgorithm))}
		if sc.MemoryOversubscriptionEnabled != nil {
			pairs = append(pairs, "Memory Oversubscription Enabled", strconv.FormatBool(*sc.MemoryOversubscriptionEnabled))
		}
		c.kv(pairs...)
	} else {
		c.ui.Output("No scheduler configuration")
	}
	return exitOK
}

type nodePoolNodesCommand struct{ *meta }

func (c *nodePoolNodesCommand) Synopsis() string { return "Fetch a list of nodes in a node pool" }

func (c *nodePoolNodesCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node pool nodes [options] <node-pool>

  Lists the nodes of the node pool whose name, or a unique prefix of it,
  is given (GET /v1/node/pool/<node-pool>/nodes; every node for "all").
  With ACLs, the token needs node read and the read capability of a
  node_pool policy for the pool.
` + noNamespaceOptions + `

Nodes options:
` + formatOptions + nodePoolListOptions("nodes") + `
  -verbose         Show full node IDs.`)
}

func (c *nodePoolNodesCommand) Run(args []string) int {
	fs := c.flags("node pool nodes", true)
	tmpl := fs.String("t", "", "")
	verbose := fs.Bool("verbose", false, "")
	var lf nodePoolListFlags
	lf.register(fs)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <node-pool>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	pool, ok := c.nodePoolByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	var nodes []*httpapi.NodeListStub
	meta, err := cl.Get(bg, nodePoolPath(pool.Name)+"/nodes"+lf.query(), &nodes)
	if err != nil {
		return c.errorf("querying nodes: %v", err)
	}
	// As Nomad's, even under -json or -t.
	if len(nodes) == 0 {
		c.ui.Output("No nodes")
		return exitOK
	}
	code, printed := c.printJSONOrTemplate(*tmpl, nodes)
	if !printed {
		id := idFormat(*verbose)
		rows := [][]string{{"ID", "DC", "Name", "Class", "Drain", "Eligibility", "Status"}}
		for _, n := range nodes {
			rows = append(rows, []string{id(n.ID), orNone(n.Datacenter), orNone(n.Name), orNone(n.NodeClass),
				strconv.FormatBool(n.Drain), orNone(n.SchedulingEligibility), orNone(n.Status)})
		}
		c.table(rows)
	}
	if code == exitOK {
		c.printNextPage("drover node pool nodes", fs, meta.NextToken, printed)
	}
	return code
}

type nodePoolJobsCommand struct{ *meta }

func (c *nodePoolJobsCommand) Synopsis() string { return "Fetch a list of jobs in a node pool" }

func (c *nodePoolJobsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node pool jobs [options] <node-pool>

  Lists the jobs of the namespace that run in the node pool whose name,
  or a unique prefix of it, is given (GET /v1/node/pool/<node-pool>/jobs;
  every job for "all"); -namespace=* lists those of every namespace. With
  ACLs, the token needs the read capability of a node_pool policy for the
  pool, and jobs are listed from the namespaces where it holds read-job.
` + apiOptions + `

Jobs options:
` + formatOptions + nodePoolListOptions("jobs"))
}

func (c *nodePoolJobsCommand) Run(args []string) int {
	fs := c.flags("node pool jobs", true)
	tmpl := fs.String("t", "", "")
	var lf nodePoolListFlags
	lf.register(fs)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <node-pool>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	pool, ok := c.nodePoolByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	var jobs []*httpapi.JobListStub
	meta, err := cl.Get(bg, nodePoolPath(pool.Name)+"/jobs"+lf.query(), &jobs)
	if err != nil {
		return c.errorf("querying jobs: %v", err)
	}
	// As Nomad's, even under -json or -t.
	if len(jobs) == 0 {
		c.ui.Output("No jobs")
		return exitOK
	}
	code, printed := c.printJSONOrTemplate(*tmpl, jobs)
	if !printed {
		c.table(jobListRows(jobs, c.namespace == "*"))
	}
	if code == exitOK {
		c.printNextPage("drover node pool jobs", fs, meta.NextToken, printed)
	}
	return code
}

// jobListRows are the rows of Nomad's job list: ID, type (periodic and
// parameterized jobs say so), priority, status and submit date, with
// each job's namespace when jobs of every namespace are listed.
func jobListRows(jobs []*httpapi.JobListStub, withNamespace bool) [][]string {
	header := []string{"ID", "Type", "Priority", "Status", "Submit Date"}
	if withNamespace {
		header = []string{"ID", "Namespace", "Type", "Priority", "Status", "Submit Date"}
	}
	rows := [][]string{header}
	for _, j := range jobs {
		typ := j.Type
		if j.Periodic {
			typ += "/periodic"
		}
		if j.ParameterizedJob {
			typ += "/parameterized"
		}
		row := []string{j.ID, typ, strconv.Itoa(j.Priority), statusString(j.Status, j.Stop), formatTime(j.SubmitTime)}
		if withNamespace {
			row = append(row[:1], append([]string{j.Namespace}, row[1:]...)...)
		}
		rows = append(rows, row)
	}
	return rows
}

type nodePoolDeleteCommand struct{ *meta }

func (c *nodePoolDeleteCommand) Synopsis() string { return "Delete a node pool" }

func (c *nodePoolDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node pool delete [options] <node-pool>

  Deletes the node pool <node-pool> (DELETE /v1/node/pool/<node-pool>).
  A pool that has nodes, or jobs that are not stopped and done, cannot be
  deleted, nor can "all" and "default". With ACLs, the token needs the
  delete capability of a node_pool policy for the pool.
` + noNamespaceOptions)
}

func (c *nodePoolDeleteCommand) Run(args []string) int {
	return c.deleteByName(args, "node pool delete", c.Help(), "<node-pool>", nodePoolPath, "node pool", "Successfully deleted node pool %q!")
}

// The files node pool init writes by default, as Nomad's.
const (
	defaultHCLNodePoolSpecFile  = "pool.nomad.hcl"
	defaultJSONNodePoolSpecFile = "pool.nomad.json"
)

// exampleHCLNodePoolSpec is the specification node pool init writes by
// default, Nomad's but for what it says of the scheduler configuration.
const exampleHCLNodePoolSpec = `node_pool "example" {

  description = "Example node pool"

  # meta is optional metadata on the node pool, defined as key-value pairs.
  # The scheduler does not use node pool metadata as part of scheduling.
  meta {
    environment = "prod"
    owner       = "sre"
  }

  # The scheduler configuration options specific to this node pool. This block
  # supports a subset of the fields supported in the global scheduler
  # configuration (see drover operator scheduler set-config):
  #
  # * scheduler_algorithm is the scheduling algorithm to use for the pool.
  #   If not defined, the global cluster scheduling algorithm is used.
  #
  # * memory_oversubscription_enabled specifies whether memory oversubscription
  #   is enabled. If not defined, the global cluster configuration is used.
  #
  # Available only in Nomad Enterprise: Drover's server refuses it.

  # scheduler_config {
  #   scheduler_algorithm             = "spread"
  #   memory_oversubscription_enabled = true
  # }
}
`

// exampleJSONNodePoolSpec is the specification node pool init -out=json
// writes: Nomad's but for its SchedulerConfiguration, which JSON cannot
// leave in a comment and Drover's server refuses.
const exampleJSONNodePoolSpec = `{
  "Name": "example",
  "Description": "Example node pool",
  "Meta": {
    "environment": "prod",
    "owner": "sre"
  }
}
`

type nodePoolInitCommand struct{ *meta }

func (c *nodePoolInitCommand) Synopsis() string {
	return "Create an example node pool specification file"
}

func (c *nodePoolInitCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node pool init [options] [<filename>]

  Writes an example node pool specification, for node pool apply to read,
  to <filename> (default pool.nomad.hcl, or pool.nomad.json with
  -out=json). An existing file is never overwritten.

Init options:

  -out=FORMAT      hcl (the default) or json (the API's JSON, which node
                   pool apply reads with -json).
  -json            Same as -out=json.
  -quiet           Print nothing when it succeeds.`)
}

func (c *nodePoolInitCommand) Run(args []string) int {
	flags := c.flags("node pool init", false)
	out := flags.String("out", outHCL, "")
	asJSON := flags.Bool("json", false, "")
	quiet := flags.Bool("quiet", false, "")
	if !c.parse(flags, args, c.Help()) || !c.args(flags, 0, 1, "no arguments or one: <filename>") {
		return exitError
	}
	outSet := false
	flags.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if *asJSON {
		if outSet && *out != outJSON {
			return c.errorf("-json and -out=%s name different formats", *out)
		}
		*out = outJSON
	}
	name, content := defaultHCLNodePoolSpecFile, exampleHCLNodePoolSpec
	switch *out {
	case outHCL:
	case outJSON:
		name, content = defaultJSONNodePoolSpecFile, exampleJSONNodePoolSpec
	default:
		c.ui.Error(`Invalid value for "-out"; valid values are [hcl, json]`)
		return exitError
	}
	if flags.NArg() == 1 {
		name = flags.Arg(0)
	}
	if !c.writeNewFile(name, content) {
		return exitError
	}
	if !*quiet {
		c.ui.Output("Example node pool specification written to " + name)
	}
	return exitOK
}
