package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// The acl auth-method commands, as Nomad's (command/acl_auth_method_*.go):
// create, list, info, update and delete the auth methods that drover login
// signs in with, against /v1/acl/auth-method(s) and Nomad's JSON.

const aclAuthMethodGroupHelp = `Usage: drover acl auth-method <subcommand> [options] [args]

  Creates, lists, reads, updates and deletes ACL auth methods: the OIDC
  providers and JWT issuers whose users drover login trades for ACL
  tokens, which hold what the method's binding rules grant.

      $ drover acl auth-method create -name=okta -type=OIDC \
          -max-token-ttl=1h -token-locality=local -default \
          -config=@okta.json
      $ drover acl auth-method list
      $ drover acl auth-method info okta
      $ drover acl auth-method update -max-token-ttl=8h okta
      $ drover acl auth-method delete okta`

// authMethodOptions documents the options create and update share.
const authMethodOptions = `
  -type=TYPE       OIDC or JWT.
  -max-token-ttl=DURATION
                   How long the tokens a login makes live (1h, 30m...),
                   within the agent's token_min_expiration_ttl and
                   token_max_expiration_ttl.
  -token-locality=LOCALITY
                   local or global: the kind of token a login makes.
  -token-name-format=FORMAT
                   The name of the tokens a login makes, with ${...} of the
                   method and of the claims it maps (the default:
                   ${auth_method_type}-${auth_method_name}).
  -default         Make it the method drover login uses without -method;
                   at most one method is the default (-default=false
                   unmarks it).
  -config=JSON     The method's configuration as Nomad's API takes it
                   (JWKSURL, OIDCDiscoveryURL, OIDCClientID,
                   BoundAudiences, ClaimMappings...): the JSON itself,
                   @path for a file that holds it, or - for standard
                   input.` + formatOptions

// authMethodFlags are the options create and update share.
type authMethodFlags struct {
	typ, locality, nameFormat, config string
	maxTokenTTL                       time.Duration
	isDefault                         bool
}

func (f *authMethodFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.typ, "type", "", "")
	fs.StringVar(&f.locality, "token-locality", "", "")
	fs.StringVar(&f.nameFormat, "token-name-format", "", "")
	fs.StringVar(&f.config, "config", "", "")
	fs.DurationVar(&f.maxTokenTTL, "max-token-ttl", 0, "")
	fs.BoolVar(&f.isDefault, "default", false, "")
}

// apply writes the options given into am, checked as Nomad's CLI checks
// them (its messages): create gives them all, update those set.
func (f *authMethodFlags) apply(m *meta, am *api.ACLAuthMethod, given func(name string) bool) error {
	if given("type") {
		t := strings.ToUpper(f.typ)
		if t != api.ACLAuthMethodTypeOIDC && t != api.ACLAuthMethodTypeJWT {
			return errors.New("ACL auth method type must be set to 'OIDC' or 'JWT'")
		}
		am.Type = t
	}
	if given("token-locality") {
		if f.locality != api.ACLAuthMethodTokenLocalityLocal && f.locality != api.ACLAuthMethodTokenLocalityGlobal {
			return errors.New("Token locality must be set to either 'local' or 'global'")
		}
		am.TokenLocality = f.locality
	}
	if given("max-token-ttl") {
		if f.maxTokenTTL <= 0 {
			return errors.New("Max token TTL must be set to a positive duration, within the agent's limits")
		}
		am.MaxTokenTTL = f.maxTokenTTL
	}
	if given("token-name-format") {
		am.TokenNameFormat = f.nameFormat
	}
	if given("default") {
		am.Default = f.isDefault
	}
	if given("config") {
		if f.config == "" {
			return errors.New("Must provide ACL auth method config in JSON format")
		}
		raw, err := m.readDataSource(f.config)
		if err != nil {
			return fmt.Errorf("loading the configuration: %w", err)
		}
		var c api.ACLAuthMethodConfig
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("parsing the configuration: %w", err)
		}
		am.Config = &c
	}
	return nil
}

