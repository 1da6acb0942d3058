package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// The acl binding-rule commands, as Nomad's (command/acl_binding_rule_*.go):
// create, list, info, update and delete the rules that say what the
// tokens an auth method's logins make hold, against
// /v1/acl/binding-rule(s) and Nomad's JSON. A rule is named by its ID or
// a unique prefix of it.

const aclBindingRuleGroupHelp = `Usage: drover acl binding-rule <subcommand> [options] [args]

  Creates, lists, reads, updates and deletes ACL binding rules: what the
  token of a login with an auth method holds (a role, a policy or
  management) when the claims the method maps match the rule's selector.

      $ drover acl binding-rule create -auth-method=okta \
          -selector='"engineering" in list.groups' \
          -bind-type=role -bind-name=engineers
      $ drover acl binding-rule list
      $ drover acl binding-rule info <rule-id>
      $ drover acl binding-rule update -description="engineers" <rule-id>
      $ drover acl binding-rule delete <rule-id>`

// bindingRuleOptions documents the options create and update share.
const bindingRuleOptions = `
  -description=TEXT
                   What the rule is for, for people (at most 256).
  -auth-method=NAME
                   The auth method whose logins the rule applies to.
  -selector=EXPR   A go-bexpr expression the claims the method maps must
                   match, as value.NAME and list.NAME ("" matches every
                   login).
  -bind-type=TYPE  What a matching login's token holds: role (the role
                   -bind-name names), policy (the policy it names) or
                   management (everything; no -bind-name).
  -bind-name=NAME  The role or policy, with ${value.NAME} of the mapped
                   claims interpolated.`

// printACLBindingRule prints a binding rule as Nomad's CLI does.
func (m *meta) printACLBindingRule(r *api.ACLBindingRule) {
	m.kv("ID", r.ID,
		"Description", r.Description,
		"Auth Method", r.AuthMethod,
		"Selector", strconv.Quote(r.Selector),
		"Bind Type", r.BindType,
		"Bind Name", r.BindName,
		"Create Time", formatACLTime(&r.CreateTime, "-"),
		"Modify Time", formatACLTime(&r.ModifyTime, "-"),
		"Create Index", strconv.FormatUint(r.CreateIndex, 10),
		"Modify Index", strconv.FormatUint(r.ModifyIndex, 10))
}

// bindingRulesPath lists the binding rules, by ID prefix with ?prefix=,
// for resolve.
const bindingRulesPath = "/v1/acl/binding-rules"

// bindingRulePath is the API path of the binding rule id.
func bindingRulePath(id string) string { return "/v1/acl/binding-rule/" + url.PathEscape(id) }

type aclBindingRuleCreateCommand struct{ *meta }

func (c *aclBindingRuleCreateCommand) Synopsis() string { return "Create a new ACL binding rule" }

func (c *aclBindingRuleCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl binding-rule create [options]

  Creates an ACL binding rule (PUT /v1/acl/binding-rule) and prints it,
  with the ID the agent gives it. -auth-method and -bind-type are
  required. Needs a management token.
` + noNamespaceOptions + `

Create options:
` + bindingRuleOptions + formatOptions)
}

func (c *aclBindingRuleCreateCommand) Run(args []string) int {
	fs := c.flags("acl binding-rule create", true)
	in := &api.ACLBindingRule{}
	fs.StringVar(&in.Description, "description", "", "")
	fs.StringVar(&in.AuthMethod, "auth-method", "", "")
	fs.StringVar(&in.Selector, "selector", "", "")
	fs.StringVar(&in.BindType, "bind-type", "", "")
	fs.StringVar(&in.BindName, "bind-name", "", "")
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	if in.AuthMethod == "" {
		return c.errorf("ACL binding rule auth method must be specified using the -auth-method flag")
	}
	if in.BindType == "" {
		return c.errorf("ACL binding rule bind type must be specified using the -bind-type flag")
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	var rule api.ACLBindingRule
	if _, err := cl.Put(bg, "/v1/acl/binding-rule", in, &rule); err != nil {
		return c.errorf("creating the ACL binding rule: %v", err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &rule); printed {
		return code
	}
	c.printACLBindingRule(&rule)
	return exitOK
}

type aclBindingRuleListCommand struct{ *meta }

func (c *aclBindingRuleListCommand) Synopsis() string { return "List ACL binding rules" }

func (c *aclBindingRuleListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl binding-rule list [options]

  Lists the ACL binding rules (GET /v1/acl/binding-rules): ID,
  description and auth method. Needs a management token.
` + noNamespaceOptions + `

List options:
` + formatOptions)
}

