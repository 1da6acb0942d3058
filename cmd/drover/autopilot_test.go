package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
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

func TestAutopilotSetConfig(t *testing.T) {
	const path = "/v1/operator/autopilot/configuration"
	get := aclRequest{method: "GET", path: path}
	put := func(body string) aclRequest { return aclRequest{method: "PUT", path: path + "?cas=7", body: body} }
	answers := func(updated string) map[string]agentAnswer {
		return map[string]agentAnswer{"GET " + path: {body: autopilotConf}, "PUT " + path + "?cas=7": {body: updated}}
	}
	// unchanged is the configuration as read, written back as it is.
	const unchanged = `{"CleanupDeadServers": true, "LastContactThreshold": "200ms", "MaxTrailingLogs": 250, "MinQuorum": 3,
		"ServerStabilizationTime": "10s", "EnableRedundancyZones": false, "DisableUpgradeMigration": false,
		"EnableCustomUpgrades": false, "ModifyIndex": 7}`
	runCLICases(t, []cliCase{
		{name: "each option changes its setting, with check-and-set on the index read",
			args: []string{"operator", "autopilot", "set-config", "-last-contact-threshold=1s", "-max-trailing-logs", "500",
				"-server-stabilization-time=30s", "-enable-redundancy-zones=true", "-disable-upgrade-migration", "true",
				"-enable-custom-upgrades=1"},
			answers: answers("true"),
			want: []aclRequest{get, put(`{"CleanupDeadServers": true, "LastContactThreshold": "1s", "MaxTrailingLogs": 500,
				"MinQuorum": 3, "ServerStabilizationTime": "30s", "EnableRedundancyZones": true,
				"DisableUpgradeMigration": true, "EnableCustomUpgrades": true, "ModifyIndex": 7}`)},
			out: "Configuration updated!\n"},
		{name: "an option given its zero value changes the setting to it",
			args:    []string{"operator", "autopilot", "set-config", "-cleanup-dead-servers=false", "-min-quorum=0", "-max-trailing-logs=0"},
			answers: answers("true"),
			want: []aclRequest{get, put(`{"CleanupDeadServers": false, "MaxTrailingLogs": 0, "MinQuorum": 0,
				"LastContactThreshold": "200ms", "ServerStabilizationTime": "10s"}`)},
			out: "Configuration updated!\n"},
		{name: "no option writes the configuration back as it is, as Nomad's does",
			args: []string{"operator", "autopilot", "set-config"}, answers: answers("true"),
			want: []aclRequest{get, put(unchanged)}, out: "Configuration updated!\n"},
		{name: "check-and-set lost", args: []string{"operator", "autopilot", "set-config", "-min-quorum", "5"},
			answers: answers("false"), want: []aclRequest{get, put(`{"MinQuorum": 5, "ModifyIndex": 7}`)},
			code: exitError, errHas: []string{"Configuration could not be atomically updated, please try again"}},
		{name: "write refused", args: []string{"operator", "autopilot", "set-config", "-min-quorum", "5"},
			answers: map[string]agentAnswer{"GET " + path: {body: autopilotConf},
				"PUT " + path + "?cas=7": {status: http.StatusBadRequest, body: `{"error": "MinQuorum must be at least 3"}`}},
			want: []aclRequest{get, put(`{"MinQuorum": 5}`)}, code: exitError,
			errHas: []string{"Error: writing the Autopilot configuration: API error (400): MinQuorum must be at least 3"},
			errNot: []string{"Configuration updated!"}},
		{name: "read refused: nothing is written", args: []string{"operator", "autopilot", "set-config", "-min-quorum", "5"},
			answers: map[string]agentAnswer{"GET " + path: {status: http.StatusInternalServerError, body: "no leader"}},
			want:    []aclRequest{get}, code: exitError,
			errHas: []string{"Error: reading the Autopilot configuration: API error (500): no leader"}},
		{name: "a duration that is none", args: []string{"operator", "autopilot", "set-config", "-last-contact-threshold=soon"},
			code: exitError, errHas: []string{"Error parsing flags", "-last-contact-threshold", "Usage: drover operator autopilot set-config"}},
		{name: "a negative count", args: []string{"operator", "autopilot", "set-config", "-max-trailing-logs=-1"},
			code: exitError, errHas: []string{"Error parsing flags", "-max-trailing-logs"}},
		{name: "a bare boolean option takes the next option as its value",
			args: []string{"operator", "autopilot", "set-config", "-cleanup-dead-servers", "-min-quorum=3"},
			code: exitError, errHas: []string{"Error parsing flags", "-cleanup-dead-servers"}},
		{name: "a bare boolean option at the end", args: []string{"operator", "autopilot", "set-config", "-enable-custom-upgrades"},
			code: exitError, errHas: []string{"flag needs an argument: -enable-custom-upgrades"}},
		{name: "no arguments", args: []string{"operator", "autopilot", "set-config", "-min-quorum=3", "extra"},
			code: exitError, errHas: []string{"This command takes no arguments"}},
	})
}