// printACLAuthMethod prints an auth method as Nomad's CLI does: its
// fields, then its configuration's.
func (m *meta) printACLAuthMethod(am *api.ACLAuthMethod) {
	m.kv("Name", am.Name,
		"Type", am.Type,
		"Locality", am.TokenLocality,
		"MaxTokenTTL", am.MaxTokenTTL.String(),
		"Token Name Format", am.TokenNameFormat,
		"Default", strconv.FormatBool(am.Default),
		"Create Index", strconv.FormatUint(am.CreateIndex, 10),
		"Modify Index", strconv.FormatUint(am.ModifyIndex, 10))
	c := am.Config
	if c == nil {
		return
	}
	fmt.Fprintln(m.out, "\nAuth Method Config")
	fmt.Fprintln(m.out)
	list := func(l []string) string { return strings.Join(l, ",") }
	m.kv("JWT Validation Public Keys", list(c.JWTValidationPubKeys),
		"JWKS URL", c.JWKSURL,
		"OIDC Discovery URL", c.OIDCDiscoveryURL,
		"OIDC Client ID", c.OIDCClientID,
		"OIDC Client Secret", c.OIDCClientSecret,
		"OIDC Scopes", list(c.OIDCScopes),
		"Bound audiences", list(c.BoundAudiences),
		"Bound issuer", list(c.BoundIssuer),
		"Allowed redirects URIs", list(c.AllowedRedirectURIs),
		"Discovery CA pem", list(c.DiscoveryCaPem),
		"JWKS CA cert", c.JWKSCACert,
		"Signing algorithms", list(c.SigningAlgs),
		"Expiration Leeway", c.ExpirationLeeway.String(),
		"NotBefore Leeway", c.NotBeforeLeeway.String(),
		"ClockSkew Leeway", c.ClockSkewLeeway.String(),
		"Claim mappings", claimMappings(c.ClaimMappings),
		"List claim mappings", claimMappings(c.ListClaimMappings))
}

// claimMappings prints a method's claim mappings as Nomad's CLI does, by
// claim: {claim: name}; {claim: name}.
func claimMappings(mappings map[string]string) string {
	out := make([]string, 0, len(mappings))
	for _, claim := range slices.Sorted(maps.Keys(mappings)) {
		out = append(out, fmt.Sprintf("{%s: %s}", claim, mappings[claim]))
	}
	return strings.Join(out, "; ")
}

type aclAuthMethodCreateCommand struct{ *meta }

func (c *aclAuthMethodCreateCommand) Synopsis() string { return "Create a new ACL auth method" }

func (c *aclAuthMethodCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl auth-method create [options]

  Creates an ACL auth method (PUT /v1/acl/auth-method) and prints it.
  -name, -type, -max-token-ttl, -token-locality and -config are required.
  Needs a management token.
` + noNamespaceOptions + `

Create options:

  -name=NAME       The method's name (letters, digits and dashes, at most
                   128), which drover login's -method and binding rules
                   name it by.` + authMethodOptions)
}

func (c *aclAuthMethodCreateCommand) Run(args []string) int {
	fs := c.flags("acl auth-method create", true)
	name := fs.String("name", "", "")
	var opts authMethodFlags
	opts.register(fs)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	if *name == "" {
		return c.errorf("ACL auth method name must be specified using the -name flag")
	}
	in := &api.ACLAuthMethod{Name: *name}
	if err := opts.apply(c.meta, in, func(string) bool { return true }); err != nil {
		return c.errorf("%v", err)
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	var method api.ACLAuthMethod
	if _, err := cl.Put(bg, "/v1/acl/auth-method", in, &method); err != nil {
		return c.errorf("creating the ACL auth method: %v", err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &method); printed {
		return code
	}
	c.printACLAuthMethod(&method)
	return exitOK
}

type aclAuthMethodListCommand struct{ *meta }

func (c *aclAuthMethodListCommand) Synopsis() string { return "List ACL auth methods" }

func (c *aclAuthMethodListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl auth-method list [options]

  Lists the ACL auth methods (GET /v1/acl/auth-methods): name, type and
  whether it is the default. Any token may list them, or none.
` + noNamespaceOptions + `

List options:
` + formatOptions)
}

