package main

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// runACLCommand runs a drover command (its words, then its options and
// arguments) against srvURL with token, as TestACLCommands does.
func runACLCommand(t *testing.T, srvURL, token string, words ...string) (int, string, string) {
	t.Helper()
	setTokenEnv(t, nil)
	ui := cli.NewMockUi()
	m := &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(""), now: time.Now}
	cmd, args := commandFor(t, m, srvURL, token, words...)
	code := cmd.Run(args)
	return code, ui.OutputWriter.String(), ui.ErrorWriter.String()
}

// commandFor returns the drover command that words start with, of m's
// commands, and the arguments to run it with against srvURL with token:
// the rest of words after the options that say so.
func commandFor(t *testing.T, m *meta, srvURL, token string, words ...string) (cli.Command, []string) {
	t.Helper()
	name, rest := words[0], words[1:]
	cmds := commands(m)
	for len(rest) > 0 {
		if _, ok := cmds[name+" "+rest[0]]; !ok {
			break
		}
		name, rest = name+" "+rest[0], rest[1:]
	}
	cmd, err := cmds[name]()
	if err != nil {
		t.Fatal(err)
	}
	return cmd, append([]string{"-address", srvURL, "-token", token}, rest...)
}

// The acl role commands send Nomad's requests and print Nomad's output;
// acl token create/update send -role-id and -role-name as role links, and
// a token's roles print as Nomad's.
func TestACLRoleCommands(t *testing.T) {
	const roleID = "7c2e9a10-0000-4000-8000-0000000000aa"
	role := &api.ACLRole{ID: roleID, Name: "readers", Description: "Read things",
		Policies:    []*api.ACLRolePolicyLink{{Name: "readonly"}, {Name: "agent"}},
		CreateIndex: 12, ModifyIndex: 14}
	roleOut := strings.Join([]string{
		"ID           = " + roleID,
		"Name         = readers",
		"Description  = Read things",
		"Policies     = agent,readonly",
		"Create Index = 12",
		"Modify Index = 14",
		""}, "\n")
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tok := &api.ACLToken{AccessorID: "acc-r", SecretID: "sec-r", Name: "r", Type: "client",
		Roles: []*api.ACLTokenRoleLink{{ID: roleID, Name: "readers"}}, CreateTime: at, CreateIndex: 20, ModifyIndex: 20}
	tokOutTail := strings.Join([]string{
		"Policies     = []",
		"",
		"Roles",
		"ID                                    Name",
		roleID + "  readers",
		""}, "\n")

	for _, tc := range []struct {
		name    string
		args    []string
		answers map[string]aclAnswer
		want    []aclRequest // bodies compared as JSON, given fields only
		code    int
		out     string
		outHas  []string
		errHas  []string
	}{
		{name: "role create", args: []string{"acl", "role", "create", "-name", "readers", "-description", "Read things",
			"-policy", "readonly", "-policy", "agent", "-policy", "readonly"},
			answers: map[string]aclAnswer{"PUT /v1/acl/role": {body: role}},
			want: []aclRequest{{method: "PUT", path: "/v1/acl/role",
				body: `{"Name": "readers", "Description": "Read things", "Policies": [{"Name": "readonly"}, {"Name": "agent"}]}`}},
			out: roleOut},
		{name: "role create without a name", args: []string{"acl", "role", "create", "-policy", "readonly"},
			code: exitError, errHas: []string{"ACL role name must be specified using the -name flag"}},
		{name: "role create without a policy", args: []string{"acl", "role", "create", "-name", "x"},
			code: exitError, errHas: []string{"At least one policy name must be specified using the -policy flag"}},
		{name: "role create refused", args: []string{"acl", "role", "create", "-name", "x", "-policy", "nope"},
			answers: map[string]aclAnswer{"PUT /v1/acl/role": {status: 400, body: "role 0 invalid: cannot find policy nope"}},
			want:    []aclRequest{{method: "PUT", path: "/v1/acl/role", body: `{"Name": "x"}`}},
			code:    exitError, errHas: []string{"cannot find policy nope"}},
		{name: "role list", args: []string{"acl", "role", "list"},
			answers: map[string]aclAnswer{"GET /v1/acl/roles": {body: []*api.ACLRoleListStub{{ID: roleID, Name: "readers",
				Description: "Read things", Policies: role.Policies}}}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/roles"}},
			out: "ID                                    Name     Description  Policies\n" +
				roleID + "  readers  Read things  agent,readonly\n"},
		{name: "role list, none", args: []string{"acl", "role", "list"},
			answers: map[string]aclAnswer{"GET /v1/acl/roles": {body: []*api.ACLRoleListStub{}}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/roles"}},
			out:     "No ACL roles found\n"},
		{name: "role info", args: []string{"acl", "role", "info", roleID},
			answers: map[string]aclAnswer{"GET /v1/acl/role/" + roleID: {body: role}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/role/" + roleID}},
			out:     roleOut},
		{name: "role info -by-name", args: []string{"acl", "role", "info", "-by-name", "readers"},
			answers: map[string]aclAnswer{"GET /v1/acl/role/name/readers": {body: role}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/role/name/readers"}},
			out:     roleOut},
		{name: "role info -json", args: []string{"acl", "role", "info", "-json", roleID},
			answers: map[string]aclAnswer{"GET /v1/acl/role/" + roleID: {body: role}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/role/" + roleID}},
			outHas:  []string{`"ID": "` + roleID + `"`, `"Name": "readonly"`}},
		{name: "role info of an unknown role", args: []string{"acl", "role", "info", "nope"},
			answers: map[string]aclAnswer{"GET /v1/acl/role/nope": {status: 404, body: "ACL role not found"}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/role/nope"}},
			code:    exitError, errHas: []string{"ACL role not found"}},
		{name: "role update merges", args: []string{"acl", "role", "update", "-name", "viewers", "-policy", "nodes", roleID},
			answers: map[string]aclAnswer{"GET /v1/acl/role/" + roleID: {body: role}, "PUT /v1/acl/role/" + roleID: {body: role}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/role/" + roleID}, {method: "PUT", path: "/v1/acl/role/" + roleID,
				body: `{"ID": "` + roleID + `", "Name": "viewers", "Description": "Read things",
					"Policies": [{"Name": "agent"}, {"Name": "readonly"}, {"Name": "nodes"}]}`}},
			out: roleOut},
		{name: "role update -no-merge", args: []string{"acl", "role", "update", "-no-merge", "-name", "viewers", "-policy", "nodes", roleID},
			answers: map[string]aclAnswer{"GET /v1/acl/role/" + roleID: {body: role}, "PUT /v1/acl/role/" + roleID: {body: role}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/role/" + roleID}, {method: "PUT", path: "/v1/acl/role/" + roleID,
				body: `{"ID": "` + roleID + `", "Name": "viewers", "Description": "", "Policies": [{"Name": "nodes"}]}`}},
			out: roleOut},
		{name: "role update without a change", args: []string{"acl", "role", "update", roleID},
			answers: map[string]aclAnswer{"GET /v1/acl/role/" + roleID: {body: role}},
			want:    []aclRequest{{method: "GET", path: "/v1/acl/role/" + roleID}},
			code:    exitError, errHas: []string{"Please provide at least one flag to update the ACL role"}},
		{name: "role delete", args: []string{"acl", "role", "delete", roleID},
			answers: map[string]aclAnswer{"DELETE /v1/acl/role/" + roleID: {body: ""}},
			want:    []aclRequest{{method: "DELETE", path: "/v1/acl/role/" + roleID}},
			out:     "ACL role " + roleID + " successfully deleted\n"},
		{name: "role delete without an ID", args: []string{"acl", "role", "delete"},
			code: exitError, errHas: []string{"This command takes one argument: <role-id>"}},
		{name: "token create with roles", args: []string{"acl", "token", "create", "-name", "r", "-role-id", roleID, "-role-name", "readers"},
			answers: map[string]aclAnswer{"POST /v1/acl/token": {body: tok}},
			want: []aclRequest{{method: "POST", path: "/v1/acl/token",
				body: `{"Name": "r", "Type": "client", "Roles": [{"ID": "` + roleID + `", "Name": ""}, {"ID": "", "Name": "readers"}]}`}},
			outHas: []string{"Accessor ID  = acc-r", tokOutTail}},
		{name: "token update with roles replaces them", args: []string{"acl", "token", "update", "-role-name", "others", "acc-r"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/acc-r": {body: tok}, "POST /v1/acl/token/acc-r": {body: tok}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/token/acc-r"}, {method: "POST", path: "/v1/acl/token/acc-r",
				body: `{"AccessorID": "acc-r", "Roles": [{"ID": "", "Name": "others"}]}`}},
			outHas: []string{tokOutTail}},
		{name: "token update without roles keeps them", args: []string{"acl", "token", "update", "-name", "r2", "acc-r"},
			answers: map[string]aclAnswer{"GET /v1/acl/token/acc-r": {body: tok}, "POST /v1/acl/token/acc-r": {body: tok}},
			want: []aclRequest{{method: "GET", path: "/v1/acl/token/acc-r"}, {method: "POST", path: "/v1/acl/token/acc-r",
				body: `{"Name": "r2", "Roles": [{"ID": "` + roleID + `", "Name": "readers"}]}`}},
			outHas: []string{tokOutTail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := fakeNomadACL(t, tc.answers)
			code, stdout, stderr := runACLCommand(t, srv.URL, "mgmt-secret", tc.args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			got := requests()
			if len(got) != len(tc.want) {
				t.Fatalf("requests %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.method != w.method || g.path != w.path || g.token != "mgmt-secret" || !sameJSON(t, g.body, w.body) {
					t.Errorf("request %d: %s %s token %q body %s\nwant %s %s body with %s",
						i, g.method, g.path, g.token, g.body, w.method, w.path, w.body)
				}
			}
			if tc.outHas == nil && stdout != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, tc.out)
			}
			for _, w := range tc.outHas {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.errHas {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}
