package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// The acl commands, as Nomad's: bootstrap, policies and tokens (roles, auth
// methods and binding rules have files of their own). They speak Nomad's
// ACL API (/v1/acl/...) and its JSON (the api package's types).

const (
	tokenTypeClient     = "client"
	tokenTypeManagement = "management"
)

const aclGroupHelp = `Usage: drover acl <subcommand> [options] [args]

  Interacts with the ACL system (an agent with acl { enabled = true }):
  bootstrap it, write policies in Nomad's ACL policy language, group them
  in roles, hand out tokens that hold policies and roles, and set up the
  auth methods and binding rules of single sign-on (drover login).

  Bootstrap the ACL system and get the initial management token:

      $ drover acl bootstrap

  Write a policy and make a token that holds it:

      $ drover acl policy apply -description "Read jobs" readonly ro.hcl
      $ drover acl token create -name ci -policy readonly

  Or a role that holds it, and a token that holds the role:

      $ drover acl role create -name readers -policy readonly
      $ drover acl token create -name ci -role-name readers

  Or let users log in with single sign-on: an auth method (an OIDC
  provider or a JWT issuer) and binding rules that say what the tokens of
  its logins hold:

      $ drover acl auth-method create -name okta -type OIDC \
          -max-token-ttl 1h -token-locality local -default \
          -config @okta.json
      $ drover acl binding-rule create -auth-method okta \
          -selector '"dev" in list.groups' -bind-type role \
          -bind-name readers
      $ drover login

  The other commands take the token's secret ID with -token, or from
  $DROVER_TOKEN or $NOMAD_TOKEN.`

const aclPolicyGroupHelp = `Usage: drover acl policy <subcommand> [options] [args]

  Creates, lists, reads and deletes ACL policies.

      $ drover acl policy apply <name> <policy-file>
      $ drover acl policy list
      $ drover acl policy info <name>
      $ drover acl policy delete <name>`

const aclTokenGroupHelp = `Usage: drover acl token <subcommand> [options] [args]

  Creates, lists, reads, updates and deletes ACL tokens.

      $ drover acl token create -name "my-token" -policy foo -role-name bar
      $ drover acl token list
      $ drover acl token info <accessor-id>
      $ drover acl token self
      $ drover acl token update -policy foo <accessor-id>
      $ drover acl token delete <accessor-id>`

// readInput reads a file, or standard input for "-".
func (m *meta) readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(m.stdin())
	}
	return os.ReadFile(path)
}

// readDataSource reads an option's value as Nomad's CLI reads -config:
// "@path" reads the file at path, "-" standard input; any other value is
// the data itself.
func (m *meta) readDataSource(v string) ([]byte, error) {
	if path, ok := strings.CutPrefix(v, "@"); ok {
		return m.readInput(path)
	}
	if v == "-" {
		return m.readInput(v)
	}
	return []byte(v), nil
}

// printACLToken prints a token as Nomad's CLI does: its fields, then its
// policies and its roles (ID and name), n/a for a management token.
func (m *meta) printACLToken(t *api.ACLToken) {
	pairs := []string{
		"Accessor ID", t.AccessorID,
		"Secret ID", t.SecretID,
		"Name", t.Name,
		"Type", t.Type,
		"Global", strconv.FormatBool(t.Global),
		"Create Time", formatACLTime(&t.CreateTime, "-"),
		"Expiry Time", formatACLTime(t.ExpirationTime, "<none>"),
		"Create Index", strconv.FormatUint(t.CreateIndex, 10),
		"Modify Index", strconv.FormatUint(t.ModifyIndex, 10),
	}
	if t.Type == tokenTypeManagement {
		m.kv(append(pairs, "Policies", "n/a", "Roles", "n/a")...)
		return
	}
	m.kv(append(pairs, "Policies", fmt.Sprintf("%v", t.Policies))...)
	fmt.Fprintln(m.out)
	fmt.Fprintln(m.out, "Roles")
	if len(t.Roles) == 0 {
		fmt.Fprintln(m.out, "<none>")
		return
	}
	rows := [][]string{{"ID", "Name"}}
	for _, r := range t.Roles {
		if r != nil {
			rows = append(rows, []string{r.ID, r.Name})
		}
	}
	m.table(rows)
}

// formatACLTime prints a time of the ACL API, or none if it is unset.
func formatACLTime(t *time.Time, none string) string {
	if t == nil || t.IsZero() {
		return none
	}
	return t.Local().Format(time.RFC3339)
}

func checkTokenType(t string) error {
	if t != tokenTypeClient && t != tokenTypeManagement {
		return fmt.Errorf("-type %q is neither %q nor %q", t, tokenTypeClient, tokenTypeManagement)
	}
	return nil
}

// policiesFlag collects repeated -policy flags.
type policiesFlag []string

