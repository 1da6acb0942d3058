package main

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

func TestServiceList(t *testing.T) {
	stubs := []*api.ServiceRegistrationListStub{
		{Namespace: "prod", Services: []*api.ServiceRegistrationStub{{ServiceName: "web", Tags: []string{"b", "a"}}}},
		{Namespace: "default", Services: []*api.ServiceRegistrationStub{
			{ServiceName: "redis", Tags: []string{"cache"}},
			{ServiceName: "api"},
		}},
	}
	list := func(q string) []aclRequest { return []aclRequest{{method: "GET", path: "/v1/services" + q}} }
	ok := map[string]agentAnswer{"GET /v1/services": {body: stubs}}
	table := strings.Join([]string{
		"Service Name  Tags",
		"api           []",
		"redis         [cache]",
		"web           [a,b]",
		""}, "\n")
	runCLICases(t, []cliCase{
		{name: "table sorted by namespace, name and tag", args: []string{"service", "list"},
			answers: ok, want: list(""), out: table},
		{name: "-verbose changes nothing", args: []string{"service", "list", "-verbose"},
			answers: ok, want: list(""), out: table},
		{name: "every namespace adds a Namespace column", args: []string{"service", "list", "-namespace", "*"},
			answers: map[string]agentAnswer{"GET /v1/services?namespace=%2A": {body: stubs}}, want: list("?namespace=%2A"),
			out: strings.Join([]string{
				"Service Name  Namespace  Tags",
				"api           default    []",
				"redis         default    [cache]",
				"web           prod       [a,b]",
				""}, "\n")},
		{name: "one namespace", args: []string{"service", "list", "-namespace", "prod"},
			answers: map[string]agentAnswer{"GET /v1/services?namespace=prod": {body: stubs[:1]}}, want: list("?namespace=prod"),
			out: "Service Name  Tags\nweb           [a,b]\n"},
		{name: "JSON as the API gave it", args: []string{"service", "list", "-json"},
			answers: ok, want: list(""),
			outHas: []string{"[\n    {\n        \"Namespace\": \"prod\",\n        \"Services\": [\n            {\n                \"ServiceName\": \"web\",", `"b",`}},
		{name: "go template", args: []string{"service", "list", "-t", "{{range .}}{{.Namespace}}:{{len .Services}} {{end}}"},
			answers: ok, want: list(""), out: "prod:1 default:2 \n"},
		{name: "none", args: []string{"service", "list"},
			answers: map[string]agentAnswer{"GET /v1/services": {body: "[]"}}, want: list(""), out: "No service registrations found\n"},
		{name: "none, even in JSON", args: []string{"service", "list", "-json"},
			answers: map[string]agentAnswer{"GET /v1/services": {body: "[]"}}, want: list(""), out: "No service registrations found\n"},
		{name: "a template that fails", args: []string{"service", "list", "-t", "{{.Nope}}"},
			answers: ok, want: list(""), code: exitError, errHas: []string{"executing -template"}},
		{name: "JSON and a template", args: []string{"service", "list", "-json", "-t", "{{.}}"},
			code: exitError, errHas: []string{"Both json and template formatting are not allowed"}},
		{name: "an argument", args: []string{"service", "list", "web"},
			code: exitError, errHas: []string{"This command takes no arguments"}},
		{name: "unknown flag", args: []string{"service", "list", "-name", "web"},
			code: exitError, errHas: []string{"Error parsing flags: flag provided but not defined: -name"}},
		{name: "API error", args: []string{"service", "list"},
			answers: map[string]agentAnswer{"GET /v1/services": {status: 403, body: "Permission denied"}}, want: list(""),
			code: exitError, errHas: []string{"Error: listing service registrations: API error (403): Permission denied"}},
	})
}

