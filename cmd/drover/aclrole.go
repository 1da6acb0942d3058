package main

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// The acl role commands, as Nomad's (command/acl_role_*.go): create, list,
// info, update and delete, against /v1/acl/role(s) and Nomad's JSON.

const aclRoleGroupHelp = `Usage: drover acl role <subcommand> [options] [args]

  Creates, lists, reads, updates and deletes ACL roles: named sets of
  policies that tokens hold (acl token create -role-name/-role-id).

      $ drover acl role create -name=ops -policy=readonly -policy=ops
      $ drover acl role list
      $ drover acl role info <role-id>
      $ drover acl role info -by-name ops
      $ drover acl role update -description="operators" <role-id>
      $ drover acl role delete <role-id>`

// printACLRole prints a role as Nomad's CLI does (its policies sorted).
func (m *meta) printACLRole(r *api.ACLRole) {
	m.kv("ID", r.ID, "Name", r.Name, "Description", r.Description,
		"Policies", strings.Join(rolePolicyNames(r.Policies), ","),
		"Create Index", strconv.FormatUint(r.CreateIndex, 10), "Modify Index", strconv.FormatUint(r.ModifyIndex, 10))
}

// rolePolicyNames is the sorted names of a role's policy links.
func rolePolicyNames(links []*api.ACLRolePolicyLink) []string {
	out := make([]string, 0, len(links))
	for _, l := range links {
		if l != nil {
			out = append(out, l.Name)
		}
	}
	slices.Sort(out)
	return out
}

// rolePolicyLinks is the links of the named policies, each once.
func rolePolicyLinks(names []string) []*api.ACLRolePolicyLink {
	var out []*api.ACLRolePolicyLink
	var seen []string
	for _, n := range names {
		if !slices.Contains(seen, n) {
			seen = append(seen, n)
			out = append(out, &api.ACLRolePolicyLink{Name: n})
		}
	}
	return out
}

// roleLinks is a token's role links from -role-id and -role-name flags.
func roleLinks(ids, names []string) []*api.ACLTokenRoleLink {
	var out []*api.ACLTokenRoleLink
	for _, id := range ids {
		out = append(out, &api.ACLTokenRoleLink{ID: id})
	}
	for _, n := range names {
		out = append(out, &api.ACLTokenRoleLink{Name: n})
	}
	return out
}

type aclRoleCreateCommand struct{ *meta }

func (c *aclRoleCreateCommand) Synopsis() string { return "Create a new ACL role" }

func (c *aclRoleCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl role create [options]

  Creates an ACL role (PUT /v1/acl/role) and prints it. Needs a management
  token.
` + noNamespaceOptions + `

Create options:

  -name=NAME          The role's name (letters, digits and dashes, at most
                      128). Required.
  -description=TEXT   What the role is for, for people.
  -policy=NAME        A policy the role holds; repeat it for several. At
                      least one is required.
  -json               Print the role as the API's JSON.`)
}

