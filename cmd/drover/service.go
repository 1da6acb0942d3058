package main

import (
	"cmp"
	"flag"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// The service commands, as Nomad 1.6's: list, info and delete, for the
// services that Nomad's native service discovery (provider "nomad")
// registers. They speak /v1/services and /v1/service/<name>, and print the
// api package's ServiceRegistration types.

const serviceGroupHelp = `Usage: drover service <subcommand> [options] [args]

  Interacts with the services that jobs register with Drover's own
  service discovery (a service block with provider = "nomad").

  List services:

      $ drover service list

  Detail the registrations of one service:

      $ drover service info <service_name>

  Delete one service registration:

      $ drover service delete <service_name> <service_id>`

// Messages as Nomad's CLI words them.
const (
	msgNoServiceRegistrations = "No service registrations found"
	errJSONAndTemplate        = "Both json and template formatting are not allowed"
)

// formatOptions documents -json and -t, which the commands that print
// through printJSONOrTemplate share.
const formatOptions = `
  -json            Print the API's JSON.
  -t=TMPL          Go template to render the API's answer with.`

// checkJSONOrTemplate refuses -json and -t together, as Nomad's Format
// does (Nomad's only once it has an answer to format).
func (m *meta) checkJSONOrTemplate(tmpl string) bool {
	if m.json && tmpl != "" {
		m.ui.Error(errJSONAndTemplate)
		return false
	}
	return true
}

// printJSONOrTemplate prints data as -json or -t asks; printed reports
// whether either did.
func (m *meta) printJSONOrTemplate(tmpl string, data any) (code int, printed bool) {
	switch {
	case m.json:
		return m.printJSON(data), true
	case tmpl != "":
		s, err := renderTemplate(tmpl, data)
		if err != nil {
			return m.errorf("%v", err), true
		}
		m.ui.Output(s)
		return exitOK, true
	}
	return exitOK, false
}

// serviceTags prints tags as Nomad's service commands do: [a,b].
func serviceTags(tags []string) string { return "[" + strings.Join(tags, ",") + "]" }

type serviceListCommand struct{ *meta }

func (c *serviceListCommand) Synopsis() string { return "Display all registered services" }

func (c *serviceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover service list [options]

  Lists the registered services (GET /v1/services): each service's name
  and the tags its registrations carry, sorted by namespace and name, with
  a Namespace column under -namespace=*. With ACLs, the token needs the
  read-job capability; the services of namespaces it may not read are
  left out.
` + apiOptions + `

Service list options:
` + formatOptions + `
  -verbose         Accepted for symmetry with service info; the list has
                   no IDs to print in full.`)
}

func (c *serviceListCommand) Run(args []string) int {
	fs := c.flags("service list", true)
	tmpl := fs.String("t", "", "")
	fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	var list []*api.ServiceRegistrationListStub
	if _, err := cl.Get(bg, "/v1/services", &list); err != nil {
		return c.errorf("listing service registrations: %v", err)
	}
	// Nomad's says so even under -json or -t.
	if len(list) == 0 {
		c.ui.Output(msgNoServiceRegistrations)
		return exitOK
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, list); printed {
		return code
	}
	c.table(serviceListRows(list, c.namespace == "*"))
	return exitOK
}

// serviceListRows is service list's table: namespaces sorted, their
// services sorted by name, each service's tags sorted; the Namespace
// column only when every namespace was asked for.
func serviceListRows(list []*api.ServiceRegistrationListStub, allNamespaces bool) [][]string {
	header := []string{"Service Name", "Tags"}
	if allNamespaces {
		header = []string{"Service Name", "Namespace", "Tags"}
	}
	rows := [][]string{header}
	list = slices.Clone(list)
	slices.SortStableFunc(list, func(a, b *api.ServiceRegistrationListStub) int { return cmp.Compare(a.Namespace, b.Namespace) })
	for _, ns := range list {
		services := slices.Clone(ns.Services)
		slices.SortStableFunc(services, func(a, b *api.ServiceRegistrationStub) int { return cmp.Compare(a.ServiceName, b.ServiceName) })
		for _, s := range services {
			tags := slices.Sorted(slices.Values(s.Tags))
			row := []string{orNone(s.ServiceName), serviceTags(tags)}
			if allNamespaces {
				row = []string{orNone(s.ServiceName), orNone(ns.Namespace), serviceTags(tags)}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

type serviceInfoCommand struct{ *meta }

func (c *serviceInfoCommand) Synopsis() string { return "Display the registrations of a service" }

func (c *serviceInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover service info [options] <service_name>

  Lists the registrations of the service <service_name> in the namespace
  (GET /v1/service/<service_name>), sorted by job ID: one per allocation
  that registered it. With ACLs, the token needs the read-job capability
  in the namespace. The wildcard namespace ("*") is refused.
` + apiOptions + `

Service info options:
` + formatOptions + `
  -verbose         Print each registration as a block of key = value
                   lines, with full IDs and its datacenter.
  -per-page=N      How many registrations a page holds. When there are
                   more, the command that lists the next page is printed
                   after the table; under -json or -t, the next page's
                   token is printed to standard error.
  -page-token=TOK  The page to start at (the token a previous page gave).
  -filter=EXPR     A go-bexpr expression the registrations must match.`)
}

