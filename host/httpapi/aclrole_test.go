package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// TestACL_Roles drives the role endpoints with Nomad's client
// (api.ACLRoles): create, list, read by ID and by name, update, delete;
// tokens that hold roles by ID or by name, shown with the roles' current
// names, granted their roles' policies, and reading only their own roles.
func TestACL_Roles(t *testing.T) {
	ts, _, rootSecret := newACLAPI(t, 1)
	root := withToken(t, ts.URL, rootSecret)
	for _, p := range []*api.ACLPolicy{{Name: "nodes", Rules: `node { policy = "read" }`},
		{Name: "agent", Rules: `agent { policy = "read" }`}} {
		if _, err := root.ACLPolicies().Upsert(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	link := func(names ...string) []*api.ACLRolePolicyLink {
		var out []*api.ACLRolePolicyLink
		for _, n := range names {
			out = append(out, &api.ACLRolePolicyLink{Name: n})
		}
		return out
	}
	readers, wm, err := root.ACLRoles().Create(&api.ACLRole{Name: "readers", Description: "reads nodes", Policies: link("nodes")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(readers.ID) != 36 || readers.Name != "readers" || readers.Description != "reads nodes" || len(readers.Policies) != 1 ||
		readers.Policies[0].Name != "nodes" || readers.CreateIndex == 0 || wm.LastIndex != readers.ModifyIndex {
		t.Fatalf("created role = %+v (index %d)", readers, wm.LastIndex)
	}
	agents, _, err := root.ACLRoles().Create(&api.ACLRole{Name: "agents", Policies: link("agent")}, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Refused as Nomad refuses them.
	for _, tc := range []struct {
		role *api.ACLRole
		want string
	}{
		{&api.ACLRole{Name: "bad name", Policies: link("nodes")}, "invalid name"},
		{&api.ACLRole{Name: "none"}, "at least one policy should be specified"},
		{&api.ACLRole{Name: "ghost", Policies: link("nope")}, "cannot find policy nope"},
		{&api.ACLRole{Name: "readers", Policies: link("nodes")}, "role with name readers already exists"},
		{&api.ACLRole{Name: "long", Description: strings.Repeat("d", 257), Policies: link("nodes")}, "description longer than 256"},
	} {
		if _, _, err := root.ACLRoles().Create(tc.role, nil); err == nil || !strings.Contains(err.Error(), "400") ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("create %q: %v, want 400 %q", tc.role.Name, err, tc.want)
		}
	}
	if resp, body := doAs(t, rootSecret, "PUT", ts.URL+"/v1/acl/role/"+readers.ID,
		`{"ID": "`+agents.ID+`", "Name": "x", "Policies": [{"Name": "nodes"}]}`); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(string(body), "ACL role ID does not match request path") {
		t.Errorf("update with another ID in the body: %d %s", resp.StatusCode, body)
	}
	if resp, body := doAs(t, rootSecret, "PUT", ts.URL+"/v1/acl/role",
		`{"ID": "`+agents.ID+`", "Name": "x", "Policies": [{"Name": "nodes"}]}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("create with an ID: %d %s", resp.StatusCode, body)
	}

	list, _, err := root.ACLRoles().List(nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("roles = %+v %v", list, err)
	}
	if list, _, err := root.ACLRoles().List(&api.QueryOptions{Prefix: readers.ID[:8]}); err != nil || len(list) != 1 ||
		list[0].ID != readers.ID || list[0].Policies[0].Name != "nodes" {
		t.Fatalf("roles with prefix %s = %+v %v", readers.ID[:8], list, err)
	}
	if got, _, err := root.ACLRoles().Get(readers.ID, nil); err != nil || got.Name != "readers" {
		t.Fatalf("role by ID = %+v %v", got, err)
	}
	if got, _, err := root.ACLRoles().GetByName("agents", nil); err != nil || got.ID != agents.ID {
		t.Fatalf("role by name = %+v %v", got, err)
	}
	for _, path := range []string{"/v1/acl/role/3c1a0d2e-0000-4000-8000-000000000000", "/v1/acl/role/name/nope"} {
		if resp, body := doAs(t, rootSecret, "GET", ts.URL+path, ""); resp.StatusCode != http.StatusNotFound ||
			!strings.Contains(string(body), "ACL role not found") {
			t.Errorf("GET %s: %d %s, want 404", path, resp.StatusCode, body)
		}
	}

	// A token holding a role by name, one by ID, and one by both (kept
	// once).
	tok, _, err := root.ACLTokens().Create(&api.ACLToken{Name: "r", Type: "client",
		Roles: []*api.ACLTokenRoleLink{{Name: "readers"}, {ID: readers.ID}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.Roles) != 1 || tok.Roles[0].ID != readers.ID || tok.Roles[0].Name != "readers" || len(tok.Policies) != 0 {
		t.Fatalf("token roles = %+v", tok.Roles)
	}
	for _, bad := range []struct {
		tok  *api.ACLToken
		want string
	}{
		{&api.ACLToken{Type: "client", Roles: []*api.ACLTokenRoleLink{{Name: "nope"}}}, "cannot find role nope"},
		{&api.ACLToken{Type: "client"}, "client token missing policies or roles"},
		{&api.ACLToken{Type: "management", Roles: []*api.ACLTokenRoleLink{{ID: readers.ID}}}, "management token cannot be associated"},
	} {
		if _, _, err := root.ACLTokens().Create(bad.tok, nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("token %+v: %v, want %q", bad.tok, err, bad.want)
		}
	}
	holder := withToken(t, ts.URL, tok.SecretID)
	if _, _, err := holder.Nodes().List(nil); err != nil {
		t.Fatalf("a token holding readers lists nodes: %v", err)
	}
	if _, err := holder.Agent().Self(); err == nil {
		t.Fatal("a token holding readers reads the agent")
	}
	// It reads its role, by ID and by name, and lists only it; it reads the
	// policy its role holds; it is refused the other role.
	if got, _, err := holder.ACLRoles().Get(readers.ID, nil); err != nil || got.Name != "readers" {
		t.Fatalf("holder reads its role: %+v %v", got, err)
	}
	if _, _, err := holder.ACLRoles().GetByName("readers", nil); err != nil {
		t.Fatalf("holder reads its role by name: %v", err)
	}
	if list, _, err := holder.ACLRoles().List(nil); err != nil || len(list) != 1 || list[0].ID != readers.ID {
		t.Fatalf("holder lists roles: %+v %v", list, err)
	}
	if p, _, err := holder.ACLPolicies().Info("nodes", nil); err != nil || p.Name != "nodes" {
		t.Fatalf("holder reads its role's policy: %+v %v", p, err)
	}
	if ps, _, err := holder.ACLPolicies().List(nil); err != nil || len(ps) != 1 || ps[0].Name != "nodes" {
		t.Fatalf("holder lists policies: %+v %v", ps, err)
	}
	if _, _, err := holder.ACLPolicies().Info("agent", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("holder reads a policy it does not hold: %v", err)
	}
	for _, get := range []func() error{
		func() error { _, _, err := holder.ACLRoles().Get(agents.ID, nil); return err },
		func() error { _, _, err := holder.ACLRoles().GetByName("agents", nil); return err },
		func() error { _, _, err := holder.ACLRoles().GetByName("nope", nil); return err },
		func() error {
			_, _, err := holder.ACLRoles().Create(&api.ACLRole{Name: "mine", Policies: link("agent")}, nil)
			return err
		},
		func() error { _, err := holder.ACLRoles().Delete(readers.ID, nil); return err },
	} {
		if err := get(); err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("holder, another role or a write: %v, want 403", err)
		}
	}

	// Renamed and given the agent policy: the token shows the new name and
	// may read the agent.
	readers.Name, readers.Policies = "viewers", link("nodes", "agent")
	updated, _, err := root.ACLRoles().Update(readers, nil)
	if err != nil || updated.Name != "viewers" || len(updated.Policies) != 2 || updated.CreateIndex != readers.CreateIndex {
		t.Fatalf("updated role = %+v %v", updated, err)
	}
	self, _, err := holder.ACLTokens().Self(nil)
	if err != nil || len(self.Roles) != 1 || self.Roles[0].Name != "viewers" {
		t.Fatalf("token after the rename: %+v %v", self, err)
	}
	if _, err := holder.Agent().Self(); err != nil {
		t.Fatalf("the role's new policy not granted: %v", err)
	}
	tokens, _, err := root.ACLTokens().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tokens {
		if s.AccessorID == tok.AccessorID && (len(s.Roles) != 1 || s.Roles[0].Name != "viewers") {
			t.Errorf("token list stub roles = %+v", s.Roles)
		}
	}

	// A token updated onto the other role by ID.
	tok.Roles = []*api.ACLTokenRoleLink{{ID: agents.ID}}
	if up, _, err := root.ACLTokens().Update(tok, nil); err != nil || len(up.Roles) != 1 || up.Roles[0].Name != "agents" {
		t.Fatalf("token updated onto agents: %+v %v", up, err)
	}
	if _, _, err := holder.Nodes().List(nil); err == nil {
		t.Fatal("the token still lists nodes after leaving readers")
	}

	// Deleted, the role grants nothing and leaves the token's roles.
	if _, err := root.ACLRoles().Delete(agents.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Agent().Self(); err == nil {
		t.Fatal("a deleted role still grants")
	}
	if got, _, err := root.ACLTokens().Info(tok.AccessorID, nil); err != nil || len(got.Roles) != 0 {
		t.Fatalf("token of a deleted role: %+v %v", got, err)
	}
	if _, err := root.ACLRoles().Delete(agents.ID, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("deleting a deleted role: %v", err)
	}
}