func TestServiceInfo(t *testing.T) {
	regs := []*api.ServiceRegistration{
		{ID: "_nomad-task-aaaaaaaa-1111-2222-3333-444444444444-group-web-web-http", ServiceName: "web", Namespace: "default",
			NodeID: "1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9", Datacenter: "dc1", JobID: "web",
			AllocID: "aaaaaaaa-1111-2222-3333-444444444444", Tags: []string{"http", "v1"}, Address: "10.0.0.1", Port: 8080},
		{ID: "_nomad-task-bbbbbbbb", ServiceName: "web", Namespace: "default",
			NodeID: "2a2a2a2a-0000-0000-0000-000000000000", Datacenter: "dc2", JobID: "api",
			AllocID: "bbbbbbbb-0000-0000-0000-000000000000", Address: "::1", Port: 9090},
		{ID: "_nomad-task-cccccccc", ServiceName: "web", Namespace: "default",
			NodeID: "3b3b3b3b-0000-0000-0000-000000000000", JobID: "web",
			AllocID: "cccccccc-0000-0000-0000-000000000000", Tags: []string{"v2"}, Address: "10.0.0.2"},
	}
	get := func(pq string) []aclRequest { return []aclRequest{{method: "GET", path: "/v1/service/" + pq}} }
	ok := map[string]agentAnswer{"GET /v1/service/web": {body: regs}}
	table := strings.Join([]string{
		"Job ID  Address        Tags       Node ID   Alloc ID",
		"api     [::1]:9090     []         2a2a2a2a  bbbbbbbb",
		"web     10.0.0.1:8080  [http,v1]  1f2e3d4c  aaaaaaaa",
		"web     10.0.0.2       [v2]       3b3b3b3b  cccccccc",
		""}, "\n")
	verbose := strings.Join([]string{
		"ID           = _nomad-task-bbbbbbbb",
		"Service Name = web",
		"Namespace    = default",
		"Job ID       = api",
		"Alloc ID     = bbbbbbbb-0000-0000-0000-000000000000",
		"Node ID      = 2a2a2a2a-0000-0000-0000-000000000000",
		"Datacenter   = dc2",
		"Address      = [::1]:9090",
		"Tags         = []",
		"",
		"ID           = _nomad-task-aaaaaaaa-1111-2222-3333-444444444444-group-web-web-http",
		"Service Name = web",
		"Namespace    = default",
		"Job ID       = web",
		"Alloc ID     = aaaaaaaa-1111-2222-3333-444444444444",
		"Node ID      = 1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9",
		"Datacenter   = dc1",
		"Address      = 10.0.0.1:8080",
		"Tags         = [http,v1]",
		"",
		"ID           = _nomad-task-cccccccc",
		"Service Name = web",
		"Namespace    = default",
		"Job ID       = web",
		"Alloc ID     = cccccccc-0000-0000-0000-000000000000",
		"Node ID      = 3b3b3b3b-0000-0000-0000-000000000000",
		"Datacenter   = <none>",
		"Address      = 10.0.0.2:0",
		"Tags         = [v2]",
		"",
		""}, "\n")
	page := agentAnswer{body: regs[:1], header: map[string]string{"X-Nomad-NextToken": "next-1"}}
	runCLICases(t, []cliCase{
		{name: "table sorted by job ID, IDs short", args: []string{"service", "info", "web"},
			answers: ok, want: get("web"), out: table},
		{name: "verbose blocks", args: []string{"service", "info", "-verbose", "web"},
			answers: ok, want: get("web"), out: verbose},
		{name: "JSON as the API gave it", args: []string{"service", "info", "-json", "web"},
			answers: ok, want: get("web"),
			outHas: []string{"[\n    {\n        \"ID\": \"_nomad-task-aaaaaaaa", `"Port": 8080,`, `"Tags": null,`}},
		{name: "go template", args: []string{"service", "info", "-t", "{{range .}}{{.JobID}}@{{.Port}} {{end}}", "web"},
			answers: ok, want: get("web"), out: "web@8080 api@9090 web@0 \n"},
		{name: "namespace", args: []string{"service", "info", "-namespace", "prod", "web"},
			answers: map[string]agentAnswer{"GET /v1/service/web?namespace=prod": {body: regs[:1]}}, want: get("web?namespace=prod"),
			outHas: []string{"web     10.0.0.1:8080  [http,v1]  1f2e3d4c  aaaaaaaa"}},
		{name: "a name escaped in the path", args: []string{"service", "info", "my svc"},
			answers: map[string]agentAnswer{"GET /v1/service/my%20svc": {body: regs[2:]}}, want: get("my%20svc"),
			outHas: []string{"10.0.0.2"}},
		{name: "no registrations", args: []string{"service", "info", "nope"},
			answers: map[string]agentAnswer{"GET /v1/service/nope": {body: "[]"}}, want: get("nope"),
			out: "No service registrations found\n"},
		{name: "a page, then the command for the next", args: []string{"service", "info", "-verbose", "-per-page", "1", "-filter", `Tags contains "v1"`, "web"},
			answers: map[string]agentAnswer{"GET /v1/service/web?filter=Tags+contains+%22v1%22&per_page=1": page},
			want:    get("web?filter=Tags+contains+%22v1%22&per_page=1"),
			outHas: []string{"Tags         = [http,v1]\n\n\nResults have been paginated. To get the next page run:\n\ndrover service info -address=http://",
				` -filter='Tags contains "v1"' -per-page=1 -verbose -page-token=next-1 web` + "\n"}},
		{name: "the next page's command replaces the token", args: []string{"service", "info", "-page-token", "next-1", "--", "-web"},
			answers: map[string]agentAnswer{"GET /v1/service/-web?next_token=next-1": {body: regs[:1], header: map[string]string{"X-Nomad-NextToken": "it's-2"}}},
			want:    get("-web?next_token=next-1"),
			outHas:  []string{` -page-token='it'\''s-2' -- -web` + "\n"}},
		{name: "a page in JSON, the next token on standard error", args: []string{"service", "info", "-json", "-per-page", "1", "web"},
			answers: map[string]agentAnswer{"GET /v1/service/web?per_page=1": page}, want: get("web?per_page=1"),
			outHas: []string{`"JobID": "web"`}, errHas: []string{"Next page token: next-1"}},
		{name: "every namespace", args: []string{"service", "info", "-namespace", "*", "web"},
			code: exitError, errHas: []string{`The wildcard namespace ("*") is not valid for this command.`}},
		{name: "JSON and a template", args: []string{"service", "info", "-json", "-t", "{{.}}", "web"},
			code: exitError, errHas: []string{"Both json and template formatting are not allowed"}},
		{name: "negative page size", args: []string{"service", "info", "-per-page", "-1", "web"},
			code: exitError, errHas: []string{"-per-page=-1"}},
		{name: "no name", args: []string{"service", "info"},
			code: exitError, errHas: []string{"This command takes one argument: <service_name>"}},
		{name: "two names", args: []string{"service", "info", "web", "api"},
			code: exitError, errHas: []string{"This command takes one argument: <service_name>"}},
		{name: "API error", args: []string{"service", "info", "web"},
			answers: map[string]agentAnswer{"GET /v1/service/web": {status: 403, body: "Permission denied"}}, want: get("web"),
			code: exitError, errHas: []string{`Error: reading service "web": API error (403): Permission denied`}},
	})
}