func (c *serviceInfoCommand) Run(args []string) int {
	fs := c.flags("service info", true)
	tmpl := fs.String("t", "", "")
	verbose := fs.Bool("verbose", false, "")
	perPage := fs.Int("per-page", 0, "")
	pageToken := fs.String("page-token", "", "")
	filter := fs.String("filter", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <service_name>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	if *perPage < 0 {
		return c.errorf("-per-page=%d: give a positive number of registrations", *perPage)
	}
	// A service's registrations are looked up in one namespace; Nomad's
	// would find none in "*" and say there are none.
	cl, ok := c.singleNamespaceClient()
	if !ok {
		return exitError
	}
	name := fs.Arg(0)
	q := url.Values{}
	if *filter != "" {
		q.Set("filter", *filter)
	}
	if *perPage > 0 {
		q.Set("per_page", strconv.Itoa(*perPage))
	}
	if *pageToken != "" {
		q.Set("next_token", *pageToken)
	}
	path := "/v1/service/" + url.PathEscape(name)
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var regs []*api.ServiceRegistration
	meta, err := cl.Get(bg, path, &regs)
	if err != nil {
		return c.errorf("reading service %q: %v", name, err)
	}
	if len(regs) == 0 {
		c.ui.Output(msgNoServiceRegistrations)
		return exitOK
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, regs); printed {
		// Nomad's drops the token here; standard error keeps standard
		// output the JSON or the template's text alone.
		if code == exitOK && meta.NextToken != "" {
			c.ui.Warn("Next page token: " + meta.NextToken)
		}
		return code
	}
	// Several jobs may register a service of the same name: by job ID,
	// each job's registrations in the order the API gave them.
	regs = slices.Clone(regs)
	slices.SortStableFunc(regs, func(a, b *api.ServiceRegistration) int { return cmp.Compare(a.JobID, b.JobID) })
	if *verbose {
		for _, r := range regs {
			c.kv(
				"ID", orNone(r.ID),
				"Service Name", orNone(r.ServiceName),
				"Namespace", orNone(r.Namespace),
				"Job ID", orNone(r.JobID),
				"Alloc ID", orNone(r.AllocID),
				"Node ID", orNone(r.NodeID),
				"Datacenter", orNone(r.Datacenter),
				"Address", net.JoinHostPort(r.Address, strconv.Itoa(r.Port)),
				"Tags", serviceTags(r.Tags),
			)
			c.ui.Output("")
		}
	} else {
		rows := [][]string{{"Job ID", "Address", "Tags", "Node ID", "Alloc ID"}}
		for _, r := range regs {
			rows = append(rows, []string{
				orNone(r.JobID), orNone(serviceAddress(r.Address, r.Port)), serviceTags(r.Tags),
				orNone(shortID(r.NodeID)), orNone(shortID(r.AllocID)),
			})
		}
		c.table(rows)
	}
	if meta.NextToken != "" {
		c.ui.Output("\nResults have been paginated. To get the next page run:\n\n" +
			nextPageCommand("drover service info", fs, meta.NextToken))
	}
	return exitOK
}

// serviceAddress is a registration's address with its port, if it has
// one (IPv6 addresses bracketed).
func serviceAddress(address string, port int) string {
	if port == 0 {
		return address
	}
	return net.JoinHostPort(address, strconv.Itoa(port))
}

// nextPageCommand is the command line that lists the page after this one:
// the options given (fs.Visit: by name, each once) with -page-token set to
// token (added after them if not given), then the arguments; values and
// arguments are quoted for a POSIX shell where needed.
func nextPageCommand(command string, fs *flag.FlagSet, token string) string {
	words := []string{command}
	add := func(f *flag.Flag, value string) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && value == "true" {
			words = append(words, "-"+f.Name)
			return
		}
		words = append(words, "-"+f.Name+"="+shellQuote(value))
	}
	paged := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "page-token" {
			add(f, token)
			paged = true
			return
		}
		add(f, f.Value.String())
	})
	if !paged {
		add(fs.Lookup("page-token"), token)
	}
	// An argument that starts with "-" was given after "--".
	if slices.ContainsFunc(fs.Args(), func(a string) bool { return strings.HasPrefix(a, "-") }) {
		words = append(words, "--")
	}
	for _, a := range fs.Args() {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// shellSafe are the words a POSIX shell reads as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell, if it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type serviceDeleteCommand struct{ *meta }

func (c *serviceDeleteCommand) Synopsis() string { return "Deregister a registered service" }

func (c *serviceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover service delete [options] <service_name> <service_id>

  Deletes one registration of the service <service_name>, the one whose
  ID is <service_id> (DELETE /v1/service/<service_name>/<service_id>), as
  service info -verbose prints it: one registration at a time, to be used
  with care. With ACLs, the token needs the submit-job capability in the
  namespace. The wildcard namespace ("*") is refused.
` + apiOptions)
}

func (c *serviceDeleteCommand) Run(args []string) int {
	fs := c.flags("service delete", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 2, 2, "two arguments: <service_name> and <service_id>") {
		return exitError
	}
	cl, ok := c.singleNamespaceClient()
	if !ok {
		return exitError
	}
	name, id := fs.Arg(0), fs.Arg(1)
	if _, err := cl.Delete(bg, "/v1/service/"+url.PathEscape(name)+"/"+url.PathEscape(id), nil); err != nil {
		return c.errorf("deleting service registration %q of service %q: %v", id, name, err)
	}
	c.ui.Output("Successfully deleted service registration")
	return exitOK
}