func (c *aclAuthMethodListCommand) Run(args []string) int {
	fs := c.flags("acl auth-method list", true)
	tmpl := fs.String("t", "", "")
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	var methods []*api.ACLAuthMethodListStub
	if _, err := cl.Get(bg, "/v1/acl/auth-methods", &methods); err != nil {
		return c.errorf("listing ACL auth methods: %v", err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, methods); printed {
		return code
	}
	if len(methods) == 0 {
		c.ui.Output("No ACL auth methods found")
		return exitOK
	}
	rows := [][]string{{"Name", "Type", "Default"}}
	for _, m := range methods {
		rows = append(rows, []string{m.Name, m.Type, strconv.FormatBool(m.Default)})
	}
	c.table(rows)
	return exitOK
}

type aclAuthMethodInfoCommand struct{ *meta }

func (c *aclAuthMethodInfoCommand) Synopsis() string {
	return "Fetch information on an existing ACL auth method"
}

func (c *aclAuthMethodInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl auth-method info [options] <name>

  Prints the ACL auth method <name> and its configuration, its OIDC
  client secret included (GET /v1/acl/auth-method/<name>). Needs a
  management token.
` + noNamespaceOptions + `

Info options:
` + formatOptions)
}

func (c *aclAuthMethodInfoCommand) Run(args []string) int {
	fs := c.flags("acl auth-method info", true)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <name>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	name := fs.Arg(0)
	var method api.ACLAuthMethod
	if _, err := cl.Get(bg, "/v1/acl/auth-method/"+url.PathEscape(name), &method); err != nil {
		return c.errorf("reading ACL auth method %q: %v", name, err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &method); printed {
		return code
	}
	c.printACLAuthMethod(&method)
	return exitOK
}

type aclAuthMethodUpdateCommand struct{ *meta }

func (c *aclAuthMethodUpdateCommand) Synopsis() string { return "Update an existing ACL auth method" }

func (c *aclAuthMethodUpdateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl auth-method update [options] <name>

  Changes the ACL auth method <name>: reads it, changes what the options
  give and writes it back (PUT /v1/acl/auth-method/<name>). A -config
  replaces the whole configuration. Needs a management token.
` + noNamespaceOptions + `

Update options:
` + authMethodOptions)
}

func (c *aclAuthMethodUpdateCommand) Run(args []string) int {
	fs := c.flags("acl auth-method update", true)
	var opts authMethodFlags
	opts.register(fs)
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <name>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !slices.ContainsFunc([]string{"type", "token-locality", "max-token-ttl", "token-name-format", "default", "config"},
		func(name string) bool { return given[name] }) {
		return c.errorf("Please provide at least one flag to update the ACL auth method")
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	name := fs.Arg(0)
	path := "/v1/acl/auth-method/" + url.PathEscape(name)
	var method api.ACLAuthMethod
	if _, err := cl.Get(bg, path, &method); err != nil {
		return c.errorf("reading ACL auth method %q: %v", name, err)
	}
	if err := opts.apply(c.meta, &method, func(name string) bool { return given[name] }); err != nil {
		return c.errorf("%v", err)
	}
	var updated api.ACLAuthMethod
	if _, err := cl.Put(bg, path, &method, &updated); err != nil {
		return c.errorf("updating ACL auth method %q: %v", name, err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &updated); printed {
		return code
	}
	c.printACLAuthMethod(&updated)
	return exitOK
}

type aclAuthMethodDeleteCommand struct{ *meta }

func (c *aclAuthMethodDeleteCommand) Synopsis() string { return "Delete an existing ACL auth method" }

func (c *aclAuthMethodDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl auth-method delete [options] <name>

  Deletes the ACL auth method <name> and its binding rules
  (DELETE /v1/acl/auth-method/<name>). Tokens it made stay until they
  expire. Needs a management token.
` + noNamespaceOptions)
}

func (c *aclAuthMethodDeleteCommand) Run(args []string) int {
	return c.deleteByName(args, "acl auth-method delete", c.Help(), "<name>", func(name string) string { return "/v1/acl/auth-method/" + url.PathEscape(name) }, "ACL auth method", "ACL auth method %s successfully deleted")
}
