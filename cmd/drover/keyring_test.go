package main

import (
	"strings"
	"testing"
)

func TestKeyringCommands(t *testing.T) {
	const (
		activeID   = "5c7b1a2e-1111-4a4a-8b8b-000000000001"
		inactiveID = "9d3e4f5a-2222-4a4a-8b8b-000000000002"
		twinID     = "9d3e4f5a-3333-4a4a-8b8b-000000000003"
	)
	keys := []*rootKeyMeta{
		{KeyID: activeID, Algorithm: "aes256-gcm", CreateTime: modified, CreateIndex: 9, ModifyIndex: 9, State: "active"},
		{KeyID: inactiveID, Algorithm: "aes256-gcm", CreateTime: created, CreateIndex: 5, ModifyIndex: 9, State: "inactive"},
	}
	listed := map[string]agentAnswer{"GET /v1/operator/keyring/keys": {body: keys}}
	list := aclRequest{method: "GET", path: "/v1/operator/keyring/keys"}
	rotated := agentAnswer{body: map[string]any{"Key": keys[0]}}
	runCLICases(t, []cliCase{
		{name: "list", args: []string{"operator", "root", "keyring", "list"}, answers: listed, want: []aclRequest{list},
			out: strings.Join([]string{
				"Key       State     Create Time",
				"5c7b1a2e  active    " + localTime(modified),
				"9d3e4f5a  inactive  " + localTime(created),
				""}, "\n")},
		{name: "list -verbose", args: []string{"operator", "root", "keyring", "list", "-verbose"}, answers: listed, want: []aclRequest{list},
			outHas: []string{activeID + "  active", inactiveID + "  inactive"}},
		{name: "list -json, as Nomad 1.6's API has it", args: []string{"operator", "root", "keyring", "list", "-json"}, answers: listed, want: []aclRequest{list},
			out: `[
    {
        "KeyID": "5c7b1a2e-1111-4a4a-8b8b-000000000001",
        "Algorithm": "aes256-gcm",
        "CreateTime": 1780000600000000000,
        "CreateIndex": 9,
        "ModifyIndex": 9,
        "State": "active"
    },
    {
        "KeyID": "9d3e4f5a-2222-4a4a-8b8b-000000000002",
        "Algorithm": "aes256-gcm",
        "CreateTime": 1780000000000000000,
        "CreateIndex": 5,
        "ModifyIndex": 9,
        "State": "inactive"
    }
]
`},
		{name: "list ignores -namespace", args: []string{"operator", "root", "keyring", "list", "-namespace", "prod"},
			answers: listed, want: []aclRequest{list}, outHas: []string{"5c7b1a2e  active"}},
		{name: "list of an empty keyring", args: []string{"operator", "root", "keyring", "list"},
			answers: map[string]agentAnswer{"GET /v1/operator/keyring/keys": {body: "[]"}}, want: []aclRequest{list},
			out: "Key  State  Create Time\n"},
		{name: "list needs a management token", args: []string{"operator", "root", "keyring", "list"},
			answers: map[string]agentAnswer{"GET /v1/operator/keyring/keys": {status: 403, body: "Permission denied"}}, want: []aclRequest{list},
			code: exitError, errHas: []string{"Error: listing the root keys: API error (403): Permission denied", "no ACL token was given"}},
		{name: "list takes no arguments", args: []string{"operator", "root", "keyring", "list", "x"},
			code: exitError, errHas: []string{"This command takes no arguments"}},

		{name: "rotate", args: []string{"operator", "root", "keyring", "rotate"},
			answers: map[string]agentAnswer{"PUT /v1/operator/keyring/rotate": rotated},
			want:    []aclRequest{{method: "PUT", path: "/v1/operator/keyring/rotate"}},
			out:     "Key       State   Create Time\n5c7b1a2e  active  " + localTime(modified) + "\n"},
		{name: "rotate -full -verbose", args: []string{"operator", "root", "keyring", "rotate", "-full", "-verbose"},
			answers: map[string]agentAnswer{"PUT /v1/operator/keyring/rotate?full=true": rotated},
			want:    []aclRequest{{method: "PUT", path: "/v1/operator/keyring/rotate?full=true"}},
			outHas:  []string{activeID + "  active"}},
		{name: "rotate refused", args: []string{"operator", "root", "keyring", "rotate"},
			answers: map[string]agentAnswer{"PUT /v1/operator/keyring/rotate": {status: 400, body: "keyring is being rekeyed"}},
			want:    []aclRequest{{method: "PUT", path: "/v1/operator/keyring/rotate"}},
			code:    exitError, errHas: []string{"Error: rotating the root key: API error (400): keyring is being rekeyed"}},
		{name: "rotate answered without a key", args: []string{"operator", "root", "keyring", "rotate"},
			answers: map[string]agentAnswer{"PUT /v1/operator/keyring/rotate": {body: "{}"}},
			want:    []aclRequest{{method: "PUT", path: "/v1/operator/keyring/rotate"}},
			code:    exitError, errHas: []string{"holds no key"}},

		{name: "remove by full ID", args: []string{"operator", "root", "keyring", "remove", inactiveID},
			answers: map[string]agentAnswer{"DELETE /v1/operator/keyring/key/" + inactiveID: {body: "{}"}},
			want:    []aclRequest{{method: "DELETE", path: "/v1/operator/keyring/key/" + inactiveID}},
			out:     "Removed encryption key " + inactiveID + "\n"},
		{name: "remove -force by the short ID list shows", args: []string{"operator", "root", "keyring", "remove", "-force", "9d3e4f5a"},
			answers: map[string]agentAnswer{"GET /v1/operator/keyring/keys": {body: keys},
				"DELETE /v1/operator/keyring/key/" + inactiveID + "?force=true": {body: `{"Index": 12}`}},
			want: []aclRequest{list, {method: "DELETE", path: "/v1/operator/keyring/key/" + inactiveID + "?force=true"}},
			out:  "Removed encryption key " + inactiveID + "\n"},
		{name: "remove by an ambiguous prefix", args: []string{"operator", "root", "keyring", "remove", "9d3e"},
			answers: map[string]agentAnswer{"GET /v1/operator/keyring/keys": {body: append(keys, &rootKeyMeta{KeyID: twinID})}},
			want:    []aclRequest{list}, code: exitError, errHas: []string{`root key ID prefix "9d3e" matches more than one key`, inactiveID, twinID}},
		{name: "remove an unknown key", args: []string{"operator", "root", "keyring", "remove", "ffff"},
			answers: listed, want: []aclRequest{list}, code: exitError, errHas: []string{`no root key with ID prefix "ffff"`}},
		{name: "remove the active key", args: []string{"operator", "root", "keyring", "remove", activeID},
			answers: map[string]agentAnswer{"DELETE /v1/operator/keyring/key/" + activeID: {status: 400, body: "active root key cannot be deleted"}},
			want:    []aclRequest{{method: "DELETE", path: "/v1/operator/keyring/key/" + activeID}},
			code:    exitError, errHas: []string{"Error: removing root key " + activeID + ": API error (400): active root key cannot be deleted"}},
		{name: "remove without an ID", args: []string{"operator", "root", "keyring", "remove"},
			code: exitError, errHas: []string{"This command takes one argument: <key-id>"}},
	})
}