func (p *policiesFlag) String() string     { return strings.Join(*p, ",") }
func (p *policiesFlag) Set(v string) error { *p = append(*p, v); return nil }

type aclBootstrapCommand struct{ *meta }

func (c *aclBootstrapCommand) Synopsis() string {
	return "Bootstrap the ACL system for initial token"
}

func (c *aclBootstrapCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl bootstrap [options] [<path>]

  Bootstraps the ACL system (POST /v1/acl/bootstrap): makes the initial
  management token and prints it, its secret ID included. The secret is a
  new UUID, or the one <path> holds ("-": standard input), so that it can
  be chosen beforehand. Bootstrapping works once; to do it again, write
  the reset index the refusal names to the acl-bootstrap-reset file in the
  leader's data directory.
` + noNamespaceOptions + `

Bootstrap options:

  -json            Print the token as the API's JSON.`)
}

func (c *aclBootstrapCommand) Run(args []string) int {
	fs := c.flags("acl bootstrap", true)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 1, "up to one argument: [<path>]") {
		return exitError
	}
	var secret string
	if fs.NArg() == 1 && fs.Arg(0) != "" {
		b, err := c.readInput(fs.Arg(0))
		if err != nil {
			return c.errorf("reading the bootstrap secret: %v", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	var token api.ACLToken
	if _, err := cl.Post(bg, "/v1/acl/bootstrap", &api.BootstrapRequest{BootstrapSecret: secret}, &token); err != nil {
		return c.errorf("bootstrapping the ACL system: %v", err)
	}
	if c.json {
		return c.printJSON(&token)
	}
	c.printACLToken(&token)
	return exitOK
}

type aclPolicyApplyCommand struct{ *meta }

func (c *aclPolicyApplyCommand) Synopsis() string { return "Create or update an ACL policy" }

func (c *aclPolicyApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy apply [options] <name> <path>

  Creates or updates the ACL policy <name> (POST /v1/acl/policy/<name>)
  with the rules <path> holds ("-": standard input), written in Nomad's
  ACL policy language. Needs a management token.
` + noNamespaceOptions + `

Apply options:

  -description=TEXT  The policy's description, for people.`)
}

func (c *aclPolicyApplyCommand) Run(args []string) int {
	fs := c.flags("acl policy apply", false)
	description := fs.String("description", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 2, 2, "two arguments: <name> and <path>") {
		return exitError
	}
	name, path := fs.Arg(0), fs.Arg(1)
	rules, err := c.readInput(path)
	if err != nil {
		return c.errorf("reading the policy: %v", err)
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	p := &api.ACLPolicy{Name: name, Description: *description, Rules: string(rules)}
	if _, err := cl.Post(bg, "/v1/acl/policy/"+url.PathEscape(name), p, nil); err != nil {
		return c.errorf("writing ACL policy %q: %v", name, err)
	}
	c.ui.Output(fmt.Sprintf("Successfully wrote %q ACL policy!", name))
	return exitOK
}

type aclPolicyListCommand struct{ *meta }

func (c *aclPolicyListCommand) Synopsis() string { return "List ACL policies" }

func (c *aclPolicyListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy list [options]

  Lists the ACL policies (GET /v1/acl/policies): name and description. A
  management token lists them all.
` + noNamespaceOptions + jsonOption)
}

func (c *aclPolicyListCommand) Run(args []string) int {
	fs := c.flags("acl policy list", true)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	var policies []*api.ACLPolicyListStub
	if _, err := cl.Get(bg, "/v1/acl/policies", &policies); err != nil {
		return c.errorf("listing ACL policies: %v", err)
	}
	if c.json {
		return c.printJSON(policies)
	}
	if len(policies) == 0 {
		c.ui.Output("No policies found")
		return exitOK
	}
	rows := [][]string{{"Name", "Description"}}
	for _, p := range policies {
		rows = append(rows, []string{p.Name, p.Description})
	}
	c.table(rows)
	return exitOK
}

type aclPolicyInfoCommand struct{ *meta }

func (c *aclPolicyInfoCommand) Synopsis() string { return "Fetch info on an existing ACL policy" }

func (c *aclPolicyInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy info [options] <name>

  Prints the ACL policy <name> and its rules (GET /v1/acl/policy/<name>).
  Needs a management token, or a token that holds the policy.
` + noNamespaceOptions)
}

func (c *aclPolicyInfoCommand) Run(args []string) int {
	fs := c.flags("acl policy info", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <name>") {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	var p api.ACLPolicy
	if _, err := cl.Get(bg, "/v1/acl/policy/"+url.PathEscape(fs.Arg(0)), &p); err != nil {
		return c.errorf("reading ACL policy %q: %v", fs.Arg(0), err)
	}
	c.kv("Name", p.Name,
		"Description", p.Description,
		"CreateIndex", strconv.FormatUint(p.CreateIndex, 10),
		"ModifyIndex", strconv.FormatUint(p.ModifyIndex, 10))
	fmt.Fprintf(c.out, "\nRules\n\n%s", p.Rules)
	if !strings.HasSuffix(p.Rules, "\n") {
		fmt.Fprintln(c.out)
	}
	return exitOK
}

type aclPolicyDeleteCommand struct{ *meta }

func (c *aclPolicyDeleteCommand) Synopsis() string { return "Delete an existing ACL policy" }

func (c *aclPolicyDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy delete [options] <name>

  Deletes the ACL policy <name> (DELETE /v1/acl/policy/<name>). Needs a
  management token.
` + noNamespaceOptions)
}

func (c *aclPolicyDeleteCommand) Run(args []string) int {
	return c.deleteByName(args, "acl policy delete", c.Help(), "<name>", func(name string) string { return "/v1/acl/policy/" + url.PathEscape(name) }, "ACL policy", "Successfully deleted %s policy!")
}

type aclTokenCreateCommand struct{ *meta }

func (c *aclTokenCreateCommand) Synopsis() string { return "Create a new ACL token" }

func (c *aclTokenCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token create [options]

  Creates an ACL token (POST /v1/acl/token) and prints it, its secret ID
  included. Needs a management token.
` + noNamespaceOptions + `

Create options:

  -name=NAME       The token's name, for people.
  -type=TYPE       client (the default), which holds the policies -policy
                   names, or management, which may do everything.
  -policy=NAME     A policy the token holds (client tokens only); repeat it
                   for several.
  -role-id=ID      A role the token holds, by ID (client tokens only);
                   repeat it for several.
  -role-name=NAME  A role the token holds, by name (client tokens only);
                   repeat it for several.
  -global          Mark the token global (Nomad replicates such tokens to
                   every region; Drover stores the mark).
  -ttl=DURATION    How long the token lives (5m, 1h...) within the agent's
                   limits; without it, the token never expires.
  -json            Print the token as the API's JSON.`)
}

func (c *aclTokenCreateCommand) Run(args []string) int {
	fs := c.flags("acl token create", true)
	name := fs.String("name", "", "")
	typ := fs.String("type", tokenTypeClient, "")
	global := fs.Bool("global", false, "")
	ttl := fs.String("ttl", "", "")
	var policies, roleIDs, roleNames policiesFlag
	fs.Var(&policies, "policy", "")
	fs.Var(&roleIDs, "role-id", "")
	fs.Var(&roleNames, "role-name", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	if err := checkTokenType(*typ); err != nil {
		return c.errorf("%v", err)
	}
	t := &api.ACLToken{Name: *name, Type: *typ, Policies: policies, Roles: roleLinks(roleIDs, roleNames), Global: *global}
	if *ttl != "" {
		d, err := time.ParseDuration(*ttl)
		if err != nil {
			return c.errorf("-ttl: %v", err)
		}
		if d <= 0 {
			return c.errorf("-ttl %s is not a positive duration", *ttl)
		}
		t.ExpirationTTL = d
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	var token api.ACLToken
	if _, err := cl.Post(bg, "/v1/acl/token", t, &token); err != nil {
		return c.errorf("creating the token: %v", err)
	}
	if c.json {
		return c.printJSON(&token)
	}
	c.printACLToken(&token)
	return exitOK
}

type aclTokenListCommand struct{ *meta }

func (c *aclTokenListCommand) Synopsis() string { return "List ACL tokens" }

func (c *aclTokenListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token list [options]

  Lists the ACL tokens (GET /v1/acl/tokens): name, type, whether global,
  accessor ID and whether expired. Needs a management token.
` + noNamespaceOptions + jsonOption)
}

func (c *aclTokenListCommand) Run(args []string) int {
	fs := c.flags("acl token list", true)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	var tokens []*api.ACLTokenListStub
	if _, err := cl.Get(bg, "/v1/acl/tokens", &tokens); err != nil {
		return c.errorf("listing ACL tokens: %v", err)
	}
	if c.json {
		return c.printJSON(tokens)
	}
	if len(tokens) == 0 {
		c.ui.Output("No tokens found")
		return exitOK
	}
	now := c.clock()
	rows := [][]string{{"Name", "Type", "Global", "Accessor ID", "Expired"}}
	for _, t := range tokens {
		expired := t.ExpirationTime != nil && !t.ExpirationTime.IsZero() && t.ExpirationTime.Before(now)
		rows = append(rows, []string{t.Name, t.Type, strconv.FormatBool(t.Global), t.AccessorID, strconv.FormatBool(expired)})
	}
	c.table(rows)
	return exitOK
}

type aclTokenInfoCommand struct{ *meta }

func (c *aclTokenInfoCommand) Synopsis() string { return "Fetch information on an existing ACL token" }

func (c *aclTokenInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token info [options] <accessor-id>

  Prints the ACL token whose accessor ID is given, its secret ID included
  (GET /v1/acl/token/<accessor-id>). Needs a management token.
` + noNamespaceOptions)
}

func (c *aclTokenInfoCommand) Run(args []string) int {
	fs := c.flags("acl token info", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <accessor-id>") {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	var token api.ACLToken
	if _, err := cl.Get(bg, "/v1/acl/token/"+url.PathEscape(fs.Arg(0)), &token); err != nil {
		return c.errorf("reading token %q: %v", fs.Arg(0), err)
	}
	c.printACLToken(&token)
	return exitOK
}

type aclTokenSelfCommand struct{ *meta }

func (c *aclTokenSelfCommand) Synopsis() string { return "Lookup self ACL token" }

func (c *aclTokenSelfCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token self [options]

  Prints the ACL token the command authenticates with (-token,
  $DROVER_TOKEN or $NOMAD_TOKEN) (GET /v1/acl/token/self).
` + noNamespaceOptions)
}

func (c *aclTokenSelfCommand) Run(args []string) int {
	fs := c.flags("acl token self", false)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	var token api.ACLToken
	if _, err := cl.Get(bg, "/v1/acl/token/self", &token); err != nil {
		return c.errorf("reading the token: %v", err)
	}
	c.printACLToken(&token)
	return exitOK
}

type aclTokenUpdateCommand struct{ *meta }

func (c *aclTokenUpdateCommand) Synopsis() string { return "Update an existing ACL token" }

func (c *aclTokenUpdateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token update [options] <accessor-id>

  Changes the ACL token whose accessor ID is given: reads it, changes what
  the options name and writes it back (POST /v1/acl/token/<accessor-id>).
  The rest, its secret ID, global mark and expiry included, stays. Needs a
  management token.
` + noNamespaceOptions + `

Update options:

  -name=NAME       The token's new name.
  -type=TYPE       The token's new type: client or management (which
                   drops its policies and roles). Default: the type it has.
  -policy=NAME     A policy the token holds from now on, in place of those
                   it held; repeat it for several (client tokens only).
  -role-id=ID      A role the token holds from now on, by ID; with
                   -role-name, in place of the roles it held; repeat it for
                   several (client tokens only).
  -role-name=NAME  A role the token holds from now on, by name.`)
}

func (c *aclTokenUpdateCommand) Run(args []string) int {
	fs := c.flags("acl token update", false)
	name := fs.String("name", "", "")
	typ := fs.String("type", "", "")
	var policies, roleIDs, roleNames policiesFlag
	fs.Var(&policies, "policy", "")
	fs.Var(&roleIDs, "role-id", "")
	fs.Var(&roleNames, "role-name", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <accessor-id>") {
		return exitError
	}
	if *typ != "" {
		if err := checkTokenType(*typ); err != nil {
			return c.errorf("%v", err)
		}
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	accessor := fs.Arg(0)
	path := "/v1/acl/token/" + url.PathEscape(accessor)
	var token api.ACLToken
	if _, err := cl.Get(bg, path, &token); err != nil {
		return c.errorf("reading token %q: %v", accessor, err)
	}
	if *name != "" {
		token.Name = *name
	}
	if *typ != "" {
		token.Type = *typ
		if *typ == tokenTypeManagement {
			token.Policies, token.Roles = nil, nil
		}
	}
	if len(policies) > 0 {
		token.Policies = policies
	}
	if len(roleIDs)+len(roleNames) > 0 {
		token.Roles = roleLinks(roleIDs, roleNames)
	}
	var updated api.ACLToken
	if _, err := cl.Post(bg, path, &token, &updated); err != nil {
		return c.errorf("updating token %q: %v", accessor, err)
	}
	c.printACLToken(&updated)
	return exitOK
}

type aclTokenDeleteCommand struct{ *meta }

func (c *aclTokenDeleteCommand) Synopsis() string { return "Delete an existing ACL token" }

func (c *aclTokenDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token delete [options] <accessor-id>

  Deletes the ACL token whose accessor ID is given
  (DELETE /v1/acl/token/<accessor-id>). Needs a management token.
` + noNamespaceOptions)
}

func (c *aclTokenDeleteCommand) Run(args []string) int {
	fs := c.flags("acl token delete", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <accessor-id>") {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	accessor := fs.Arg(0)
	if _, err := cl.Delete(bg, "/v1/acl/token/"+url.PathEscape(accessor), nil); err != nil {
		return c.errorf("deleting token %q: %v", accessor, err)
	}
	c.ui.Output(fmt.Sprintf("Token %s successfully deleted", accessor))
	return exitOK
}