func TestServiceDelete(t *testing.T) {
	del := func(pq string) []aclRequest { return []aclRequest{{method: "DELETE", path: "/v1/service/" + pq}} }
	runCLICases(t, []cliCase{
		{name: "deleted", args: []string{"service", "delete", "web", "_nomad-task-aaaa"},
			answers: map[string]agentAnswer{"DELETE /v1/service/web/_nomad-task-aaaa": {body: "{}"}}, want: del("web/_nomad-task-aaaa"),
			out: "Successfully deleted service registration\n"},
		{name: "an empty answer", args: []string{"service", "delete", "-namespace", "prod", "web", "id/1"},
			answers: map[string]agentAnswer{"DELETE /v1/service/web/id%2F1?namespace=prod": {}}, want: del("web/id%2F1?namespace=prod"),
			out: "Successfully deleted service registration\n"},
		{name: "not found", args: []string{"service", "delete", "web", "nope"},
			answers: map[string]agentAnswer{"DELETE /v1/service/web/nope": {status: 404, body: "service registration not found"}},
			want:    del("web/nope"), code: exitError,
			errHas: []string{`Error: deleting service registration "nope" of service "web": API error (404): service registration not found`}},
		{name: "every namespace", args: []string{"service", "delete", "-namespace", "*", "web", "id"},
			code: exitError, errHas: []string{`The wildcard namespace ("*") is not valid for this command.`}},
		{name: "one argument", args: []string{"service", "delete", "web"},
			code: exitError, errHas: []string{"This command takes two arguments: <service_name> and <service_id>"}},
		{name: "-json is no option of delete", args: []string{"service", "delete", "-json", "web", "id"},
			code: exitError, errHas: []string{"flag provided but not defined: -json"}},
	})
}