func (c *aclBindingRuleListCommand) Run(args []string) int {
	fs := c.flags("acl binding-rule list", true)
	tmpl := fs.String("t", "", "")
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	var rules []*api.ACLBindingRuleListStub
	if _, err := cl.Get(bg, bindingRulesPath, &rules); err != nil {
		return c.errorf("listing ACL binding rules: %v", err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, rules); printed {
		return code
	}
	if len(rules) == 0 {
		c.ui.Output("No ACL binding rules found")
		return exitOK
	}
	rows := [][]string{{"ID", "Description", "Auth Method"}}
	for _, r := range rules {
		rows = append(rows, []string{r.ID, r.Description, r.AuthMethod})
	}
	c.table(rows)
	return exitOK
}

type aclBindingRuleInfoCommand struct{ *meta }

func (c *aclBindingRuleInfoCommand) Synopsis() string {
	return "Fetch information on an existing ACL binding rule"
}

func (c *aclBindingRuleInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl binding-rule info [options] <rule-id>

  Prints the ACL binding rule whose ID, or a unique prefix of it, is given
  (GET /v1/acl/binding-rule/<rule-id>). Needs a management token.
` + noNamespaceOptions + `

Info options:
` + formatOptions)
}

func (c *aclBindingRuleInfoCommand) Run(args []string) int {
	fs := c.flags("acl binding-rule info", true)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <rule-id>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	id := fs.Arg(0)
	var rule api.ACLBindingRule
	full, err := resolve(cl, bindingRulesPath, id)
	if err == nil {
		_, err = cl.Get(bg, bindingRulePath(full), &rule)
	}
	if err != nil {
		return c.errorf("reading ACL binding rule %q: %v", id, err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &rule); printed {
		return code
	}
	c.printACLBindingRule(&rule)
	return exitOK
}

type aclBindingRuleUpdateCommand struct{ *meta }

func (c *aclBindingRuleUpdateCommand) Synopsis() string { return "Update an existing ACL binding rule" }

func (c *aclBindingRuleUpdateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl binding-rule update [options] <rule-id>

  Changes the ACL binding rule whose ID, or a unique prefix of it, is
  given: reads it, changes what the options give and writes it back
  (PUT /v1/acl/binding-rule/<rule-id>). Needs a management token.
` + noNamespaceOptions + `

Update options:
` + bindingRuleOptions + `
  -no-merge        Replace the rule with what the options give rather than
                   change it: -bind-type is required, and a description or
                   selector not given is emptied (the agent keeps the auth
                   method and bind name when none is given, as Nomad's
                   does).` + formatOptions)
}

func (c *aclBindingRuleUpdateCommand) Run(args []string) int {
	fs := c.flags("acl binding-rule update", true)
	description := fs.String("description", "", "")
	authMethod := fs.String("auth-method", "", "")
	selector := fs.String("selector", "", "")
	bindType := fs.String("bind-type", "", "")
	bindName := fs.String("bind-name", "", "")
	noMerge := fs.Bool("no-merge", false, "")
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <rule-id>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	switch {
	case *noMerge && *bindType == "":
		return c.errorf("ACL binding rule bind type must be specified using the -bind-type flag")
	case !*noMerge && *description == "" && *authMethod == "" && *selector == "" && *bindType == "" && *bindName == "":
		return c.errorf("Please provide at least one update for the ACL binding rule")
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	id := fs.Arg(0)
	var rule api.ACLBindingRule
	full, err := resolve(cl, bindingRulesPath, id)
	if err == nil {
		_, err = cl.Get(bg, bindingRulePath(full), &rule)
	}
	if err != nil {
		return c.errorf("reading ACL binding rule %q: %v", id, err)
	}
	if *noMerge {
		rule = api.ACLBindingRule{ID: rule.ID, AuthMethod: rule.AuthMethod}
	}
	for _, f := range []struct {
		field *string
		value string
	}{{&rule.Description, *description}, {&rule.AuthMethod, *authMethod}, {&rule.Selector, *selector},
		{&rule.BindType, *bindType}, {&rule.BindName, *bindName}} {
		if f.value != "" {
			*f.field = f.value
		}
	}
	var updated api.ACLBindingRule
	if _, err := cl.Put(bg, bindingRulePath(rule.ID), &rule, &updated); err != nil {
		return c.errorf("updating ACL binding rule %s: %v", rule.ID, err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &updated); printed {
		return code
	}
	c.printACLBindingRule(&updated)
	return exitOK
}

type aclBindingRuleDeleteCommand struct{ *meta }

func (c *aclBindingRuleDeleteCommand) Synopsis() string { return "Delete an existing ACL binding rule" }

func (c *aclBindingRuleDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl binding-rule delete [options] <rule-id>

  Deletes the ACL binding rule whose ID, or a unique prefix of it, is
  given (DELETE /v1/acl/binding-rule/<rule-id>). Tokens that logins made
  keep what it bound. Needs a management token.
` + noNamespaceOptions)
}

func (c *aclBindingRuleDeleteCommand) Run(args []string) int {
	fs := c.flags("acl binding-rule delete", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <rule-id>") {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	id := fs.Arg(0)
	full, err := resolve(cl, bindingRulesPath, id)
	if err == nil {
		_, err = cl.Delete(bg, bindingRulePath(full), nil)
	}
	if err != nil {
		return c.errorf("deleting ACL binding rule %q: %v", id, err)
	}
	c.ui.Output(fmt.Sprintf("ACL binding rule %s successfully deleted", full))
	return exitOK
}