func (c *aclRoleCreateCommand) Run(args []string) int {
	fs := c.flags("acl role create", true)
	name := fs.String("name", "", "")
	description := fs.String("description", "", "")
	var policies policiesFlag
	fs.Var(&policies, "policy", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	if *name == "" {
		return c.errorf("ACL role name must be specified using the -name flag")
	}
	if len(policies) == 0 {
		return c.errorf("At least one policy name must be specified using the -policy flag")
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	in := &api.ACLRole{Name: *name, Description: *description, Policies: rolePolicyLinks(policies)}
	var role api.ACLRole
	if _, err := cl.Put(bg, "/v1/acl/role", in, &role); err != nil {
		return c.errorf("creating the ACL role: %v", err)
	}
	if c.json {
		return c.printJSON(&role)
	}
	c.printACLRole(&role)
	return exitOK
}

type aclRoleListCommand struct{ *meta }

func (c *aclRoleListCommand) Synopsis() string { return "List ACL roles" }

func (c *aclRoleListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl role list [options]

  Lists the ACL roles (GET /v1/acl/roles): all of them to a management
  token, those it holds to another.
` + noNamespaceOptions + jsonOption)
}

func (c *aclRoleListCommand) Run(args []string) int {
	fs := c.flags("acl role list", true)
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	var roles []*api.ACLRoleListStub
	if _, err := cl.Get(bg, "/v1/acl/roles", &roles); err != nil {
		return c.errorf("listing ACL roles: %v", err)
	}
	if c.json {
		return c.printJSON(roles)
	}
	if len(roles) == 0 {
		c.ui.Output("No ACL roles found")
		return exitOK
	}
	rows := [][]string{{"ID", "Name", "Description", "Policies"}}
	for _, r := range roles {
		rows = append(rows, []string{r.ID, r.Name, r.Description, strings.Join(rolePolicyNames(r.Policies), ",")})
	}
	c.table(rows)
	return exitOK
}

type aclRoleInfoCommand struct{ *meta }

func (c *aclRoleInfoCommand) Synopsis() string { return "Fetch information on an existing ACL role" }

func (c *aclRoleInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl role info [options] <role-id>

  Prints the ACL role of the ID given (GET /v1/acl/role/<role-id>), or of
  the name given with -by-name (GET /v1/acl/role/name/<name>). Needs a
  management token or one that holds the role.
` + noNamespaceOptions + `

Info options:

  -by-name   Look the role up by its name.
  -json      Print the role as the API's JSON.`)
}

func (c *aclRoleInfoCommand) Run(args []string) int {
	fs := c.flags("acl role info", true)
	byName := fs.Bool("by-name", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <role-id>") {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	path := "/v1/acl/role/" + url.PathEscape(fs.Arg(0))
	if *byName {
		path = "/v1/acl/role/name/" + url.PathEscape(fs.Arg(0))
	}
	var role api.ACLRole
	if _, err := cl.Get(bg, path, &role); err != nil {
		return c.errorf("reading ACL role %q: %v", fs.Arg(0), err)
	}
	if c.json {
		return c.printJSON(&role)
	}
	c.printACLRole(&role)
	return exitOK
}

type aclRoleUpdateCommand struct{ *meta }

func (c *aclRoleUpdateCommand) Synopsis() string { return "Update an existing ACL role" }

func (c *aclRoleUpdateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl role update [options] <role-id>

  Changes the ACL role of the ID given: reads it, changes what the options
  name and writes it back (PUT /v1/acl/role/<role-id>). Needs a management
  token.
` + noNamespaceOptions + `

Update options:

  -name=NAME          The role's new name.
  -description=TEXT   The role's new description.
  -policy=NAME        A policy the role holds as well as those it holds;
                      repeat it for several.
  -no-merge           Replace the role with what the options give, rather
                      than change it: -name and at least one -policy are
                      required, and a description not given is emptied.
  -json               Print the role as the API's JSON.`)
}

func (c *aclRoleUpdateCommand) Run(args []string) int {
	fs := c.flags("acl role update", true)
	name := fs.String("name", "", "")
	description := fs.String("description", "", "")
	noMerge := fs.Bool("no-merge", false, "")
	var policies policiesFlag
	fs.Var(&policies, "policy", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <role-id>") {
		return exitError
	}
	id := fs.Arg(0)
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	path := "/v1/acl/role/" + url.PathEscape(id)
	var role api.ACLRole
	if _, err := cl.Get(bg, path, &role); err != nil {
		return c.errorf("reading ACL role %q: %v", id, err)
	}
	if *noMerge {
		if *name == "" {
			return c.errorf("ACL role name must be specified using the -name flag")
		}
		if len(policies) == 0 {
			return c.errorf("At least one policy name must be specified using the -policy flag")
		}
		role = api.ACLRole{ID: role.ID, Name: *name, Description: *description, Policies: rolePolicyLinks(policies)}
	} else {
		if *name == "" && *description == "" && len(policies) == 0 {
			return c.errorf("Please provide at least one flag to update the ACL role")
		}
		if *name != "" {
			role.Name = *name
		}
		if *description != "" {
			role.Description = *description
		}
		names := rolePolicyNames(role.Policies)
		role.Policies = rolePolicyLinks(append(names, policies...))
	}
	var updated api.ACLRole
	if _, err := cl.Put(bg, path, &role, &updated); err != nil {
		return c.errorf("updating ACL role %q: %v", id, err)
	}
	if c.json {
		return c.printJSON(&updated)
	}
	c.printACLRole(&updated)
	return exitOK
}

type aclRoleDeleteCommand struct{ *meta }

func (c *aclRoleDeleteCommand) Synopsis() string { return "Delete an existing ACL role" }

func (c *aclRoleDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl role delete [options] <role-id>

  Deletes the ACL role of the ID given (DELETE /v1/acl/role/<role-id>).
  Tokens that hold it keep nothing of it. Needs a management token.
` + noNamespaceOptions)
}

func (c *aclRoleDeleteCommand) Run(args []string) int {
	return c.deleteByName(args, "acl role delete", c.Help(), "<role-id>", func(id string) string { return "/v1/acl/role/" + url.PathEscape(id) }, "ACL role", "ACL role %s successfully deleted")
}