func TestAutopilotHealth(t *testing.T) {
	const path = "/v1/operator/autopilot/health"
	since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	report := func(healthy bool, tolerance int, lastContact string) string {
		return strings.NewReplacer("HEALTHY", strconv.FormatBool(healthy), "TOLERANCE", strconv.Itoa(tolerance),
			"CONTACT", lastContact).Replace(`{
			"Healthy": HEALTHY, "FailureTolerance": TOLERANCE, "Leader": "s1-id", "Voters": ["s1-id", "s2-id", "s3-id"],
			"Servers": [
			  {"ID": "s1-id", "Name": "s1.global", "Address": "10.0.0.1:4647", "SerfStatus": "alive", "Version": "0.9.0",
			   "Leader": true, "LastContact": "0s", "LastTerm": 3, "LastIndex": 120, "Healthy": true, "Voter": true,
			   "StableSince": "2026-11-26T12:00:00Z"},
			  {"ID": "s2-id", "Name": "s2.global", "Address": "10.0.0.2:4647", "SerfStatus": "alive", "Version": "0.9.0",
			   "Leader": false, "LastContact": "12ms", "LastTerm": 3, "LastIndex": 120, "Healthy": true, "Voter": true,
			   "StableSince": "2026-11-26T12:00:00Z"},
			  {"ID": "s3-id", "Name": "s3.global", "Address": "10.0.0.3:4647", "SerfStatus": "failed", "Version": "0.9.0",
			   "Leader": false, "LastContact": "CONTACT", "LastTerm": 2, "LastIndex": 97, "Healthy": HEALTHY, "Voter": true,
			   "StableSince": "0001-01-01T00:00:00Z"}
			]}`)
	}
	get := []aclRequest{{method: "GET", path: path}}
	stable := since.Local().Format(time.RFC3339)
	text := func(healthy bool, tolerance int, lastContact string) string {
		h := strconv.FormatBool(healthy)
		return strings.Join([]string{
			"Healthy: " + h,
			"FailureTolerance: " + strconv.Itoa(tolerance),
			"Leader: s1-id",
			"Voters:",
			"  s1-id",
			"  s2-id",
			"  s3-id",
			"Servers:",
			"ID     Name       Address        SerfStatus  Version  Leader  Voter  Healthy  LastContact  LastTerm  LastIndex  StableSince",
			"s1-id  s1.global  10.0.0.1:4647  alive       0.9.0    true    true   true     0s           3         120        " + stable,
			"s2-id  s2.global  10.0.0.2:4647  alive       0.9.0    false   true   true     12ms         3         120        " + stable,
			"s3-id  s3.global  10.0.0.3:4647  failed      0.9.0    false   true   " + h + strings.Repeat(" ", 9-len(h)) +
				lastContact + strings.Repeat(" ", 13-len(lastContact)) + "2         97         -",
			""}, "\n")
	}
	runCLICases(t, []cliCase{
		{name: "healthy", args: []string{"operator", "autopilot", "health"},
			answers: map[string]agentAnswer{"GET " + path: {body: report(true, 1, "40ms")}}, want: get,
			out: text(true, 1, "40ms")},
		{name: "unhealthy: the 429's report is printed and the exit code is 1", args: []string{"operator", "autopilot", "health"},
			answers: map[string]agentAnswer{"GET " + path: {status: http.StatusTooManyRequests, body: report(false, 0, "1m30s")}},
			want:    get, code: exitError, out: text(false, 0, "1m30s"), errNot: []string{"Error"}},
		{name: "JSON", args: []string{"operator", "autopilot", "health", "-json"},
			answers: map[string]agentAnswer{"GET " + path: {body: report(true, 1, "40ms")}}, want: get,
			outHas: []string{"{\n    \"Healthy\": true,\n    \"FailureTolerance\": 1,", `"LastContact": "12ms"`, `"LastIndex": 97`,
				`"StableSince": "2026-11-26T12:00:00Z"`, `"Voters": [`}},
		{name: "JSON of an unhealthy cluster", args: []string{"operator", "autopilot", "health", "-json", "-namespace", "prod"},
			answers: map[string]agentAnswer{"GET " + path: {status: http.StatusTooManyRequests, body: report(false, 0, "1m30s")}},
			want:    get, code: exitError, outHas: []string{`"Healthy": false`, `"LastContact": "1m30s"`}, errNot: []string{"Error"}},
		{name: "a 429 without a report", args: []string{"operator", "autopilot", "health"},
			answers: map[string]agentAnswer{"GET " + path: {status: http.StatusTooManyRequests, body: "slow down"}},
			want:    get, code: exitError, out: "", errHas: []string{"Error: reading the Autopilot health: the agent's 429 holds no report"}},
		{name: "refused", args: []string{"operator", "autopilot", "health"},
			answers: map[string]agentAnswer{"GET " + path: {status: http.StatusInternalServerError, body: `{"error": "no cluster leader"}`}},
			want:    get, code: exitError, out: "", errHas: []string{"Error: reading the Autopilot health: API error (500): no cluster leader"}},
		{name: "no arguments", args: []string{"operator", "autopilot", "health", "extra"},
			code: exitError, errHas: []string{"This command takes no arguments"}},
	})
}
