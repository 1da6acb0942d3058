package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
)

// The operator root keyring commands, as Nomad 1.6's: list, rotate and
// remove the root keys that encrypt variables and sign workload
// identities (/v1/operator/keyring/...).

const keyringGroupHelp = `Usage: drover operator root keyring <subcommand> [options] [args]

  Manages the root encryption keys that encrypt variables and sign
  workload identities: list them, rotate to a new key, remove unused
  ones. Only their metadata is shown, never the key material. With ACLs,
  every subcommand needs a management token.

  Rotate the encryption key:

      $ drover operator root keyring rotate

  List the keys:

      $ drover operator root keyring list

  Remove a key from the keyring:

      $ drover operator root keyring remove <key-id>`

// rootKeyMeta is a root key's metadata as Nomad 1.6's API has it (the api
// package's RootKeyMeta has grown fields 1.6 does not send).
type rootKeyMeta struct {
	KeyID       string
	Algorithm   string
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
	// State is active, inactive, rekeying or deprecated.
	State string
}

// rootKeys lists the keyring's root keys.
func rootKeys(cl *client.Client) ([]*rootKeyMeta, error) {
	keys := []*rootKeyMeta{}
	if _, err := cl.Get(bg, "/v1/operator/keyring/keys", &keys); err != nil {
		return nil, fmt.Errorf("listing the root keys: %w", err)
	}
	if keys == nil {
		keys = []*rootKeyMeta{}
	}
	return keys, nil
}

// printRootKeys prints keys as a table: their IDs short unless verbose.
func (m *meta) printRootKeys(keys []*rootKeyMeta, verbose bool) {
	rows := [][]string{{"Key", "State", "Create Time"}}
	for _, k := range keys {
		id := k.KeyID
		if !verbose {
			id = shortID(id)
		}
		rows = append(rows, []string{id, k.State, formatTime(k.CreateTime)})
	}
	m.table(rows)
}

type keyringListCommand struct{ *meta }

func (c *keyringListCommand) Synopsis() string { return "Lists the root encryption keys" }

func (c *keyringListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator root keyring list [options]

  Lists the root keys of the keyring (GET /v1/operator/keyring/keys): ID,
  state (active, inactive, rekeying, deprecated) and creation time, never
  the key material. Needs a management token.
` + noNamespaceOptions + `

Keyring options:

  -verbose         Show full key IDs.` + jsonOption)
}

func (c *keyringListCommand) Run(args []string) int {
	fs := c.flags("operator root keyring list", true)
	verbose := fs.Bool("verbose", false, "")
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	keys, err := rootKeys(cl)
	if err != nil {
		return c.errorf("%v", err)
	}
	if c.json {
		return c.printJSON(keys)
	}
	c.printRootKeys(keys, *verbose)
	return exitOK
}

type keyringRotateCommand struct{ *meta }

func (c *keyringRotateCommand) Synopsis() string { return "Rotates the root encryption key" }

func (c *keyringRotateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator root keyring rotate [options]

  Makes a new root key the active one (PUT /v1/operator/keyring/rotate):
  variables written from now on are encrypted with it. Needs a management
  token.
` + noNamespaceOptions + `

Keyring options:

  -full            Also decrypt every existing variable and encrypt it
                   again with the new key. The command returns at once;
                   the leader re-encrypts in the background.
  -verbose         Show the full key ID.`)
}

func (c *keyringRotateCommand) Run(args []string) int {
	fs := c.flags("operator root keyring rotate", false)
	full := fs.Bool("full", false, "")
	verbose := fs.Bool("verbose", false, "")
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok {
		return exitError
	}
	path := "/v1/operator/keyring/rotate"
	if *full {
		path += "?full=true"
	}
	var resp struct{ Key *rootKeyMeta }
	if _, err := cl.Put(bg, path, nil, &resp); err != nil {
		return c.errorf("rotating the root key: %v", err)
	}
	if resp.Key == nil {
		return c.errorf("rotating the root key: the agent's answer holds no key")
	}
	c.printRootKeys([]*rootKeyMeta{resp.Key}, *verbose)
	return exitOK
}

type keyringRemoveCommand struct{ *meta }

func (c *keyringRemoveCommand) Synopsis() string { return "Removes a root encryption key" }

func (c *keyringRemoveCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator root keyring remove [options] <key-id>

  Removes a root key from the keyring (DELETE
  /v1/operator/keyring/key/<key-id>). The active key cannot be removed.
  <key-id> may be a prefix of the ID, as list shows it, if only one key's
  ID starts with it. Needs a management token.
` + noNamespaceOptions + `

Keyring options:

  -force           Remove the key even if variables are still encrypted
                   with it or workload identities signed with it.`)
}

// keyIDLength is the length of a full key ID (a UUID).
const keyIDLength = 36

func (c *keyringRemoveCommand) Run(args []string) int {
	fs := c.flags("operator root keyring remove", false)
	force := fs.Bool("force", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <key-id>") {
		return exitError
	}
	cl, ok := c.noNamespaceClient()
	if !ok {
		return exitError
	}
	id := fs.Arg(0)
	if len(id) < keyIDLength {
		// The keys API takes no prefix: the listing is small, match here.
		keys, err := rootKeys(cl)
		if err != nil {
			return c.errorf("%v", err)
		}
		var matches []string
		for _, k := range keys {
			if k.KeyID == id {
				matches = []string{id}
				break
			}
			if strings.HasPrefix(k.KeyID, id) {
				matches = append(matches, k.KeyID)
			}
		}
		switch len(matches) {
		case 0:
			return c.errorf("no root key with ID prefix %q", id)
		case 1:
			id = matches[0]
		default:
			return c.errorf("root key ID prefix %q matches more than one key: %s", id, strings.Join(matches, ", "))
		}
	}
	path := "/v1/operator/keyring/key/" + url.PathEscape(id)
	if *force {
		path += "?force=true"
	}
	if _, err := cl.Delete(bg, path, nil); err != nil {
		return c.errorf("removing root key %s: %v", id, err)
	}
	c.ui.Output(fmt.Sprintf("Removed encryption key %s", id))
	return exitOK
}
