package main

import (
	"net/http"
	"strings"
	"testing"
)

// autopilotConf is the autopilot configuration the fake agent holds, in
// the API's JSON (durations as strings).
const autopilotConf = `{"CleanupDeadServers": true, "LastContactThreshold": "200ms", "MaxTrailingLogs": 250,
	"MinQuorum": 3, "ServerStabilizationTime": "10s", "EnableRedundancyZones": false,
	"DisableUpgradeMigration": false, "EnableCustomUpgrades": false, "CreateIndex": 5, "ModifyIndex": 7}`

func TestAutopilotGetConfig(t *testing.T) {
	get := []aclRequest{{method: "GET", path: "/v1/operator/autopilot/configuration"}}
	answers := map[string]agentAnswer{"GET /v1/operator/autopilot/configuration": {body: autopilotConf}}
	runCLICases(t, []cliCase{
		{name: "Nomad's lines", args: []string{"operator", "autopilot", "get-config"}, answers: answers, want: get,
			out: strings.Join([]string{
				"CleanupDeadServers = true",
				"LastContactThreshold = 200ms",
				"MaxTrailingLogs = 250",
				"MinQuorum = 3",
				"ServerStabilizationTime = 10s",
				"EnableRedundancyZones = false",
				"DisableUpgradeMigration = false",
				"EnableCustomUpgrades = false",
				""}, "\n")},
		{name: "JSON keeps the API's durations and indexes", args: []string{"operator", "autopilot", "get-config", "-json"},
			answers: answers, want: get,
			outHas: []string{`"LastContactThreshold": "200ms"`, `"ServerStabilizationTime": "10s"`, `"MaxTrailingLogs": 250`,
				`"ModifyIndex": 7`}},
		{name: "no namespace is sent", args: []string{"operator", "autopilot", "get-config", "-namespace", "prod"},
			answers: answers, want: get, outHas: []string{"MinQuorum = 3"}},
		{name: "refused", args: []string{"operator", "autopilot", "get-config"},
			answers: map[string]agentAnswer{"GET /v1/operator/autopilot/configuration": {status: http.StatusForbidden, body: `{"error": "Permission denied"}`}},
			want:    get, code: exitError,
			errHas: []string{"Error: reading the Autopilot configuration: API error (403): Permission denied", "no ACL token was given"}},
		{name: "no arguments", args: []string{"operator", "autopilot", "get-config", "extra"},
			code: exitError, errHas: []string{"This command takes no arguments"}},
	})
}
